"""Speed of teamgate's docs source through the real binary over MCP stdio, on synthesised documents.

  python3 bench/docs/speed.py BINARY CORPUS_DIR WORK_DIR [--documents 10000] [--searches 500]

Writes WORK_DIR/docs/ with N Markdown documents cut from the corpus's sections (each `## ` section of
each corpus file becomes a document; cycled with a numbered title until N), then measures: the time
from start to the first reply (the index is built before serving), search latency at c=1 (one client,
sequential calls; includes the stdio round trip), peak and current RSS from /proc, and, with watch on,
the time from rewriting one document to a search finding its new word. Prints JSON.
"""
import json
import os
import re
import subprocess
import sys
import time


def arg(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def synthesise(corpus, target, count):
    os.makedirs(target, exist_ok=True)
    pieces = []
    for name in sorted(os.listdir(corpus)):
        text = open(os.path.join(corpus, name), encoding="utf-8").read()
        pieces += [p for p in re.split(r"\n(?=## )", text) if len(p) > 200]
    for i in range(count):
        piece = pieces[i % len(pieces)]
        with open(os.path.join(target, f"doc-{i:05d}.md"), "w", encoding="utf-8") as out:
            out.write(f"# Document {i}\n\n{piece}\n")
    return sum(os.path.getsize(os.path.join(target, f)) for f in os.listdir(target))


class Client:
    def __init__(self, binary, config):
        self.proc = subprocess.Popen([binary, "stdio", "--config", config], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.next = 0

    def rpc(self, method, params):
        self.next += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params}) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit("teamgate stopped")
            message = json.loads(line)
            if message.get("id") == self.next:
                return message.get("result", message.get("error"))

    def search(self, query):
        return self.rpc("tools/call", {"name": "search_docs", "arguments": {"query": query, "limit": 10}})

    def memory(self):
        status = open(f"/proc/{self.proc.pid}/status").read()
        field = lambda name: int(re.search(rf"{name}:\s+(\d+) kB", status).group(1)) // 1024
        return field("VmHWM"), field("VmRSS")


def main():
    binary, corpus, work = sys.argv[1:4]
    count, searches = arg("--documents", 10000), arg("--searches", 500)
    folder = os.path.join(work, "docs")
    size = synthesise(corpus, folder, count)
    config = os.path.join(work, "speed.toml")
    with open(config, "w") as out:
        out.write(f'[[sources.docs]]\nname = "synth"\npaths = ["{folder}"]\ntool = "search_docs"\n'
                  f'watch = true\ndebounce = "50ms"\nmax_documents = {count + 10}\n')
    started = time.monotonic()
    client = Client(binary, config)
    client.rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "bench-docs", "version": "1"}})
    index_s = time.monotonic() - started
    client.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    words = ["read file", "stream pipe error", "hash", "http request timeout", "buffer encoding",
             "worker message", "process exit code", "promise rejection", "socket", "event listener"]
    latencies = []
    for i in range(searches):
        t = time.monotonic()
        result = client.search(words[i % len(words)])
        latencies.append((time.monotonic() - t) * 1000)
        assert result["structuredContent"]["hits"], result
    latencies.sort()
    peak, rss = client.memory()
    # Watch: one document rewritten with a new word, until a search finds it.
    marker = "zyzzogeton"
    with open(os.path.join(folder, "doc-00007.md"), "a", encoding="utf-8") as out:
        out.write(f"\n## Added\n\nThe word {marker} appears.\n")
    t = time.monotonic()
    while time.monotonic() - t < 120:
        if client.search(marker)["structuredContent"]["hits"]:
            break
        time.sleep(0.02)
    reindex_s = time.monotonic() - t
    client.proc.stdin.close()
    client.proc.wait(timeout=30)
    pick = lambda q: round(latencies[min(len(latencies) - 1, int(q * len(latencies)))], 2)
    print(json.dumps({"documents": count, "bytes": size, "start_with_index_s": round(index_s, 2),
                      "searches": searches, "search_ms_p50": pick(0.5), "search_ms_p99": pick(0.99),
                      "searches_per_s_c1": round(1000 * len(latencies) / sum(latencies), 1),
                      "rss_peak_mib": peak, "rss_after_searches_mib": rss,
                      "watch_reindex_one_file_s": round(reindex_s, 2)}))


if __name__ == "__main__":
    main()
