// One sign-in through loanhost's OAuth facade with the TypeScript SDK v2 client
// (@modelcontextprotocol/client), as a client that follows RFC 9207: the SDK discovers the
// metadata, sends the user to /authorize, and this script plays the browser (following every
// redirect until the client's callback) and the callback (handing its parameters, `iss` among
// them, to transport.finishAuth, which checks `iss` against the issuer it recorded). Then one
// tool call with the token. Prints one JSON line: the call's outcome or the SDK's refusal, and
// what the callback received.
// With a client id, secret and token endpoint authentication method, the pre-registered client
// of an IdP: this script then also fills in the IdP's own login page (the email as the login)
// and accepts its consent page, as a person would.
//   node ts_oauth_client.mjs BASE_URL EMAIL [CLIENT_ID CLIENT_SECRET AUTH_METHOD]
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from "@modelcontextprotocol/client";

const [, , base, email, clientId = "loanhost-demo", clientSecret = "loanhost-demo-secret", authMethod = "client_secret_post"] =
  process.argv;
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
      token_endpoint_auth_method: authMethod,
    };
  }
  state() {
    return expectedState;
  }
  clientInformation() {
    return { client_id: clientId, client_secret: clientSecret };
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

/** The first form of a page: its action and its named inputs. */
function formOf(html) {
  const unescape = (t) => t.replace(/&amp;/g, "&").replace(/&quot;/g, '"').replace(/&#x2F;/g, "/").replace(/&#39;/g, "'");
  const action = /<form[^>]*action="([^"]*)"/.exec(html)?.[1] ?? "";
  const fields = {};
  for (const tag of html.match(/<input[^>]*>/g) ?? []) {
    const name = /name="([^"]*)"/.exec(tag)?.[1];
    if (name) fields[unescape(name)] = unescape(/value="([^"]*)"/.exec(tag)?.[1] ?? "");
  }
  return { action: unescape(action), fields };
}

/** The browser: from the authorization URL to the client's callback, one redirect at a time,
 * keeping the cookies each origin sets (the facade's callback binds a sign-in to one), and
 * filling in an IdP's login page (the email as the login) and accepting its consent page. */
async function browse(start) {
  const hops = [];
  const jar = new Map();
  let url = start.toString();
  let post = null;
  for (let i = 0; i < 16 && !url.startsWith(REDIRECT); i++) {
    const next = new URL(url);
    // The embedded dev IdP signs in whoever login_hint names; other IdPs ignore it.
    if (i === 1) next.searchParams.set("login_hint", email);
    const cookies = jar.get(next.origin);
    const headers = cookies ? { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join("; ") } : {};
    const reply = await fetch(next, {
      redirect: "manual",
      method: post ? "POST" : "GET",
      headers: post ? { ...headers, "content-type": "application/x-www-form-urlencoded" } : headers,
      body: post ? new URLSearchParams(post).toString() : undefined,
    });
    post = null;
    for (const set of reply.headers.getSetCookie()) {
      const [pair] = set.split(";");
      const at = pair.indexOf("=");
      if (!jar.has(next.origin)) jar.set(next.origin, new Map());
      jar.get(next.origin).set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
    }
    if (reply.status === 200) {
      const { action, fields } = formOf(await reply.text());
      if ("login" in fields) Object.assign(fields, { login: email, password: "any" });
      (result.pages ??= []).push("login" in fields ? "login" : "consent");
      post = fields;
      url = new URL(action, next).toString();
      continue;
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
  result.hasRefreshToken = Boolean(provider.tokens()?.refresh_token);
  await client.close();
} catch (e) {
  result.error = `${e?.name ?? "Error"}: ${e?.message ?? e}`;
}
console.log(JSON.stringify(result));
