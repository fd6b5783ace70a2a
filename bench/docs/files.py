"""`search_files` against ripgrep over a 1 GiB tree, through the real binary over MCP stdio.

  python3 bench/docs/files.py BINARY CORPUS_DIR TREE_DIR [--mib 1024] [--runs 5]

Makes TREE_DIR once (kept while its stamp matches): the corpus's text cut into 512 KiB Markdown files,
32 folders, --mib MiB in all, with a marker word planted in 20 of them. Then, page cache warm (one
untimed pass of each), times each pattern --runs times with `rg -n -S` (smart case, as search_files
is; all cores, and one thread with -j1) and with `search_files {pattern}` (one stdio round trip,
the reply parsed), checks that both find the same number of matching lines, and prints the medians
and the ratio to rg as JSON.
"""
import json
import os
import statistics
import subprocess
import sys
import time

CHUNK = 512 * 1024
FOLDERS = 32
MARKER = "zyzzogeton"
PATTERNS = [MARKER, r"timingSafeEqual\(\w+, \w+\) with a Buffer of \d+ bytes", r"\bERR_[A-Z_]+_NOT_A_CODE\b"]


def arg(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def make_tree(corpus, tree, mib):
    stamp = os.path.join(tree, ".stamp")
    want = f"{mib} MiB v1"
    if os.path.exists(stamp) and open(stamp).read() == want:
        return
    subprocess.run(["rm", "-rf", tree], check=True)
    text = "".join(open(os.path.join(corpus, n), encoding="utf-8").read() for n in sorted(os.listdir(corpus)))
    data = text.encode("utf-8")
    files = mib * 1024 * 1024 // CHUNK
    for i in range(files):
        folder = os.path.join(tree, f"part-{i % FOLDERS:02d}")
        os.makedirs(folder, exist_ok=True)
        start = (i * CHUNK) % (len(data) - CHUNK)
        chunk = data[start:start + CHUNK]
        # Whole lines only, and the marker in every files // 20th file.
        chunk = chunk[chunk.index(b"\n") + 1:chunk.rindex(b"\n") + 1]
        if i % (files // 20) == 0:
            chunk += f"A planted line with the word {MARKER}.\n".encode()
        with open(os.path.join(folder, f"doc-{i:05d}.md"), "wb") as out:
            out.write(chunk)
    with open(stamp, "w") as out:
        out.write(want)


def rg(pattern, tree, threads):
    args = ["rg", "-n", "-S", "--no-messages", pattern, tree] + (["-j1"] if threads == 1 else [])
    t = time.monotonic()
    out = subprocess.run(args, capture_output=True).stdout
    return time.monotonic() - t, out.count(b"\n")


class Client:
    def __init__(self, binary, config):
        self.proc = subprocess.Popen([binary, "stdio", "--config", config], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.next = 0
        self.rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "bench-files", "version": "1"}})

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
                return message["result"]

    def search(self, pattern):
        t = time.monotonic()
        result = self.rpc("tools/call", {"name": "search_files", "arguments": {"pattern": pattern, "limit": 1000}})
        took = time.monotonic() - t
        found = result["structuredContent"]
        assert not found["truncated"], "raise the limit: the search stopped early"
        return took, len(found["matches"])


def main():
    binary, corpus, tree = (os.path.abspath(a) for a in sys.argv[1:4])
    mib, runs = arg("--mib", 1024), arg("--runs", 5)
    make_tree(corpus, tree, mib)
    config = os.path.join(os.path.dirname(tree), "files.toml")
    with open(config, "w") as out:
        out.write(f'[[sources.files]]\nname = "tree"\nroot = "{tree}"\nextensions = ["md"]\nmax_results = 1000\n'
                  f'max_file_bytes = {2 * CHUNK}\n')
    client = Client(binary, config)
    report = {"tree_mib": mib, "files": mib * 1024 * 1024 // CHUNK, "runs": runs, "patterns": []}
    for pattern in PATTERNS:
        rg(pattern, tree, 2), client.search(pattern)  # warm the page cache
        timings = {"rg": [], "rg_j1": [], "search_files": []}
        counts = set()
        for _ in range(runs):
            for name, run in (("rg", lambda: rg(pattern, tree, 2)), ("rg_j1", lambda: rg(pattern, tree, 1)),
                              ("search_files", lambda: client.search(pattern))):
                took, count = run()
                timings[name].append(took)
                counts.add((name.startswith("rg"), count))
        assert len({c for _, c in counts}) == 1, f"different match counts for {pattern}: {counts}"
        medians = {k: round(statistics.median(v), 3) for k, v in timings.items()}
        report["patterns"].append({"pattern": pattern, "matches": counts.pop()[1], **{f"{k}_s": v for k, v in medians.items()},
                                   "ratio_to_rg": round(medians["search_files"] / medians["rg"], 2),
                                   "ratio_to_rg_j1": round(medians["search_files"] / medians["rg_j1"], 2)})
    client.proc.stdin.close()
    client.proc.wait(timeout=30)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
