"""The official Python SDK (mcp 2.3.x, from .cache/venv) serving the benchmark's echo tool, for bench/run.

    .cache/venv/bin/python bench/sdk/py_server.py PORT

MCPServer's Streamable HTTP app under uvicorn (one worker), JSON replies as teamgate gives, no session cap
(the benchmark opens a few thousand sessions). Loopback only.
"""

import sys

import uvicorn
from mcp.server import MCPServer

TOOL = "test_simple_text"
TEXT = "This is a simple text response for testing."

# Warnings only, like teamgate's quiet hot path (the default INFO logs a line per session).
server = MCPServer("py-sdk", log_level="WARNING")


@server.tool(name=TOOL, description="Returns a simple text response", structured_output=False)
async def simple_text() -> str:
    return TEXT


if __name__ == "__main__":
    port = int(sys.argv[1])
    app = server.streamable_http_app(json_response=True, max_sessions=None, host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
