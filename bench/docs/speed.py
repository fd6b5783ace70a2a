"""Speed of teamgate's docs source through the real binary, on synthesised documents.

  python3 bench/docs/speed.py BINARY CORPUS_DIR WORK_DIR [--documents 10000] [--searches 500] [--seconds 10]

Writes WORK_DIR/docs/ with N Markdown documents cut from the corpus's sections (each `## ` section of
each corpus file becomes a document; cycled with a numbered title until N); the source keeps its index
on disk (`index_dir`) with watch on. Measures, over MCP stdio: the time from start to the first reply
with no index on disk (the index is built before serving), search latency at c=1 (one client,
sequential calls; the stdio round trip included), RSS from /proc, the time from rewriting one document
to a search finding its new word (watch), then restarts: with the index on disk and nothing changed,
and with one document changed meanwhile. Then over HTTP (`teamgate serve`, a personal token, the
2026-07-28 stateless requests; wrk with bench/docs/search.lua): latency and throughput at c=1 and c=16,
and RSS after. Prints JSON.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
QUERIES = ["read file", "stream pipe error", "hash", "http request timeout", "buffer encoding",
           "worker message", "process exit code", "promise rejection", "socket", "event listener"]


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


def memory(pid):
    status = open(f"/proc/{pid}/status").read()
    field = lambda name: int(re.search(rf"{name}:\s+(\d+) kB", status).group(1)) // 1024
    return field("VmHWM"), field("VmRSS")


class Client:
    """teamgate stdio; `started` is the time from launch to the initialize reply."""

    def __init__(self, binary, config):
        begun = time.monotonic()
        self.proc = subprocess.Popen([binary, "stdio", "--config", config], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.next = 0
        self.rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "bench-docs", "version": "1"}})
        self.started = time.monotonic() - begun
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")

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

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def until_found(client, word):
    t = time.monotonic()
    while time.monotonic() - t < 120:
        if client.search(word)["structuredContent"]["hits"]:
            return round(time.monotonic() - t, 3)
        time.sleep(0.02)
    raise SystemExit(f"{word} never found")


def wrk(url, token, connections, seconds):
    threads = min(2, connections)
    env = dict(os.environ, BENCH_QUERIES="|".join(QUERIES), BENCH_LIMIT=str(10**7))
    headers = ["-H", "Content-Type: application/json", "-H", "Accept: application/json, text/event-stream",
               "-H", f"Authorization: Bearer {token}", "-H", "MCP-Protocol-Version: 2026-07-28",
               "-H", "Mcp-Method: tools/call", "-H", "Mcp-Name: search_docs"]
    out = subprocess.run(["timeout", "-k", "5", str(seconds + 10), "wrk", "-t", str(threads), "-c", str(connections),
                          "-d", f"{seconds}s", "--timeout", "10s", "-s", os.path.join(HERE, "search.lua"), *headers, url],
                         env=env, capture_output=True, text=True).stdout
    figures = json.loads(out.split("BENCHJSON ", 1)[1].splitlines()[0])
    if figures["failed"] or "FIRSTFAILURE" in out:
        raise SystemExit(f"failed searches over HTTP: {out}")
    good = figures["requests"] - figures["failed"]
    return {"searches_per_s": round(good / (figures["duration_us"] / 1e6)),
            "p50_ms": round(figures["p50_us"] / 1000, 2), "p99_ms": round(figures["p99_us"] / 1000, 2)}


def http(binary, config, work, seconds):
    env = dict(os.environ, TEAMGATE__STORE__URL=f"sqlite://{work}/teamgate.db")
    configs = ["--config", config, "--config", os.path.join(ROOT, "bench", "teamgate.toml")]
    log = open(os.path.join(work, "serve.log"), "w")
    subprocess.run([binary, "migrate", *configs], env=env, check=True, stdout=log, stderr=log)
    token = subprocess.run([binary, "token", *configs, "create", "--user", "bench", "--name", "docs"], env=env,
                           check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([binary, "serve", *configs, "--listen", f"127.0.0.1:{port}"], env=env,
                              stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit(f"teamgate serve did not start (see {work}/serve.log)")
                time.sleep(0.2)
        url = f"http://127.0.0.1:{port}/mcp"
        wrk(url, token, 1, 2)  # warm-up
        c1 = wrk(url, token, 1, seconds)
        c16 = wrk(url, token, 16, seconds)
        peak, rss = memory(server.pid)
        return {"http_c1": c1, "http_c16": c16, "http_rss_peak_mib": peak, "http_rss_after_mib": rss}
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


def main():
    binary, corpus, work = (os.path.abspath(a) for a in sys.argv[1:4])
    count, searches, seconds = arg("--documents", 10000), arg("--searches", 500), arg("--seconds", 10)
    folder, index = os.path.join(work, "docs"), os.path.join(work, "index")
    size = synthesise(corpus, folder, count)
    shutil.rmtree(index, ignore_errors=True)
    config = os.path.join(work, "speed.toml")
    with open(config, "w") as out:
        out.write(f'[[sources.docs]]\nname = "synth"\npaths = ["{folder}"]\ntool = "search_docs"\n'
                  f'watch = true\ndebounce = "50ms"\nmax_documents = {count + 10}\nindex_dir = "{index}"\n')
    client = Client(binary, config)
    latencies = []
    for i in range(searches):
        t = time.monotonic()
        result = client.search(QUERIES[i % len(QUERIES)])
        latencies.append((time.monotonic() - t) * 1000)
        assert result["structuredContent"]["hits"], result
    latencies.sort()
    peak, rss = memory(client.proc.pid)
    # Watch: one document rewritten with a new word, until a search finds it.
    with open(os.path.join(folder, "doc-00007.md"), "a", encoding="utf-8") as out:
        out.write("\n## Added\n\nThe word zyzzogeton appears.\n")
    reindex_s = until_found(client, "zyzzogeton")
    client.close()
    # Restarts with the index on disk: nothing changed, then one document changed while stopped.
    warm = Client(binary, config)
    warm.close()
    with open(os.path.join(folder, "doc-00011.md"), "a", encoding="utf-8") as out:
        out.write("\n## Added\n\nThe word quixotry appears.\n")
    changed = Client(binary, config)
    assert changed.search("quixotry")["structuredContent"]["hits"], "the changed document was not re-indexed"
    changed.close()
    pick = lambda q: round(latencies[min(len(latencies) - 1, int(q * len(latencies)))], 2)
    report = {"documents": count, "bytes": size, "start_building_index_s": round(client.started, 2),
              "restart_index_on_disk_s": round(warm.started, 2),
              "restart_one_file_changed_s": round(changed.started, 2),
              "searches": searches, "stdio_search_ms_p50": pick(0.5), "stdio_search_ms_p99": pick(0.99),
              "rss_peak_mib": peak, "rss_after_searches_mib": rss,
              "watch_reindex_one_file_s": reindex_s}
    report.update(http(binary, config, work, seconds))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
