#!/usr/bin/env python3
"""Retrieval quality and cost of teamgate's search mode (issue 60), over plain HTTP JSON-RPC.

Against a running teamgate with `[mcp] discovery = "search"` fronting the catalog's servers
(bench/catalog/teamgate.toml), this script:
  * initializes a 2025-11-25 session (Mcp-Session-Id), lists tools and measures the bytes of the
    tools/list result, against the full list (another teamgate with --full-url, else the prefixed
    definitions of tools.json);
  * for every task of tasks.json calls the `search_tools` meta-tool with {"query": q, "limit": 3}
    and reads the ranked names from the result's structuredContent.tools;
  * prints recall@1, recall@3, the misses, and the p50/p95 latency of the search_tools calls.

Standard library only. Usage:
  python3 bench/catalog/recall.py [--url http://127.0.0.1:8091/mcp] [--token T | env TEAMGATE_TOKEN]
      [--upstreams github,gitlab,fs,...|key=name,...] [--tasks FILE] [--limit 3] [--repeat N]
      [--full-url URL] [--json OUT] [--min-recall3 0.9]
An upstream given as key=name means the tasks' `key_` tools are offered by teamgate as `name_`.
Exit status: 0, or 1 when --min-recall3 is given and not met, 2 on a protocol or HTTP error.
"""

import argparse
import json
import os
import statistics
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
PROTOCOL = "2025-11-25"
KEYS = ["github", "gitlab", "fs", "memory", "slack", "notion", "k8s", "playwright", "everything"]


class RpcError(Exception):
    pass


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def sse_messages(text):
    """JSON-RPC messages of an SSE body: each event's `data:` lines joined by newlines."""
    messages, data = [], []
    for line in text.splitlines() + [""]:
        if line == "":
            if data:
                payload = "\n".join(data)
                data = []
                try:
                    messages.append(json.loads(payload))
                except ValueError:
                    pass  # a priming event with empty or non-JSON data
            continue
        if line.startswith(":"):
            continue  # comment / keep-alive
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
    return messages


class Session:
    """One 2025-era Streamable HTTP session with teamgate."""

    def __init__(self, url, token, timeout=30.0):
        self.url, self.token, self.timeout = url, token, timeout
        self.session_id = None
        self.next_id = 0
        # No proxies from the environment: the gateway is local.
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def _post(self, message):
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
            headers["MCP-Protocol-Version"] = PROTOCOL
        req = urllib.request.Request(self.url, data=compact(message).encode(), headers=headers, method="POST")
        try:
            with self.opener.open(req, timeout=self.timeout) as resp:
                body = resp.read()
                return resp.status, resp.headers, body
        except urllib.error.HTTPError as e:
            detail = e.read()[:300].decode("utf-8", "replace")
            raise RpcError(f"{message.get('method')}: HTTP {e.code}: {detail}") from None
        except urllib.error.URLError as e:
            raise RpcError(f"{message.get('method')}: cannot reach {self.url}: {e.reason}") from None

    def request(self, method, params=None):
        """Sends a request; returns (result, bytes of the response body, seconds)."""
        self.next_id += 1
        rid = self.next_id
        message = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        start = time.perf_counter()
        status, headers, body = self._post(message)
        elapsed = time.perf_counter() - start
        if method == "initialize":
            self.session_id = headers.get("Mcp-Session-Id")
        ctype = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
        text = body.decode("utf-8")
        if ctype == "text/event-stream":
            candidates = sse_messages(text)
        elif ctype == "application/json":
            parsed = json.loads(text)
            candidates = parsed if isinstance(parsed, list) else [parsed]
        else:
            raise RpcError(f"{method}: HTTP {status} with Content-Type {ctype!r}")
        for m in candidates:
            if isinstance(m, dict) and m.get("id") == rid and ("result" in m or "error" in m):
                if "error" in m:
                    raise RpcError(f"{method}: JSON-RPC error {m['error'].get('code')}: {m['error'].get('message')}")
                return m["result"], len(body), elapsed
        raise RpcError(f"{method}: no response with id {rid} in the body")

    def notify(self, method, params=None):
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        status, _, _ = self._post(message)
        if status not in (200, 202, 204):
            raise RpcError(f"{method}: HTTP {status}")

    def open(self):
        result, _, _ = self.request("initialize", {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "teamgate-catalog-recall", "version": "1.0.0"},
        })
        if not self.session_id:
            raise RpcError("initialize: no Mcp-Session-Id header (is mcp.legacy_sessions off?)")
        self.notify("notifications/initialized")
        return result

    def list_tools(self):
        """All pages of tools/list: (tools, bytes of the result JSON, bytes of the HTTP bodies)."""
        tools, result_bytes, body_bytes, cursor = [], 0, 0, None
        while True:
            result, n, _ = self.request("tools/list", {"cursor": cursor} if cursor else {})
            tools.extend(result.get("tools", []))
            result_bytes += len(compact(result).encode())
            body_bytes += n
            cursor = result.get("nextCursor")
            if not cursor:
                return tools, result_bytes, body_bytes

    def close(self):
        if not self.session_id:
            return
        headers = {"Mcp-Session-Id": self.session_id, "MCP-Protocol-Version": PROTOCOL}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            self.opener.open(urllib.request.Request(self.url, headers=headers, method="DELETE"), timeout=5).close()
        except (urllib.error.URLError, OSError):
            pass


