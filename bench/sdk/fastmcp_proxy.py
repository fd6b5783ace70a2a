"""FastMCP's proxy (create_proxy, the Python team's usual gateway) in front of an upstream MCP server,
for bench/run's upstream rows: the same upstream teamgate fronts, measured through each.

    .cache/bench-venv/bin/python bench/sdk/fastmcp_proxy.py PORT UPSTREAM_URL

Serves Streamable HTTP at http://127.0.0.1:PORT/mcp; loopback only. Installed by bench/run into its own
venv (.cache/bench-venv), apart from the test venv, whose mcp version the tests pin.
"""

import sys

from fastmcp.server import create_proxy


def main() -> None:
    port, upstream = int(sys.argv[1]), sys.argv[2]
    # mode="legacy": the initialize handshake to the upstream. Left to mirror the front's era,
    # FastMCP 4.2 refuses raw rmcp's 2026-07-28 tools/list (it requires a resultType there).
    proxy = create_proxy(upstream, name="fastmcp-proxy", mode="legacy")
    proxy.run(transport="http", host="127.0.0.1", port=port, path="/mcp", log_level="warning")


if __name__ == "__main__":
    main()
