// The module hooks behind register.mjs: resolve `@loanhost/plugin[/…]` to this SDK's sources and
// `./x.js` to `./x.ts` where only the .ts exists; transpile .ts with esbuild (from
// LOANHOST_ESBUILD, the toolchain's copy, which scripts/test-plugin.sh sets).
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const sdk = new URL("./src/", import.meta.url);
const entries = { "@loanhost/plugin": "index.ts", "@loanhost/plugin/testing": "testing.ts", "@loanhost/plugin/component": "component.ts" };
const toolchain = process.env.LOANHOST_TOOLCHAIN ?? fileURLToPath(new URL("../toolchain/", import.meta.url));
const esbuild = createRequire(`${toolchain}/package.json`)("esbuild");

export async function resolve(specifier, context, next) {
  if (specifier in entries) return { url: new URL(entries[specifier], sdk).href, shortCircuit: true };
  if (specifier.startsWith(".") && specifier.endsWith(".js") && context.parentURL) {
    const ts = new URL(specifier.replace(/\.js$/, ".ts"), context.parentURL);
    if (!existsSync(fileURLToPath(new URL(specifier, context.parentURL))) && existsSync(fileURLToPath(ts))) {
      return { url: ts.href, shortCircuit: true };
    }
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (url.endsWith(".ts")) {
    const source = readFileSync(fileURLToPath(url), "utf8");
    const { code } = esbuild.transformSync(source, { loader: "ts", format: "esm", target: "es2022", sourcefile: fileURLToPath(url) });
    return { format: "module", source: code, shortCircuit: true };
  }
  return next(url, context);
}

