// Bundles one plugin's view (`<plugin>/view/main.ts`) into `<out>/<tool>.html`: the script
// (the views library, the MCP Apps SDK and Observable Plot, minified) and the style inlined
// into template.html, so the file needs nothing from any network.
// usage: node build.mjs <esbuild package dir> <plugin dir> <out dir>
import { readFileSync, writeFileSync, renameSync, existsSync, mkdirSync } from "node:fs";
import { basename, join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const here = dirname(fileURLToPath(import.meta.url));
const [esbuildDir, pluginDir, outDir] = process.argv.slice(2).map((p) => resolve(p));
const esbuild = createRequire(join(esbuildDir, "package.json"))("esbuild");
const tool = basename(pluginDir);
const entry = ["main.ts", "main.js"].map((f) => join(pluginDir, "view", f)).find(existsSync);
if (!entry) {
  console.error(`build-view: ${pluginDir}/view has no main.ts or main.js`);
  process.exit(1);
}

const result = await esbuild.build({
  entryPoints: [entry],
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  minify: true,
  write: false,
  legalComments: "none",
  alias: { "@loanhost/views": join(here, "src/index.ts") },
  nodePaths: [join(here, "node_modules")],
  logLevel: "warning",
  plugins: [
    {
      // Zod re-exports its 60 locales as a namespace, which defeats tree-shaking; a view
      // speaks English only (its messages never reach a user), so only `en` is kept.
      name: "zod-english-only",
      setup(build) {
        build.onLoad({ filter: /zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, () => ({
          contents: 'export { default as en } from "./en.js";',
          resolveDir: join(here, "node_modules/zod/v4/locales"),
        }));
      },
    },
  ],
});
// Inline in a <script> element: no `</script` or `<!--` may appear in it.
const script = result.outputFiles[0].text.replaceAll("</script", "<\\/script").replaceAll("<!--", "<\\!--");
const style = readFileSync(join(here, "view.css"), "utf8");
const title = `${tool} view`;
const html = readFileSync(join(here, "template.html"), "utf8")
  .replace("{{TITLE}}", title)
  .replace("{{STYLE}}", () => style)
  .replace("{{SCRIPT}}", () => script);
mkdirSync(outDir, { recursive: true });
const out = join(outDir, `${tool}.html`);
const tmp = join(outDir, `.${tool}.html.tmp`);
writeFileSync(tmp, html);
renameSync(tmp, out);
console.log(out);
