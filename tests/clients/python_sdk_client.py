"""Drives loanhost with the official Python MCP SDK (mcp==2.3.0), a client nobody here wrote.

Modes (the Rust end-to-end tests run this script and assert on the JSON it prints):
  bearer URL TOKEN MODE     list tools and call them with a bearer token; MODE is the SDK's
                            connect mode (auto: probes server/discover first; legacy).
  oauth  BASE_URL EMAIL [MODE]  the full OAuth flow (MODE: legacy, the default, or auto) with the pre-registered demo client:
                            401 -> metadata -> /authorize -> dev IdP -> /token -> calls; then
                            waits for the access token to expire and calls again (refresh).
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


def main() -> None:
    mode = sys.argv[1]
    if mode == "bearer":
        result = asyncio.run(bearer(sys.argv[2], sys.argv[3], sys.argv[4]))
    elif mode == "oauth":
        result = asyncio.run(oauth(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "legacy"))
    elif mode == "signin":
        result = asyncio.run(signin(sys.argv[2], sys.argv[3]))
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
