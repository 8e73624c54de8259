#!/usr/bin/env python3
"""Offline checks of deploy/ (issue 15): what can be verified without a Kubernetes cluster or a
container daemon. The manifests parse and render (kubectl kustomize, when kubectl is there); the
veil config they ship and the VEIL_* variables they set are accepted by the real binary (unknown
keys are errors there); probes, drain and grace period agree; Prometheus' config and rules pass
promtool; every veil_* series the dashboard and the rules query is one the code registers.
Usage: check_deploy.py --veil build/bin/veil [--source .]"""
import argparse, glob, json, os, re, shutil, subprocess, sys, tempfile, tomllib

import yaml

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--veil", required=True)
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    a = ap.parse_args()
    deploy = os.path.join(a.source, "deploy")

    docs = []
    for f in sorted(glob.glob(os.path.join(deploy, "k8s", "*.yaml"))):
        for d in yaml.safe_load_all(open(f)):
            if d is None:
                continue
            if os.path.basename(f) != "kustomization.yaml":
                check(all(k in d for k in ("apiVersion", "kind", "metadata")) and "name" in d["metadata"],
                      f"{os.path.basename(f)}: {d.get('kind')} {d.get('metadata', {}).get('name')} has apiVersion, kind, name")
            docs.append(d)
    by = {(d.get("kind"), d.get("metadata", {}).get("name")): d for d in docs}
    if shutil.which("kubectl"):
        r = subprocess.run(["kubectl", "kustomize", os.path.join(deploy, "k8s")], capture_output=True, text=True)
        check(r.returncode == 0 and r.stdout.count("\nkind:") + r.stdout.startswith("kind:") >= 1,
              "kubectl kustomize deploy/k8s renders " + (r.stderr.strip()[:200] if r.returncode else ""))
    else:
        print("skip kubectl kustomize (no kubectl)")

    ds = by.get(("DaemonSet", "veil-node"))
    check(ds is not None, "a veil-node DaemonSet")
    spec = ds["spec"]["template"]["spec"]
    c = spec["containers"][0]
    check(spec.get("hostNetwork") is True, "host networking for UDP media")
    check(c["readinessProbe"]["httpGet"]["path"] == "/readyz", "readiness on /readyz")
    check("/v1/drain" in " ".join(c["lifecycle"]["preStop"]["exec"]["command"]), "preStop drains (POST /v1/drain)")
    conf = by[("ConfigMap", "veil-config")]["data"]["veil.toml"]
    toml = tomllib.loads(conf)
    drain = toml["server"]["drain_timeout_s"]
    check(spec["terminationGracePeriodSeconds"] > drain,
          f"grace period {spec['terminationGracePeriodSeconds']} s > drain_timeout_s {drain} s")

    # The shipped config and environment, through the real binary: unknown keys and bad values fail.
    env = dict(os.environ)
    for e in c["env"]:
        if e["name"].startswith("VEIL_"):
            v = e.get("value", "")
            v = v.replace("$(HOST_IP)", "10.0.0.5").replace("$(NODE_NAME)", "k8s-node-1")
            if "valueFrom" in e:
                v = "0123456789abcdef-token"
            env[e["name"]] = v
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(conf)
    r = subprocess.run([a.veil, "serve", "--config", f.name, "--print-config"], capture_output=True, text=True, env=env)
    os.unlink(f.name)
    check(r.returncode == 0, "veil serve accepts the ConfigMap's veil.toml and the manifest's VEIL_* variables "
          + (r.stdout + r.stderr).strip()[-300:] if r.returncode else "veil serve accepts the ConfigMap and VEIL_* env")
    out = r.stdout
    for key, want in (("public_url", '"http://10.0.0.5:8080"'), ("node_id", '"k8s-node-1"'),
                      ("redis", '"redis://veil-redis:6379"'), ("drain_timeout_s", str(float(drain)))):
        check(re.search(r"^" + key + r" = " + re.escape(want), out, re.M) is not None, f"effective {key} = {want}")

    # Prometheus: config and rules.
    for what, path in (("config", "prometheus/prometheus.yml"), ("rules", "prometheus/veil-rules.yml")):
        r = subprocess.run(["promtool", "check", what, os.path.join(deploy, path)], capture_output=True, text=True)
        check(r.returncode == 0, f"promtool check {what} {path}" + ("" if r.returncode == 0 else ": " + (r.stdout + r.stderr).strip()[-200:]))

    # Every series the dashboard and the rules query exists in the code.
    registered = set()
    for src in glob.glob(os.path.join(a.source, "src", "**", "*.cpp"), recursive=True):
        registered |= set(re.findall(r'"(veil_[a-z0-9_]+)"', open(src).read()))
    dash = json.load(open(os.path.join(deploy, "grafana", "veil-dashboard.json")))
    queried = set()
    for p in dash["panels"]:
        for t in p["targets"]:
            queried |= set(re.findall(r"\bveil_[a-z0-9_]+", t["expr"]))
    for rule in yaml.safe_load(open(os.path.join(deploy, "prometheus", "veil-rules.yml")))["groups"][0]["rules"]:
        queried |= set(re.findall(r"\bveil_[a-z0-9_]+", rule["expr"]))
    for name in sorted(queried):
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        check(name in registered or base in registered, f"{name} is a series veil exports")
    check(len(dash["panels"]) >= 10, f"dashboard has {len(dash['panels'])} panels")

    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
