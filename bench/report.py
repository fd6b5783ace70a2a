#!/usr/bin/env python3
"""Numbers for bench/run (standard library only).

    report.py wrk FILE            one wrk run (bench/load.lua output) -> "rps p50_ms p99_ms ok failed secs"
    report.py table RESULTS.tsv   the Markdown table, ratios and budget lines of a run

RESULTS.tsv holds one `server<TAB>metric<TAB>value` line per figure, written by bench/run.
"""

import json
import sys

SERVERS = ["teamgate-sqlite", "teamgate-postgres", "raw-rmcp", "bare-axum", "ts-sdk", "py-sdk"]
TEAMGATES = ["teamgate-sqlite", "teamgate-postgres"]
LEVELS = [1, 16, 64]
MODES = [("legacy", "legacy session"), ("stateless", "2026-07-28 stateless")]
# The paired runs: the c=64 tools/call modes, and initialize at c=16.
PAIRED = MODES + [("init", "initialize (c=16)")]


def wrk(path):
    """The BENCHJSON line that bench/load.lua prints at the end of a wrk run."""
    with open(path) as f:
        lines = [l for l in f if l.startswith("BENCHJSON ")]
    if not lines:
        print("0 0 0 0 0 0")
        return
    data = json.loads(lines[-1][len("BENCHJSON "):])
    secs = data["duration_us"] / 1e6
    failed = data["failed"] + data["socket_errors"]
    ok = max(data["requests"] - data["failed"], 0)
    rps = ok / secs if secs else 0.0  # good replies only
    print(f"{rps:.1f} {data['p50_us'] / 1000:.3f} {data['p99_us'] / 1000:.3f} {ok} {failed} {secs:.2f}")


def load(path):
    figures = {}
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 3 and parts[1] == "note":
                figures.setdefault(parts[0], {}).setdefault("notes", []).append(parts[2])
            elif len(parts) == 3:
                figures.setdefault(parts[0], {})[parts[1]] = parts[2]
    return figures


def num(figures, server, metric):
    try:
        return float(figures.get(server, {})[metric])
    except (KeyError, ValueError):
        return None


def fmt(value, digits=0):
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}"


def table(path):
    figures = load(path)
    servers = [s for s in SERVERS if s in figures]
    rows = []
    for mode, label in MODES:
        for c in LEVELS:
            key = f"{mode}_c{c}"
            rows.append((f"tools/call {label}, c={c}: req/s", key + "_rps", 0))
            rows.append((f"  p50 / p99 ms", (key + "_p50", key + "_p99"), 2))
            rows.append((f"  failed replies", key + "_failed", 0))
    rows += [
        ("initialize, c=16: req/s", "init_rps", 0),
        ("CPU s per 10,000 calls (legacy, c=64)", "legacy_c64_cpu10k", 2),
        ("CPU s per 10,000 calls (stateless, c=64)", "stateless_c64_cpu10k", 2),
        ("RSS idle, MiB", "rss_idle_mib", 1),
        ("  file-backed / anonymous pages idle, MiB", ("rss_file_idle_mib", "rss_anon_idle_mib"), 1),
        ("RSS right after the loads, MiB", "rss_after_load_mib", 1),
        ("RSS a minute after the loads, MiB", "rss_after_wait_mib", 1),
        ("  of it the allocator's resident heap, MiB", "heap_resident_after_wait_mib", 1),
        ("  of that allocated to live objects, MiB", "heap_allocated_after_wait_mib", 1),
        ("  of that the allocator's metadata, MiB", "heap_metadata_after_wait_mib", 1),
        ("  file-backed pages (the binary's code and data), MiB", "rss_file_after_wait_mib", 1),
        ("  anonymous pages (heap, stacks, SQLite's malloc), MiB", "rss_anon_after_wait_mib", 1),
        ("flatness c=64: first window req/s", "flat_first_rps", 0),
        ("flatness c=64: last window req/s", "flat_last_rps", 0),
        ("flatness: database growth over the run, MiB", "flat_db_growth_mib", 1),
        ("RSS per 1,000 idle legacy sessions, KiB (after eviction wait)", "sessions_per1k_kib", 0),
        ("RSS per 1,000 legacy sessions right after opening, KiB", "sessions_open_per1k_kib", 0),
        ("RSS per 1,000 further idle legacy sessions (a second wave), KiB", "sessions_more_per1k_kib", 0),
        ("subscriptions/listen streams held", "streams_ok", 0),
        ("RSS per 1,000 open listen streams, KiB", "streams_per1k_kib", 0),
    ]
    out = ["| figure | " + " | ".join(servers) + " |", "|---|" + "---|" * len(servers)]
    for label, metric, digits in rows:
        cells = []
        for s in servers:
            if isinstance(metric, tuple):
                a, b = (num(figures, s, m) for m in metric)
                cells.append("n/a" if a is None else f"{fmt(a, digits)} / {fmt(b, digits)}")
            else:
                cells.append(fmt(num(figures, s, metric), digits))
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    notes = [(s, n) for s in servers for n in figures[s].get("notes", [])]
    if notes:
        out.append("")
        out += [f"- {s}: {n}" for s, n in notes]
    print("\n".join(out))
    print()
    ratios(figures, servers)
    print()
    pairs(figures)
    budget(figures)
    print()
    hop(figures)


def ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else "n/a"


def ratios(figures, servers):
    print("Throughput ratios (req/s of the row's server divided by the reference; p99 likewise):")
    print()
    print("| server | mode | c | / bare-axum req/s | / raw-rmcp req/s | / raw-rmcp p99 |")
    print("|---|---|---|---|---|---|")
    for s in servers:
        if s in ("bare-axum",):
            continue
        for mode, label in MODES:
            for c in LEVELS:
                key = f"{mode}_c{c}"
                rps = num(figures, s, key + "_rps")
                if rps is None:
                    continue
                print(
                    f"| {s} | {label} | {c} | {ratio(rps, num(figures, 'bare-axum', key + '_rps'))} | "
                    f"{ratio(rps, num(figures, 'raw-rmcp', key + '_rps'))} | "
                    f"{ratio(num(figures, s, key + '_p99'), num(figures, 'raw-rmcp', key + '_p99'))} |"
                )


def paired(figures, server, mode, what):
    """The paired runs' ratios of one server and mode, in round order."""
    rounds = []
    while (r := num(figures, server, f"pair_{mode}_{what}_{len(rounds) + 1}")) is not None:
        rounds.append(r)
    return rounds


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def pairs(figures):
    rows = []
    for s in TEAMGATES:
        for mode, label in PAIRED:
            rps, p99 = paired(figures, s, mode, "rps"), paired(figures, s, mode, "p99")
            if rps:
                failed = sum(int(num(figures, s, f"pair_{mode}_failed_{i + 1}") or 0) for i in range(len(rps)))
                rows.append(f"| {s} | {label} | {', '.join(f'{r:.2f}x' for r in rps)} | {median(rps):.2f}x | "
                            f"{', '.join(f'{r:.2f}x' for r in p99)} | {median(p99):.2f}x | {failed} |")
    if not rows:
        return
    print("Paired runs (raw rmcp beside teamgate, taking turns; teamgate divided by the raw rmcp run just before it):")
    print()
    print("| server | mode | req/s ratio per round | median | p99 ratio per round | median | failed |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(row)
    print()


def budget(figures):
    print("Budget (issue 25; teamgate must hold every line):")
    print()
    print("| line | server | measured | budget | holds |")
    print("|---|---|---|---|---|")

    def line(name, server, value, limit, higher_is_better, shown):
        if value is None or limit is None:
            verdict = "not measured"
        else:
            ok = value >= limit if higher_is_better else value <= limit
            verdict = "yes" if ok else "**NO**"
        print(f"| {name} | {server} | {shown} | {'>=' if higher_is_better else '<='} "
              f"{fmt(limit, 2) if limit is not None else 'n/a'} | {verdict} |")

    for s in TEAMGATES:
        if s not in figures:
            continue
        # Issue 67: initialize >= 0.65x on SQLite, >= 0.5x on PostgreSQL.
        init_floor = 0.65 if s == "teamgate-sqlite" else 0.5
        for mode, label in MODES:
            # The paired runs' median when there are some (see above); else the phases' ratio.
            if rounds := paired(figures, s, mode, "rps"):
                r = median(rounds)
                line(f"tools/call c=64 {label}: req/s vs raw rmcp (paired median)", s, r, 0.65, True, f"{r:.2f}x")
                r = median(paired(figures, s, mode, "p99"))
                line(f"tools/call c=64 {label}: p99 vs raw rmcp (paired median)", s, r, 2.0, False, f"{r:.2f}x")
                continue
            key = f"{mode}_c64"
            rps, ref = num(figures, s, key + "_rps"), num(figures, "raw-rmcp", key + "_rps")
            r = rps / ref if rps is not None and ref else None
            line(f"tools/call c=64 {label}: req/s vs raw rmcp", s, r, 0.65, True, ratio(rps, ref))
            p99, ref99 = num(figures, s, key + "_p99"), num(figures, "raw-rmcp", key + "_p99")
            r = p99 / ref99 if p99 is not None and ref99 else None
            line(f"tools/call c=64 {label}: p99 vs raw rmcp", s, r, 2.0, False, ratio(p99, ref99))
        if rounds := paired(figures, s, "init", "rps"):
            r = median(rounds)
            line("initialize c=16: req/s vs raw rmcp (paired median)", s, r, init_floor, True, f"{r:.2f}x")
        else:
            rps, ref = num(figures, s, "init_rps"), num(figures, "raw-rmcp", "init_rps")
            r = rps / ref if rps is not None and ref else None
            line("initialize c=16: req/s vs raw rmcp", s, r, init_floor, True, ratio(rps, ref))
        per = num(figures, s, "sessions_per1k_kib")
        line("RSS per idle legacy session, KiB", s, per / 1000 if per is not None else None, 4, False,
             fmt(per / 1000, 2) if per is not None else "n/a")
        per = num(figures, s, "streams_per1k_kib")
        mib = per / 1024 if per is not None else None
        line("RSS per 1,000 open listen streams, MiB", s, mib, 64, False, fmt(mib, 1))
        idle = num(figures, s, "rss_idle_mib")
        line("idle RSS, MiB", s, idle, 30, False, fmt(idle, 1))
        after = num(figures, s, "rss_after_wait_mib")
        back = after / idle if after is not None and idle else None
        line("RSS a minute after the loads / idle", s, back, 1.2, False, fmt(back, 2))
        first, last = num(figures, s, "flat_first_rps"), num(figures, s, "flat_last_rps")
        flat = last / first if first and last is not None else None
        line("flatness: last 10 s / first 10 s req/s (c=64)", s, flat, 0.9, True, fmt(flat, 2))


def hop(figures):
    """Issue 67's upstream lines: teamgate in front of raw rmcp, against calling it directly and against
    FastMCP's proxy in front of the same upstream. The upstream, teamgate and wrk share the machine."""
    s = "teamgate-upstream"
    if s not in figures:
        return
    print("The hop (issue 67; the upstream, teamgate and the load generator share this machine's cores):")
    print()
    print("| line | measured | budget | holds |")
    print("|---|---|---|---|")

    def rounds(metric):
        found = []
        while (r := num(figures, s, f"{metric}_{len(found) + 1}")) is not None:
            found.append(r)
        return found

    def line(name, value, limit, higher_is_better, shown):
        if value is None:
            verdict = "not measured"
        else:
            verdict = "yes" if (value >= limit if higher_is_better else value <= limit) else "**NO**"
        print(f"| {name} | {shown} | {'>=' if higher_is_better else '<='} {limit} | {verdict} |")

    added = rounds("up_c1_added_p50_ms")
    value = median(added) if added else None
    line("p50 added at c=1 over direct, ms (median of rounds)", value, 0.15, False, fmt(value, 3))
    via = num(figures, s, "up_c64_cpu10k")
    own = num(figures, "teamgate-sqlite", "stateless_c64_cpu10k")
    cpu = via / own if via is not None and own else None
    line("CPU per proxied call / per own-tool call (c=64)", cpu, 1.3, False,
         f"{fmt(cpu, 2)} ({fmt(via, 2)} / {fmt(own, 2)} s per 10k)")
    ratios = rounds("up_c64_rps_ratio")
    value = median(ratios) if ratios else None
    line("c=64 through teamgate / direct req/s (median)", value, 0.3, True, fmt(value, 2))
    tg, fm = num(figures, s, "up_c16_rps"), num(figures, s, "fastmcp_c16_rps")
    value = tg / fm if tg is not None and fm else None
    line("c=16 through teamgate / through FastMCP's proxy req/s", value, 100, True,
         f"{fmt(value, 0)} ({fmt(tg, 0)} / {fmt(fm, 1)} req/s)")
    print()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "wrk":
        wrk(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "table":
        table(sys.argv[2])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
