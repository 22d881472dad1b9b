"""Drives loanhost with the official Python MCP SDK (mcp==2.3.0), a client nobody here wrote.

Modes (the Rust end-to-end tests run this script and assert on the JSON it prints):
  bearer URL TOKEN MODE     list tools and call them with a bearer token; MODE is the SDK's
                            connect mode (auto: probes server/discover first; legacy).
  oauth  BASE_URL EMAIL [MODE]  the full OAuth flow (MODE: legacy, the default, or auto) with the pre-registered demo client:
                            401 -> metadata -> /authorize -> dev IdP -> /token -> calls; then
                            waits for the access token to expire and calls again (refresh).
  op BASE_URL EMAIL CLIENT_ID CLIENT_SECRET AUTH_METHOD [cancel]
                            sign-in through a real OpenID Provider's own login and consent
                            pages (filled in as a person would: the email as the login, then
                            "continue"), one call, a refresh through /token with the client's
                            credentials (AUTH_METHOD: client_secret_basic or _post) and a call
                            with the refreshed token; with `cancel`, the person cancels at the
                            login page and the callback's parameters are printed.
  signin BASE_URL EMAIL     one sign-in and one call, as a client that follows RFC 9207: the
                            browser follows every redirect to the client's callback, whose
                            code, state and iss go to the SDK; prints what the callback got, or
                            the SDK's refusal as {"error": ...}.
"""

import asyncio
import json
import sys
import urllib.parse

import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

CLIENT_ID = "loanhost-demo"
CLIENT_SECRET = "loanhost-demo-secret"
REDIRECT = "http://127.0.0.1:9/callback"


async def exercise(client: Client) -> dict:
    tools = await client.list_tools()
    ok = await client.call_tool("get_loan_reporting_metadata", {})
    bad = await client.call_tool("get_loan_reporting_metadata", {"userId": "someone-else"})
    return {
        "protocolVersion": client.protocol_version,
        "tools": sorted(t.name for t in tools.tools),
        "readOnly": [bool(t.annotations and t.annotations.read_only_hint) for t in tools.tools],
        "isError": ok.is_error,
        "structured": ok.structured_content,
        "badIsError": bad.is_error,
        "badText": bad.content[0].text,
    }


async def bearer(url: str, token: str, mode: str) -> dict:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as hc:
        async with Client(streamable_http_client(url, http_client=hc), mode=mode) as client:
            return await exercise(client)


