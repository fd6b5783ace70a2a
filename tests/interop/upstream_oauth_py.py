"""An upstream MCP server on the official Python SDK (mcp, in .cache/venv) that acts for the member
whose OAuth access token a call carries, for tests/api/upstream_oauth.rs (issue 29):

    .cache/venv/bin/python tests/interop/upstream_oauth_py.py --issuer http://127.0.0.1:PORT

It publishes RFC 9728 protected resource metadata naming `--issuer` as its authorization server
(at /.well-known/oauth-protected-resource/mcp) and prints `listening on http://127.0.0.1:PORT/mcp`.
Listing its tools needs no token; its tool `whoami` checks the call's bearer token, a JWT access
token for this resource (RFC 8707/9068), against the issuer's JWKS, and answers the token's `sub`.
"""

import argparse
import json
import socket
import urllib.error
import urllib.request

import anyio
import jwt
import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from starlette.responses import JSONResponse
from starlette.routing import Route

server = MCPServer("upstream-oauth-py", version="1")
ISSUER = ""
RESOURCE = ""


@server.tool(description="The subject of the access token this call carries.")
async def whoami(ctx: Context) -> str:
    headers = {k.lower(): v for k, v in dict(ctx.headers or {}).items()}
    authorization = headers.get("authorization", "")
    if not authorization.startswith("Bearer "):
        raise ValueError("no bearer token")
    return await anyio.to_thread.run_sync(subject, authorization)


def subject(authorization: str) -> str:
    with urllib.request.urlopen(f"{ISSUER}/.well-known/openid-configuration") as answer:
        jwks_uri = json.load(answer)["jwks_uri"]
    token = authorization.removeprefix("Bearer ")
    key = jwt.PyJWKClient(jwks_uri).get_signing_key_from_jwt(token)
    try:
        claims = jwt.decode(token, key.key, algorithms=["RS256", "PS256", "ES256"], audience=RESOURCE,
                            issuer=ISSUER, options={"require": ["exp", "sub", "aud"]})
    except jwt.PyJWTError as refused:
        raise ValueError(f"the token is refused: {refused}") from None
    return claims["sub"]


async def metadata(request):
    base = str(request.base_url).rstrip("/")
    return JSONResponse({"resource": f"{base}/mcp", "authorization_servers": [ISSUER],
                         "scopes_supported": ["mcp"]})


async def serve_http() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    app.router.routes.append(Route("/.well-known/oauth-protected-resource/mcp", metadata))
    uv = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(lambda: uv.serve(sockets=[sock]))
        while not uv.started:
            await anyio.sleep(0.05)
        global RESOURCE
        RESOURCE = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)


def main() -> None:
    global ISSUER
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issuer", required=True)
    ISSUER = parser.parse_args().issuer.rstrip("/")
    anyio.run(serve_http)


if __name__ == "__main__":
    main()
