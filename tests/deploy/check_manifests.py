#!/usr/bin/env python3
"""deploy/kubernetes, rendered by `kubectl kustomize` as a user would, holds
what docs/operations.md ("Deploying") says: NATS JetStream as a 3-replica
StatefulSet, gateways behind a Service with an HPA, a Deployment per worker
pool with its resources and a KEDA ScaledObject, probes on /readyz and
/healthz, PodDisruptionBudgets, profiles in a ConfigMap, secrets in Secrets,
grace periods longer than Shoal's own drain — and every flag a Shoal
container passes is one the shoal binary accepts (its --help).

usage: check_manifests.py SOURCE_DIR SHOAL_BINARY
Exits 77 (skipped) where kubectl is not installed."""
import re
import shutil
import subprocess
import sys

import yaml

WORKER_DRAIN_S = 10   # cli/cmd_worker.cc: Drain(10 s) on SIGTERM
GATEWAY_DRAIN_S = 30  # the gateway's default request deadline


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def main():
    source, shoal = sys.argv[1], sys.argv[2]
    kubectl = shutil.which("kubectl")
    if not kubectl:
        print("SKIP: kubectl is not installed")
        sys.exit(77)
    rendered = subprocess.run([kubectl, "kustomize", source + "/deploy/kubernetes"], capture_output=True, text=True)
    if rendered.returncode != 0:
        fail("kubectl kustomize: " + rendered.stderr)
    docs = [d for d in yaml.safe_load_all(rendered.stdout) if d]
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], {})[d["metadata"]["name"]] = d
        if d["kind"] != "Namespace" and d["metadata"].get("namespace") != "shoal":
            fail(f"{d['kind']}/{d['metadata']['name']} is not in the shoal namespace")

    def one(kind, name):
        if name not in by_kind.get(kind, {}):
            fail(f"no {kind} {name}")
        return by_kind[kind][name]

    # NATS: three JetStream servers, clustered, monitoring for KEDA.
    nats = one("StatefulSet", "shoal-nats")
    if nats["spec"]["replicas"] != 3:
        fail("NATS must run 3 replicas")
    conf = next(v for cm in by_kind["ConfigMap"].values() for k, v in cm.get("data", {}).items() if k == "nats.conf")
    for needed in ("jetstream", "cluster", "http_port: 8222", "shoal-nats-2.shoal-nats:6222"):
        if needed not in conf:
            fail(f"nats.conf lacks {needed!r}")
    one("Service", "shoal-nats")
    one("PodDisruptionBudget", "shoal-nats")

    # Shoal's own containers: flags the binary accepts, probes, grace.
    help_cache = {}

    def accepted(command):
        if command not in help_cache:
            out = subprocess.run([shoal, command, "--help"], capture_output=True, text=True)
            help_cache[command] = out.stdout + out.stderr
        return help_cache[command]

    def check_args(where, args):
        command = args[0]
        for a in args[1:]:
            flag = a.split("=", 1)[0]
            if flag.startswith("--") and not re.search(re.escape(flag) + r"\b", accepted(command)):
                fail(f"{where}: `shoal {command}` has no {flag}")

    deployments = by_kind.get("Deployment", {})
    pools = {}
    for name, dep in deployments.items():
        pod = dep["spec"]["template"]["spec"]
        (c,) = pod["containers"]
        args = c["args"]
        check_args(name, args)
        port = "http" if args[0] == "gateway" else "metrics"
        if c.get("readinessProbe", {}).get("httpGet", {}).get("path") != "/readyz":
            fail(f"{name}: readiness must be GET /readyz")
        if c.get("livenessProbe", {}).get("httpGet", {}).get("path") != "/healthz":
            fail(f"{name}: liveness must be GET /healthz")
        if c["readinessProbe"]["httpGet"]["port"] != port:
            fail(f"{name}: probes go to the {port} port")
        drain = GATEWAY_DRAIN_S if args[0] == "gateway" else WORKER_DRAIN_S
        if pod.get("terminationGracePeriodSeconds", 30) <= drain:
            fail(f"{name}: terminationGracePeriodSeconds must outlast the {drain} s drain")
        if "requests" not in c.get("resources", {}):
            fail(f"{name}: no resource requests")
        if args[0] == "worker":
            pool = next(a.split("=", 1)[1] for a in args if a.startswith("--pool="))
            pools[name] = pool
            one("PodDisruptionBudget", name)
    one("Deployment", "shoal-gateway")
    one("Service", "shoal-gateway")
    hpa = one("HorizontalPodAutoscaler", "shoal-gateway")
    if hpa["spec"]["scaleTargetRef"]["name"] != "shoal-gateway":
        fail("the HPA must scale the gateways")
    one("PodDisruptionBudget", "shoal-gateway")
    if "default" not in pools.values():
        fail("no worker Deployment for the default pool")
    gpu = [n for n, d in deployments.items()
           if "nvidia.com/gpu" in d["spec"]["template"]["spec"]["containers"][0]["resources"].get("limits", {})]
    if not gpu:
        fail("no GPU worker pool")

    # KEDA: a ScaledObject per worker pool, reading what Shoal exports.
    scaled = {so["spec"]["scaleTargetRef"]["name"]: so for so in by_kind.get("ScaledObject", {}).values()}
    for name, pool in pools.items():
        if name not in scaled:
            fail(f"no ScaledObject for {name}")
        for t in scaled[name]["spec"]["triggers"]:
            m = t["metadata"]
            if t["type"] == "nats-jetstream" and m["stream"] != f"SHOAL_WORK_{pool}":
                fail(f"{name}: the nats-jetstream trigger must read SHOAL_WORK_{pool}")
            if t["type"] == "prometheus" and "shoal_pool_queue_items" in m["query"] and f'pool="{pool}"' not in m["query"]:
                fail(f"{name}: its backlog query must name pool {pool}")

    # Configuration and secrets.
    profiles = one("ConfigMap", next(n for n in by_kind["ConfigMap"] if n.startswith("shoal-profiles")))
    for key, text in profiles["data"].items():
        profile = yaml.safe_load(text)
        if not profile.get("id") or not profile.get("runtime"):
            fail(f"profile {key} needs an id and a runtime")
    secrets = by_kind.get("Secret", {})
    for prefix in ("shoal-admin", "shoal-nats", "shoal-s3"):
        if not any(n.startswith(prefix) for n in secrets):
            fail(f"no Secret {prefix}")
    job = one("Job", "shoal-register-models")
    print(f"ok: {len(docs)} objects; worker pools {sorted(set(pools.values()))}; "
          f"{len(scaled)} ScaledObjects; register job {job['metadata']['name']}")


if __name__ == "__main__":
    main()
