"""Checks deploy/grafana/teamgate.json and deploy/prometheus/alerts.yml against a real Prometheus
scraping teamgate (scripts/prometheus-test.sh): the dashboard's variables resolve as Grafana would
(label_values through the HTTP API; "All" is the variable's allValue), then EVERY panel query, with
$__rate_interval and the variables substituted, must return at least one series with a finite
value; Prometheus must have loaded every alert of alerts.yml (/api/v1/rules) and evaluated it
without error, and scraped the teamgate job.

    python prom_dashboard_check.py --prometheus http://127.0.0.1:PORT --dashboard deploy/grafana/teamgate.json \
        --rules deploy/prometheus/alerts.yml --rate-interval 15s

Prints `ok - ...` / `not ok - ...` and `prometheus-dashboard: N passed, M failed`; exit 1 on failure.
"""

import argparse
import json
import math
import re
import sys
import urllib.parse
import urllib.request

import yaml

counts = {"passed": 0, "failed": 0}


def report(name, why=None):
    counts["failed" if why else "passed"] += 1
    print(f"not ok - {name}: {why}" if why else f"ok - {name}", flush=True)


def api(base, path, **params):
    url = f"{base}{path}?{urllib.parse.urlencode(params, doseq=True)}"
    with urllib.request.urlopen(url, timeout=20) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(f"{path}: {body}")
    return body["data"]


def label_values(base, query):
    m = re.fullmatch(r"label_values\((?:(.+),\s*)?(\w+)\)", query.strip())
    if not m:
        raise ValueError(f"unsupported variable query {query!r}")
    selector, label = m.groups()
    params = {"match[]": [selector]} if selector else {}
    return sorted(api(base, f"/api/v1/label/{label}/values", **params))


def substitute(text, variables):
    for name, value in sorted(variables.items(), key=lambda kv: -len(kv[0])):
        text = text.replace("${" + name + "}", value).replace("$" + name, value)
    return text


def panels_of(dashboard):
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def main(args):
    base = args.prometheus.rstrip("/")
    dashboard = json.load(open(args.dashboard))

    # The variables, in order (a later one may use an earlier one), as Grafana resolves them.
    variables = {"__rate_interval": args.rate_interval}
    for var in dashboard["templating"]["list"]:
        name = var["name"]
        if var["type"] == "datasource":
            ok = var.get("query") == "prometheus"
            report(f"variable ${name}: a Prometheus data source", None if ok else f"query {var.get('query')!r}")
            continue
        query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
        try:
            values = label_values(base, substitute(query, variables))
        except Exception as e:  # noqa: BLE001 - reported
            report(f"variable ${name} ({query})", repr(e))
            continue
        report(f"variable ${name} ({query}) -> {values}", None if values else "no values")
        if var.get("includeAll"):
            variables[name] = var.get("allValue") or "|".join(map(re.escape, values))
        elif values:
            variables[name] = values[0]

    # Every panel query returns data.
    for panel in panels_of(dashboard):
        if panel["type"] == "row":
            continue
        ds = panel.get("datasource", {})
        if ds.get("uid") != "${datasource}":
            report(f"panel {panel['title']!r}: uses the $datasource variable", f"datasource {ds}")
        for target in panel.get("targets", []):
            expr = substitute(target["expr"], variables)
            leftover = re.findall(r"\$\{?\w+", expr)
            name = f"panel {panel['title']!r} [{target['refId']}]"
            if leftover:
                report(name, f"unresolved variables {leftover} in {expr}")
                continue
            try:
                result = api(base, "/api/v1/query", query=expr)["result"]
            except Exception as e:  # noqa: BLE001 - reported
                report(name, f"{expr}: {e!r}")
                continue
            finite = [r for r in result if not math.isnan(float(r["value"][1]))]
            if finite:
                shown = ", ".join(f"{r['metric'] or '{}'}={float(r['value'][1]):.4g}" for r in finite[:3])
                report(f"{name}: {len(finite)} series ({shown})")
            else:
                report(name, f"no data: {expr} returned {len(result)} series (NaN)" if result else f"no data: {expr}")

    # Prometheus scraped teamgate.
    targets = api(base, "/api/v1/targets")["activeTargets"]
    ours = [t for t in targets if t["labels"].get("job") == "teamgate"]
    healthy = [t for t in ours if t["health"] == "up"]
    report(f"the teamgate job's {len(ours)} target(s) are up",
           None if ours and len(healthy) == len(ours) else f"{[(t['scrapeUrl'], t['health'], t['lastError']) for t in ours]}")

    # Every alert of alerts.yml loaded, evaluated without error.
    wanted = {r["alert"] for g in yaml.safe_load(open(args.rules))["groups"] for r in g["rules"] if "alert" in r}
    loaded = {}
    for group in api(base, "/api/v1/rules")["groups"]:
        for rule in group["rules"]:
            if rule.get("type") == "alerting":
                loaded[rule["name"]] = rule
    missing = sorted(wanted - set(loaded))
    report(f"Prometheus loaded the {len(wanted)} alerts of {args.rules}", f"missing {missing}" if missing else None)
    for name in sorted(wanted & set(loaded)):
        rule = loaded[name]
        evaluated = rule.get("lastEvaluation", "").startswith("0001") is False
        bad = rule.get("health") != "ok" or not evaluated
        report(f"alert {name} evaluated ({rule.get('state')})",
               f"health {rule.get('health')} {rule.get('lastError', '')} last evaluation {rule.get('lastEvaluation')}" if bad else None)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--prometheus", required=True)
    p.add_argument("--dashboard", required=True)
    p.add_argument("--rules", required=True)
    p.add_argument("--rate-interval", default="15s")
    a = p.parse_args()
    main(a)
    print(f"prometheus-dashboard: {counts['passed']} passed, {counts['failed']} failed")
    sys.exit(1 if counts["failed"] else 0)
