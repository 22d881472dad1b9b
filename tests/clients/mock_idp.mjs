// An independent upstream identity provider for loanhost's facade tests: oauth2-mock-server
// (npm), with the Auth0-like behaviour the facade relies on. The access token's `aud` is
// whatever `audience` the /authorize request carried (so a facade that failed to set it
// yields tokens loanhost rejects), and the email claim comes from MOCK_EMAIL.
// With MOCK_SEND_ISS=1 it adds RFC 9207's `iss` (its own issuer) to the authorization response,
// as Keycloak, Okta and others do.
// Prints {"issuer": "..."} on its first line, then serves until stdin closes.
import { OAuth2Server } from "oauth2-mock-server";

const email = process.env.MOCK_EMAIL ?? "agent@example.com";
// Lifetime of the access tokens it issues, in seconds.
const ttl = Number(process.env.MOCK_TTL ?? "3600");
const sendIss = process.env.MOCK_SEND_ISS === "1";
const server = new OAuth2Server();
await server.issuer.keys.generate("RS256");
await server.start(0, "127.0.0.1");
const issuer = `http://127.0.0.1:${server.address().port}`;
server.issuer.url = issuer;

// What each /authorize request carried, by the code it produced.
const requestByCode = new Map();
let lastRequest;

server.service.on("beforeAuthorizeRedirect", (redirect, req) => {
  const code = redirect.url.searchParams.get("code");
  requestByCode.set(code, {
    audience: req.query.audience ?? null,
    resource: req.query.resource ?? null,
    scope: req.query.scope ?? null,
    redirect_uri: req.query.redirect_uri ?? null,
  });
  if (sendIss) redirect.url.searchParams.set("iss", issuer);
});

server.service.on("beforeTokenSigning", (token, req) => {
  const code = req.body?.code;
  const request = (code && requestByCode.get(code)) || lastRequest;
  lastRequest = request;
  if (request?.audience) token.payload.aud = request.audience;
  token.payload.email = email;
  token.payload.exp = token.payload.iat + ttl;
  // Lets the test see what the IdP received, inside the token it issued.
  token.payload.authorize_request = request ?? null;
  token.payload.token_redirect_uri = req.body?.redirect_uri ?? null;
});

server.service.on("beforeResponse", (response) => {
  if (response.body?.access_token) response.body.expires_in = ttl;
});

console.log(JSON.stringify({ issuer }));
process.stdin.resume();
process.stdin.on("end", async () => {
  await server.stop();
  process.exit(0);
});
