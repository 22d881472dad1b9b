// One sign-in through loanhost's OAuth facade with the TypeScript SDK v2 client
// (@modelcontextprotocol/client), as a client that follows RFC 9207: the SDK discovers the
// metadata, sends the user to /authorize, and this script plays the browser (following every
// redirect until the client's callback) and the callback (handing its parameters, `iss` among
// them, to transport.finishAuth, which checks `iss` against the issuer it recorded). Then one
// tool call with the token. Prints one JSON line: the call's outcome or the SDK's refusal, and
// what the callback received.
//   node ts_oauth_client.mjs BASE_URL EMAIL
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from "@modelcontextprotocol/client";

const [, , base, email] = process.argv;
const REDIRECT = "http://127.0.0.1:9/callback";
const expectedState = crypto.randomUUID();

class Provider {
  #tokens;
  #verifier;
  #discovery;
  authorizeUrl;
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata() {
    return {
      client_name: "loanhost-test",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      token_endpoint_auth_method: "client_secret_post",
    };
  }
  state() {
    return expectedState;
  }
  clientInformation() {
    return { client_id: "loanhost-demo", client_secret: "loanhost-demo-secret" };
  }
  tokens() {
    return this.#tokens;
  }
  saveTokens(tokens) {
    this.#tokens = tokens;
  }
  redirectToAuthorization(url) {
    this.authorizeUrl = url;
  }
  saveCodeVerifier(verifier) {
    this.#verifier = verifier;
  }
  codeVerifier() {
    return this.#verifier;
  }
  saveDiscoveryState(state) {
    this.#discovery = state;
  }
  discoveryState() {
    return this.#discovery;
  }
}

/** The browser: from the authorization URL to the client's callback, one redirect at a time,
 * keeping the cookies each origin sets (the facade's callback binds a sign-in to one). */
async function browse(start) {
  const hops = [];
  const jar = new Map();
  let url = start.toString();
  for (let i = 0; i < 5 && !url.startsWith(REDIRECT); i++) {
    const next = new URL(url);
    // The embedded dev IdP signs in whoever login_hint names; other IdPs ignore it.
    if (i === 1) next.searchParams.set("login_hint", email);
    const cookies = jar.get(next.origin);
    const reply = await fetch(next, {
      redirect: "manual",
      headers: cookies ? { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join("; ") } : {},
    });
    for (const set of reply.headers.getSetCookie()) {
      const [pair] = set.split(";");
      const at = pair.indexOf("=");
      if (!jar.has(next.origin)) jar.set(next.origin, new Map());
      jar.get(next.origin).set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
    }
    if (reply.status !== 302 && reply.status !== 303) {
      throw new Error(`${next.origin}${next.pathname} answered ${reply.status}: ${await reply.text()}`);
    }
    hops.push(next.searchParams.get("redirect_uri"));
    url = new URL(reply.headers.get("location"), next).toString();
  }
  return { callback: new URL(url), idpRedirectUri: hops[1] ?? null };
}

const provider = new Provider();
const result = {};
try {
  const first = new Client({ name: "loanhost-test", version: "1.0.0" });
  try {
    await first.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider }));
    throw new Error("connected without signing in");
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  const { callback, idpRedirectUri } = await browse(provider.authorizeUrl);
  result.idpRedirectUri = idpRedirectUri;
  result.callbackParams = [...callback.searchParams.keys()].sort();
  result.iss = callback.searchParams.get("iss");
  if (callback.searchParams.get("state") !== expectedState) throw new Error("state mismatch");
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
  await transport.finishAuth(callback.searchParams);
  const client = new Client({ name: "loanhost-test", version: "1.0.0" });
  await client.connect(transport);
  const call = await client.callTool({ name: "get_loan_reporting_metadata", arguments: {} });
  result.isError = call.isError ?? false;
  await client.close();
} catch (e) {
  result.error = `${e?.name ?? "Error"}: ${e?.message ?? e}`;
}
console.log(JSON.stringify(result));
