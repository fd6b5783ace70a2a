"""Structural checks of deploy/'s YAML (no Docker engine or cluster here to apply them):
compose runs several replicas on PostgreSQL behind nginx with the tested nginx file; the Kubernetes
Deployment probes /readyz and /healthz, mounts the ConfigMap built from the TOML that the config test
loads, and takes its secrets from the Secret; Service, PodDisruptionBudget, Ingress and Secret example
exist; and `kubectl kustomize` renders deploy/k8s and every overlay (overlays/postgres adds a
PostgreSQL StatefulSet whose Service the Secret's store-url names). In every rendered overlay a
NetworkPolicy admits teamgate's pods only from the ingress controller's namespace on the app port and
from monitoring on the metrics port (so no other pod can reach it and choose its client address with
X-Forwarded-For, which server.trusted_proxies believes), trusted_proxies is no wider than a private
range, and every pod runs with seccompProfile RuntimeDefault and no service account token. Every
overlay ships the Grafana dashboard (deploy/grafana/teamgate.json, byte for byte) as a ConfigMap
labelled grafana_dashboard: "1", and teamgate's pods carry the prometheus.io annotations naming the
metrics port; overlays/prometheus-operator adds a PodMonitor on that port with the scrape token.
Prints `ok - ...` / `not ok - ...` and `deploy: N passed, M failed`; exit 1 on failure.
Usage: python deploy_check.py [REPO_ROOT]"""
import ipaddress
import pathlib
import shutil
import subprocess
import sys
import tomllib

import yaml

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
deploy = root / "deploy"
passed = failed = 0


def check(name, fn):
    global passed, failed
    try:
        fn()
        passed += 1
        print(f"ok - {name}")
    except Exception as e:  # noqa: BLE001 - every failure is reported the same way
        failed += 1
        print(f"not ok - {name}: {e!r}")


def expect(condition, why):
    if not condition:
        raise AssertionError(why)


def compose():
    doc = yaml.safe_load((deploy / "compose.yaml").read_text())
    services = doc["services"]
    expect({"postgres", "teamgate", "nginx"} <= set(services), f"services: {sorted(services)}")
    tg = services["teamgate"]
    expect(tg["deploy"]["replicas"] >= 2, "several replicas")
    env = tg["environment"]
    expect(env["TEAMGATE__STORE__URL"].startswith("postgres://"), "PostgreSQL store")
    expect("TEAMGATE__MCP__REQUEST_STATE_KEYS" in env, "shared requestState key")
    expect(tg["build"]["dockerfile"] == "Dockerfile" and (root / "Dockerfile").exists(), "builds ../Dockerfile")
    mounts = services["nginx"]["volumes"]
    expect(any(m.startswith("./nginx/teamgate.conf:") for m in mounts), f"nginx mounts: {mounts}")
    expect((deploy / "nginx/teamgate.conf").exists(), "deploy/nginx/teamgate.conf exists")


