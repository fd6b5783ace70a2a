"""Durable tasks (issue 31) with the official Python SDK client (mcp 2.3.x) at 2026-07-28.

    .cache/venv/bin/python tests/interop/py_tasks.py --a URL_A --b URL_B --token T --other T2 --pidfile F

mcp 2.3 has no tasks client of its own; it has the extension points the tasks extension needs, used
here as an application would: a `ClientExtension` declaring `io.modelcontextprotocol/tasks` that claims
the `resultType: "task"` result of tools/call, and `tasks/get` / `tasks/cancel` requests whose
`name_param` sends the `Mcp-Name: <taskId>` routing header. Checks:
  1. a task-augmented call of the 10 s command tool `task_build` on replica A, the client disconnects,
     a new client on replica B polls tasks/get until the result arrives;
  2. another member gets "not found" (-32602) for that task, on get and cancel;
  3. a call of `task_hang` (writes its pid to --pidfile, then sleeps) cancelled from replica B:
     the task ends `cancelled` and the process is gone;
  4. with --a-pid, replica A is killed while it runs a task: B reports the task `failed`.
Prints `ok - name` / `not ok - name: reason`, then `py-tasks: N passed, M failed`; exit 1 on failure.
"""

import argparse
import os
import sys
import time
from typing import Any, Literal

import anyio
import httpx2
from mcp import Client
from mcp.client.extension import ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, Request, RequestParams, Result, TextContent
from pydantic import ConfigDict

TASKS = "io.modelcontextprotocol/tasks"
counts = {"passed": 0, "failed": 0}


def report(name, why=None):
    counts["failed" if why else "passed"] += 1
    print(f"not ok - {name}: {why}" if why else f"ok - {name}", flush=True)


class TaskHandle(Result):
    """CreateTaskResult: the task's seed state, flat (SEP-2663)."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str
    status: str


class TaskIdParams(RequestParams):
    task_id: str


class TasksGet(Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param = "taskId"


class TasksCancel(Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams
    name_param = "taskId"


class Detailed(Result):
    model_config = ConfigDict(extra="allow")
    task_id: str | None = None
    status: str | None = None
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class Tasks(ClientExtension):
    """Declares the tasks extension; a task handle is returned as its id, not polled here."""

    identifier = TASKS

    def claims(self):
        async def keep(handle: TaskHandle, _ctx) -> CallToolResult:
            # The SDK checks what `resolve` returns against the tool's output schema (a command
            # tool's): the id travels in a result of that shape.
            structured = {"exitCode": 0, "timedOut": False, "stdout": handle.task_id, "stderr": ""}
            text = TextContent(type="text", text=handle.task_id)
            return CallToolResult(content=[text], structured_content=structured, is_error=False)

        return [ResultClaim(result_type="task", model=TaskHandle, resolve=keep)]


async def with_client(url, token, fn):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="2026-07-28", extensions=[Tasks()]) as client:
            return await fn(client)


async def start(client, tool):
    result = await client.call_tool(tool, {})
    return result.content[0].text


async def get(client, task_id) -> Detailed:
    return await client.session.send_request(TasksGet(params=TaskIdParams(task_id=task_id)), Detailed)


async def settle(client, task_id, within=60) -> Detailed:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        task = await get(client, task_id)
        if task.status in ("completed", "failed", "cancelled"):
            return task
        await anyio.sleep(0.5)
    raise TimeoutError(f"task {task_id} did not settle within {within}s")


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return not f.read().rsplit(")", 1)[1].strip().startswith("Z")
    except OSError:
        return False


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--a", required=True)
    parser.add_argument("--b", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--other", required=True)
    parser.add_argument("--pidfile", required=True)
    parser.add_argument("--a-pid", type=int, help="replica A's process: killed for check 4")
    args = parser.parse_args()

    # 1. Created on A; the client goes away; polled to the end on B.
    task_id = None
    try:
        started = time.monotonic()
        task_id = await with_client(args.a, args.token, lambda c: start(c, "task_build"))
        quick = time.monotonic() - started < 5
        done = await with_client(args.b, args.token, lambda c: settle(c, task_id))
        text = (done.result or {}).get("content", [{}])[0].get("text", "")
        ok = quick and done.status == "completed" and "built" in text
        report("a 10 s command task created on A, its result polled on B after a disconnect",
               None if ok else f"quick={quick} status={done.status} text={text!r}")
    except Exception as e:  # noqa: BLE001 - reported
        report("a 10 s command task created on A, its result polled on B after a disconnect", repr(e))

    # 2. Another member cannot see or cancel it.
    if task_id:
        for name, request in (("get", TasksGet), ("cancel", TasksCancel)):
            async def other(client, request=request):
                try:
                    await client.session.send_request(request(params=TaskIdParams(task_id=task_id)), Detailed)
                    return "it answered"
                except Exception as e:  # noqa: BLE001 - the refusal is the point
                    code = getattr(getattr(e, "error", None), "code", None)
                    return None if code == -32602 or "-32602" in str(e) or "not found" in str(e).lower() else repr(e)
            report(f"another member's tasks/{name} is not found", await with_client(args.b, args.other, other))

    # 3. Cancelled from B: the command's process ends.
    try:
        if os.path.exists(args.pidfile):
            os.unlink(args.pidfile)
        hang_id = await with_client(args.a, args.token, lambda c: start(c, "task_hang"))
        for _ in range(100):
            if os.path.exists(args.pidfile) and open(args.pidfile).read().strip():
                break
            await anyio.sleep(0.1)
        pid = int(open(args.pidfile).read().strip())

        async def cancel(client):
            await client.session.send_request(TasksCancel(params=TaskIdParams(task_id=hang_id)), Result)
            return await settle(client, hang_id, within=30)

        ended = await with_client(args.b, args.token, cancel)
        for _ in range(100):
            if not alive(pid):
                break
            await anyio.sleep(0.1)
        ok = ended.status == "cancelled" and not alive(pid)
        report("a task cancelled on B ends cancelled and its process is gone",
               None if ok else f"status={ended.status} alive={alive(pid)}")
    except Exception as e:  # noqa: BLE001 - reported
        report("a task cancelled on B ends cancelled and its process is gone", repr(e))

    # 4. Replica A dies while running a task: B reports it failed within the heartbeat timeout.
    if args.a_pid:
        try:
            lost_id = await with_client(args.a, args.token, lambda c: start(c, "task_build"))
            os.kill(args.a_pid, 9)
            lost = await with_client(args.b, args.token, lambda c: settle(c, lost_id, within=30))
            message = lost.status_message or ""
            ok = lost.status == "failed" and "replica" in message and lost.error is not None
            report("a task whose replica was killed is failed by the other",
                   None if ok else f"status={lost.status} message={message!r}")
        except Exception as e:  # noqa: BLE001 - reported
            report("a task whose replica was killed is failed by the other", repr(e))

    print(f"py-tasks: {counts['passed']} passed, {counts['failed']} failed")
    sys.exit(1 if counts["failed"] else 0)


if __name__ == "__main__":
    anyio.run(main)
