#!/usr/bin/env python3
"""bench/resident.py PID [--crates]: which parts of a running teamgate's executable are in RAM
(BENCHMARKS.md, issue 67, third session). Reads /proc/PID/pagemap's present bit for every page
the executable maps and sums the resident bytes per ELF section (file-backed or anonymous, i.e.
written: relocated data); with --crates, the resident code and read-only data per crate, from the
symbols (`nm -C -S`) covering each page. Needs root (pagemap) and binutils (readelf, nm)."""
import bisect
import collections
import re
import struct
import subprocess
import sys


def executable_maps(pid):
    exe = subprocess.check_output(["readlink", f"/proc/{pid}/exe"]).decode().strip()
    maps = []
    for line in open(f"/proc/{pid}/maps"):
        parts = line.split()
        if len(parts) >= 6 and parts[5] == exe:
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            maps.append((lo, hi, parts[1], int(parts[2], 16)))
    return exe, maps


def resident_pages(pid, maps):
    """(link-time address, permissions, anonymous) of every resident page."""
    base = maps[0][0] - maps[0][3]
    with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for lo, hi, perm, _ in maps:
            for va in range(lo, hi, 4096):
                pagemap.seek(va // 4096 * 8)
                entry = struct.unpack("<Q", pagemap.read(8))[0]
                if entry >> 63 & 1:
                    yield va - base, perm, not entry >> 61 & 1


def overlap(a, size, page):
    return max(0, min(a + size, page + 4096) - max(a, page))


def by_section(exe, pages):
    sections = []
    for line in subprocess.check_output(["readelf", "-SW", exe]).decode().splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if m and int(m.group(2), 16):
            sections.append((int(m.group(2), 16), int(m.group(3), 16), m.group(1)))
    total = collections.Counter()
    for page, _, anon in pages:
        for a, size, name in sections:
            total[(name, "anonymous" if anon else "file")] += overlap(a, size, page)
    return total


def crate(symbol):
    name = symbol.lstrip("<&*").replace("dyn ", "").replace("mut ", "")
    m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)", name)
    return m.group(1) if m else "?"


def by_crate(exe, pages):
    symbols = []
    out = subprocess.check_output(["nm", "-C", "--defined-only", "-S", exe]).decode(errors="replace")
    for line in out.splitlines():
        parts = line.split(" ", 3)
        if len(parts) == 4 and parts[2] in "tTrR":
            symbols.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    symbols.sort()
    starts = [s[0] for s in symbols]
    total = collections.Counter()
    for page, perm, _ in pages:
        covered = 0
        i = bisect.bisect_right(starts, page + 4096) - 1
        # Symbols starting up to 1 MiB before the page may reach into it.
        while i >= 0 and symbols[i][0] > page - (1 << 20):
            a, size, name = symbols[i]
            o = overlap(a, size, page)
            total[(perm, crate(name))] += o
            covered += o
            i -= 1
        total[(perm, "(no symbol)")] += max(0, 4096 - covered)
    return total


def main():
    pid = sys.argv[1]
    exe, maps = executable_maps(pid)
    pages = list(resident_pages(pid, maps))
    counts = by_crate(exe, pages) if "--crates" in sys.argv else by_section(exe, pages)
    for (a, b), size in counts.most_common(40):
        if size:
            print(f"{a:24s} {b:24s} {size / 2**20:7.2f} MiB")


if __name__ == "__main__":
    main()
