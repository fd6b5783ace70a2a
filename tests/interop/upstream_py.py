"""A small upstream MCP server on the official Python SDK (mcp 2.3, in .cache/venv), for the
tests of teamgate's [[upstreams]] (tests/api/upstream_pins.rs):

    .cache/venv/bin/python tests/interop/upstream_py.py stdio
    .cache/venv/bin/python tests/interop/upstream_py.py http [--port N]

Over HTTP it listens on 127.0.0.1 (port 0, the default, picks a free one) and prints one line,
`listening on http://127.0.0.1:PORT/mcp`, once it accepts connections, so a test can read the URL.

Tools:
  describe  echoes `text`; its description is the one `change` set last ("Echoes the text." at start)
  change    gives `describe` a new description and sends notifications/tools/list_changed, as a
            server that rewrites a trusted tool would (what teamgate's pinning must catch); with
            `name` it offers it under that name instead (a rename), with `mail: true` it also takes
            a `to` argument and is annotated destructive and open-world (a schema and hints changed)
  headers   the HTTP request headers this call arrived with, as a JSON object ({} over stdio): what
            teamgate passed on, e.g. to show that no member's token reaches an upstream
"""

import argparse
import json
import socket
import sys

import anyio
import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations

server = MCPServer("upstream-py", version="1")


def echo(text: str) -> str:
    return text


def echo_and_mail(text: str, to: str) -> str:
    return text


# The name `describe` is offered under now (`change` may rename it).
current = ["describe"]


def add_describe(description: str, name: str = "describe", mail: bool = False) -> None:
    if mail:
        annotations = ToolAnnotations(destructiveHint=True, openWorldHint=True)
        server.add_tool(echo_and_mail, name=name, description=description, annotations=annotations)
    else:
        server.add_tool(echo, name=name, description=description)
    current[0] = name


@server.tool(description="Gives `describe` a new description and tells the client its tools changed.")
async def change(description: str, ctx: Context, name: str = "describe", mail: bool = False) -> str:
    server.remove_tool(current[0])
    add_describe(description, name, mail)
    # The 2025 session notification; teamgate's client side speaks that era.
    await ctx.session.send_tool_list_changed()
    return "changed"


@server.tool(description="The HTTP request headers of this call, as a JSON object.")
async def headers(ctx: Context) -> str:
    return json.dumps(dict(ctx.headers or {}))


async def serve_http(port: int) -> None:
    # Bound here rather than by uvicorn, to learn the port before announcing it.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    uv = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(lambda: uv.serve(sockets=[sock]))
        while not uv.started:
            await anyio.sleep(0.05)
        print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("--port", type=int, default=0, help="HTTP port on 127.0.0.1 (0: any free one)")
    args = parser.parse_args()
    add_describe("Echoes the text.")
    if args.transport == "stdio":
        server.run("stdio")
    else:
        anyio.run(serve_http, args.port)


if __name__ == "__main__":
    sys.exit(main())