def search_names(result):
    """Names ranked by search_tools: structuredContent.tools (the contract); a JSON text block as fallback."""
    if result.get("isError"):
        text = " ".join(c.get("text", "") for c in result.get("content", []) if c.get("type") == "text")
        raise RpcError(f"search_tools answered a tool error: {text[:200]}")
    sc = result.get("structuredContent")
    if not isinstance(sc, dict):
        for c in result.get("content", []):
            if c.get("type") == "text":
                try:
                    sc = json.loads(c["text"])
                    break
                except ValueError:
                    pass
    if not isinstance(sc, dict) or not isinstance(sc.get("tools"), list):
        raise RpcError("search_tools result has no structuredContent.tools")
    return [t.get("name") for t in sc["tools"] if isinstance(t, dict)]


def percentile(values, p):
    """Nearest-rank percentile (p in 0..100)."""
    s = sorted(values)
    k = max(0, min(len(s) - 1, -(-len(s) * p // 100) - 1))
    return s[int(k)]


def parse_upstreams(spec):
    mapping = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, _, name = part.partition("=")
        if key not in KEYS:
            raise SystemExit(f"unknown upstream key {key!r}; keys: {', '.join(KEYS)}")
        mapping[key] = name or key
    return mapping


def rename(tool, mapping):
    key = next((k for k in sorted(mapping, key=len, reverse=True) if tool.startswith(k + "_")), None)
    return mapping[key] + tool[len(key):] if key else None


def full_list_bytes_offline(mapping):
    """The tools/list result teamgate would send without search mode, from tools.json: every tool of
    the chosen upstreams with its prefixed name (teamgate may add or drop fields, so approximate)."""
    with open(os.path.join(HERE, "tools.json"), encoding="utf-8") as f:
        catalog = json.load(f)
    tools = []
    for key, name in mapping.items():
        for t in catalog.get(key, []):
            tools.append(dict(t, name=f"{name}_{t['name']}"))
    return len(compact({"tools": tools}).encode()), len(tools)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8091/mcp")
    ap.add_argument("--token", default=os.environ.get("TEAMGATE_TOKEN"), help="bearer token (none: no header)")
    ap.add_argument("--upstreams", default=",".join(KEYS), help="keys (or key=name) of the upstreams behind teamgate")
    ap.add_argument("--tasks", default=os.path.join(HERE, "tasks.json"))
    ap.add_argument("--limit", type=int, default=3, help="search_tools limit (recall@K for K up to it)")
    ap.add_argument("--repeat", type=int, default=1, help="calls per task, for more latency samples")
    ap.add_argument("--full-url", help="a teamgate in list mode, for the full tools/list bytes")
    ap.add_argument("--json", help="write the figures and misses to this file")
    ap.add_argument("--min-recall3", type=float, help="exit 1 when recall@3 is below this")
    a = ap.parse_args()

    mapping = parse_upstreams(a.upstreams)
    with open(a.tasks, encoding="utf-8") as f:
        all_tasks = json.load(f)
    tasks = []
    for t in all_tasks:
        right = [rename(r, mapping) for r in t["right"]]
        if all(right):
            tasks.append({"query": t["query"], "right": right})
    if not tasks:
        raise SystemExit("no task has all its right tools on the given upstreams")

    s = Session(a.url, a.token)
    try:
        init = s.open()
        info = init.get("serverInfo", {})
        listed, list_bytes, list_body = s.list_tools()
        names = [t.get("name") for t in listed]
        if "search_tools" not in names:
            raise RpcError(f"tools/list has no search_tools (is [mcp] discovery = \"search\"?): {names[:10]}")
        if a.full_url:
            f = Session(a.full_url, a.token)
            try:
                f.open()
                full_tools, full_bytes, _ = f.list_tools()
                full_count, full_how = len(full_tools), a.full_url
            finally:
                f.close()
        else:
            full_bytes, full_count = full_list_bytes_offline(mapping)
            full_how = "tools.json, prefixed"

        s.request("tools/call", {"name": "search_tools", "arguments": {"query": "warm up", "limit": a.limit}})
        latencies, rows = [], []
        hits1 = hits3 = 0
        for t in tasks:
            got = None
            for _ in range(max(1, a.repeat)):
                result, _, secs = s.request("tools/call", {"name": "search_tools",
                                                            "arguments": {"query": t["query"], "limit": a.limit}})
                latencies.append(secs)
                got = search_names(result)
            h1 = bool(got[:1]) and got[0] in t["right"]
            h3 = any(n in t["right"] for n in got[:3])
            hits1 += h1
            hits3 += h3
            rows.append({"query": t["query"], "right": t["right"], "got": got, "hit1": h1, "hit3": h3})
    except RpcError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        s.close()

    n = len(tasks)
    r1, r3 = hits1 / n, hits3 / n
    ms = [x * 1000 for x in latencies]
    saved = 1 - list_bytes / full_bytes if full_bytes else 0.0
    print(f"teamgate {info.get('name', '?')} {info.get('version', '?')} at {a.url}")
    print(f"tools/list (search mode): {len(listed)} tools ({', '.join(names)}), {list_bytes} bytes of result "
          f"({list_body} bytes of HTTP body)")
    print(f"tools/list (full, {full_how}): {full_count} tools, {full_bytes} bytes -> {saved:.1%} fewer in search mode")
    misses = [r for r in rows if not r["hit3"]]
    if misses:
        print(f"misses at 3 ({len(misses)}):")
        for r in misses:
            print(f"  - {r['query']!r}: right {r['right']}, got {r['got'][:3]}")
    wrong1 = [r for r in rows if r["hit3"] and not r["hit1"]]
    if wrong1:
        print(f"right tool at 2 or 3 ({len(wrong1)}):")
        for r in wrong1:
            print(f"  - {r['query']!r}: right {r['right']}, got {r['got'][:3]}")
    print(f"search_tools latency over {len(ms)} calls (c=1): p50 {statistics.median(ms):.2f} ms, "
          f"p95 {percentile(ms, 95):.2f} ms, max {max(ms):.2f} ms")
    print(f"tasks: {n}  recall@1: {r1:.3f}  recall@3: {r3:.3f}")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({
                "url": a.url, "server": info, "tasks": n, "recall_at_1": r1, "recall_at_3": r3,
                "list_bytes_search": list_bytes, "list_bytes_full": full_bytes, "list_tools_full": full_count,
                "list_bytes_saved": saved, "latency_ms_p50": statistics.median(ms),
                "latency_ms_p95": percentile(ms, 95), "latency_samples": len(ms), "rows": rows,
            }, f, indent=1)
    if a.min_recall3 is not None and r3 < a.min_recall3:
        print(f"recall@3 {r3:.3f} is below {a.min_recall3}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
