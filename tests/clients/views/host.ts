// The host side of an MCP Apps client, in a browser page, for loanhost's view tests: the
// official TypeScript client calls the tool on a running loanhost and reads the tool's view
// resource; the extension SDK's own AppBridge renders the view in a sandboxed frame and hands
// it the tool's input and result over postMessage. `window.runCase` runs one case.
import {
  AppBridge,
  PostMessageTransport,
  getToolUiResourceUri,
} from "@modelcontextprotocol/ext-apps/app-bridge";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

interface Case {
  token: string;
  tool: string;
  args: Record<string, unknown>;
  theme: "light" | "dark";
  width: number;
}

const UI = "io.modelcontextprotocol/ui";
const MIME = "text/html;profile=mcp-app";

async function runCase(c: Case) {
  const info = { name: "loanhost-view-test-host", version: "1.0.0" };
  const client = new Client(info, { capabilities: { extensions: { [UI]: { mimeTypes: [MIME] } } } as never });
  await client.connect(
    new StreamableHTTPClientTransport(new URL("/mcp", location.origin), {
      requestInit: { headers: { Authorization: `Bearer ${c.token}` } },
    }),
  );
  const { tools } = await client.listTools();
  const tool = tools.find((t) => t.name === c.tool);
  if (!tool) throw new Error(`${c.tool} is not listed`);
  const uri = getToolUiResourceUri(tool);
  if (!uri) throw new Error(`${c.tool} names no view in its _meta: ${JSON.stringify(tool._meta)}`);
  const read = await client.readResource({ uri });
  const content = read.contents[0] as { uri: string; mimeType?: string; text?: string; _meta?: unknown };
  if (content.mimeType !== MIME || typeof content.text !== "string") {
    throw new Error(`the view resource is ${content.mimeType}`);
  }

  // A sandboxed frame (scripts only: an opaque origin, no access to this page), sized like a
  // chat column; its height follows the view's size notifications.
  document.body.style.margin = "0";
  document.body.style.background = c.theme === "dark" ? "#171717" : "#ffffff";
  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.style.cssText = `width:${c.width}px;height:200px;border:0;display:block`;
  document.body.append(iframe);
  const bridge = new AppBridge(client, info, { serverTools: {}, serverResources: {}, logging: {} }, {
    hostContext: {
      theme: c.theme,
      displayMode: "inline",
      platform: "web",
      containerDimensions: { width: c.width, maxHeight: 3000 },
    },
  });
  let sized = 0;
  bridge.onsizechange = ({ height }) => {
    if (height) {
      iframe.style.height = `${height}px`;
      sized += 1;
    }
  };
  // The view reports its size after it draws, which may be after this case returns: the
  // runner reads the count again once the view has drawn.
  (window as unknown as { viewSized: () => number }).viewSized = () => sized;
  const initialized = new Promise<void>((resolve) => {
    bridge.oninitialized = () => resolve();
  });
  await bridge.connect(new PostMessageTransport(iframe.contentWindow!, iframe.contentWindow!));
  iframe.srcdoc = content.text;
  await initialized;
  await bridge.sendToolInput({ arguments: c.args });
  const result = await client.callTool({ name: c.tool, arguments: c.args });
  await bridge.sendToolResult(result as never);
  return {
    uri,
    mimeType: content.mimeType,
    meta: content._meta ?? null,
    toolMeta: tool._meta ?? null,
    result,
    sized,
  };
}

(window as unknown as { runCase: typeof runCase }).runCase = runCase;
