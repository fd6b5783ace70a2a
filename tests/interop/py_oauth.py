"""The official Python SDK client's OAuth (mcp 2.3.x in .cache/venv: `OAuthClientProvider` as the
httpx2 auth of the Streamable HTTP transport) against teamgate as the authorization server
(issue 28). Driven by tests/api/oauth_sdk.rs like tests/interop/ts_oauth.mjs:

    .cache/venv/bin/python tests/interop/py_oauth.py --url http://127.0.0.1:PORT/mcp

Discovery from the 401, registration (RFC 7591), `AUTHORIZE <url>` printed for the browser (the Rust
test's headless chromium) and the code taken, as a real CLI client does, by a listener on a loopback
port of its own (RFC 8252), the redirect URI; token, a tool call, a refresh (the access
token's expiry moved into the past), revocation (RFC 7009), and the revoked grant refused (the
client asks for a new authorization). Prints `ok - name` / `not ok - name: reason`, then
`py-oauth: N passed, M failed`; exit 1 on failure.
"""

import argparse
import http.server
import sys
import time
import urllib.parse

import anyio
import httpx2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata


class Callback(http.server.BaseHTTPRequestHandler):
    """The redirect URI: keeps the query of a request to /callback."""

    received = None

    def do_GET(self):
        parts = urllib.parse.urlsplit(self.path)
        if parts.path != "/callback":
            self.send_error(404)
            return
        Callback.received = dict(urllib.parse.parse_qsl(parts.query))
        body = b"<h1>Signed in</h1><p>py-oauth has the code; you can close this window.</p>"
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


listener = http.server.HTTPServer(("127.0.0.1", 0), Callback)
listener.timeout = 90
REDIRECT = f"http://127.0.0.1:{listener.server_address[1]}/callback"
counts = {"passed": 0, "failed": 0, "authorizations": 0}


def report(name, why=None):
    if why is None:
        counts["passed"] += 1
        print(f"ok - {name}", flush=True)
    else:
        counts["failed"] += 1
        print(f"not ok - {name}: {why}", flush=True)


def describe(e):
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


class Memory:
    """Tokens and client information, in memory."""

    tokens = None
    info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.info

    async def set_client_info(self, info):
        self.info = info


class AskedAgain(Exception):
    pass


async def redirect_handler(url):
    counts["authorizations"] += 1
    if counts["authorizations"] > 1:
        raise AskedAgain("a new authorization was asked for")
    print(f"AUTHORIZE {url}", flush=True)


async def callback_handler():
    deadline = time.monotonic() + 90
    while Callback.received is None and time.monotonic() < deadline:
        await anyio.to_thread.run_sync(listener.handle_request)
    query = Callback.received or {}
    return AuthorizationCodeResult(code=query.get("code", ""), state=query.get("state"), iss=query.get("iss"))


async def call_tool(url, auth):
    async with httpx2.AsyncClient(auth=auth, timeout=httpx2.Timeout(15, read=30)) as http:
        async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=15) as client:
            tools = await client.list_tools()
            result = await client.call_tool("teamgate_info", {})
            return len(tools.tools), result.is_error


async def main(url):
    storage = Memory()
    metadata = OAuthClientMetadata(
        client_name="py-oauth",
        redirect_uris=[REDIRECT],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    auth = OAuthClientProvider(url, metadata, storage, redirect_handler, callback_handler)
    try:
        count, is_error = await call_tool(url, auth)
        report("signed in and called a tool", None if count and not is_error else f"{count} tools")
    except BaseException as e:  # noqa: BLE001
        report("signed in and called a tool", describe(e))
    info = storage.info
    report("client registered", None if info and info.client_id.startswith("tgc_") else repr(info))

    first = storage.tokens.refresh_token if storage.tokens else None
    auth.context.token_expiry_time = time.time() - 1
    try:
        await call_tool(url, auth)
        renewed = storage.tokens.refresh_token if storage.tokens else None
        report("refreshed and rotated", None if renewed and renewed != first else "no new refresh token")
    except BaseException as e:  # noqa: BLE001
        report("refreshed and rotated", describe(e))

    async with httpx2.AsyncClient() as http:
        response = await http.post(
            url.rsplit("/", 1)[0] + "/revoke",
            data={"token": storage.tokens.refresh_token, "client_id": info.client_id},
        )
        report("revoked", None if response.status_code == 200 else f"status {response.status_code}")
    auth.context.token_expiry_time = time.time() - 1
    try:
        await call_tool(url, auth)
        report("revoked grant refused", "it was served")
    except BaseException as e:  # noqa: BLE001
        asked = counts["authorizations"] > 1
        report("revoked grant refused", None if asked else describe(e))


async def bounded(url):
    with anyio.fail_after(60):  # a hung server must not hang CI
        await main(url)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    args = parser.parse_args()
    anyio.run(bounded, args.url)
    print(f"py-oauth: {counts['passed']} passed, {counts['failed']} failed", flush=True)
    sys.exit(1 if counts["failed"] else 0)
