"""The official Python SDK client (mcp 2.3.x, .cache/venv) against an upstream MCP server behind teamgate.

    .cache/venv/bin/python tests/interop/py_upstream.py --url URL --token T --narrow T --config FILE --add TOOL \
        [--mode legacy|2026-07-28]

scripts/interop.sh configures the everything server as upstream `everything` (tools `everything_*`). TOKEN may
call every tool, NARROW only `everything_echo`. The list_changed check adds TOOL to the upstream's `tools.include`
in FILE, the running teamgate's configuration (hot reload). On 2026-07-28 the upstream's elicitation comes back
as `input_required` and the SDK retries with the answer; on a legacy session as a request on the call's stream.
Prints `ok - name` / `not ok - name: reason`, then `py-upstream[MODE]: N passed, M failed`; exit 1 on failure.
"""

import argparse
import sys
import time

import anyio
import httpx2
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client

counts = {"passed": 0, "failed": 0}


def describe(e):
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


def texts(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


async def names(client):
    return [t.name for t in (await client.list_tools()).tools]


class Session:
    """One member's client: answers elicitation, records what it heard."""

    def __init__(self, args, bearer, statuses):
        self.args, self.bearer, self.statuses = args, bearer, statuses
        self.elicited, self.changes = [], []

    async def on_elicit(self, _context, params):
        self.elicited.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Python"})

    async def on_message(self, message):
        if isinstance(message, types.ToolListChangedNotification):
            self.changes.append(time.monotonic())

    def client(self, http):
        async def record(response):
            self.statuses.append((response.status_code, response.headers.get("www-authenticate", "")))

        http.event_hooks["response"].append(record)
        transport = streamable_http_client(self.args.url, http_client=http)
        mode = "legacy" if self.args.mode == "legacy" else "2026-07-28"
        return Client(transport, mode=mode, read_timeout_seconds=20, elicitation_callback=self.on_elicit,
                      message_handler=self.on_message)


async def run_checks(args, client, me, narrow):
    for _ in range(100):  # the upstream connects in the background
        if "everything_echo" in await names(client):
            break
        await anyio.sleep(0.2)

    async def listed():
        have = await names(client)
        want = ["everything_echo", "everything_trigger-long-running-operation",
                "everything_trigger-elicitation-request"]
        missing = [n for n in want if n not in have]
        return f"missing {missing}" if missing else None

    async def echo():
        r = await client.call_tool("everything_echo", {"message": "through teamgate"})
        return None if "through teamgate" in texts(r) and not r.is_error else f"got {r!r}"

    async def progress():
        seen = []

        async def on_progress(value, total, message):
            seen.append(value)

        r = await client.call_tool("everything_trigger-long-running-operation", {"duration": 1, "steps": 4},
                                   progress_callback=on_progress)
        ok = not r.is_error and len(seen) >= 3 and seen == sorted(seen)
        return None if ok else f"progress {seen}, result {r!r}"

    async def elicitation():
        r = await client.call_tool("everything_trigger-elicitation-request", {})
        if r.is_error or '"name": "Python"' not in texts(r):
            return f"got {texts(r)[:300]}"
        return None if len(me.elicited) == 1 else f"asked {len(me.elicited)} times"

    async def cancel():
        seen = []

        async def on_progress(value, total, message):
            seen.append(value)

        started = time.monotonic()
        with anyio.move_on_after(2.5) as scope:
            await client.call_tool("everything_trigger-long-running-operation", {"duration": 20, "steps": 20},
                                   progress_callback=on_progress)
        if not scope.cancelled_caught:
            return "the call completed"
        at = len(seen)
        await anyio.sleep(2.5)  # the operation reports each second; a cancelled one reaches nobody
        r = await client.call_tool("everything_echo", {"message": "after"})
        if time.monotonic() - started > 15 or "after" not in texts(r):
            return f"teamgate or the upstream stayed busy: {r!r}"
        return None if len(seen) == at and at >= 1 else f"progress {seen} (cancelled at {at})"

    async def upstream_saw_cancel():
        async def count():
            return int(texts(await client.call_tool("waiter_cancelled", {})))

        for _ in range(100):
            if "waiter_wait" in await names(client):
                break
            await anyio.sleep(0.2)
        before = await count()
        with anyio.move_on_after(1.0) as scope:
            await client.call_tool("waiter_wait", {"seconds": 30})
        if not scope.cancelled_caught:
            return "the call completed"
        for _ in range(50):
            if await count() == before + 1:
                return None
            await anyio.sleep(0.1)
        return f"the upstream counted {await count()} cancellations, {before} before"

    async def scopes():
        small = await names(narrow)
        ours = [n for n in small if n.startswith("everything_")]
        if ours != ["everything_echo"]:
            return f"listed {ours}"
        before = len(me.statuses)
        try:
            r = await narrow.call_tool("everything_trigger-long-running-operation", {"duration": 0, "steps": 1})
            return f"answered {r!r}"
        except Exception:  # noqa: BLE001 - the refusal is what we want
            pass
        refusals = [c for s, c in me.statuses[before:] if s == 403]
        return None if refusals and "insufficient_scope" in refusals[0] else f"statuses {me.statuses[before:]}"

    async def list_changed():
        text = open(args.config).read()
        added = f"everything_{args.add}"
        if client.protocol_version >= "2026-07-28":
            async with client.listen(tools_list_changed=True) as sub:
                with open(args.config, "w") as f:
                    f.write(text.replace("include = [", f'include = ["{args.add}", ', 1))
                with anyio.fail_after(30):
                    async for _event in sub:
                        if added in await names(client):
                            return None
            return "the listen stream ended"
        before = len(me.changes)
        with open(args.config, "w") as f:
            f.write(text.replace("include = [", f'include = ["{args.add}", ', 1))
        for _ in range(120):
            if len(me.changes) > before and added in await names(client):
                return None
            await anyio.sleep(0.25)
        return f"{added} not listed" if len(me.changes) > before else "no notifications/tools/list_changed"

    for name, fn in [
        ("tools/list has the upstream tools", listed), ("call everything_echo", echo),
        ("upstream progress reaches the caller", progress),
        ("the upstream's elicitation is answered by this client", elicitation),
        ("a cancelled upstream call ends at once and reports nothing more", cancel),
        ("the upstream saw the cancellation (waiter_cancelled counts it)", upstream_saw_cancel),
        ("a narrow token lists only its tool and is refused the others (403 insufficient_scope)", scopes),
        (f"list_changed when the upstream's tools change (adds everything_{args.add})", list_changed),
    ]:
        await check(name, fn)


async def main(args):
    statuses = []
    me, other = Session(args, args.token, statuses), Session(args, args.narrow, statuses)
    try:
        with anyio.fail_after(150):
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {args.token}"},
                                          timeout=httpx2.Timeout(20, read=40)) as http, \
                    httpx2.AsyncClient(headers={"Authorization": f"Bearer {args.narrow}"},
                                       timeout=httpx2.Timeout(20, read=40)) as http2:
                async with me.client(http) as client, other.client(http2) as narrow:
                    print(f"# negotiated protocol {client.protocol_version}", flush=True)
                    await run_checks(args, client, me, narrow)
    except BaseException as e:  # noqa: BLE001 - includes timeouts and ExceptionGroups from the transport
        if isinstance(e, KeyboardInterrupt):
            raise
        report("session", describe(e))


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    for flag in ("--url", "--token", "--narrow", "--config", "--add"):
        p.add_argument(flag, required=True)
    p.add_argument("--mode", choices=["legacy", "2026-07-28"], default="legacy")
    a = p.parse_args()
    anyio.run(main, a)
    print(f"py-upstream[{a.mode}]: {counts['passed']} passed, {counts['failed']} failed")
    sys.exit(1 if counts["failed"] else 0)
