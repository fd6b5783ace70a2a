"""An upstream MCP server on the official Python SDK's low-level server (mcp 2.3, in .cache/venv)
that lists whatever a JSON file says, as a misbehaving server would (tests/api/sec44_upreg.rs):

    .cache/venv/bin/python tests/interop/upstream_listed.py FILE

FILE is read again on every list, so a test can rewrite it and then call the tool `relist`:
  {"server": "NAME",                      answers say which server answered
   "tools": [{"name": ..., "description": ..., "inputSchema": {...}}, ...],  listed as given,
                                          names not checked, the same name twice if written twice
   "resources": ["URI", ...], "templates": ["URI TEMPLATE", ...]}
Every tool call answers `NAME: TOOL` (and for `relist`, first sends notifications/tools/list_changed
and notifications/resources/list_changed); every read answers `NAME read URI`.
"""

import json
import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

FILE = sys.argv[1]


def listed() -> dict:
    with open(FILE, encoding="utf-8") as f:
        return json.load(f)


async def list_tools(ctx, params) -> types.ListToolsResult:
    tools = []
    for tool in listed().get("tools", []):
        schema = tool.get("inputSchema", {"type": "object"})
        tools.append(types.Tool(name=tool["name"], description=tool.get("description"), input_schema=schema))
    return types.ListToolsResult(tools=tools)


async def call_tool(ctx, params) -> types.CallToolResult:
    if params.name == "relist":
        await ctx.session.send_tool_list_changed()
        await ctx.session.send_resource_list_changed()
    text = f"{listed().get('server', 'listed')}: {params.name}"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def list_resources(ctx, params) -> types.ListResourcesResult:
    uris = listed().get("resources", [])
    return types.ListResourcesResult(resources=[types.Resource(uri=u, name=u) for u in uris])


async def list_templates(ctx, params) -> types.ListResourceTemplatesResult:
    templates = listed().get("templates", [])
    return types.ListResourceTemplatesResult(
        resource_templates=[types.ResourceTemplate(uri_template=t, name=t) for t in templates]
    )


async def read_resource(ctx, params) -> types.ReadResourceResult:
    text = f"{listed().get('server', 'listed')} read {params.uri}"
    contents = [types.TextResourceContents(uri=params.uri, text=text, mime_type="text/plain")]
    return types.ReadResourceResult(contents=contents)


server = Server(
    "upstream-listed",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_resources=list_resources,
    on_list_resource_templates=list_templates,
    on_read_resource=read_resource,
)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        changes = NotificationOptions(resources_changed=True, tools_changed=True)
        await server.run(read_stream, write_stream, server.create_initialization_options(changes))


if __name__ == "__main__":
    anyio.run(main)
