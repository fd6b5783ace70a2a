#!/usr/bin/env bash
# deploy/prometheus and deploy/grafana, verified: promtool checks the shipped scrape configuration
# and rules and runs the alerts' unit tests (alerts.test.yml); then a real Prometheus (Debian's
# package, installed by scripts/install-test-deps.sh) scrapes a `teamgate serve` on loopback under a
# bounded load (tests/interop/prom_load.py: the Python SDK client through an `everything` upstream,
# errors, unauthenticated bursts), and every panel query of deploy/grafana/teamgate.json must return
# data, every alert of alerts.yml must be loaded and evaluated (tests/interop/prom_dashboard_check.py).
# Loopback only; every wait bounded. Usage: scripts/prometheus-test.sh [path/to/teamgate]
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BIN="${1:-target/debug/teamgate}"
NAME=prometheus
[[ -x "$BIN" ]] || { echo "$NAME: $BIN not built (run cargo build --features conformance)"; exit 1; }
refused="$("$BIN" check-config --config config/conformance.toml 2>&1 >/dev/null)" \
  || { echo "$refused" | tail -n 3; echo "$NAME: $BIN cannot serve config/conformance.toml"; exit 1; }
scripts/install-test-deps.sh >/dev/null || { echo "$NAME: scripts/install-test-deps.sh failed"; exit 1; }
for tool in prometheus promtool; do
  command -v "$tool" >/dev/null || { echo "$NAME: $tool not installed"; exit 1; }
done
PY="$ROOT/.cache/venv/bin/python"
LOAD_SECONDS="${PROMETHEUS_TEST_LOAD_SECONDS:-45}"

DIR="$ROOT/.cache/prometheus-test"; rm -rf "$DIR"; mkdir -p "$DIR"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; }
trap cleanup EXIT

