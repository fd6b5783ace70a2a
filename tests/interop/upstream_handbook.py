"""An upstream MCP server on the official Python SDK whose one resource has
the URI of a document of teamgate's own docs source "handbook"
(tests/api/upstream_resources.rs): teamgate must keep its own and rename
the upstream's."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("handbook-twin")


@server.resource("docs://handbook/guide.md")
def guide() -> str:
    return "the upstream's own guide"


server.run()
