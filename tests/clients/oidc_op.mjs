// A certified OpenID Provider for loanhost's end-to-end tests: `oidc-provider` (OpenID
// Certified), on a loopback port, configured as an operator would configure it for an API:
// two confidential clients (client_secret_basic and client_secret_post) whose redirect URI is
// loanhost's authorization callback, RFC 8707 resource indicators with loanhost's audience as
// the one resource server (JWT access tokens signed with OP_ALG, the account's email in them),
// refresh tokens for `offline_access`, PKCE required, and its own login and consent pages
// (devInteractions), which the tests drive as a browser would. It sends RFC 9207's `iss`.
//
// Environment: OP_AUDIENCE (loanhost's LOANHOST_MCP_AUDIENCE), OP_REDIRECT_URI (loanhost's
// {base_url}/authorize/callback), OP_PORT (else a free one), OP_ALG (ES256 or RS256),
// OP_EXTRA_KEYS=1 to publish, beside the signing keys, an Ed25519 key and keys loanhost does
// not verify with (P-521, an X25519 key and an RSA key for encryption). Prints one JSON line: {"issuer", "clients": {...}}; serves until killed.
//
// OP_MODE=entra sets it up as Microsoft Entra ID (v2) behaves for an API: the issuer is one
// tenant's (`/<OP_TENANT>/v2.0`), a `resource` parameter is refused (AADSTS901002), an
// authorization request must name the API's scope `<OP_AUDIENCE>/.default` (AADSTS28000: Entra
// would issue a token for another API), access tokens name the API by OP_TOKEN_AUDIENCE (the
// application id, as v2 tokens do) and carry the account's email in OP_EMAIL_CLAIM (`upn` or
// `preferred_username`), never `email`; `offline_access` is honoured without `prompt=consent`
// (Entra does; oidc-provider follows OpenID Connect Core §11, so the stand-in adds the prompt).
//
// OP_MODE=okta sets it up as an Okta custom authorization server behaves: the issuer is the
// server's (`/oauth2/default`), its routes Okta's (`/v1/authorize`, `/v1/token`, `/v1/keys`),
// a scope it does not define is refused (`invalid_scope`), access tokens carry the audience it
// is configured with (OP_AUDIENCE) whatever the request names, and Okta's claims (`sub` the
// login, `uid`, `cid`, `scp`, `ver: 1`) beside the `email` claim an operator adds. Okta's
// documentation names no `resource` parameter: the stand-in refuses one, the stricter reading.
// `offline_access` is honoured without `prompt=consent`, as Okta does.

import http from "node:http";

import * as jose from "jose";
import Provider, { errors } from "oidc-provider";

const audience = process.env.OP_AUDIENCE;
const callback = process.env.OP_REDIRECT_URI;
const alg = process.env.OP_ALG || "ES256";
const entra = process.env.OP_MODE === "entra";
const okta = process.env.OP_MODE === "okta";
// The scopes an Okta authorization server defines out of the box.
const oktaScopes = ["openid", "profile", "email", "address", "phone", "offline_access", "device_sso"];
const tokenAudience = process.env.OP_TOKEN_AUDIENCE || audience;
const emailClaim = process.env.OP_EMAIL_CLAIM || "email";
const apiScope = `${audience.replace(/\/$/, "")}/.default`;
const tenantPath = entra
  ? `/${process.env.OP_TENANT || "7d3c1a9e-0b4f-4c2d-8e6a-5f9b1c2d3e4f"}/v2.0`
  : okta
    ? "/oauth2/default"
    : "";
if (!audience || !callback) throw new Error("OP_AUDIENCE and OP_REDIRECT_URI are required");

async function key(keyAlg, kid, use, options = {}) {
  const { privateKey } = await jose.generateKeyPair(keyAlg, { extractable: true, ...options });
  const jwk = await jose.exportJWK(privateKey);
  return { ...jwk, alg: keyAlg, kid, use };
}

const keys = [await key("ES256", "es256-sig", "sig"), await key("RS256", "rs256-sig", "sig")];
if (process.env.OP_EXTRA_KEYS === "1") {
  keys.push(await key("EdDSA", "ed25519-sig", "sig", { crv: "Ed25519" }));
  keys.push(await key("ES512", "p521-sig", "sig"));
  keys.push(await key("ECDH-ES", "x25519-enc", "enc", { crv: "X25519" }));
  keys.push(await key("RSA-OAEP-256", "rsa-enc", "enc"));
}

// OP_PORT, or a free port: the issuer names it.
const port = process.env.OP_PORT
  ? Number(process.env.OP_PORT)
  : await new Promise((resolve) => {
      const probe = http.createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address();
        probe.close(() => resolve(port));
      });
    });
const issuer = `http://127.0.0.1:${port}${tenantPath}`;

