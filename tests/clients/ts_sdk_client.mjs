// Real TypeScript SDK clients against loanhost: v2 (@modelcontextprotocol/client, 2026-07-28
// pinned or auto) or v1 (@modelcontextprotocol/sdk 1.32, the 2025-11-25 handshake). Prints one
// JSON line: the negotiated revision, the tools listed, and a call's outcome.
//   node ts_sdk_client.mjs v2|v2-auto|v1 URL TOKEN   (v2 pins 2026-07-28; v2-auto probes)
const [, , flavour, url, token] = process.argv;
const headers = { Authorization: `Bearer ${token}` };
let client, transport;
if (flavour.startsWith("v2")) {
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const mode = flavour === "v2-auto" ? "auto" : { pin: "2026-07-28" };
  client = new Client({ name: "loanhost-test", version: "1.0.0" }, { versionNegotiation: { mode } });
  transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
} else {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  client = new Client({ name: "loanhost-test", version: "1.0.0" });
  transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
}
await client.connect(transport);
const tools = await client.listTools();
const ok = await client.callTool({ name: "get_loan_reporting_metadata", arguments: {} });
const bad = await client.callTool({ name: "get_loan_reporting_metadata", arguments: { userId: "x" } });
const version = client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion ?? null;
console.log(JSON.stringify({
  protocolVersion: version,
  tools: tools.tools.map((t) => t.name).sort(),
  isError: ok.isError ?? false,
  statuses: ok.structuredContent?.statuses?.length ?? null,
  badIsError: bad.isError,
  badText: bad.content?.[0]?.text ?? null,
}));
await client.close();