class MemoryStorage(TokenStorage):
    """Token storage holding the pre-registered client's credentials (no /register call)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.saved = 0
        self.client = OAuthClientInformationFull(
            client_id=CLIENT_ID,
            client_secret=CLIENT_SECRET,
            redirect_uris=[REDIRECT],
            token_endpoint_auth_method="client_secret_post",
            grant_types=["authorization_code", "refresh_token"],
        )

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens
        self.saved += 1

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


async def oauth(base: str, email: str, mode: str) -> dict:
    storage = MemoryStorage()
    seen: dict = {}
    browser = httpx2.AsyncClient(follow_redirects=False)

    provider = signin_provider(base, email, storage, browser, seen)
    # What the token endpoint was sent and answered, as the client's HTTP stack saw it.
    token_requests: list = []

    async def on_response(response) -> None:
        request = response.request
        if request.url.path.endswith("/token"):
            form = dict(urllib.parse.parse_qsl(request.content.decode()))
            token_requests.append({"grantType": form.get("grant_type"), "status": response.status_code})

    async with httpx2.AsyncClient(auth=provider, timeout=30, event_hooks={"response": [on_response]}) as hc:
        async with Client(streamable_http_client(f"{base}/mcp", http_client=hc), mode=mode) as client:
            first = await exercise(client)
            first_token = storage.tokens.access_token
            expires_in = storage.tokens.expires_in or 1
            await asyncio.sleep(expires_in + 1.5)
            # The expired token, presented on its own, is refused.
            expired = await browser.post(
                f"{base}/mcp",
                headers={"authorization": f"Bearer {first_token}", "accept": "application/json, text/event-stream"},
                json={"jsonrpc": "2.0", "id": 9, "method": "tools/list"},
            )
            second = await client.call_tool("get_loan_reporting_metadata", {})
            second_token = storage.tokens.access_token
    await browser.aclose()
    return {
        "first": first,
        "idpQuery": seen["idpQuery"],
        "authorizeCount": seen.get("authorizeCount", 0),
        "expiresIn": expires_in,
        "expiredStatus": expired.status_code,
        "tokenRequests": token_requests,
        "refreshedAccessToken": second_token != first_token,
        "hasRefreshToken": bool(storage.tokens.refresh_token),
        "tokenSaves": storage.saved,
        "secondIsError": second.is_error,
    }


def signin_provider(base: str, email: str, storage: "MemoryStorage", browser, seen: dict) -> OAuthClientProvider:
    """The SDK's OAuth provider with a stand-in for the user's browser and the client's callback."""

    async def redirect_handler(authorize_url: str) -> None:
        # The "user agent": facade /authorize -> IdP sign-in (picking the user) -> (the facade's
        # callback, when it is on) -> the client's callback.
        seen["authorize"] = authorize_url
        seen["authorizeCount"] = seen.get("authorizeCount", 0) + 1
        to_idp = await browser.get(authorize_url)
        assert to_idp.status_code == 302, (to_idp.status_code, to_idp.text)
        idp_url = to_idp.headers["location"]
        seen["idpQuery"] = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(idp_url).query))
        url = idp_url + "&" + urllib.parse.urlencode({"login_hint": email})
        for _ in range(4):
            hop = await browser.get(url)
            assert hop.status_code in (302, 303), (hop.status_code, hop.text)
            url = hop.headers["location"]
            if url.startswith(REDIRECT):
                break
        callback = urllib.parse.urlsplit(url)
        params = dict(urllib.parse.parse_qsl(callback.query))
        seen["callbackParams"] = sorted(params)
        seen["code"] = params["code"]
        seen["state"] = params.get("state")
        seen["iss"] = params.get("iss")

    async def callback_handler() -> AuthorizationCodeResult:
        # A client following RFC 9207 hands the callback's iss to the SDK, which checks it.
        return AuthorizationCodeResult(code=seen["code"], state=seen["state"], iss=seen["iss"])

    return OAuthClientProvider(
        server_url=f"{base}/mcp",
        client_metadata=OAuthClientMetadata(
            redirect_uris=[REDIRECT],
            token_endpoint_auth_method="client_secret_post",
            grant_types=["authorization_code", "refresh_token"],
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )


def leaves(e: BaseException) -> list:
    """The exceptions inside (nested) exception groups, or `e` itself."""
    if isinstance(e, BaseExceptionGroup):
        return [leaf for inner in e.exceptions for leaf in leaves(inner)]
    return [e]


async def signin(base: str, email: str) -> dict:
    storage = MemoryStorage()
    seen: dict = {}
    browser = httpx2.AsyncClient(follow_redirects=False)
    provider = signin_provider(base, email, storage, browser, seen)
    try:
        async with httpx2.AsyncClient(auth=provider, timeout=30) as hc:
            async with Client(streamable_http_client(f"{base}/mcp", http_client=hc)) as client:
                result = await client.call_tool("get_loan_reporting_metadata", {})
        outcome = {"isError": result.is_error}
    except BaseException as e:  # noqa: BLE001 - the SDK's refusal is the result
        outcome = {"error": "; ".join(f"{type(x).__name__}: {x}" for x in leaves(e))}
    await browser.aclose()
    return {
        **outcome,
        "idpRedirectUri": seen.get("idpQuery", {}).get("redirect_uri"),
        "callbackParams": seen.get("callbackParams"),
        "iss": seen.get("iss"),
    }


def form_of(html: str) -> tuple[str, dict]:
    """The first form of a page: its action and its fields (inputs with a name and a value)."""
    import html as htmllib
    import re

    action = re.search(r'<form[^>]*action="([^"]*)"', html)
    fields = {}
    for tag in re.findall(r"<input[^>]*>", html):
        name = re.search(r'name="([^"]*)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        if name:
            fields[htmllib.unescape(name.group(1))] = htmllib.unescape(value.group(1)) if value else ""
    return (htmllib.unescape(action.group(1)) if action else ""), fields


async def through_pages(browser, url: str, email: str, cancel: bool, seen: dict) -> str:
    """The person at the browser: follows redirects, signs in on the OP's login page with
    `email` (or cancels there) and accepts its consent page, until the client's callback."""
    method, data = "GET", None
    for _ in range(16):
        if url.startswith(REDIRECT):
            return url
        resp = await browser.request(method, url, data=data)
        method, data = "GET", None
        if resp.status_code in (302, 303):
            url = urllib.parse.urljoin(url, resp.headers["location"])
            if "redirect_uri" in url and "idpQuery" not in seen:
                seen["idpQuery"] = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
            continue
        assert resp.status_code == 200, (url, resp.status_code, resp.text[:500])
        action, fields = form_of(resp.text)
        target = urllib.parse.urljoin(url, action)
        if "login" in fields:
            seen["pages"] = seen.get("pages", []) + ["login"]
            if cancel:
                # The page's "cancel" link: the form's action, then /abort.
                url = target.rstrip("/") + "/abort"
                continue
            fields.update({"login": email, "password": "any"})
        else:
            seen["pages"] = seen.get("pages", []) + ["consent"]
        method, data, url = "POST", fields, target
    raise RuntimeError(f"no way to the client's callback from {url}")


async def op(base: str, email: str, client_id: str, secret: str, method: str, cancel: bool) -> dict:
    storage = MemoryStorage()
    storage.client = OAuthClientInformationFull(
        client_id=client_id,
        client_secret=secret,
        redirect_uris=[REDIRECT],
        token_endpoint_auth_method=method,
        grant_types=["authorization_code", "refresh_token"],
    )
    seen: dict = {}
    browser = httpx2.AsyncClient(follow_redirects=False, timeout=30)

    async def redirect_handler(authorize_url: str) -> None:
        url = await through_pages(browser, authorize_url, email, cancel, seen)
        params = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
        seen["callback"] = params

    async def callback_handler() -> AuthorizationCodeResult:
        p = seen["callback"]
        return AuthorizationCodeResult(code=p.get("code", ""), state=p.get("state"), iss=p.get("iss"))

    provider = OAuthClientProvider(
        server_url=f"{base}/mcp",
        client_metadata=OAuthClientMetadata(
            redirect_uris=[REDIRECT],
            token_endpoint_auth_method=method,
            grant_types=["authorization_code", "refresh_token"],
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    out: dict = {}
    try:
        async with httpx2.AsyncClient(auth=provider, timeout=30) as hc:
            async with Client(streamable_http_client(f"{base}/mcp", http_client=hc)) as client:
                first = await client.call_tool("get_loan_reporting_metadata", {})
                out["protocolVersion"] = client.protocol_version
        out["isError"] = first.is_error
        token = storage.tokens
        out["hasRefreshToken"] = bool(token.refresh_token)
        out["accessToken"] = token.access_token
        # A refresh through loanhost's /token, with the client's credentials as registered.
        form = {"grant_type": "refresh_token", "refresh_token": token.refresh_token or ""}
        auth = None
        if method == "client_secret_basic":
            auth = httpx2.BasicAuth(client_id, secret)
        else:
            form.update({"client_id": client_id, "client_secret": secret})
        form["resource"] = base
        refreshed = await browser.post(f"{base}/token", data=form, auth=auth)
        out["refreshStatus"] = refreshed.status_code
        new = refreshed.json().get("access_token")
        out["refreshedAccessToken"] = new
        if new:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {new}"}) as hc:
                async with Client(streamable_http_client(f"{base}/mcp", http_client=hc)) as client:
                    again = await client.call_tool("get_loan_reporting_metadata", {})
            out["refreshedIsError"] = again.is_error
    except BaseException as e:  # noqa: BLE001 - the SDK's refusal is the result
        out["error"] = "; ".join(f"{type(x).__name__}: {x}" for x in leaves(e))
        if storage.tokens:
            out["accessToken"] = storage.tokens.access_token
    await browser.aclose()
    out["idpQuery"] = seen.get("idpQuery")
    out["pages"] = seen.get("pages")
    out["callback"] = seen.get("callback")
    return out


def main() -> None:
    mode = sys.argv[1]
    if mode == "bearer":
        result = asyncio.run(bearer(sys.argv[2], sys.argv[3], sys.argv[4]))
    elif mode == "oauth":
        result = asyncio.run(oauth(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "legacy"))
    elif mode == "signin":
        result = asyncio.run(signin(sys.argv[2], sys.argv[3]))
    elif mode == "op":
        a = sys.argv
        result = asyncio.run(op(a[2], a[3], a[4], a[5], a[6], len(a) > 7 and a[7] == "cancel"))
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
