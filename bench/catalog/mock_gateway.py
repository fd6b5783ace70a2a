#!/usr/bin/env python3
"""A stand-in for teamgate's search mode, to check recall.py and to give a baseline.

It serves the search-mode contract of issue 60 over Streamable HTTP (2025-11-25 sessions) from
tools.json, with no upstream behind it: tools/list gives `search_tools` and `call_tool`, and
`search_tools {query, limit}` ranks the catalog's prefixed tools with plain BM25 over name, title,
description and parameter names — no synonyms, no stemming: the floor teamgate must beat.
Answers alternate between a JSON body and an SSE stream, so both of recall.py's paths run.
  python3 bench/catalog/mock_gateway.py [--port 8099] &
  python3 bench/catalog/recall.py --url http://127.0.0.1:8099/mcp
Standard library only; listens on 127.0.0.1 alone.
"""

import argparse
import json
import math
import os
import re
import uuid
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))

META = [
    {"name": "search_tools", "description": "Find the tools for a task: ranks the tools you may call.",
     "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                     "required": ["query"]}},
    {"name": "call_tool", "description": "Call a tool found with search_tools by its name.",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
                     "required": ["name"]}},
]


def words(text):
    # Split camelCase, snake_case, kebab-case and punctuation; lower case.
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text or "")
    return [w for w in re.split(r"[^a-z0-9]+", text.lower()) if w]


class Bm25:
    def __init__(self, tools, k1=1.2, b=0.75):
        self.tools, self.k1, self.b = tools, k1, b
        self.docs = []
        for t in tools:
            props = (t.get("inputSchema") or {}).get("properties") or {}
            # The name counts three times, the title twice: they say most in fewest words.
            text = " ".join([t["name"]] * 3 + [t.get("title") or ""] * 2 + [t.get("description") or ""] + list(props))
            self.docs.append(Counter(words(text)))
        self.avg = sum(sum(d.values()) for d in self.docs) / max(1, len(self.docs))
        df = Counter(w for d in self.docs for w in d)
        n = len(self.docs)
        self.idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}

    def search(self, query, limit):
        q = words(query)
        scored = []
        for i, d in enumerate(self.docs):
            length = sum(d.values())
            s = 0.0
            for w in q:
                f = d.get(w, 0)
                if f:
                    s += self.idf[w] * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * length / self.avg))
            if s > 0:
                scored.append((-s, i))
        scored.sort()
        return [self.tools[i] for _, i in scored[:limit]]


def load_catalog():
    with open(os.path.join(HERE, "tools.json"), encoding="utf-8") as f:
        catalog = json.load(f)
    return [dict(t, name=f"{key}_{t['name']}") for key, tools in catalog.items() for t in tools]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    index = None
    sessions = set()
    turn = 0

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", ctype=None, headers=None):
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_DELETE(self):
        self.sessions.discard(self.headers.get("Mcp-Session-Id"))
        self.reply(204)

    def do_POST(self):
        msg = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        method, rid = msg.get("method"), msg.get("id")
        headers = {}
        if method == "initialize":
            sid = uuid.uuid4().hex
            self.sessions.add(sid)
            headers["Mcp-Session-Id"] = sid
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": True}},
                      "serverInfo": {"name": "mock-search-gateway", "version": "0"}}
        elif self.headers.get("Mcp-Session-Id") not in self.sessions:
            return self.reply(404, b"unknown session")
        elif rid is None:
            return self.reply(202)
        elif method == "tools/list":
            result = {"tools": META}
        elif method == "tools/call" and msg["params"]["name"] == "search_tools":
            args = msg["params"].get("arguments") or {}
            found = self.index.search(args.get("query", ""), int(args.get("limit", 5)))
            payload = {"tools": [{k: t.get(k) for k in ("name", "title", "description", "inputSchema", "annotations")
                                  if k in t} for t in found]}
            result = {"content": [{"type": "text", "text": json.dumps(payload)}], "structuredContent": payload}
        else:
            body = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"not here: {method}"}}
            return self.reply(200, json.dumps(body).encode(), "application/json")
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "result": result})
        Handler.turn += 1
        if Handler.turn % 2:
            self.reply(200, body.encode(), "application/json", headers)
        else:  # a priming event with an empty data line, a comment, then the response
            sse = f"id: 0\ndata:\n\n: keep-alive\n\nid: 1\nevent: message\ndata: {body}\n\n"
            self.reply(200, sse.encode(), "text/event-stream", headers)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=8099)
    a = ap.parse_args()
    Handler.index = Bm25(load_catalog())
    server = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    print(f"mock search gateway on http://127.0.0.1:{a.port}/mcp", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
