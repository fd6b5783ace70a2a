"""An upstream MCP server on the official Python SDK (mcp 2.3) offering MCP Apps (SEP-1865, its
`mcp.server.apps` extension), for teamgate's pass-through (tests/api/apps.rs), over stdio:

    .cache/venv/bin/python tests/interop/apps_py.py

  show_board   _meta.ui.resourceUri = ui://board/app.html (model and app)
  refresh      the same page, visibility ["app"]: the page's to call, not the model's
  ui://board/app.html  the page, text/html;profile=mcp-app, CSP connectDomains https://api.example.com
"""

from mcp.server import MCPServer
from mcp.server.apps import Apps, ResourceCsp

PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Release board</title>
<style>body{font:16px system-ui;margin:24px}h1{color:#1b5e20}#state{padding:8px;border:2px solid #1b5e20}</style>
</head><body><h1>Release board</h1><p id="state">waiting for the host</p>
<script>document.getElementById('state').textContent = 'rendered by the page script';</script>
</body></html>"""

apps = Apps()


@apps.tool(resource_uri="ui://board/app.html", name="show_board", description="Shows the release board.")
def show_board() -> str:
    return "3 releases in flight"


@apps.tool(resource_uri="ui://board/app.html", visibility=["app"], name="refresh", description="Refreshes the board.")
def refresh() -> str:
    return "refreshed"


apps.add_html_resource(
    "ui://board/app.html",
    PAGE,
    name="release_board",
    csp=ResourceCsp(connect_domains=["https://api.example.com"]),
    prefers_border=True,
)

server = MCPServer("apps-py", version="1", extensions=[apps])

if __name__ == "__main__":
    server.run("stdio")