def k8s_docs():
    docs = {}
    for path in sorted((deploy / "k8s").glob("*.yaml")) + sorted((deploy / "k8s" / "base").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                docs[(doc["kind"], path.name)] = doc
    return docs


def kubernetes():
    docs = k8s_docs()
    kinds = {kind for kind, _ in docs}
    expect({"Deployment", "Service", "PodDisruptionBudget", "Ingress", "NetworkPolicy", "Secret", "Kustomization"} <= kinds, f"kinds: {kinds}")
    deployment = next(d for (k, _), d in docs.items() if k == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    expect(container["readinessProbe"]["httpGet"]["path"] == "/readyz", "readiness on /readyz")
    expect(container["livenessProbe"]["httpGet"]["path"] == "/healthz", "liveness on /healthz")
    expect(container["args"] == ["serve", "--config", "/etc/teamgate/teamgate.toml"], f"args: {container['args']}")
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    expect(mounts.get("config") == "/etc/teamgate", f"mounts: {mounts}")
    volumes = {v["name"]: v for v in pod["volumes"]}
    config_map = volumes["config"]["configMap"]["name"]
    kustomization = next(d for (k, _), d in docs.items() if k == "Kustomization" and "configMapGenerator" in d)
    generated = {g["name"]: g["files"] for g in kustomization["configMapGenerator"]}
    expect(generated.get(config_map) == ["teamgate.toml"], f"ConfigMap {config_map} from teamgate.toml")
    for resource in kustomization["resources"]:
        expect((deploy / "k8s" / "base" / resource).exists(), f"{resource} exists")
    secret = next(d for (k, _), d in docs.items() if k == "Secret")
    keys = set(secret["stringData"])
    for env in container["env"]:
        ref = env.get("valueFrom", {}).get("secretKeyRef")
        if ref:
            expect(ref["name"] == secret["metadata"]["name"] and ref["key"] in keys, f"secret key {ref}")
    expect(pod["securityContext"]["runAsNonRoot"] is True, "non-root")
    selector = deployment["spec"]["selector"]["matchLabels"]
    for kind in ("Service", "PodDisruptionBudget"):
        doc = next(d for (k, _), d in docs.items() if k == kind)
        sel = doc["spec"]["selector"]
        sel = sel.get("matchLabels", sel)
        expect(sel == selector, f"{kind} selects the Deployment's pods")


def rendered(directory):
    kubectl = shutil.which("kubectl")
    expect(kubectl, "kubectl is on PATH (kubectl kustomize renders the manifests)")
    out = subprocess.run([kubectl, "kustomize", str(directory)], capture_output=True, text=True, timeout=120)
    expect(out.returncode == 0, f"kubectl kustomize {directory}: {out.stderr}")
    return [d for d in yaml.safe_load_all(out.stdout) if d]


# Who may reach teamgate's pods: the ingress controller's namespace on the app port, Prometheus's on
# the metrics port. The shipped names; an operator with other namespaces edits networkpolicy.yaml.
INGRESS_NAMESPACE = "ingress-nginx"
MONITORING_NAMESPACE = "monitoring"


def selects(selector, labels):
    """Whether a label selector (matchLabels, matchExpressions) selects pods with `labels`."""
    selector = selector or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e["key"], e["operator"], e.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def port_of(listen):
    return int(listen.rsplit(":", 1)[1])


def network_policy(directory, docs):
    """Every NetworkPolicy selecting teamgate's pods, together, admits exactly the ingress namespace
    on the app port and monitoring on the metrics port: no rule without `from` or `ports` (any
    source, any port), no ipBlock, no peer but a namespace named by kubernetes.io/metadata.name."""
    deployment = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "teamgate")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    config_map = next(d for d in docs if d["kind"] == "ConfigMap" and "teamgate.toml" in d.get("data", {}))
    config = tomllib.loads(config_map["data"]["teamgate.toml"])
    app_port = port_of(config["server"]["listen"])
    metrics_port = port_of(config["telemetry"]["metrics"]["listen"])
    expect(ports.get("http") == app_port, f"{directory}: container port http is server.listen's {app_port}: {ports}")
    expect(metrics_port in ports.values(), f"{directory}: telemetry.metrics.listen's {metrics_port} is a container port: {ports}")
    policies = [d for d in docs if d["kind"] == "NetworkPolicy" and selects(d["spec"].get("podSelector"), labels)]
    expect(policies, f"{directory}: a NetworkPolicy selects teamgate's pods {labels}")
    ingress_policies = [p for p in policies if "Ingress" in p["spec"].get("policyTypes", ["Ingress"])]
    expect(ingress_policies, f"{directory}: a NetworkPolicy restricts ingress to teamgate's pods")
    allowed = set()
    for policy in ingress_policies:
        name = policy["metadata"]["name"]
        for rule in policy["spec"].get("ingress") or []:
            peers, rule_ports = rule.get("from"), rule.get("ports")
            expect(peers, f"{directory}: NetworkPolicy {name} has a rule from any source: {rule}")
            expect(rule_ports, f"{directory}: NetworkPolicy {name} has a rule to every port: {rule}")
            for peer in peers:
                expect("ipBlock" not in peer, f"{directory}: NetworkPolicy {name} admits an ipBlock: {peer}")
                namespaces = peer.get("namespaceSelector")
                expect(namespaces is not None, f"{directory}: NetworkPolicy {name} admits pods of teamgate's own namespace: {peer}")
                match = namespaces.get("matchLabels") or {}
                expect(set(match) == {"kubernetes.io/metadata.name"} and not namespaces.get("matchExpressions"),
                       f"{directory}: NetworkPolicy {name} selects namespaces by kubernetes.io/metadata.name alone: {namespaces}")
                for port in rule_ports:
                    expect(port.get("protocol", "TCP") == "TCP" and "endPort" not in port, f"{directory}: one TCP port: {port}")
                    number = ports.get(port["port"], port["port"])
                    allowed.add((match["kubernetes.io/metadata.name"], number))
    wanted = {(INGRESS_NAMESPACE, app_port), (MONITORING_NAMESPACE, metrics_port)}
    expect(allowed == wanted, f"{directory}: teamgate's pods admit {sorted(allowed)}, not only {sorted(wanted)}")
    # Behind that policy only the controller connects, so only its forwarded headers can count; still,
    # never a range that takes in public addresses, or the whole address space.
    for cidr in config["server"].get("trusted_proxies", []):
        net = ipaddress.ip_network(cidr, strict=False)
        expect(net.prefixlen > 0 and net.is_private, f"{directory}: server.trusted_proxies {cidr} is a private range")


def pod_hardening(directory, docs):
    """Every pod: no service account token mounted, the runtime's default seccomp profile."""
    workloads = [d for d in docs if d.get("spec", {}).get("template", {}).get("spec")]
    expect(workloads, f"{directory}: workloads")
    for doc in workloads:
        name = f"{directory}: {doc['kind']} {doc['metadata']['name']}"
        pod = doc["spec"]["template"]["spec"]
        expect(pod.get("automountServiceAccountToken") is False, f"{name}: automountServiceAccountToken: false")
        profile = (pod.get("securityContext") or {}).get("seccompProfile") or {}
        expect(profile.get("type") == "RuntimeDefault", f"{name}: securityContext.seccompProfile.type RuntimeDefault: {profile}")
        for container in pod["containers"] + pod.get("initContainers", []):
            own = (container.get("securityContext") or {}).get("seccompProfile")
            expect(own is None or own.get("type") == "RuntimeDefault", f"{name}: container {container['name']} keeps RuntimeDefault: {own}")


def overlays():
    """deploy/k8s and every overlay under it."""
    found = [deploy / "k8s"] + sorted(p.parent for p in (deploy / "k8s" / "overlays").glob("*/kustomization.yaml"))
    expect(len(found) >= 2, f"overlays: {found}")
    return found


def every_overlay(fn):
    def run():
        for directory in overlays():
            fn(directory, rendered(directory))
    return run


def kustomize():
    secret = yaml.safe_load((deploy / "k8s" / "secret.example.yaml").read_text())
    keys = set(secret["stringData"])
    for directory in overlays():
        docs = rendered(directory)
        kinds = sorted(d["kind"] for d in docs)
        for kind in ("Deployment", "Service", "PodDisruptionBudget", "Ingress", "NetworkPolicy", "ConfigMap"):
            expect(kind in kinds, f"{directory}: {kind} in {kinds}")
        expect(all(d["metadata"].get("namespace") == "teamgate" for d in docs), f"{directory}: namespace teamgate")
        for doc in docs:
            pods = doc.get("spec", {}).get("template", {}).get("spec", {})
            for container in pods.get("containers", []):
                for env in container.get("env", []):
                    ref = env.get("valueFrom", {}).get("secretKeyRef")
                    if ref:
                        expect(ref["name"] == "teamgate-secrets" and ref["key"] in keys, f"{directory}: secret key {ref}")
        ingress = next(d for d in docs if d["kind"] == "Ingress")
        notes = ingress["metadata"]["annotations"]
        expect(notes.get("nginx.ingress.kubernetes.io/proxy-buffering") == "off", "the Ingress does not buffer SSE")
        expect(int(notes.get("nginx.ingress.kubernetes.io/proxy-read-timeout", "0")) >= 60, "idle streams outlive keep-alives")
        paths = [p["path"] for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]]
        expect(paths == ["/"], f"every path reaches teamgate (portal, authorization server): {paths}")
        deployment = next(d for d in docs if d["kind"] == "Deployment")
        env = {e["name"] for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
        for name in ("TEAMGATE__PORTAL__CLIENT_SECRET", "TEAMGATE__CREDENTIALS__KEYS", "TEAMGATE__STORE__URL"):
            expect(name in env, f"{directory}: {name} from the Secret")
    docs = rendered(deploy / "k8s" / "overlays" / "postgres")
    postgres = [d for d in docs if d["metadata"]["name"] == "postgres"]
    expect(sorted(d["kind"] for d in postgres) == ["Service", "StatefulSet"], f"postgres: {postgres}")
    expect("@postgres:5432/" in secret["stringData"]["store-url"], "the example store-url names the overlay's Service")


def monitoring(directory, docs):
    """The dashboard ConfigMap for Grafana's sidecar; the scrape annotations (or a PodMonitor)."""
    dashboard = (deploy / "grafana" / "teamgate.json").read_text()
    maps = [d for d in docs if d["kind"] == "ConfigMap" and (d["metadata"].get("labels") or {}).get("grafana_dashboard") == "1"]
    expect(len(maps) == 1, f"{directory}: one ConfigMap labelled grafana_dashboard=1: {[m['metadata']['name'] for m in maps]}")
    expect(maps[0]["data"] == {"teamgate.json": dashboard}, f"{directory}: it holds deploy/grafana/teamgate.json as teamgate.json")
    expect(maps[0]["metadata"]["name"] == "teamgate-grafana-dashboard", f"{directory}: a stable name (no hash suffix)")
    deployment = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "teamgate")
    template = deployment["spec"]["template"]
    notes = template["metadata"].get("annotations") or {}
    ports = {p["name"]: p["containerPort"] for p in template["spec"]["containers"][0]["ports"]}
    expect(notes.get("prometheus.io/scrape") == "true", f"{directory}: prometheus.io/scrape: {notes}")
    expect(int(notes.get("prometheus.io/port", 0)) == ports.get("metrics"), f"{directory}: prometheus.io/port is the metrics port {ports}")
    expect(notes.get("prometheus.io/path") == "/metrics", f"{directory}: prometheus.io/path: {notes}")
    for monitor in (d for d in docs if d["kind"] == "PodMonitor"):
        expect(selects(monitor["spec"]["selector"], template["metadata"]["labels"]), f"{directory}: the PodMonitor selects teamgate's pods")
        for endpoint in monitor["spec"]["podMetricsEndpoints"]:
            expect(endpoint["port"] == "metrics", f"{directory}: the PodMonitor scrapes the metrics port: {endpoint}")
            expect(endpoint["authorization"]["credentials"] == {"name": "teamgate-secrets", "key": "metrics-token"},
                   f"{directory}: the PodMonitor sends the scrape token: {endpoint}")
            expect({"targetLabel": "job", "replacement": "teamgate"} in endpoint.get("relabelings", []),
                   f"{directory}: the PodMonitor's job is teamgate (alerts.yml): {endpoint}")
    if directory.name == "prometheus-operator":
        expect(any(d["kind"] == "PodMonitor" for d in docs), f"{directory}: a PodMonitor")


check("compose: replicas on PostgreSQL behind nginx with deploy/nginx/teamgate.conf", compose)
check("kubernetes: probes, ConfigMap from teamgate.toml, Secret keys, Service, PDB", kubernetes)
check("kubernetes: kubectl kustomize renders deploy/k8s and every overlay, Ingress and Secret keys", kustomize)
check("kubernetes: in every overlay a NetworkPolicy admits teamgate's pods only from the ingress namespace on the app "
      "port and from monitoring on the metrics port; trusted_proxies private", every_overlay(network_policy))
check("kubernetes: in every overlay every pod has seccompProfile RuntimeDefault and automountServiceAccountToken: false",
      every_overlay(pod_hardening))
check("kubernetes: in every overlay the Grafana dashboard ConfigMap (grafana_dashboard=1) and the scrape annotations; "
      "overlays/prometheus-operator's PodMonitor", every_overlay(monitoring))
print(f"deploy: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