const clients = {
  basic: { client_id: "loanhost-basic", client_secret: "loanhost-basic-secret-0123456789abcdef" },
  post: { client_id: "loanhost-post", client_secret: "loanhost-post-secret-0123456789abcdef" },
};

const provider = new Provider(issuer, {
  clients: [
    {
      ...clients.basic,
      redirect_uris: [callback],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_basic",
    },
    {
      ...clients.post,
      redirect_uris: [callback],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_post",
    },
  ],
  jwks: { keys },
  ...(okta ? { routes: { authorization: "/v1/authorize", token: "/v1/token", jwks: "/v1/keys", userinfo: "/v1/userinfo" } } : {}),
  // The sign-in page's login is the account's email.
  async findAccount(ctx, id) {
    return { accountId: id, async claims() { return { sub: id, email: id, email_verified: true }; } };
  },
  features: {
    devInteractions: { enabled: true },
    // Encrypted request objects: the encryption keys in the key set are the OP's own for them.
    encryption: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => audience,
      useGrantedResource: () => true,
      getResourceServerInfo(ctx, resource) {
        // At /auth the query is checked before the OP reads it (a resumed sign-in restores the
        // defaulted resource); at /token a resource the request named is refused here.
        if (entra && ctx.oidc.route === "token" && ctx.oidc.body?.resource !== undefined) {
          throw new errors.InvalidTarget("AADSTS901002: The 'resource' request parameter is not supported.");
        }
        // At /token a scope beyond the grant is refused by the OP itself (`invalid_scope`).
        if (okta && ctx.oidc.route === "token" && ctx.oidc.body?.resource !== undefined) {
          throw new errors.InvalidRequest("The 'resource' parameter is not supported by this authorization server.");
        }
        if (resource !== audience) throw new errors.InvalidTarget();
        const asked = (ctx.oidc.params.scope || "").split(" ");
        if (entra && ctx.oidc.route === "authorization" && !asked.includes(apiScope)) {
          throw new errors.InvalidScope(`AADSTS28000: the request names no scope of ${audience}`, apiScope);
        }
        return {
          scope: entra ? `offline_access ${apiScope}` : "offline_access",
          audience: tokenAudience,
          accessTokenTTL: 3600,
          accessTokenFormat: "jwt",
          jwt: { sign: { alg } },
        };
      },
    },
  },
  extraTokenClaims(ctx, token) {
    if (token.kind !== "AccessToken") return undefined;
    if (okta) {
      return { email: token.accountId, uid: `00u${Buffer.from(token.accountId).toString("hex").slice(0, 17)}`, cid: token.clientId, scp: (token.scope || "").split(" ").filter(Boolean), ver: 1 };
    }
    return entra ? { [emailClaim]: token.accountId, ver: "2.0" } : { email: token.accountId };
  },
  cookies: { keys: ["loanhost-test-cookie-key"] },
});
provider.proxy = false;
if (entra) {
  provider.use(async (ctx, next) => {
    if (ctx.path === "/auth") {
      if (ctx.query.resource !== undefined) {
        ctx.status = 400;
        ctx.body = { error: "invalid_target", error_description: "AADSTS901002: The 'resource' request parameter is not supported." };
        return;
      }
      if (ctx.query.prompt === undefined) ctx.querystring = `${ctx.querystring}&prompt=consent`;
    }
    await next();
  });
}
if (okta) {
  const undefinedScope = (scope) => (scope || "").split(" ").filter((s) => s && !oktaScopes.includes(s));
  provider.use(async (ctx, next) => {
    const refuse = (error, error_description) => {
      ctx.status = 400;
      ctx.body = { error, error_description };
    };
    if (ctx.path === "/v1/authorize") {
      if (ctx.query.resource !== undefined || ctx.query.audience !== undefined) {
        return refuse("invalid_request", "The 'resource' parameter is not supported by this authorization server.");
      }
      if (undefinedScope(ctx.query.scope).length > 0) {
        return refuse("invalid_scope", "One or more scopes are not configured for the authorization server resource.");
      }
      if (ctx.query.prompt === undefined) ctx.querystring = `${ctx.querystring}&prompt=consent`;
    }
    await next();
  });
}

// The first line on standard output is the test's; anything printed later goes to standard
// error (the test reads no more of standard output).
process.stdout.on("error", () => {});
console.log = (...args) => console.error(...args);
// The tenant's path is the issuer's; every route is served under it and, for the OP's own
// pages, without it.
const handle = provider.callback();
const server = http.createServer((req, res) => {
  if (tenantPath && req.url.startsWith(tenantPath)) {
    req.originalUrl = req.url;
    req.url = req.url.slice(tenantPath.length) || "/";
  }
  handle(req, res);
});
server.listen(port, "127.0.0.1");
server.on("listening", () => {
  process.stdout.write(`${JSON.stringify({ issuer, clients, jwks: `${issuer}/jwks`, base: `http://127.0.0.1:${port}${tenantPath}` })}\n`);
});
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
