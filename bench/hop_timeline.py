#!/usr/bin/env python3
"""Where a proxied call's time goes on the wire (bench/hop-timeline.sh; standard library only).

    hop_timeline.py TG_PORT UP_PORT < tcpdump.txt

Reads `tcpdump -nn -tt -r CAPTURE` lines of one c=1 load through teamgate (the member's connection
to TG_PORT, teamgate's to the upstream at UP_PORT) and cuts each call at the packets that carry
bytes:

    A  the member's request reaches teamgate       (first data packet to TG_PORT)
    B  teamgate's request to the upstream leaves    (first data packet to UP_PORT after A)
    C  the upstream's reply begins                  (first data packet from UP_PORT after B)
    D  the upstream's reply ends                    (last data packet from UP_PORT before E)
    E  teamgate's reply to the member begins        (first data packet from TG_PORT after A)
    F  the member's reply ends                      (last data packet from TG_PORT before the next A)

and prints the median of each step in microseconds, with the data packets each side sent per call.
With TG_PORT 0 it reads one server's calls at UP_PORT (the upstream called directly, or teamgate's
own tool): A, E and F.
"""

import re
import statistics
import sys

LINE = re.compile(r"^(\d+\.\d+) IP6? [\d.:a-f]+?\.(\d+) > [\d.:a-f]+?\.(\d+): .* length (\d+)")


def packets(lines):
    """(time, source port, destination port) of every packet that carries bytes."""
    for line in lines:
        m = LINE.match(line)
        if m and int(m.group(4)) > 0:
            yield float(m.group(1)), int(m.group(2)), int(m.group(3))


def calls(pkts, tg, up):
    """One dict of stamps (A..F) and packet counts per whole call."""
    front = tg or up  # the port the load generator calls
    client = next((src for _, src, dst in pkts if dst == front), None)  # wrk's one connection
    out, cur = [], None
    for t, src, dst in pkts:
        if front in (src, dst) and client not in (src, dst):
            continue  # another connection to the same port (teamgate's own, in the direct load)
        if dst == front:
            if cur is not None and cur.get("F") is not None and cur["replied"]:
                out.append(cur)
                cur = None
            if cur is None:
                cur = {"A": t, "B": None, "C": None, "D": None, "E": None, "F": None, "replied": False,
                       "in": 0, "up_out": 0, "up_in": 0, "out": 0}
            cur["in"] += 1
        elif cur is None:
            continue
        elif tg and dst == up:
            cur["B"] = cur["B"] or t
            cur["up_out"] += 1
        elif tg and src == up:
            cur["C"] = cur["C"] or t
            cur["D"] = t if cur["E"] is None else cur["D"]
            cur["up_in"] += 1
        elif src == front:
            cur["E"] = cur["E"] or t
            cur["F"] = t
            cur["out"] += 1
            cur["replied"] = True
    return out


def main():
    tg, up = int(sys.argv[1]), int(sys.argv[2])
    done = calls(list(packets(sys.stdin)), tg, up)
    # The first and last calls may be cut by the capture's start and end.
    done = done[1:-1]
    if tg:
        done = [c for c in done if None not in (c["B"], c["C"], c["D"], c["E"])]
    if not done:
        print("no whole call in the capture")
        sys.exit(1)
    us = lambda a, b: statistics.median((c[b] - c[a]) * 1e6 for c in done)  # noqa: E731
    per = lambda k: statistics.mean(c[k] for c in done)  # noqa: E731
    print(f"{len(done)} calls; median microseconds per step:")
    if tg:
        print(f"  A->B member request in -> upstream request out (teamgate, rmcp's client) {us('A', 'B'):7.1f}")
        print(f"  B->C upstream request out -> its reply begins (the upstream)          {us('B', 'C'):7.1f}")
        print(f"  C->D the upstream's reply, first to last data packet                  {us('C', 'D'):7.1f}")
        print(f"  D->E upstream reply in -> member reply out (rmcp's client, teamgate)  {us('D', 'E'):7.1f}")
        print(f"  E->F the member's reply, first to last data packet                    {us('E', 'F'):7.1f}")
        print(f"  A->F in all                                                           {us('A', 'F'):7.1f}")
        print(f"  data packets per call: member request {per('in'):.2f}, upstream request {per('up_out'):.2f},"
              f" upstream reply {per('up_in'):.2f}, member reply {per('out'):.2f}")
    else:
        print(f"  A->E request in -> reply begins                                       {us('A', 'E'):7.1f}")
        print(f"  E->F the reply, first to last data packet                             {us('E', 'F'):7.1f}")
        print(f"  A->F in all                                                           {us('A', 'F'):7.1f}")
        print(f"  data packets per call: request {per('in'):.2f}, reply {per('out'):.2f}")


if __name__ == "__main__":
    main()
