"""The MCP Apps test's Python client (tests/api/apps.rs): the official Python SDK client (mcp 2.3.x,
in .cache/venv) lists the tools through teamgate, reads the UI page the first tool names and calls
the app-only tool, as a host's page would.

    .cache/venv/bin/python tests/interop/py_apps.py --url URL --token T

Prints `RESULT {"tools": [{name, _meta}...], "page": {contents...}, "call": {...}}` and exits 0, or
`ERROR <reason>` and exits 1.
"""

import argparse
import json
import sys

import anyio
import httpx2  # the HTTP client mcp 2.3 is built on
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def main(args):
    headers = {"Authorization": f"Bearer {args.token}"}
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(15, read=30)) as http:
            transport = streamable_http_client(args.url, http_client=http)
            async with Client(transport, mode="legacy", read_timeout_seconds=15) as client:
                listed = await client.list_tools()
                tools = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]
                uri = next(t["_meta"]["ui"]["resourceUri"] for t in tools if t.get("_meta", {}).get("ui"))
                page = await client.read_resource(uri)
                called = await client.call_tool(args.app_tool, {})
                print("RESULT " + json.dumps({
                    "tools": tools,
                    "page": page.model_dump(mode="json", by_alias=True, exclude_none=True),
                    "call": called.model_dump(mode="json", by_alias=True, exclude_none=True),
                }), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--app-tool", required=True)
    try:
        anyio.run(main, parser.parse_args())
    except BaseException as e:  # noqa: BLE001 - timeouts and ExceptionGroups included
        while isinstance(e, BaseExceptionGroup) and e.exceptions:
            e = e.exceptions[0]
        print(f"ERROR {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
        sys.exit(1)
