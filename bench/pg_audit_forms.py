#!/usr/bin/env python3
"""bench/pg_audit_forms.py: what PostgreSQL's processes spend per audit row, written as teamgate
wrote it before (transactions of 256 rows, each four prepared 64-row multi-row inserts with binary
parameters) and as it writes it now (one binary COPY per transaction); BENCHMARKS.md, issue 67,
sixteenth session. A by-hand probe, not part of bench/run; it needs psycopg
(`pip install "psycopg[binary]"`) and the PostgreSQL at 127.0.0.1:5432 (user postgres, trust).

    python3 bench/pg_audit_forms.py            # two rounds of 102,400 rows each way
    ROUNDS=3 ROWS=51200 python3 bench/pg_audit_forms.py

It makes a database of its own with teamgate's migrations and drops it at the end. CPU is read
from /proc for every process of the postgres user (backends, WAL writer, checkpointer), so run it
as root on a quiet machine."""
import glob, os, random, subprocess, time

import psycopg

ROWS, ROUNDS, PER_TX, PER_STATEMENT = int(os.environ.get("ROWS", 102400)), int(os.environ.get("ROUNDS", 2)), 256, 64
COLUMNS = ("id, at_ms, user_name, token_id, issuer, subject, session_id, protocol_version, method, target, "
           "args_digest, outcome, latency_ms, trace_id, upstream, address, credential, endpoint")
TYPES = ["text", "int8"] + ["text"] * 10 + ["int8"] + ["text"] * 5
DB = f"audit_forms_{os.getpid()}"
ADMIN = "host=127.0.0.1 user=postgres dbname=postgres sslmode=disable"


def rows(count, start_ms):
    """Records shaped as a stateless tools/call's: time-ordered ids, digests, trace ids."""
    return [(f"{start_ms + i // 25:013d}-{random.getrandbits(48):012x}", start_ms + i // 25, "bench",
             "tok_abcdefgh", "", "", "", "2026-07-28", "tools/call", "test_simple_text",
             f"{random.getrandbits(256):064x}", "ok", 0, f"{random.getrandbits(128):032x}", "",
             "127.0.0.1", "", "") for i in range(count)]


def postgres_ticks():
    total = 0
    for pid in subprocess.run(["pgrep", "-u", "postgres"], capture_output=True, text=True).stdout.split():
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass  # a process that ended meanwhile
    return total


def insert_sql(count):
    row = "(" + ", ".join(["%s"] * len(TYPES)) + ")"
    return f"insert into audit ({COLUMNS}) values " + ", ".join([row] * count)


def write(conn, form, data):
    for start in range(0, len(data), PER_TX):
        batch = data[start:start + PER_TX]
        with conn.transaction():
            if form == "insert":
                for s in range(0, len(batch), PER_STATEMENT):
                    part = batch[s:s + PER_STATEMENT]
                    conn.execute(insert_sql(len(part)), [v for r in part for v in r], prepare=True, binary=True)
            else:
                with conn.cursor().copy(f"copy audit ({COLUMNS}) from stdin (format binary)") as copy:
                    copy.set_types(TYPES)
                    for r in batch:
                        copy.write_row(r)


def main():
    with psycopg.connect(ADMIN, autocommit=True) as admin:
        admin.execute(f"create database {DB}")
    try:
        with psycopg.connect(f"host=127.0.0.1 user=postgres dbname={DB} sslmode=disable") as conn:
            here = os.path.dirname(os.path.abspath(__file__))
            for migration in sorted(glob.glob(os.path.join(here, "..", "migrations", "postgres", "*.sql"))):
                conn.execute(open(migration).read())
            conn.commit()
            start_ms = int(time.time() * 1000)
            print(f"load average at start: {os.getloadavg()[0]:.2f}")
            for round_ in range(ROUNDS):
                for form in ("insert", "copy"):
                    data = rows(ROWS, start_ms)
                    start_ms += ROWS
                    before = postgres_ticks()
                    write(conn, form, data)
                    spent = (postgres_ticks() - before) * 10_000 / ROWS  # a tick is 10 ms
                    print(f"round {round_ + 1} {form:6s}: postgres {spent:5.2f} us of CPU per row", flush=True)
            print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    finally:
        with psycopg.connect(ADMIN, autocommit=True) as admin:
            admin.execute(f"drop database if exists {DB} with (force)")


if __name__ == "__main__":
    main()