passed=0; failed=0; failures=()
check() {  # check NAME COMMAND...: one step, its output in $DIR/<step>.out, shown when it fails
  local name="$1" out="$DIR/step-$((passed + failed)).out"; shift
  local bound=(timeout 120); declare -F "$1" >/dev/null && bound=()   # a function bounds its own commands
  if "${bound[@]}" "$@" >"$out" 2>&1; then passed=$((passed + 1)); echo "ok - $name"
  else failed=$((failed + 1)); failures+=("$name"); echo "not ok - $name"; sed 's/^/    /' "$out" | tail -n 40; fi
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
echo "$NAME: $(prometheus --version 2>&1 | head -n 1)"

# 1. The shipped files, as promtool sees them.
check "promtool check rules deploy/prometheus/alerts.yml" promtool check rules deploy/prometheus/alerts.yml
check "promtool test rules deploy/prometheus/alerts.test.yml (every alert firing and not)" \
  promtool test rules deploy/prometheus/alerts.test.yml
# prometheus.yml names its token file beside it (credentials_file), as a deployment puts one there.
mkdir -p "$DIR/shipped"
cp deploy/prometheus/prometheus.yml deploy/prometheus/alerts.yml "$DIR/shipped/"
echo "not-a-real-token" >"$DIR/shipped/teamgate-metrics-token"
check "promtool check config deploy/prometheus/prometheus.yml (with its rules and token file)" \
  promtool check config "$DIR/shipped/prometheus.yml"
# prometheus-kubernetes.yml uses kubernetes_sd_configs, which Debian's build leaves out: promtool
# checks it where it can; here its relabeling is checked against the Deployment's annotations.
kube_sd_check() {
  printf 'scrape_configs:\n  - job_name: k\n    kubernetes_sd_configs: [{role: pod}]\n' >"$DIR/kube-sd.yml"
  if promtool check config --syntax-only "$DIR/kube-sd.yml" >/dev/null 2>&1; then
    timeout 60 promtool check config --syntax-only deploy/prometheus/prometheus-kubernetes.yml || return 1
  else
    echo "(this promtool has no kubernetes_sd_configs: structural check only)"
  fi
  timeout 60 "$PY" - <<'PY'
import re, yaml
config = yaml.safe_load(open("deploy/prometheus/prometheus-kubernetes.yml"))
deployment = yaml.safe_load(open("deploy/k8s/base/deployment.yaml"))
notes = deployment["spec"]["template"]["metadata"]["annotations"]
ports = {p["name"]: p["containerPort"] for p in deployment["spec"]["template"]["spec"]["containers"][0]["ports"]}
assert notes["prometheus.io/scrape"] == "true" and int(notes["prometheus.io/port"]) == ports["metrics"], notes
assert notes["prometheus.io/path"] == "/metrics", notes
assert config["rule_files"] == ["alerts.yml"], config["rule_files"]
job, = [j for j in config["scrape_configs"] if j["job_name"] == "teamgate"]
assert job["authorization"]["credentials_file"], job
assert [sd["role"] for sd in job["kubernetes_sd_configs"]] == ["pod"], job
sources = {s for r in job["relabel_configs"] for s in r.get("source_labels", [])}
for key in notes:   # every annotation the pods carry is read, under Prometheus's sanitised name
    meta = "__meta_kubernetes_pod_annotation_" + re.sub(r"[^a-zA-Z0-9_]", "_", key)
    assert meta in sources, f"{key} ({meta}) not read by the relabeling"
for r in job["relabel_configs"]:
    re.compile(r.get("regex", "(.*)").replace("(?::", "(?:"))
# The address rewrite: a pod address and the port annotation give the metrics port.
rewrite, = [r for r in job["relabel_configs"] if r.get("target_label") == "__address__"]
m = re.fullmatch(rewrite["regex"], "10.244.1.7:8080;9090")
assert m and m.expand(rewrite["replacement"].replace("$", "\\")) == "10.244.1.7:9090", rewrite
print("prometheus-kubernetes.yml: job teamgate reads", sorted(notes))
PY
}
check "deploy/prometheus/prometheus-kubernetes.yml reads the pods' prometheus.io annotations" kube_sd_check

# 2. teamgate on loopback: SQLite, the conformance fixtures, the everything server as an upstream,
# /metrics on its own listener behind a scrape token (as deploy/k8s runs it), rate limits on (for
# the 429 panel) with a per-caller quota the load stays under.
export TEAMGATE__STORE__URL="sqlite://$DIR/teamgate.db"
"$BIN" migrate >/dev/null 2>&1 || { echo "$NAME: cannot create the store"; exit 1; }
TOKEN="$("$BIN" token create --user prometheus-load --name ci 2>/dev/null | tail -n 1)"
[[ "$TOKEN" == tg_* ]] || { echo "$NAME: cannot create a token"; exit 1; }
SCRAPE="scrape-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
EVERYTHING="$ROOT/.cache/server-everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
{ cat config/conformance.toml; cat <<EOF

[[upstreams]]
name = "everything"
command = "$ROOT/.cache/bin/node22"
args = ["$EVERYTHING", "stdio"]
tools = { include = ["echo", "get-sum"] }
EOF
} >"$DIR/teamgate.toml"
MPORT="$(free_port)"
TEAMGATE__LOG__FORMAT=json TEAMGATE__TELEMETRY__METRICS__TOKEN="$SCRAPE" \
  TEAMGATE__TELEMETRY__METRICS__LISTEN="127.0.0.1:$MPORT" \
  TEAMGATE__RATE_LIMIT__ENABLED=true TEAMGATE__RATE_LIMIT__PER_CALLER_PER_MINUTE=1000000 \
  TEAMGATE__RATE_LIMIT__PER_CALLER_BURST=100000 \
  "$BIN" serve --config "$DIR/teamgate.toml" --listen 127.0.0.1:0 >"$DIR/teamgate.log" 2>&1 &
pids+=($!)
URL=""
for _ in $(seq 100); do
  URL="$(grep -o '"url":"http://[^"]*/mcp"' "$DIR/teamgate.log" 2>/dev/null | head -1 | cut -d'"' -f4)" && [[ -n "$URL" ]] && break
  sleep 0.1
done
[[ -n "$URL" ]] || { echo "$NAME: teamgate did not start:"; cat "$DIR/teamgate.log"; exit 1; }
for _ in $(seq 150); do grep -q '"upstream connected"' "$DIR/teamgate.log" && break; sleep 0.1; done
echo "$NAME: teamgate at $URL, /metrics at http://127.0.0.1:$MPORT/metrics"

# 3. Prometheus with the shipped prometheus.yml: only the targets, the token file's path, the rule
# file's path and the intervals (1 s, for a short test) changed.
PPORT="$(free_port)"
echo "$SCRAPE" >"$DIR/teamgate-metrics-token"
"$PY" - "$DIR" "$MPORT" "$ROOT/deploy/prometheus" <<'PY' || { echo "$NAME: cannot write the Prometheus config"; exit 1; }
import sys, yaml
out, port, shipped = sys.argv[1], sys.argv[2], sys.argv[3]
config = yaml.safe_load(open(f"{shipped}/prometheus.yml"))
config["global"].update(scrape_interval="1s", evaluation_interval="1s")
config["rule_files"] = [f"{shipped}/{f}" for f in config["rule_files"]]
job, = [j for j in config["scrape_configs"] if j["job_name"] == "teamgate"]
job["static_configs"] = [{"targets": [f"127.0.0.1:{port}"]}]
job["authorization"]["credentials_file"] = f"{out}/teamgate-metrics-token"
yaml.safe_dump(config, open(f"{out}/prometheus.yml", "w"), sort_keys=False)
PY
check "promtool check config (the run's prometheus.yml)" promtool check config "$DIR/prometheus.yml"
prometheus --config.file="$DIR/prometheus.yml" --storage.tsdb.path="$DIR/data" \
  --web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$DIR/prometheus.log" 2>&1 &
pids+=($!)
PROM="http://127.0.0.1:$PPORT"
for _ in $(seq 150); do curl -sf "$PROM/-/ready" >/dev/null && break; sleep 0.2; done
curl -sf "$PROM/-/ready" >/dev/null || { echo "$NAME: Prometheus did not start:"; cat "$DIR/prometheus.log"; exit 1; }
echo "$NAME: Prometheus at $PROM scraping every 1s"

# 4. The load, and the dashboard's queries while it runs.
"$PY" tests/interop/prom_load.py --url "$URL" --token "$TOKEN" --seconds "$LOAD_SECONDS" >"$DIR/load.out" 2>&1 &
LOAD=$!
pids+=($LOAD)
# Let Prometheus see the load for a while: a third of it, at least 15 s (rates over 15 s windows).
settle=$((LOAD_SECONDS / 3)); [[ $settle -lt 15 ]] && settle=15
sleep "$settle"
check "every panel query of deploy/grafana/teamgate.json returns data; every alert loaded" \
  "$PY" tests/interop/prom_dashboard_check.py --prometheus "$PROM" --dashboard deploy/grafana/teamgate.json \
  --rules deploy/prometheus/alerts.yml --rate-interval 15s
grep -E '^(ok|not ok) - ' "$DIR/step-$((passed + failed - 1)).out" | sed 's/^/    /'
wait "$LOAD"; load_status=$?
if [[ $load_status -eq 0 ]]; then passed=$((passed + 1)); echo "ok - the load: $(tail -n 1 "$DIR/load.out")"
else failed=$((failed + 1)); failures+=("load"); echo "not ok - the load:"; sed 's/^/    /' "$DIR/load.out" | tail -n 20; fi

# 5. The scrape token is a secret: in no log.
cleanup; pids=()
if grep -rqF -e "$SCRAPE" -e "${TOKEN##*_}" "$DIR"/*.log; then failed=$((failed + 1)); failures+=("secret-in-log"); echo "not ok - a secret in a log"
else passed=$((passed + 1)); echo "ok - no scrape token or personal token in the logs"; fi

[[ ${#failures[@]} -gt 0 ]] && echo "$NAME: FAILED: ${failures[*]} (logs in $DIR)"
echo "$NAME: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
