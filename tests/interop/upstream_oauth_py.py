"""An upstream MCP server on the official Python SDK (mcp, in .cache/venv) that acts for the member
whose OAuth access token a call carries, for tests/api/upstream_oauth.rs (issue 29):

    .cache/venv/bin/python tests/interop/upstream_oauth_py.py --issuer http://127.0.0.1:PORT

It is a protected resource through the SDK's own auth (`AuthSettings`, a `TokenVerifier`): every
MCP request, listing included, needs a bearer token, a JWT access token for this resource (RFC
8707/9068) with scope `mcp` checked against the issuer's JWKS; without one it answers 401 with
`WWW-Authenticate: Bearer ... resource_metadata="..."`, its RFC 9728 metadata (naming `--issuer`,
at /.well-known/oauth-protected-resource/mcp, served by the SDK). Prints
`listening on http://127.0.0.1:PORT/mcp`. Its tool `whoami` answers the token's `sub`; its prompt
`greeting` greets it. Its tool `more_tools` adds the tool `extra` and tells the calling session
`notifications/tools/list_changed` on the call's own stream. `--port` binds a given port (a test restarting it there).
"""

import argparse
import json
import socket
import urllib.error
import urllib.request

import anyio
import jwt
import uvicorn
from mcp import types
from mcp.server import MCPServer
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context

ISSUER = ""
RESOURCE = ""


def claims_of(token: str) -> dict:
    """The token's claims once its signature, issuer, audience and expiry check out; else raises."""
    with urllib.request.urlopen(f"{ISSUER}/.well-known/openid-configuration") as answer:
        jwks_uri = json.load(answer)["jwks_uri"]
    key = jwt.PyJWKClient(jwks_uri).get_signing_key_from_jwt(token)
    return jwt.decode(token, key.key, algorithms=["RS256", "PS256", "ES256"], audience=RESOURCE,
                      issuer=ISSUER, options={"require": ["exp", "sub", "aud"]})


class JwtVerifier:
    """The SDK's TokenVerifier: a JWT access token of the issuer for this resource, or none."""

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            claims = await anyio.to_thread.run_sync(claims_of, token)
        except Exception:  # noqa: BLE001 - any refusal is a 401
            return None
        return AccessToken(token=token, client_id=str(claims.get("client_id", "")),
                           scopes=str(claims.get("scope", "")).split(), expires_at=claims["exp"],
                           resource=RESOURCE, subject=claims["sub"])


def build() -> MCPServer:
    auth = AuthSettings(issuer_url=ISSUER, resource_server_url=RESOURCE, required_scopes=["mcp"],
                        validate_token_resource=False)
    server = MCPServer("upstream-oauth-py", version="1", token_verifier=JwtVerifier(), auth=auth)

    @server.tool(description="The subject of the access token this call carries.")
    async def whoami(ctx: Context) -> str:
        headers = {k.lower(): v for k, v in dict(ctx.headers or {}).items()}
        authorization = headers.get("authorization", "")
        if not authorization.startswith("Bearer "):
            raise ValueError("no bearer token")
        token = authorization.removeprefix("Bearer ")
        try:
            claims = await anyio.to_thread.run_sync(claims_of, token)
        except jwt.PyJWTError as refused:
            raise ValueError(f"the token is refused: {refused}") from None
        return claims["sub"]

    @server.tool(description="Adds the tool `extra` and says the tool list changed.")
    async def more_tools(ctx: Context) -> str:
        def extra() -> str:
            return "extra"

        server.add_tool(extra, name="extra", description="Added by more_tools.")
        # On this call's own stream: said on the standalone GET stream, it is
        # dropped whenever the caller's connection has not opened that yet.
        await ctx.session.send_notification(types.ToolListChangedNotification(), related_request_id=ctx.request_id)
        return "added"

    @server.prompt(description="A greeting for the token's subject.")
    async def greeting(ctx: Context) -> str:
        headers = {k.lower(): v for k, v in dict(ctx.headers or {}).items()}
        token = headers.get("authorization", "").removeprefix("Bearer ")
        claims = await anyio.to_thread.run_sync(claims_of, token)
        return f"hello {claims['sub']}"

    return server


async def serve_http(port: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    global RESOURCE
    RESOURCE = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    app = build().streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    uv = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(lambda: uv.serve(sockets=[sock]))
        while not uv.started:
            await anyio.sleep(0.05)
        print(f"listening on {RESOURCE}", flush=True)


def main() -> None:
    global ISSUER
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issuer", required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    ISSUER = args.issuer.rstrip("/")
    anyio.run(serve_http, args.port)


if __name__ == "__main__":
    main()
