"""Interop check with the official Python SDK client (mcp 2.3.x, in .cache/venv).

    .cache/venv/bin/python tests/interop/py_client.py --url URL [--token T] [--mode default|legacy|2026-07-28]

Modes map to mcp.Client(mode=...):
  default     "auto": POST server/discover at 2026-07-28 first; on any JSON-RPC/HTTP-4xx error (or a discover
              result listing no modern version) it falls back to the initialize handshake (2025-11-25).
  legacy      "legacy": initialize handshake only (session era, Mcp-Session-Id, GET stream, DELETE on close).
  2026-07-28  adopt 2026-07-28 directly, no probe, no initialize: every request is stateless and carries
              _meta io.modelcontextprotocol/{protocolVersion,clientInfo,clientCapabilities} plus the headers
              MCP-Protocol-Version, Mcp-Method and (tools/call, prompts/get, resources/read) Mcp-Name.
Prints `ok - name` / `not ok - name: reason`, then `py-client[MODE]: N passed, M failed`; exit 1 on failure.
"""

import argparse
import sys

import anyio
import httpx2  # the HTTP client mcp 2.3 is built on (a fork of httpx)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

MODES = {"default": "auto", "legacy": "legacy", "2026-07-28": "2026-07-28"}
FIXTURE_TOOLS = [
    "test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
    "test_multiple_content_types", "test_tool_with_logging", "test_tool_with_progress", "test_error_handling",
    "test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
]
counts = {"passed": 0, "failed": 0}


def describe(e):
    """`Type: first line`, unwrapping the ExceptionGroups that anyio task groups raise."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {text}"


def report(name, why=None):
    counts["failed" if why else "passed"] += 1
    print(f"not ok - {name}: {why}" if why else f"ok - {name}", flush=True)


async def check(name, fn):
    try:
        report(name, await fn())
    except Exception as e:  # noqa: BLE001 - any failure is a reported check failure
        report(name, describe(e))


def first_text(result):
    return next((c.text for c in result.content if getattr(c, "type", None) == "text"), None)


async def run_checks(client, mode):
    async def tools():
        listed = (await client.list_tools()).tools
        missing = [n for n in FIXTURE_TOOLS if n not in {t.name for t in listed}]
        no_desc = [t.name for t in listed if not t.description]
        return f"missing {missing}" if missing else (f"no description: {no_desc}" if no_desc else None)

    async def resources():
        listed = (await client.list_resources()).resources
        return None if any(str(r.uri) == "test://static-text" for r in listed) else "test://static-text not listed"

    async def prompts():
        listed = (await client.list_prompts()).prompts
        return None if any(p.name == "test_prompt_with_arguments" for p in listed) else "prompt not listed"

    async def simple_text():
        r = await client.call_tool("test_simple_text")
        ok = first_text(r) == "This is a simple text response for testing." and not r.is_error
        return None if ok else f"got {r!r}"

    async def error_handling():
        r = await client.call_tool("test_error_handling", {})
        return None if r.is_error and first_text(r) else f"got {r!r}"

    async def static_text():
        r = await client.read_resource("test://static-text")
        text = getattr(r.contents[0], "text", None) if r.contents else None
        return None if text == "This is the content of the static text resource." else f"got {r!r}"

    async def template():
        r = await client.read_resource("test://template/123/data")
        text = getattr(r.contents[0], "text", "") if r.contents else ""
        return None if "123" in (text or "") else f"got {r!r}"

    async def prompt_args():
        r = await client.get_prompt("test_prompt_with_arguments", {"arg1": "testValue1", "arg2": "testValue2"})
        dump = r.model_dump_json()
        return None if "testValue1" in dump and "testValue2" in dump else f"got {dump}"

    async def progress():
        seen = []

        async def on_progress(value, total, message):
            seen.append(value)

        # A progress_callback makes the SDK attach _meta.progressToken to this tools/call.
        r = await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
        if r.is_error:
            return f"tool error {r!r}"
        if len(seen) < 3:
            return f"{len(seen)} progress notifications (want >= 3)"
        return None if seen == sorted(seen) else f"progress decreased: {seen}"

    async def discover():
        # In the pinned mode the SDK never probes (it synthesizes a DiscoverResult), so probe explicitly.
        raw = await client.session.send_discover("2026-07-28")
        return None if "2026-07-28" in raw.get("supportedVersions", []) else f"got {raw}"

    if mode == "2026-07-28":
        await check("server/discover lists 2026-07-28", discover)
    for name, fn in [
        ("tools/list has fixtures", tools), ("resources/list", resources), ("prompts/list", prompts),
        ("call test_simple_text", simple_text), ("call test_error_handling isError", error_handling),
        ("read test://static-text", static_text), ("read test://template/123/data", template),
        ("prompts/get test_prompt_with_arguments", prompt_args), ("progress notifications", progress),
    ]:
        await check(name, fn)


async def main(args):
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    connected = False
    try:
        with anyio.fail_after(60):  # whole-run bound: a hung server must not hang CI
            # Auth: mcp 2.3 has no headers= on Client; pass a pre-configured httpx2 client to the transport.
            async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(15, read=30)) as http:
                transport = streamable_http_client(args.url, http_client=http)
                async with Client(transport, mode=MODES[args.mode], read_timeout_seconds=15) as client:
                    connected = True
                    report("connect")
                    print(f"# negotiated protocol {client.protocol_version}", flush=True)
                    await run_checks(client, args.mode)
    except BaseException as e:  # noqa: BLE001 - includes timeouts and ExceptionGroups from the transport
        if isinstance(e, KeyboardInterrupt):
            raise
        report("connect" if not connected else "session", describe(e))


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--token")
    p.add_argument("--mode", choices=list(MODES), default="default")
    a = p.parse_args()
    anyio.run(main, a)
    print(f"py-client[{a.mode}]: {counts['passed']} passed, {counts['failed']} failed")
    sys.exit(1 if counts["failed"] else 0)
