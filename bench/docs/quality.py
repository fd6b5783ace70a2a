"""Retrieval quality of teamgate's docs search, measured through the real binary over MCP (stdio).

  python3 bench/docs/quality.py BINARY CONFIG QUERIES [--label NAME]

Each line of QUERIES is `query<TAB>path#anchor[|path#anchor...]` (the expected section, or the
sections of one API's variants: sync, callback and promise forms). A hit is relevant when it is one of
them (same document and `section` = anchor; an index without sections never names one). The
document-level figures count a hit as relevant when it is the expected document, which is all a
per-file index can get right. Prints recall@5 and MRR (over the top 10) at both levels as JSON.
"""
import json
import subprocess
import sys
import time

K, DEPTH = 5, 10


def main():
    binary, config, queries = sys.argv[1:4]
    label = sys.argv[sys.argv.index("--label") + 1] if "--label" in sys.argv else binary
    cases = []
    for line in open(queries, encoding="utf-8"):
        if line.strip() and not line.startswith("#"):
            query, expected = line.rstrip("\n").split("\t")
            cases.append((query, [tuple(e.split("#", 1)) for e in expected.split("|")]))
    proc = subprocess.Popen([binary, "stdio", "--config", config], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    ids = iter(range(1, 10**6))

    def rpc(method, params):
        ident = next(ids)
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}) + "\n")
        proc.stdin.flush()
        deadline = time.time() + 30
        while time.time() < deadline:
            line = proc.stdout.readline()
            if not line:
                raise SystemExit(f"{label}: teamgate stopped")
            message = json.loads(line)
            if message.get("id") == ident:
                if "error" in message:
                    raise SystemExit(f"{label}: {message['error']}")
                return message["result"]
        raise SystemExit(f"{label}: no reply to {method}")

    rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "bench-docs", "version": "1"}})
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    sums = {"section": [0, 0.0], "document": [0, 0.0]}
    misses = []
    for query, wanted in cases:
        result = rpc("tools/call", {"name": "search_docs", "arguments": {"query": query, "limit": DEPTH}})
        hits = result["structuredContent"]["hits"]
        # Old URIs carried the folder's name in front of the path.
        paths = [h["path"].split("/", 1)[1] if h["path"].startswith("api/") else h["path"] for h in hits]
        levels = {
            "section": [(p, h.get("section")) in wanted for p, h in zip(paths, hits)],
            "document": [p in {w[0] for w in wanted} for p in paths],
        }
        for level, relevant in levels.items():
            rank = next((i + 1 for i, r in enumerate(relevant) if r), None)
            if rank and rank <= K:
                sums[level][0] += 1
            if rank:
                sums[level][1] += 1 / rank
            if level == "section" and not (rank and rank <= K):
                misses.append((query, "|".join("#".join(w) for w in wanted), [f"{p}#{h.get('section', '')}" for p, h in zip(paths, hits)][:3]))
    proc.stdin.close()
    proc.wait(timeout=10)
    n = len(cases)
    report = {"index": label, "queries": n}
    for level, (found, rr) in sums.items():
        report[f"{level}_recall@5"] = round(found / n, 3)
        report[f"{level}_mrr@10"] = round(rr / n, 3)
    print(json.dumps(report))
    for miss in misses:
        print("  miss:", json.dumps(miss), file=sys.stderr)


if __name__ == "__main__":
    main()
