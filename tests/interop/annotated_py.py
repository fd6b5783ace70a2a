"""An upstream MCP server on the official Python SDK (mcp 2.3) whose tools carry behaviour hints,
for teamgate's confirmation defaults (tests/api/upstream_confirm.rs), over stdio:

    .cache/venv/bin/python tests/interop/annotated_py.py

Tools (each echoes `target`):
  drop_table  destructiveHint: true            -> confirmed by default
  read_rows   readOnlyHint and destructiveHint -> read-only wins: not confirmed
  trim        destructiveHint: true            -> the test's configuration says confirm = false
  plain       no hints                         -> not confirmed
"""

from mcp.server import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("annotated-py", version="1")


def echo(target: str) -> str:
    return f"done: {target}"


destructive = ToolAnnotations(destructiveHint=True)
server.add_tool(echo, name="drop_table", description="Drops a table.", annotations=destructive)
server.add_tool(
    echo,
    name="read_rows",
    description="Reads rows.",
    annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=True),
)
server.add_tool(echo, name="trim", description="Trims a table.", annotations=destructive)
server.add_tool(echo, name="plain", description="Does a thing.")

if __name__ == "__main__":
    server.run("stdio")
