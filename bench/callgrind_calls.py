"""Sends N tools/call requests over CONC keep-alive connections (default 1), each connection's
calls one after another: bench/callgrind.sh's client. `initialize` sends N initialize requests
instead (a 2025-06-18 session opened by each, as the benchmark's initialize load does).

    callgrind_calls.py URL N stateless|legacy|initialize TOKEN|- TOOL [CONC]
"""
import http.client, json, sys, threading, urllib.parse
url, n, mode, token, tool = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
conc = int(sys.argv[6]) if len(sys.argv) > 6 else 1
u = urllib.parse.urlparse(url)
def run(n, out):
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token != "-":
        headers["Authorization"] = "Bearer " + token
    params = {"name": tool, "arguments": {}}
    if mode == "stateless":
        headers.update({"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool})
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                           "io.modelcontextprotocol/clientCapabilities": {}}
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "cg", "version": "0"}}}
    if mode == "initialize":
        # each request opens a session: the same body every time, a good reply names its session
        body_of = lambda i: json.dumps(init)
        ok = lambda r, data: r.getheader("Mcp-Session-Id") and b'"error"' not in data
    else:
        if mode != "stateless":
            # a 2025 session
            conn.request("POST", u.path, json.dumps(init), headers)
            r = conn.getresponse(); r.read()
            headers["Mcp-Session-Id"] = r.getheader("Mcp-Session-Id")
            headers["MCP-Protocol-Version"] = "2025-06-18"
            conn.request("POST", u.path, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), headers)
            conn.getresponse().read()
        body_of = lambda i: json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": params})
        ok = lambda r, data: b'"isError":true' not in data and b'"error"' not in data
    bad = 0
    for i in range(n):
        conn.request("POST", u.path, body_of(i), headers)
        r = conn.getresponse(); data = r.read()
        if r.status != 200 or not ok(r, data):
            bad += 1
            if bad < 3: print(r.status, data[:300], file=sys.stderr)
    out.append(bad)

results = []
threads = [threading.Thread(target=run, args=(n // conc + (1 if k < n % conc else 0), results)) for k in range(conc)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"calls={n} connections={conc} bad={sum(results) if len(results) == conc else 'unknown'}")
