"""A bounded load on teamgate for scripts/prometheus-test.sh, with the official Python SDK client
(mcp 2.3.x, in .cache/venv), so every series the Grafana dashboard reads exists and moves:

- one 2025-era (legacy) session held open for the whole run: its GET stream and session count;
- 2025-era and 2026-07-28 clients calling, in a loop: tools/list, a fixture tool, a tool that
  reports an error (tool_error), an upstream's tool (echo through the `everything` upstream, so
  the upstream call metrics move), an unknown tool (a JSON-RPC error), resources and prompts;
- requests without a token (401, the authentication failures) in a burst past the
  unauthenticated rate limit (429).

    .cache/venv/bin/python tests/interop/prom_load.py --url URL --token T --seconds 40 [--upstream-tool everything_echo]

Prints one line of counts at the end; exit 1 if a call that must succeed failed, or on timeout.
"""

import argparse
import sys
import time

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

counts = {"calls": 0, "failed": 0, "errors_sent": 0, "unauthenticated": {}}


def first_line(e):
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


async def must(what, coro):
    counts["calls"] += 1
    try:
        return await coro
    except Exception as e:  # noqa: BLE001 - counted and reported
        counts["failed"] += 1
        print(f"not ok - {what}: {first_line(e)}", flush=True)
        return None


async def expect_error(coro):
    """A call that must fail (an unknown tool): the JSON-RPC error is the point."""
    counts["errors_sent"] += 1
    try:
        await coro
    except Exception:  # noqa: BLE001 - the error is expected
        pass


async def round_of_calls(client, upstream_tool):
    await must("tools/list", client.list_tools())
    await must("test_simple_text", client.call_tool("test_simple_text"))
    await must("test_error_handling", client.call_tool("test_error_handling", {}))
    await must(upstream_tool, client.call_tool(upstream_tool, {"message": "load"}))
    await must("resources/list", client.list_resources())
    await must("prompts/list", client.list_prompts())
    await expect_error(client.call_tool("no_such_tool_for_metrics", {}))


async def looping(args, mode, deadline, http):
    transport = streamable_http_client(args.url, http_client=http)
    async with Client(transport, mode=mode, read_timeout_seconds=15) as client:
        while time.monotonic() < deadline:
            await round_of_calls(client, args.upstream_tool)
            await anyio.sleep(args.pause)


async def held_session(args, deadline, http):
    """A legacy session (and its GET stream) open for the whole run."""
    transport = streamable_http_client(args.url, http_client=http)
    async with Client(transport, mode="legacy", read_timeout_seconds=15) as client:
        await must("held session tools/list", client.list_tools())
        while time.monotonic() < deadline:
            await anyio.sleep(0.5)


async def unauthenticated(args, deadline):
    """Bursts without a token: 401s until the per-address quota runs out, then 429s."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=10) as http:
        while time.monotonic() < deadline:
            for _ in range(args.burst):
                r = await http.post(args.url, json=body, headers=headers)
                counts["unauthenticated"][r.status_code] = counts["unauthenticated"].get(r.status_code, 0) + 1
            await anyio.sleep(5)


async def main(args):
    deadline = time.monotonic() + args.seconds
    headers = {"Authorization": f"Bearer {args.token}"}
    with anyio.fail_after(args.seconds + 60):
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(15, read=30)) as http:
            async with anyio.create_task_group() as tg:
                tg.start_soon(held_session, args, deadline, http)
                tg.start_soon(looping, args, "legacy", deadline, http)
                tg.start_soon(looping, args, "2026-07-28", deadline, http)
                tg.start_soon(unauthenticated, args, deadline)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--seconds", type=float, default=40)
    p.add_argument("--pause", type=float, default=0.2, help="seconds between rounds of calls")
    p.add_argument("--burst", type=int, default=40, help="unauthenticated requests every 5 s")
    p.add_argument("--upstream-tool", default="everything_echo")
    a = p.parse_args()
    status = 0
    try:
        anyio.run(main, a)
    except BaseException as e:  # noqa: BLE001 - a timeout or transport failure ends the run
        if isinstance(e, KeyboardInterrupt):
            raise
        print(f"not ok - load: {first_line(e)}", flush=True)
        status = 1
    print(f"prom-load: {counts['calls']} calls ({counts['failed']} failed), {counts['errors_sent']} unknown-tool errors, "
          f"unauthenticated replies {dict(sorted(counts['unauthenticated'].items()))}", flush=True)
    sys.exit(1 if status or counts["failed"] else 0)
