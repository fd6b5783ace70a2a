"""A stdio MCP server on the official Python SDK (mcp 2.3.x), the upstream `waiter` of scripts/interop.sh.

`wait` sleeps; a call cancelled meanwhile (`notifications/cancelled`, as teamgate sends when the member
cancels) is counted, and `cancelled` tells the count: what the upstream itself saw of a cancellation.
"""

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("waiter")
seen = {"cancelled": 0}


@server.tool()
async def wait(seconds: float) -> str:
    """Sleeps `seconds`; counts the calls cancelled while sleeping."""
    try:
        await anyio.sleep(min(seconds, 60))
    except anyio.get_cancelled_exc_class():
        seen["cancelled"] += 1
        raise
    return "waited"


@server.tool()
async def cancelled() -> str:
    """How many calls of `wait` were cancelled so far."""
    return str(seen["cancelled"])


if __name__ == "__main__":
    server.run("stdio")
