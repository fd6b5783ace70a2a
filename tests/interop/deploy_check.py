"""Structural checks of deploy/'s YAML (no Docker engine or cluster here to apply them):
compose runs several replicas on PostgreSQL behind nginx with the tested nginx file; the Kubernetes
Deployment probes /readyz and /healthz, mounts the ConfigMap built from the TOML that the config test
loads, and takes its secrets from the Secret; Service, PodDisruptionBudget, Ingress and Secret example
exist; and `kubectl kustomize` renders deploy/k8s and every overlay (overlays/postgres adds a
PostgreSQL StatefulSet whose Service the Secret's store-url names).
Prints `ok - ...` / `not ok - ...` and `deploy: N passed, M failed`; exit 1 on failure.
Usage: python deploy_check.py [REPO_ROOT]"""
import pathlib
import shutil
import subprocess
import sys

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
    expect({"Deployment", "Service", "PodDisruptionBudget", "Ingress", "Secret", "Kustomization"} <= kinds, f"kinds: {kinds}")
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


def kustomize():
    secret = yaml.safe_load((deploy / "k8s" / "secret.example.yaml").read_text())
    keys = set(secret["stringData"])
    overlays = [deploy / "k8s"] + sorted(p.parent for p in (deploy / "k8s" / "overlays").glob("*/kustomization.yaml"))
    expect(len(overlays) >= 2, f"overlays: {overlays}")
    for directory in overlays:
        docs = rendered(directory)
        kinds = sorted(d["kind"] for d in docs)
        for kind in ("Deployment", "Service", "PodDisruptionBudget", "Ingress", "ConfigMap"):
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


check("compose: replicas on PostgreSQL behind nginx with deploy/nginx/teamgate.conf", compose)
check("kubernetes: probes, ConfigMap from teamgate.toml, Secret keys, Service, PDB", kubernetes)
check("kubernetes: kubectl kustomize renders deploy/k8s and every overlay, Ingress and Secret keys", kustomize)
print(f"deploy: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
