"""An upstream MCP server on the official Python SDK serving the tasks extension (SEP-2663).

Used by teamgate's upstream-task tests (tests/api/upstream_tasks.rs):
    .cache/venv/bin/python tests/interop/tasks_upstream_py.py stdio
    .cache/venv/bin/python tests/interop/tasks_upstream_py.py http [--port N]

The SDK (mcp 2.3) has no tasks server of its own; its Extension API (SEP-2133) serves the
extension's methods and turns a tools/call into a task, on 2026-07-28 connections.

Tools: slow(seconds) says "built after Ns"; hang runs until cancelled; seen() lists the status of
every task it made, oldest first ("working", "completed", "cancelled"). A call of slow or hang declaring
io.modelcontextprotocol/tasks becomes a task; one that does not runs to its end in the call.
steps(count) reports progress count times (its reply an SSE stream), then says done; block runs in
the call until its request ends, and blocked() lists how each block call ended ("running",
"cancelled": on 2026-07-28 a client cancels by closing the reply's stream).
"""

import argparse
import asyncio
import datetime as dt
import secrets
import socket
import sys
from typing import Any

import anyio
import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError
from mcp_types import RequestParams

TASKS = "io.modelcontextprotocol/tasks"
# Task id -> the task's wire fields, plus "job" (its asyncio task): every task lives here.
JOBS: dict[str, dict[str, Any]] = {}
# How each call of block stands or ended, oldest first.
BLOCKS: list[str] = []


class TaskId(RequestParams):
    task_id: str


class TaskUpdate(RequestParams):
    task_id: str
    input_responses: dict[str, Any] = {}


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat().replace("+00:00", "Z")


def wire(job: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in job.items() if k != "job"}


async def work(name: str, args: dict[str, Any]) -> str:
    if name == "hang":
        await asyncio.sleep(3600)
    seconds = float(args.get("seconds", 1))
    if seconds < 0:
        raise ValueError("no build takes negative time")
    await asyncio.sleep(seconds)
    return f"built after {seconds:g}s"


async def run(job: dict[str, Any], name: str, args: dict[str, Any]) -> None:
    try:
        text = await work(name, args)
        job.update(status="completed", result={"content": [{"type": "text", "text": text}]})
    except asyncio.CancelledError:
        job.update(status="cancelled")
    except ValueError as error:
        # The tool's own error: the task completes with an isError result.
        content = [{"type": "text", "text": str(error)}]
        job.update(status="completed", result={"content": content, "isError": True})
    job["lastUpdatedAt"] = now()


class Tasks(Extension):
    identifier = TASKS

    async def intercept_tool_call(self, params, ctx, call_next):
        caps = (ctx.meta or {}).get("io.modelcontextprotocol/clientCapabilities") or {}
        declared = TASKS in ((caps.get("extensions") if isinstance(caps, dict) else None) or {})
        if not declared or params.name not in ("slow", "hang"):
            return await call_next(ctx)
        task_id = secrets.token_hex(16)
        job = JOBS[task_id] = {
            "taskId": task_id,
            "status": "working",
            "createdAt": now(),
            "lastUpdatedAt": now(),
            "ttlMs": 600_000,
            "pollIntervalMs": 100,
        }
        job["job"] = asyncio.get_running_loop().create_task(run(job, params.name, params.arguments or {}))
        return {"resultType": "task", **wire(job)}

    def methods(self):
        def find(params) -> dict[str, Any]:
            if params.task_id not in JOBS:
                raise MCPError(-32602, "Failed to retrieve task: Task not found")
            return JOBS[params.task_id]

        async def get(ctx, params):
            return {"resultType": "complete", **wire(find(params))}

        async def update(ctx, params):
            find(params)
            return {"resultType": "complete"}

        async def cancel(ctx, params):
            find(params)["job"].cancel()
            return {"resultType": "complete"}

        return [
            MethodBinding("tasks/get", TaskId, get),
            MethodBinding("tasks/update", TaskUpdate, update),
            MethodBinding("tasks/cancel", TaskId, cancel),
        ]


server = MCPServer("tasks-upstream-py", version="1.0.0", extensions=[Tasks()])


@server.tool(description="Works for `seconds`, then says built.")
async def slow(seconds: float = 1) -> str:
    return await work("slow", {"seconds": seconds})


@server.tool(description="Runs until cancelled.")
async def hang() -> str:
    return await work("hang", {})


@server.tool(description="The status of every task this server made, oldest first, one per line.")
async def seen() -> str:
    return "\n".join(job["status"] for job in JOBS.values())


@server.tool(description="Reports progress `count` times, then says done.")
async def steps(ctx: Context, count: int = 3) -> str:
    for step in range(1, count + 1):
        await ctx.report_progress(step, count, f"step {step} of {count}")
        await asyncio.sleep(0.05)
    return f"done after {count} steps"


@server.tool(description="Runs in the call until its request ends.")
async def block() -> str:
    BLOCKS.append("running")
    mine = len(BLOCKS) - 1
    try:
        await asyncio.sleep(3600)
    except BaseException:  # anyio's cancellation of the request's handler
        BLOCKS[mine] = "cancelled"
        raise
    return "unblocked"


@server.tool(description="How each call of block stands or ended, oldest first, one per line.")
async def blocked() -> str:
    return "\n".join(BLOCKS)


async def serve_http(port: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    uv = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(lambda: uv.serve(sockets=[sock]))
        while not uv.started:
            await anyio.sleep(0.05)
        print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("--port", type=int, default=0, help="HTTP port on 127.0.0.1 (0: any free one)")
    args = parser.parse_args()
    if args.transport == "stdio":
        server.run("stdio")
    else:
        anyio.run(serve_http, args.port)


if __name__ == "__main__":
    sys.exit(main())
