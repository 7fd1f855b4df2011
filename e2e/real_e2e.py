#!/usr/bin/env python3
"""tessera against real Kubernetes components (Tier B, kubernetes.md 6.2).

One control plane (etcd, kube-apiserver, kube-scheduler with tessera as its extender) serves all
scenarios; each scenario has its own namespace and its own node group (pods select it with a
nodeSelector), a deadline, and cleans up after itself. Prints one PASS/FAIL line per scenario
and finally `e2e-real: N passed, N failed`. Exit status 0 only when nothing failed.
"""

import argparse
import base64
import concurrent.futures
import http.client
import json
import os
import random
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import traceback

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from lib import gpu, hami, procs, walk  # noqa: E402
from lib.cluster import (LEASE_NAME, NAMESPACE, SCHEDULER_NAME, Abort,  # noqa: E402
                         Cluster, Tessera, wait_until)
from lib.kube import ApiError  # noqa: E402

LEASE_PATH = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{LEASE_NAME}"


class Fail(Abort):
    """A scenario's expectation did not hold (also ends any wait_until at once)."""


class Skip(Exception):
    """A scenario cannot run on this machine (a part it needs is not there); reported as
    SKIP with the reason and counted apart from passed and failed."""


def write_token_kubeconfig(c, path, token):
    """A kubeconfig for the e2e cluster that authenticates with `token` (the agent's
    ServiceAccount token); returns its path."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(open(c.kubeconfigs["admin"], encoding="utf-8").read().split("users:")[0] +
                f"users:\n- name: agent\n  user:\n    token: {token}\ncontexts:\n"
                f"- name: e2e\n  context:\n    cluster: e2e\n    user: agent\n"
                f"current-context: e2e\n")
    return path


def check(cond, msg: str) -> None:
    if not cond:
        raise Fail(msg)


def say(msg: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --- pods --------------------------------------------------------------------------------------
def gpu_pod(ns: str, name: str, limits: dict, *, group: str | None, annotations=None,
            labels=None, scheduler: str | None = SCHEDULER_NAME, privileged: bool = False) -> dict:
    container = {"name": "c0", "image": "registry.k8s.io/pause:3.10",
                 "resources": {"limits": {k: str(v) for k, v in limits.items()}}}
    if privileged:
        container["securityContext"] = {"privileged": True}
    spec = {"containers": [container], "terminationGracePeriodSeconds": 0}
    if scheduler:
        spec["schedulerName"] = scheduler
    if group:
        spec["nodeSelector"] = {"tessera-e2e/group": group}
    md = {"name": name, "namespace": ns, "labels": {"tessera-e2e": "1", **(labels or {})}}
    if annotations:
        md["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}


def scheduled_condition(pod: dict) -> dict | None:
    for c in pod.get("status", {}).get("conditions") or []:
        if c.get("type") == "PodScheduled":
            return c
    return None


def describe(pod: dict) -> str:
    md, spec = pod["metadata"], pod["spec"]
    c = scheduled_condition(pod) or {}
    ann = md.get("annotations") or {}
    interesting = {k: v for k, v in ann.items() if k.startswith("hami.io/")}
    return (f"{md['name']}: node={spec.get('nodeName')!r} PodScheduled={c.get('status')} "
            f"{c.get('reason', '')} {c.get('message', '')!r} ann={interesting}")


class Env:
    def __init__(self, cluster: Cluster, args):
        self.cluster = cluster
        self.kube = cluster.kube
        self.args = args
        self.repo = args.repo
        self.main: Tessera | None = None
        self.main_error: str | None = None

    # Waits ------------------------------------------------------------------------------------
    def wait_bound(self, ns: str, names: list[str], timeout: float) -> dict[str, dict]:
        want = set(names)
        last: dict[str, dict] = {}

        def done():
            nonlocal last
            self.cluster.check_tesseras_alive()
            last = {p["metadata"]["name"]: p for p in self.kube.pods(ns)
                    if p["metadata"]["name"] in want}
            return all(last.get(n, {}).get("spec", {}).get("nodeName") for n in want)
        try:
            wait_until(done, timeout, 0.5, f"{len(want)} pods bound in {ns}")
        except TimeoutError as e:
            pending = [describe(last[n]) if n in last else f"{n}: missing" for n in sorted(want)
                       if not last.get(n, {}).get("spec", {}).get("nodeName")]
            raise Fail(f"{e}; {len(pending)} not bound, e.g.\n    " +
                       "\n    ".join(pending[:5])) from None
        return last

    def wait_unschedulable(self, ns: str, name: str, timeout: float, expect: str) -> str:
        """Waits for PodScheduled=False with `expect` in its message and returns the message.
        An earlier message without it (a transient extender error, which kube-scheduler
        retries) is passed over; on timeout the failure shows the last one."""
        def cond():
            self.cluster.check_tesseras_alive()
            p = self.kube.pod(ns, name)
            check(not p["spec"].get("nodeName"), f"{name} was bound to {p['spec'].get('nodeName')}")
            c = scheduled_condition(p)
            msg = c.get("message", "") if c and c.get("status") == "False" else ""
            return msg if expect in msg else None
        try:
            return wait_until(cond, timeout, 0.5, f"{ns}/{name} PodScheduled=False with {expect!r}")
        except TimeoutError as e:
            raise Fail(f"{e}: {describe(self.kube.pod(ns, name))}") from None

    def node_gpus(self, group: str) -> dict[str, dict[str, dict]]:
        out = {}
        for n in self.kube.get("/api/v1/nodes", query={
                "labelSelector": f"tessera-e2e/group={group}"})["items"]:
            devs = json.loads(n["metadata"]["annotations"][gpu.REGISTER])
            out[n["metadata"]["name"]] = {d["id"]: d for d in devs}
        return out

    @staticmethod
    def gpu_metric(t: Tessera, name: str, uuid: str) -> float | None:
        """The value of metric `name` for GPU `uuid` in t's /metrics; None when absent, or when
        tessera cannot ask the API server about the reader's token right now (503: scenario e
        restarts it)."""
        status, text = t.get_text("/metrics")
        if status == 503:
            return None
        check(status == 200, f"{t.name} /metrics: HTTP {status} {text[:200]}")
        for line in text.splitlines():
            if line.startswith(name + "{") and f'device_uuid="{uuid}"' in line:
                return float(line.rsplit(" ", 1)[1])
        return None

    def require_main(self) -> Tessera:
        if self.main is None or self.main_error:
            raise Fail(f"tessera serve is not running: {self.main_error}")
        if not self.main.proc.running():
            raise Fail(f"tessera serve exited (code {self.main.proc.popen.returncode})")
        return self.main


# --- scenarios ---------------------------------------------------------------------------------
SCENARIOS: list[tuple[str, str, float, object]] = []


def scenario(key: str, title: str, timeout: float):
    def register(fn):
        SCENARIOS.append((key, title, timeout, fn))
        return fn
    return register


def check_serving_certificate(env: Env, secret_path: str, webhook_path: str, host: str):
    """The Secret holds tls.crt/tls.key/ca.crt, the webhook trusts that CA, and the certificate
    verifies against it for `host`. Returns the Secret and the webhook's caBundle."""
    secret = env.kube.get(secret_path)
    check(set(secret["data"]) >= {"tls.crt", "tls.key", "ca.crt"},
          f"secret keys {sorted(secret['data'])}")
    bundle = env.kube.get(webhook_path)["webhooks"][0]["clientConfig"].get("caBundle")
    check(bundle == secret["data"]["ca.crt"], "webhook caBundle != secret ca.crt")
    with tempfile.TemporaryDirectory() as d:
        for k in ("tls.crt", "ca.crt"):
            with open(os.path.join(d, k), "wb") as f:
                f.write(base64.b64decode(secret["data"][k]))
        v = subprocess.run(["openssl", "verify", "-CAfile", os.path.join(d, "ca.crt"),
                            os.path.join(d, "tls.crt")], capture_output=True, text=True)
        check(v.returncode == 0, f"serving cert does not verify: {v.stdout}{v.stderr}")
        san = subprocess.run(["openssl", "x509", "-noout", "-ext", "subjectAltName", "-in",
                              os.path.join(d, "tls.crt")], capture_output=True, text=True)
        check(f"DNS:{host}" in san.stdout, f"SANs: {san.stdout}")
    return secret, bundle


@scenario("h", "deploy/ manifests pass server-side dry-run; shipped configs load", 90)
def s_manifests(env: Env, ns: str, group: str):
    c = env.cluster
    r = c.kubectl("apply", "--dry-run=server", "-f", c.deploy_path(""), check=False)
    check(r.returncode == 0, f"kubectl apply --dry-run=server -f deploy/ failed:\n{r.stdout}"
                             f"{r.stderr}")
    say(f"dry-run: {len(r.stdout.splitlines())} objects")
    # kube-scheduler validates the shipped KubeSchedulerConfiguration and exits.
    cfg = c.shipped_scheduler_config("deploy-scheduler-config.admin", c.kubeconfigs["admin"])
    out = os.path.join(c.work, "deploy-scheduler-config.out.yaml")
    r = subprocess.run([c._bin("kube-scheduler"), f"--config={cfg}", f"--write-config-to={out}"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and os.path.exists(out),
          f"kube-scheduler rejects deploy/20-config.yaml scheduler-config.yaml:\n{r.stderr[-2000:]}")
    # The sidecar as deployed: shipped config + shipped RBAC (tessera's ServiceAccount identity)
    # must be enough for kube-scheduler to win its Lease without "forbidden" errors.
    kc = c.kubeconfigs["tessera"]
    sidecar = c.scheduler_proc("sidecar-kube-scheduler",
                               c.shipped_scheduler_config("deploy-scheduler-config.sa", kc), kc)
    sidecar.start()
    try:
        wait_until(lambda: env.kube.exists(LEASE_PATH) and
                   env.kube.get(LEASE_PATH)["spec"].get("holderIdentity"), 30, 0.5,
                   f"the sidecar kube-scheduler to hold Lease {LEASE_NAME}")
        time.sleep(2)
        forbidden = [ln for ln in sidecar.log_tail(400).splitlines() if "forbidden" in ln]
        check(not forbidden, "sidecar kube-scheduler lacks permissions:\n" +
              "\n".join(forbidden[:5]))
    finally:
        sidecar.stop(5)
        env.kube.delete(LEASE_PATH, grace0=False)
    say("sidecar kube-scheduler with the shipped config and RBAC took its Lease")
    # gen-webhook-cert.sh: Secret + caBundle, against the real apiserver.
    c.kubectl("apply", "-f", c.deploy_path("40-webhook.yaml"))
    try:
        env_vars = dict(os.environ, KUBECTL=c._bin("kubectl"), KUBECONFIG=c.kubeconfigs["admin"])
        r = subprocess.run([c.deploy_path("gen-webhook-cert.sh")], env=env_vars,
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, f"gen-webhook-cert.sh failed:\n{r.stdout}{r.stderr}")
        check_serving_certificate(env, f"/api/v1/namespaces/{NAMESPACE}/secrets/tessera-tls",
                                  "/apis/admissionregistration.k8s.io/v1/"
                                  "mutatingwebhookconfigurations/tessera-webhook",
                                  "tessera.tessera-system.svc")
    finally:
        env.kube.delete("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/"
                        "tessera-webhook", grace0=False)
        env.kube.delete(f"/api/v1/namespaces/{NAMESPACE}/secrets/tessera-tls", grace0=False)


def check_chart_agent_usage_args(env: Env, helm, release: str, chart: str) -> None:
    """The agent DaemonSet's usage flags (docs/agent.md, "GPU usage") come from
    agent.usageInterval and agent.usageAnnotationRefresh: by default `tessera agent`'s own
    defaults, else the values given (an unquoted 0, as --set makes it, included); a value that
    is no duration is refused, naming the field."""
    c = env.cluster
    # `helm template` asks no cluster: it is told this one's version (the chart wants 1.28+).
    kube_version = env.kube.get("/version")["gitVersion"]

    def agent_args(*values: str) -> list[str]:
        r = helm("template", release, chart, "--kube-version", kube_version,
                 "--show-only", "templates/50-agent.yaml", *values)
        path = os.path.join(c.work, "chart-agent.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(r.stdout)
        ds = next(o for o in c.manifest_objects(path) if o["kind"] == "DaemonSet")
        return ds["spec"]["template"]["spec"]["containers"][0]["args"]

    def usage_args(args: list[str]) -> dict[str, str]:
        return {a.split("=", 1)[0]: a.split("=", 1)[1] for a in args
                if a.startswith(("--usage-interval=", "--usage-annotation-refresh="))}

    r = subprocess.run([c.tessera_bin, "agent", "--help"], capture_output=True, text=True,
                       timeout=30)
    binary = {flag: m.group(1) for flag in ("--usage-interval", "--usage-annotation-refresh")
              for m in [re.search(rf"{flag} TEXT=(\S+)", r.stdout)] if m}
    check(len(binary) == 2, f"`tessera agent --help` names no usage defaults:\n{r.stdout[-2000:]}")
    got = usage_args(agent_args())
    check(got == binary, f"chart's default agent usage args {got}, the binary's defaults {binary}")
    got = usage_args(agent_args("--set", "agent.usageInterval=1m30s",
                                "--set", "agent.usageAnnotationRefresh=0"))
    want = {"--usage-interval": "1m30s", "--usage-annotation-refresh": "0"}
    check(got == want, f"agent usage args {got}, want {want}")
    got = usage_args(agent_args("--set-string", "agent.usageInterval=0",
                                "--set", "agent.usageAnnotationRefresh=30s"))
    want = {"--usage-interval": "0", "--usage-annotation-refresh": "30s"}
    check(got == want, f"agent usage args {got}, want {want}")
    for key, bad in (("usageInterval", "often"), ("usageAnnotationRefresh", "-5m")):
        r = helm("template", release, chart, "--kube-version", kube_version,
                 "--set", f"agent.{key}={bad}", check_rc=False)
        check(r.returncode != 0 and f"/agent/{key}" in r.stderr, f"bad agent.{key}: {r.stderr}")
    say(f"agent usage args: defaults {binary} as the binary's, custom values and 0 passed "
        "through, bad durations refused")


@scenario("o", "Helm chart: lint, deploy/ is its rendering, server-side dry run, install "
               "(certificate + caBundle), upgrade keeps the certificate, bad values refused, "
               "uninstall", 120)
def s_helm_chart(env: Env, ns: str, group: str):
    c = env.cluster
    helm_bin = c._bin("helm")
    check(os.path.exists(helm_bin), f"no helm in {c.bins} (e2e/k8s-bins/build.sh builds it)")
    chart = c.deploy_path("helm/tessera")
    release, rns, agent_ns = "tessera-chart", "tessera-chart", "tessera-chart-node"

    def helm(*args: str, check_rc: bool = True) -> subprocess.CompletedProcess:
        r = subprocess.run([helm_bin, "--kubeconfig", c.kubeconfigs["admin"], *args],
                           capture_output=True, text=True, timeout=90)
        if check_rc:
            check(r.returncode == 0, f"helm {' '.join(args[:2])} failed:\n{r.stdout}{r.stderr}")
        return r

    helm("lint", "--strict", chart)
    r = subprocess.run([c.deploy_path("generate-manifests.sh"), "--check"],
                       env=dict(os.environ, HELM=helm_bin), capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 0, f"deploy/ is not the chart's rendering:\n{r.stderr[-3000:]}")
    # Bad values are refused with the field named, before anything reaches the cluster.
    r = helm("template", release, chart, "--set", "scheduler.nodeLock=sometimes", check_rc=False)
    check(r.returncode != 0 and "/scheduler/nodeLock" in r.stderr, f"bad nodeLock: {r.stderr}")
    r = helm("template", release, chart, "--set", "scheduler.replicaz=3", check_rc=False)
    check(r.returncode != 0 and "replicaz" in r.stderr, f"misspelt key: {r.stderr}")
    check_chart_agent_usage_args(env, helm, release, chart)

    common = ["--namespace", rns, "--set", f"agent.namespace={agent_ns}"]
    # Beside HAMi's device plugin (a DaemonSet on HAMi's gpu=on label): the agent on its own
    # label installs; on HAMi's label the chart refuses, naming the DaemonSet.
    hami_labels = {"app.kubernetes.io/component": "hami-device-plugin"}
    env.kube.create(f"/apis/apps/v1/namespaces/{ns}/daemonsets", {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "hami-device-plugin", "labels": hami_labels},
        "spec": {"selector": {"matchLabels": hami_labels},
                 "template": {"metadata": {"labels": hami_labels},
                              "spec": {"nodeSelector": {"gpu": "on"},
                                       "containers": [{"name": "device-plugin",
                                                       "image": "projecthami/hami:v2.10.0"}]}}}})
    try:
        r = helm("install", release, chart, *common, "--set-string", "agent.nodeSelector.gpu=on",
                 "--create-namespace", "--dry-run=server", check_rc=False)
        check(r.returncode != 0 and f"{ns}/hami-device-plugin" in r.stderr and
              "agent.enabled=false" in r.stderr, f"agent on HAMi's label not refused: {r.stderr}")
        helm("install", release, chart, *common, "--create-namespace", "--dry-run=server")
        r = helm("install", release, chart, *common, "--set-string", "agent.nodeSelector.gpu=on",
                 "--set", "agent.allowBesideHamiDevicePlugin=true", "--create-namespace",
                 "--dry-run=server")
        say("beside HAMi's device plugin: refused on its label, installs on tessera.io/agent "
            "or with agent.allowBesideHamiDevicePlugin")
    finally:
        env.kube.delete(f"/apis/apps/v1/namespaces/{ns}/daemonsets/hami-device-plugin",
                        grace0=False)
    r = helm("install", release, chart, *common, "--create-namespace", "--dry-run=server")
    say(f"server-side dry run: {r.stdout.count(chr(10) + 'kind: ')} objects")
    check(not env.kube.exists(f"/apis/apps/v1/namespaces/{rns}/deployments/{release}"),
          "the dry run created the Deployment")
    mwc_path = ("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/"
                f"{release}-webhook")
    vap_api = "/apis/admissionregistration.k8s.io/v1"
    secret_path = f"/api/v1/namespaces/{rns}/secrets/{release}-tls"
    try:
        helm("install", release, chart, *common, "--create-namespace")
        dep = env.kube.get(f"/apis/apps/v1/namespaces/{rns}/deployments/{release}")
        names = [k["name"] for k in dep["spec"]["template"]["spec"]["containers"]]
        check(names == ["kube-scheduler", "tessera"] and dep["spec"]["replicas"] == 2,
              f"Deployment containers {names}, replicas {dep['spec']['replicas']}")
        ds = env.kube.get(f"/apis/apps/v1/namespaces/{agent_ns}/daemonsets/{release}-agent")
        check(ds["spec"]["template"]["spec"]["nodeSelector"] == {"tessera.io/agent": "true"},
              f"agent nodeSelector {ds['spec']['template']['spec'].get('nodeSelector')}")
        agent_c = ds["spec"]["template"]["spec"]["containers"][0]
        check(agent_c["securityContext"].get("readOnlyRootFilesystem") and
              any(m["mountPath"] == "/usr/local/vgpu" and m.get("readOnly")
                  for m in agent_c["volumeMounts"]) and
              "--read-auth=delegated" in agent_c["args"],
              f"agent container {agent_c['securityContext']} {agent_c['volumeMounts']} "
              f"{agent_c['args']}")
        # The agent's admission policies, in force only for this release's ServiceAccount.
        for kind in ("validatingadmissionpolicies", "validatingadmissionpolicybindings"):
            for suffix in ("own-node", "own-pods"):
                check(env.kube.exists(f"{vap_api}/{kind}/{release}-agent-{suffix}"),
                      f"{kind} {release}-agent-{suffix} not installed")
        vap = env.kube.get(f"{vap_api}/validatingadmissionpolicies/{release}-agent-own-node")
        check(f"system:serviceaccount:{agent_ns}:{release}-agent" in
              vap["spec"]["matchConditions"][0]["expression"], f"policy matches {vap['spec']}")
        cm = env.kube.get(f"/api/v1/namespaces/{rns}/configmaps/{release}-config")
        # kube-scheduler calls the verbs on tessera's own loopback listener in the pod.
        args = dep["spec"]["template"]["spec"]["containers"][1]["args"]
        ext = [a.split("=", 1)[1] for a in args if a.startswith("--extender-bind=")]
        check(len(ext) == 1 and ext[0].startswith("127.0.0.1:"), f"tessera args {args}")
        check(f"urlPrefix: http://{ext[0]}" in cm["data"]["scheduler-config.yaml"],
              f"scheduler-config.yaml does not call --extender-bind={ext[0]}")
        secret, bundle = check_serving_certificate(env, secret_path, mwc_path,
                                                   f"{release}.{rns}.svc")
        # The shipped scheduler config, rendered for this release, loads in kube-scheduler.
        cfg = os.path.join(c.work, "chart-scheduler-config.yaml")
        with open(cfg, "w", encoding="utf-8") as f:
            f.write(cm["data"]["scheduler-config.yaml"].replace("/tls/ca.crt", c.pki.ca.cert)
                    + f"clientConnection:\n  kubeconfig: {c.kubeconfigs['admin']}\n")
        out = os.path.join(c.work, "chart-scheduler-config.out.yaml")
        r = subprocess.run([c._bin("kube-scheduler"), f"--config={cfg}",
                            f"--write-config-to={out}"], capture_output=True, text=True,
                           timeout=60)
        check(r.returncode == 0, f"kube-scheduler rejects the chart's config:\n{r.stderr[-2000:]}")
        say("installed: Deployment, DaemonSet (read-only root and /usr/local/vgpu, "
            "--read-auth=delegated), the agent's admission policies, Secret and caBundle from "
            "one CA")
        # An upgrade changes what it is asked to and keeps the certificate.
        helm("upgrade", release, chart, *common, "--set", "scheduler.replicas=3",
             "--set", "scheduler.nodeLock=none")
        dep = env.kube.get(f"/apis/apps/v1/namespaces/{rns}/deployments/{release}")
        check(dep["spec"]["replicas"] == 3, f"replicas after upgrade {dep['spec']['replicas']}")
        args = dep["spec"]["template"]["spec"]["containers"][1]["args"]
        check("--node-lock=none" in args, f"args after upgrade {args}")
        check(not env.kube.exists(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/"
                                  f"{release}-node-lock"), "node-lock role left after nodeLock=none")
        check(env.kube.get(secret_path)["data"] == secret["data"], "upgrade replaced the certificate")
        check(env.kube.get(mwc_path)["webhooks"][0]["clientConfig"].get("caBundle") == bundle,
              "upgrade changed the caBundle")
        say("upgrade: replicas 3, --node-lock=none, node-lock role removed, certificate kept")
    finally:
        # No --wait: without kube-controller-manager here the namespaces stay Terminating.
        helm("uninstall", release, "--namespace", rns, check_rc=False)
    for path in (mwc_path, f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{release}",
                 f"/apis/apps/v1/namespaces/{rns}/deployments/{release}",
                 f"{vap_api}/validatingadmissionpolicies/{release}-agent-own-node"):
        check(not env.kube.exists(path), f"{path} left after helm uninstall")
    say("uninstall removed the release's objects")


# --- the migration guide, run as written ---------------------------------------------------
GUIDE = "docs/migrating-from-hami.md"
GUIDE_STEPS = ["install", "check-beside", "scheduler", "move-node-drain", "move-node", "try-node",
               "placement", "rollback-scheduler", "rollback-node", "rollback-uninstall"]
HAMI_VALUES = "tests/adapters/yaml/testdata/hami-v2.10.0-values.yaml"
HAMI_STANDIN = "e2e/testdata/hami-standin"


def hami_scheduler_config(c: Cluster) -> str:
    """HAMi's scheduler stand-in: a kube-scheduler with the profile hami-scheduler (HAMi's
    extender cannot run here; nodes advertise nvidia.com/gpu, so pods asking only for it fit)."""
    path = os.path.join(c.work, "hami-scheduler-config.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: {c.kubeconfigs['scheduler']}
leaderElection:
  leaderElect: false
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 3
profiles:
- schedulerName: hami-scheduler
""")
    return path


@scenario("w", "the migration guide as written (docs/migrating-from-hami.md): beside HAMi "
               "(a stand-in for its chart), no node with two device plugins, HAMi's pods still "
               "HAMi's; webhook switched; one node moved to tessera's agent and a pod bound there "
               "by tessera; rolled back, pods admitted meanwhile unchanged", 60)
def s_migration_walk(env: Env, ns: str, group: str):
    main = env.require_main()
    c = env.cluster
    helm_bin = c._bin("helm")
    check(os.path.exists(helm_bin), f"no helm in {c.bins} (e2e/k8s-bins/build.sh builds it)")
    steps, variables = walk.guide_steps(os.path.join(env.repo, GUIDE))
    check(sorted(steps) == sorted(GUIDE_STEPS), f"{GUIDE}: e2e steps {sorted(steps)}, want "
                                                f"{sorted(GUIDE_STEPS)}")
    node, other = f"{group}-n1", f"{group}-n2"
    release, hami_ns, agent_ns = "tessera-walk", "kube-system", "tessera-walk-node"
    values = {"NODE": node, "HAMI_NS": hami_ns,
              "HAMI_CHART": os.path.join(env.repo, HAMI_STANDIN), "HAMI_VERSION": "2.10.0",
              "RELEASE": release, "TESSERA_NS": "tessera-walk", "AGENT_NS": agent_ns}
    check(sorted(variables) == sorted(values), f"{GUIDE}: the e2e:vars block sets "
                                               f"{sorted(variables)}, the walk {sorted(values)}")
    # The guide runs from a checkout (deploy/helm/tessera) with kubectl, helm and tessera on PATH.
    wd = os.path.join(c.work, "walk")
    bindir = os.path.join(wd, ".bin")
    os.makedirs(bindir, exist_ok=True)
    for link, target in ((os.path.join(wd, "deploy"), os.path.join(env.repo, "deploy")),
                         (os.path.join(bindir, "kubectl"), c._bin("kubectl")),
                         (os.path.join(bindir, "helm"), helm_bin),
                         (os.path.join(bindir, "tessera"), env.args.tessera)):
        if not os.path.lexists(link):
            os.symlink(target, link)
    shell_env = {**os.environ, **values, "KUBECONFIG": c.kubeconfigs["admin"],
                 "PATH": f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                 "HELM_CACHE_HOME": os.path.join(wd, ".helm/cache"),
                 "HELM_CONFIG_HOME": os.path.join(wd, ".helm/config"),
                 "HELM_DATA_HOME": os.path.join(wd, ".helm/data")}

    # --- the cluster running HAMi: two GPU nodes labelled gpu=on with HAMi's registration (the
    # same GPUs the simulated NVML shows tessera's agent), HAMi's chart (stand-in) in kube-system
    # with its webhook answered by a stand-in, its scheduler a kube-scheduler stand-in.
    t4 = {node: T4_UUID, other: f"GPU-7d0c2a9b-1f3e-4e2d-8c5b-{group}n2000001"}
    hami_gpus = {n: [gpu.sharing_gpu(u, 0, model="NVIDIA-Tesla T4", devmem=15360)]
                 for n, u in t4.items()}
    for n in (node, other):
        c.create_node(n, hami_gpus[n], group)
    rc_path = "/apis/node.k8s.io/v1/runtimeclasses/nvidia"  # the agent's runtimeClassName
    made_rc = not env.kube.exists(rc_path)
    if made_rc:
        env.kube.create("/apis/node.k8s.io/v1/runtimeclasses", {
            "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": "nvidia"}, "handler": "nvidia"})
    hook = walk.HamiWebhook(c.tessera_tls.cert, c.tessera_tls.key)
    sched_cfg = hami_scheduler_config(c)
    hami_sched: list[procs.Proc] = []

    def start_hami_scheduler():
        p = c.scheduler_proc("hami-kube-scheduler", sched_cfg, c.kubeconfigs["scheduler"],
                             ["--v=1"])
        hami_sched.append(p.start())

    def stop_hami_scheduler():
        for p in hami_sched:
            p.stop(5)

    agent_sa = f"{release}-agent"
    sim = os.path.join(os.path.dirname(env.args.tessera), "libtessera-nvml-sim.so")

    def start_agent(pod: dict):
        """The agent DaemonSet's container as the kubelet would run it on the pod's node: its
        arguments, its ConfigMap, a token of its ServiceAccount bound to the pod (so the chart's
        admission policies apply); the simulated NVML shows the node's GPU; no kubelet."""
        pname, pnode = pod["metadata"]["name"], pod["spec"]["nodeName"]
        d = os.path.join(wd, f"agent-{pname}")
        os.makedirs(d, exist_ok=True)
        state = os.path.join(d, "nvml-state.json")
        with open(state, "w", encoding="utf-8") as f:
            json.dump({"gpus": [{"uuid": t4[pnode], "name": "Tesla T4", "memoryMiB": 15360}]}, f)
        cm = env.kube.get(f"/api/v1/namespaces/{agent_ns}/configmaps/{release}-agent-config")
        files = {}
        for key in ("device-config.yaml", "config.json"):
            files[key] = os.path.join(d, key)
            with open(files[key], "w", encoding="utf-8") as f:
                f.write(cm["data"][key])
        token = env.kube.create(
            f"/api/v1/namespaces/{agent_ns}/serviceaccounts/{pod['spec']['serviceAccountName']}"
            "/token", {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                       "spec": {"expirationSeconds": 3600, "boundObjectRef": {
                           "apiVersion": "v1", "kind": "Pod", "name": pname,
                           "uid": pod["metadata"]["uid"]}}})["status"]["token"]
        kubeconfig = write_token_kubeconfig(c, os.path.join(d, "agent.kubeconfig"), token)
        container = pod["spec"]["containers"][0]
        check(container["command"] == ["tessera", "agent"], f"agent runs {container['command']}")
        port = procs.free_port()
        moved = {"--device-config-file": files["device-config.yaml"],
                 "--node-config-file": files["config.json"],
                 "--plugin-dir": os.path.join(d, "device-plugins"),
                 "--ledger": os.path.join(d, "mig-ledger.json"), "--hook-path": d,
                 "--http-bind": f"127.0.0.1:{port}"}
        args = []
        for a in container.get("args", []):
            k = a.split("=", 1)[0]
            args.append(f"{k}={moved[k]}" if k in moved else a)
        p = procs.Proc(f"agent-{pname}", [
            env.args.tessera, "agent", *args, "--kubeconfig", kubeconfig, "--nvml-library", sim,
            "--kubelet-socket", "", "--register-interval", "1s"],
            os.path.join(wd, f"agent-{pname}.log"),
            env={**os.environ, "NODE_NAME": pnode, "TESSERA_NVML_SIM_STATE": state}).start()
        return (p, port)

    def agent_ready(handle) -> bool:
        p, port = handle
        if not p.running():
            raise Fail(f"the agent exited with {p.popen.returncode}: {p.log_tail(10)}")
        try:
            return agent_http(port, "/readyz")[0] == 200
        except OSError:
            return False

    webhook_path = ("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/"
                    f"{release}-webhook")
    ca_b64 = base64.b64encode(open(c.pki.ca.cert, "rb").read()).decode()

    chart_client: list[dict] = []  # the chart's clientConfig, while the stand-in replaces it
    standin_paused = [False]

    def service_standin(undo: bool = False):
        """No Service routing here: tessera's webhook, once the chart made it, calls the
        harness's tessera serve (the chart's scheduler pods, which do not run), as scenario g
        does with deploy/'s. undo puts the chart's clientConfig back and pauses this until
        standin_paused is cleared, for a helm upgrade (its three-way merge would add the
        Service beside the URL)."""
        if standin_paused[0] and not undo:
            return
        if undo:
            standin_paused[0] = True
        try:
            mwc = env.kube.get(webhook_path)
        except ApiError as e:
            if e.status == 404:
                return
            raise
        client = mwc["webhooks"][0]["clientConfig"]
        if undo and "url" in client and chart_client:
            mwc["webhooks"][0]["clientConfig"] = chart_client.pop()
            env.kube.request("PUT", webhook_path, mwc)
        elif not undo and "service" in client:
            chart_client[:] = [client]
            mwc["webhooks"][0]["clientConfig"] = {
                "url": f"https://127.0.0.1:{main.port}/webhook", "caBundle": ca_b64}
            env.kube.request("PUT", webhook_path, mwc)

    stand = walk.StandIns(
        env.kube, group, [(hami_ns, "hami-device-plugin", "hami"), (agent_ns, agent_sa, "agent")],
        hami_gpus, start_agent, agent_ready, lambda h: h[0].stop(5),
        [(hami_ns, "hami-scheduler", start_hami_scheduler, stop_hami_scheduler),
         ("tessera-walk", release, None, None)], [service_standin])

    def run_step(name: str, after=None) -> subprocess.CompletedProcess:
        t0 = time.monotonic()
        with tempfile.TemporaryFile("w+") as out:
            p = subprocess.Popen(["bash", "-euo", "pipefail", "-c", steps[name]], cwd=wd,
                                 env=shell_env, stdout=out, stderr=subprocess.STDOUT, text=True)
            while p.poll() is None:
                stand.pump()
                if time.monotonic() - t0 > 120:
                    p.kill()
                time.sleep(0.1)
            out.seek(0)
            text = out.read()
        with open(os.path.join(wd, f"step-{name}.out"), "w", encoding="utf-8") as f:
            f.write(f"$ {steps[name]}\n{text}")
        if after:
            after()
        stand.settle()
        check(stand.max_plugins_per_node <= 1,
              f"after {GUIDE} step {name}: {stand.max_plugins_per_node} device plugin pods on "
              f"one node ({stand.max_plugins_at})")
        check(p.returncode == 0, f"{GUIDE} step {name} exited {p.returncode}:\n"
                                 f"{steps[name]}\n--- output:\n{text[-3000:]}\n--- stand-ins: "
                                 f"{stand.errors[-3:]}")
        say(f"guide step {name}: {time.monotonic() - t0:.1f}s")
        return subprocess.CompletedProcess(name, 0, text, "")

    def plugin_pods() -> dict[str, list[str]]:
        """node -> the device plugin pods on it (HAMi's and tessera's)."""
        out: dict[str, list[str]] = {}
        for pns, sel in ((hami_ns, "app.kubernetes.io/component=hami-device-plugin"),
                         (agent_ns, f"app.kubernetes.io/component=agent,"
                                    f"app.kubernetes.io/instance={release}")):
            for p in env.kube.pods(pns, sel):
                out.setdefault(p["spec"].get("nodeName"), []).append(
                    f"{pns}/{p['metadata']['name']}")
        return out

    def gpu_pod_named(name: str, scheduler: str | None, limits: dict) -> dict:
        return env.kube.create_pod(gpu_pod(ns, name, limits, group=group, scheduler=scheduler))

    def wait_scheduled_by(names: list[str], scheduler: str) -> dict[str, dict]:
        bound = env.wait_bound(ns, names, 30)
        for n, p in bound.items():
            check(p["spec"].get("schedulerName") == scheduler,
                  f"{n}: schedulerName {p['spec'].get('schedulerName')!r}, want {scheduler}")
            tessera_ann = (p["metadata"].get("annotations") or {}).get(gpu.VGPU_NODE)
            check(bool(tessera_ann) == (scheduler == SCHEDULER_NAME),
                  f"{n}: {gpu.VGPU_NODE}={tessera_ann!r} with scheduler {scheduler}")
        return bound

    def hami_owned(p: dict) -> tuple:
        ann = p["metadata"].get("annotations") or {}
        return (p["spec"].get("nodeName"), p["spec"].get("schedulerName"),
                tuple(sorted((k, v) for k, v in ann.items() if k in (
                    gpu.VGPU_NODE, gpu.TO_ALLOCATE, gpu.ALLOCATED, gpu.MIG_ALLOCATIONS))))

    hami_path = f"/apis/apps/v1/namespaces/{hami_ns}/daemonsets/hami-device-plugin"
    agent_path = f"/apis/apps/v1/namespaces/{agent_ns}/daemonsets/{agent_sa}"
    admitted: dict[tuple[str, str], tuple] = {}
    try:
        r = subprocess.run([helm_bin, "--kubeconfig", c.kubeconfigs["admin"], "install", "hami",
                            os.path.join(env.repo, HAMI_STANDIN), "-n", hami_ns, "-f",
                            os.path.join(env.repo, HAMI_VALUES),
                            "--set", "scheduler.admissionWebhook.customURL.enabled=true",
                            "--set", f"scheduler.admissionWebhook.customURL.port={hook.port}",
                            "--set", "scheduler.admissionWebhook.customURL.path=/webhook",
                            "--set", f"scheduler.admissionWebhook.e2eCaBundle={ca_b64}"],
                           capture_output=True, text=True, timeout=60, env=shell_env)
        check(r.returncode == 0, f"helm install of HAMi's stand-in failed:\n{r.stdout}{r.stderr}")
        stand.settle()
        check(sorted(plugin_pods()) == [node, other], f"HAMi's device plugin pods: "
                                                       f"{plugin_pods()} {stand.errors[-3:]}")
        gpu_pod_named("hami-0", None, {"nvidia.com/gpu": 1})
        for p in wait_scheduled_by(["hami-0"], "hami-scheduler").values():
            admitted[(ns, "hami-0")] = hami_owned(p)
        say("HAMi (stand-in) runs: a device plugin pod on each gpu=on node, a pod that names no "
            "scheduler gets hami-scheduler from its webhook and is bound")

        # 1. Side by side.
        run_step("install")
        hami_ds, agent_ds = env.kube.get(hami_path), env.kube.get(agent_path)
        sel_h = hami_ds["spec"]["template"]["spec"].get("nodeSelector")
        sel_a = agent_ds["spec"]["template"]["spec"].get("nodeSelector")
        check(sel_h == {"gpu": "on"} and sel_a == {"tessera.io/agent": "true"},
              f"node selectors: HAMi's {sel_h}, tessera's agent {sel_a}")
        pods = plugin_pods()
        check(sorted(pods) == [node, other] and all(len(v) == 1 for v in pods.values()),
              f"device plugin pods after the install: {pods}")
        r = run_step("check-beside")
        check("hami-device-plugin" in r.stdout and agent_sa in r.stdout and
              node not in r.stdout and other not in r.stdout and
              r.stdout.find("hami-webhook") < r.stdout.find(f"{release}-webhook"),
              f"check-beside output:\n{r.stdout}")
        names = sorted(w["metadata"]["name"] for w in env.kube.get(
            "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations")["items"])
        check(names.index("hami-webhook") < names.index(f"{release}-webhook"),
              f"webhook order {names}")
        gpu_pod_named("hami-1", None, {"nvidia.com/gpu": 1})
        gpu_pod_named("tessera-1", SCHEDULER_NAME, {"nvidia.com/gpu": 1,
                                                    "nvidia.com/gpumem": 2000})
        bound = {**wait_scheduled_by(["hami-1"], "hami-scheduler"),
                 **wait_scheduled_by(["tessera-1"], SCHEDULER_NAME)}
        for n, p in bound.items():
            admitted[(ns, n)] = hami_owned(p)
        check("hami-1" in hook.mutated and "tessera-1" not in hook.mutated,
              f"HAMi's webhook mutated {hook.mutated}")
        say(f"beside HAMi: node selectors {sel_h} / {sel_a}, one device plugin per node, "
            f"hami-webhook before {release}-webhook: a pod naming no scheduler stays HAMi's, one "
            "naming tessera-scheduler is tessera's")

        # 2. Scheduler.
        run_step("scheduler")
        check(not env.kube.exists("/apis/admissionregistration.k8s.io/v1/"
                                  "mutatingwebhookconfigurations/hami-webhook"),
              "HAMi's webhook left after step 2")
        check((hami_ns, "hami-scheduler") not in stand.running, "HAMi's scheduler still runs")
        gpu_pod_named("switch-1", None, {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 2000})
        for n, p in wait_scheduled_by(["switch-1"], SCHEDULER_NAME).items():
            admitted[(ns, n)] = hami_owned(p)
        say("step 2: HAMi's webhook off, its scheduler at 0 replicas; a pod naming no scheduler "
            "is tessera's")

        # 3. Node agent: node moves, the other stays HAMi's.
        hami_reg = env.kube.get(f"/api/v1/nodes/{node}")["metadata"]["annotations"][gpu.REGISTER]
        run_step("move-node-drain")
        run_step("move-node")
        pods = plugin_pods()
        check(pods.get(node, [""])[0].startswith(f"{agent_ns}/") and len(pods[node]) == 1 and
              pods.get(other, [""])[0].startswith(f"{hami_ns}/") and len(pods[other]) == 1,
              f"device plugin pods after the move: {pods}")
        n_obj = env.kube.get(f"/api/v1/nodes/{node}")
        labels = n_obj["metadata"]["labels"]
        check("gpu" not in labels and labels.get("tessera.io/agent") == "true" and
              not n_obj["spec"].get("unschedulable"), f"{node}: labels {labels}, "
                                                      f"spec {n_obj['spec']}")
        reg = n_obj["metadata"]["annotations"][gpu.REGISTER]
        check(T4_UUID in reg, f"{node}'s registration: {reg[:300]}")
        # HAMi's device plugin leaves its registration behind, and the agent's for the same GPU
        # is the same text, so the agent had nothing to write. Removed, the agent restores it
        # (with its pod-bound token, through the chart's admission policies) and counts it.
        env.kube.merge_patch(f"/api/v1/nodes/{node}",
                             {"metadata": {"annotations": {gpu.REGISTER: None}}})
        check(len(stand.agents) == 1, f"agents running: {len(stand.agents)}")
        agent_proc, agent_port = next(iter(stand.agents.values()))
        try:
            reg = wait_until(lambda: env.kube.get(f"/api/v1/nodes/{node}")["metadata"][
                "annotations"].get(gpu.REGISTER), 10, 0.2, f"the agent to register {node} again")
        except TimeoutError as e:
            raise Fail(f"{e}; the agent's log:\n{agent_proc.log_tail(6)}") from None
        check(T4_UUID in reg, f"{node}'s registration by the agent: {reg[:300]}")
        status, text = agent_http(agent_port, "/metrics", c.reader_token)
        patches = [float(ln.split()[1]) for ln in text.splitlines()
                   if ln.startswith("tessera_agent_registration_patches_total ")]
        check(status == 200 and patches and patches[0] >= 1,
              f"agent /metrics: HTTP {status}, registration patches {patches}")
        r = run_step("try-node")
        check(f"{SCHEDULER_NAME} {T4_UUID}," in r.stdout, f"try-node output:\n{r.stdout}")
        try_pod = env.kube.pod("default", "gpu-try")
        devs = gpu.decode_pod_devices(try_pod["metadata"]["annotations"][gpu.ALLOCATED]
                                      if gpu.ALLOCATED in try_pod["metadata"]["annotations"]
                                      else try_pod["metadata"]["annotations"][gpu.TO_ALLOCATE])
        check(try_pod["spec"]["nodeName"] == node and
              try_pod["spec"].get("schedulerName") == SCHEDULER_NAME and
              [d.uuid for c_ in devs for d in c_] == [T4_UUID], f"gpu-try: {describe(try_pod)}")
        admitted[("default", "gpu-try")] = hami_owned(try_pod)
        say(f"step 3: {node} has tessera's agent only (its registration, through the chart's "
            f"policies), {other} HAMi's plugin only; gpu-try bound by tessera to {node} on "
            f"{T4_UUID}")

        # 4. Placement: HAMi's policies, carried over by migrate-values, dropped.
        dep_path = f"/apis/apps/v1/namespaces/tessera-walk/deployments/{release}"
        args = env.kube.get(dep_path)["spec"]["template"]["spec"]["containers"][1]["args"]
        check("--node-scheduler-policy=binpack" in args and
              "--gpu-scheduler-policy=spread" in args, f"tessera's args after the install: {args}")
        service_standin(undo=True)
        run_step("placement", after=lambda: standin_paused.__setitem__(0, False))
        args = env.kube.get(dep_path)["spec"]["template"]["spec"]["containers"][1]["args"]
        check(not [a for a in args if "scheduler-policy" in a], f"args after step 4: {args}")
        check("url" in env.kube.get(webhook_path)["webhooks"][0]["clientConfig"],
              "the Service stand-in is not back after the upgrade")
        say("step 4: HAMi's binpack/spread carried over by migrate-values, then dropped")

        # Rolling back.
        run_step("rollback-scheduler")
        check(env.kube.exists("/apis/admissionregistration.k8s.io/v1/"
                              "mutatingwebhookconfigurations/hami-webhook"),
              "HAMi's webhook not back")
        check((hami_ns, "hami-scheduler") in stand.running, "HAMi's scheduler not back")
        run_step("rollback-node")
        pods = plugin_pods()
        check(sorted(pods) == [node, other] and
              all(len(v) == 1 and v[0].startswith(f"{hami_ns}/") for v in pods.values()),
              f"device plugin pods after the rollback: {pods}")
        n_obj = env.kube.get(f"/api/v1/nodes/{node}")
        check(n_obj["metadata"]["labels"].get("gpu") == "on" and
              "tessera.io/agent" not in n_obj["metadata"]["labels"] and
              n_obj["metadata"]["annotations"][gpu.REGISTER] == hami_reg,
              f"{node} after the rollback: {n_obj['metadata']}")
        run_step("rollback-uninstall")
        vap = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
        for path in (webhook_path, agent_path,
                     dep_path, f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{release}",
                     f"{vap}/{release}-agent-own-node"):
            check(not env.kube.exists(path), f"{path} left after the rollback")
        gpu_pod_named("hami-2", None, {"nvidia.com/gpu": 1})
        wait_scheduled_by(["hami-2"], "hami-scheduler")
        for (pns, pname), before in admitted.items():
            check(hami_owned(env.kube.pod(pns, pname)) == before,
                  f"{pns}/{pname} changed: {before} -> {hami_owned(env.kube.pod(pns, pname))}")
        check(stand.max_plugins_per_node == 1, f"{stand.max_plugins_per_node} device plugin "
                                               f"pods on one node ({stand.max_plugins_at})")
        say(f"rolled back: {node} with HAMi's plugin and registration, HAMi's webhook and "
            f"scheduler back (hami-2 is HAMi's), tessera's release gone; {len(admitted)} pods "
            "admitted on the way unchanged; never two device plugins on a node")
    finally:
        stand.stop()
        for cmd in (["uninstall", release, "-n", "tessera-walk"],
                    ["uninstall", "hami", "-n", hami_ns]):
            subprocess.run([helm_bin, "--kubeconfig", c.kubeconfigs["admin"], *cmd],
                           capture_output=True, text=True, timeout=60, env=shell_env)
        for pns, sel in ((hami_ns, "app.kubernetes.io/component=hami-device-plugin"),
                         (agent_ns, "app.kubernetes.io/component=agent")):
            for p in env.kube.pods(pns, sel):
                env.kube.delete_pod(pns, p["metadata"]["name"])
        env.kube.delete_pod("default", "gpu-try")
        if made_rc:
            env.kube.delete(rc_path, grace0=False)
        hook.close()


@scenario("b", "sharing node: a fitting pod binds (annotations, /metrics); gpu: 2 on a "
               "one-GPU node -> NodeInsufficientDevice, unresolvable by preemption", 60)
def s_insufficient_device(env: Env, ns: str, group: str):
    env.require_main()
    uuid = "GPU-b0000000-0000-0000-0000-000000000001"
    env.cluster.create_node(f"{group}-n1", [gpu.sharing_gpu(uuid, 0)], group)
    env.kube.create_pod(gpu_pod(ns, "fits", {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1000,
                                             "nvidia.com/gpucores": 30}, group=group))
    bound = env.wait_bound(ns, ["fits"], 30)
    problems, use = gpu.check_assignments(list(bound.values()), env.node_gpus(group))
    check(not problems, "; ".join(problems))
    check(use[uuid].mem == 1000 and use[uuid].cores == 30,
          f"fits: expected 1000 MiB / 30 cores on {uuid}, got {use.get(uuid)}")
    say(f"fits -> {bound['fits']['spec']['nodeName']}, "
        f"{bound['fits']['metadata']['annotations'][gpu.ALLOCATED]}")
    # Operators watch the same numbers as Prometheus metrics (HAMi's names and labels).
    want = {"hami_gpu_memory_allocated_bytes": 1000 * 2**20,
            "hami_gpu_core_allocated_ratio": 30, "hami_gpu_shared_count": 1}
    got: dict = {}

    def metrics_agree():
        nonlocal got
        got = {n: env.gpu_metric(env.main, n, uuid) for n in want}
        return got == want
    try:
        wait_until(metrics_agree, 10, 0.5, "/metrics to show the fitting pod")
    except TimeoutError:
        raise Fail(f"/metrics for {uuid}: {got}, want {want}") from None
    env.kube.create_pod(gpu_pod(ns, "two-gpus", {"nvidia.com/gpu": 2, "nvidia.com/gpumem": 1000},
                                group=group))
    msg = env.wait_unschedulable(ns, "two-gpus", 30, "NodeInsufficientDevice")
    say(f"two-gpus: {msg}")
    check("NodeInsufficientDevice" in msg, f"message lacks NodeInsufficientDevice: {msg!r}")
    # No eviction gives a one-GPU node a second GPU: the extender says so
    # (FailedAndUnresolvableNodes), and kube-scheduler does not look for victims there.
    check("Preemption is not helpful" in msg and "No preemption victims" not in msg,
          f"preemption should be ruled out on {group}-n1: {msg!r}")


@scenario("a", "MIG RTX PRO 6000: two gpu:2 pods get 4 distinct 1g.24gb placements; a third "
               "waits with CardInsufficientMemory and binds after a delete", 90)
def s_mig(env: Env, ns: str, group: str):
    env.require_main()
    uuid = "GPU-30512c46-708b-f374-5698-ee24be6cd626"
    dev = gpu.mig_gpu(env.repo, uuid, "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                      ["1g.24gb", "2g.48gb", "4g.96gb"])
    env.cluster.create_node(f"{group}-n1", [dev], group)
    mig = {"nvidia.com/vgpu-mode": "mig"}
    two = {"nvidia.com/gpu": 2, "nvidia.com/gpumem": 8000}
    for name in ("p1", "p2"):
        env.kube.create_pod(gpu_pod(ns, name, two, group=group, annotations=mig))
    bound = env.wait_bound(ns, ["p1", "p2"], 40)
    node_gpus = env.node_gpus(group)
    problems, use = gpu.check_assignments(list(bound.values()), node_gpus)
    check(not problems, "; ".join(problems))
    placements = sorted(p[:2] for p in use[uuid].placements)
    say(f"p1+p2 placements (start,size): {placements}")
    check(placements == [(0, 3), (3, 3), (6, 3), (9, 3)],
          f"expected the four 1g.24gb placements, got {placements}")
    for name, pod in bound.items():
        migs = gpu.decode_mig(pod["metadata"]["annotations"][gpu.MIG_ALLOCATIONS])
        check(len(migs) == 2 and all(m["profile"] == "1g.24gb" for m in migs),
              f"{name}: expected two 1g.24gb allocations, got {migs}")
        devs = gpu.decode_pod_devices(pod["metadata"]["annotations"][gpu.ALLOCATED])
        check([(d.mem, d.cores) for d in devs[0]] == [(24192, 25), (24192, 25)],
              f"{name}: expected profile memory/cores 24192/25 in {gpu.ALLOCATED}, got {devs}")
    env.kube.create_pod(gpu_pod(ns, "p3", {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 8000},
                                group=group, annotations=mig))
    msg = env.wait_unschedulable(ns, "p3", 30, "CardInsufficientMemory")
    say(f"p3: {msg}")
    check("CardInsufficientMemory" in msg, f"message lacks CardInsufficientMemory: {msg!r}")
    p1_starts = {m["placement"]["start"] for m in gpu.decode_mig(
        bound["p1"]["metadata"]["annotations"][gpu.MIG_ALLOCATIONS])}
    env.kube.delete_pod(ns, "p1")
    final = env.wait_bound(ns, ["p2", "p3"], 40)
    problems, use = gpu.check_assignments(list(final.values()), node_gpus)
    check(not problems, "; ".join(problems))
    p3_start = gpu.decode_mig(final["p3"]["metadata"]["annotations"][gpu.MIG_ALLOCATIONS])[0][
        "placement"]["start"]
    say(f"p3 -> start {p3_start} (p1 had {sorted(p1_starts)})")
    check(p3_start in p1_starts, f"p3 got start {p3_start}, not one of p1's {p1_starts}")


@scenario("x", "GPU-aware preemption (/preempt): on a MIG RTX PRO 6000 full of low-priority "
               "1g.24gb pods, a high-priority pod that needs a 2g.48gb evicts exactly the two "
               "pods holding one 2g placement's slices (kube-scheduler alone would evict one, "
               "by CPU), not the pair with a PodDisruptionBudget, and is bound there", 120)
def s_preempt(env: Env, ns: str, group: str):
    main = env.require_main()
    uuid = "GPU-7e1a3c55-90b2-4c1d-9e8f-0a0b0c0d0e01"
    dev = gpu.mig_gpu(env.repo, uuid, "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                      ["1g.24gb", "2g.48gb", "4g.96gb"])
    node = f"{group}-n1"
    env.cluster.create_node(node, [dev], group)
    # kube-scheduler looks for victims only where its own plugins need one (Kubernetes 1.36):
    # 2 CPUs, each pod asks half of one, so the preemptor needs one pod gone by CPU, and two
    # adjacent 1g.24gb instances gone by MIG slices, which only tessera knows.
    env.kube.merge_patch(f"/api/v1/nodes/{node}/status",
                         {"status": {"capacity": {"cpu": "2"}, "allocatable": {"cpu": "2"}}})
    classes = "/apis/scheduling.k8s.io/v1/priorityclasses"
    low, high = f"e2e-{group}-low", f"e2e-{group}-high"
    for name, value in ((low, 100), (high, 1000)):
        env.kube.create(classes, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                  "metadata": {"name": name}, "value": value})
    mig = {"nvidia.com/vgpu-mode": "mig"}

    def pod(name: str, mem: int, priority_class: str) -> dict:
        p = gpu_pod(ns, name, {"nvidia.com/gpu": 1, "nvidia.com/gpumem": mem, "cpu": "500m"},
                    group=group, annotations=mig)
        p["spec"]["priorityClassName"] = priority_class
        return p

    try:
        holders = [f"low-{i}" for i in range(4)]
        for name in holders:
            env.kube.create_pod(pod(name, 8000, low))
        bound = env.wait_bound(ns, holders, 40)
        start_of = {}
        for name, p in bound.items():
            migs = gpu.decode_mig(p["metadata"]["annotations"][gpu.MIG_ALLOCATIONS])
            start_of[name] = migs[0]["placement"]["start"]
        say(f"low-priority 1g.24gb pods by start: {sorted(start_of.items(), key=lambda x: x[1])}")
        check(sorted(start_of.values()) == [0, 3, 6, 9], f"expected starts 0,3,6,9: {start_of}")
        # A PodDisruptionBudget protects low-0 (no disruption controller runs here, so it allows
        # none): the pair of pods on the other 2g.48gb placement must go instead.
        spared_block = 0 if start_of["low-0"] < 6 else 6
        env.kube.merge_patch(f"/api/v1/namespaces/{ns}/pods/low-0",
                             {"metadata": {"labels": {"e2e-protected": "1"}}})
        env.kube.create(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
                        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                         "metadata": {"name": "protect-low-0", "namespace": ns},
                         "spec": {"minAvailable": 1,
                                  "selector": {"matchLabels": {"e2e-protected": "1"}}}})
        time.sleep(2)  # tessera's PDB and pod informers
        status, before = main.get_text("/metrics")
        env.kube.create_pod(pod("high", 40000, high))
        final = env.wait_bound(ns, ["high"], 60)
        migs = gpu.decode_mig(final["high"]["metadata"]["annotations"][gpu.MIG_ALLOCATIONS])
        got = (migs[0]["profile"], migs[0]["placement"]["start"])
        say(f"high -> {got[0]} at start {got[1]}")
        want_start = 6 - spared_block
        check(got == ("2g.48gb", want_start),
              f"high got {got}, want 2g.48gb at {want_start} (low-0, protected, is at "
              f"{start_of['low-0']})")
        freed = {n for n, s in start_of.items() if got[1] <= s < got[1] + 6}
        left = {p["metadata"]["name"] for p in env.kube.pods(ns)} - {"high"}
        say(f"evicted: {sorted(set(holders) - left)}; left: {sorted(left)}")
        check(left == set(holders) - freed,
              f"the victims should be exactly {sorted(freed)} (the pods on the slices high took); "
              f"left running: {sorted(left)}")
        status, after = main.get_text("/metrics")
        calls = [ln for ln in after.splitlines()
                 if ln.startswith("tessera_preempt_requests_total") and ln not in before]
        check(calls, "tessera's /preempt was not called (tessera_preempt_requests_total)")
        say(f"kube-scheduler asked tessera's /preempt: {calls}")
    finally:
        env.kube.delete_all_pods(ns)
        env.kube.delete(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/protect-low-0",
                        grace0=False)
        for name in (low, high):
            env.kube.delete(f"{classes}/{name}", grace0=False)


@scenario("z", "defragmentation (/defrag, tessera defrag --execute, serve --defrag-interval) "
               "with a real kube-controller-manager: a whole-GPU MIG pod that no GPU can take "
               "is admitted after the planned eviction of a Deployment's 1g.24gb pod, whose "
               "ReplicaSet recreates it and tessera places it on the other node; the bare pod "
               "stays; then a move that only raises placeability, carried out by a replica with "
               "--defrag-raise-placeability, its replacement steered", 240)
def s_defrag(env: Env, ns: str, group: str):
    main = env.require_main()
    c = env.cluster
    c.start_controller_manager()
    mig = {"nvidia.com/vgpu-mode": "mig"}
    profiles = ["1g.24gb", "2g.48gb", "4g.96gb"]
    n1, n2 = f"{group}-n1", f"{group}-n2"

    def mig_node(name: str, i: int) -> None:
        dev = gpu.mig_gpu(env.repo, f"GPU-7e1a3c55-90b2-4c1d-9e8f-0a0b0c0d0f0{i}",
                          "NVIDIA RTX PRO 6000 Blackwell Server Edition", profiles)
        c.create_node(name, [dev], group)

    def on(node: str, p: dict) -> dict:
        p["spec"]["nodeSelector"]["kubernetes.io/hostname"] = node
        return p

    def start_of(p: dict) -> int:
        return gpu.decode_mig(p["metadata"]["annotations"][gpu.MIG_ALLOCATIONS])[0][
            "placement"]["start"]

    def bare_and_whole(bare: str, node: str, whole: str) -> None:
        """A 1g.24gb pod no controller owns, bound on `node`, then a 4g.96gb pod left pending."""
        env.kube.create_pod(on(node, gpu_pod(ns, bare, {"nvidia.com/gpu": 1,
                                                        "nvidia.com/gpumem": 8000},
                                             group=group, annotations=mig)))
        env.wait_bound(ns, [bare], 40)
        env.kube.create_pod(gpu_pod(ns, whole, {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 60000},
                                    group=group, annotations=mig))
        env.wait_unschedulable(ns, whole, 40, "")

    deployments = f"/apis/apps/v1/namespaces/{ns}/deployments"
    try:
        # Node n1 alone at first: a bare pod, then the Deployment's pod beside it; the bare pod
        # leaves, so the Deployment's pod is the only thing between a whole-GPU pod and n1's GPU.
        mig_node(n1, 1)
        env.kube.create_pod(on(n1, gpu_pod(ns, "filler", {"nvidia.com/gpu": 1,
                                                          "nvidia.com/gpumem": 8000},
                                           group=group, annotations=mig)))
        env.wait_bound(ns, ["filler"], 40)
        template = gpu_pod(ns, "unused", {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 8000},
                           group=group, annotations=mig, labels={"app": "worker"})
        env.kube.create(deployments, {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "worker", "namespace": ns},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "worker"}},
                     "template": {"metadata": {"labels": template["metadata"]["labels"],
                                               "annotations": mig},
                                  "spec": template["spec"]}}})

        def worker_pods() -> list[dict]:
            return [p for p in env.kube.pods(ns)
                    if p["metadata"].get("labels", {}).get("app") == "worker"
                    and not p["metadata"].get("deletionTimestamp")]
        first = wait_until(lambda: [p for p in worker_pods() if p["spec"].get("nodeName")],
                           60, 0.5, "the Deployment's pod bound")[0]
        worker = first["metadata"]["name"]
        check(first["spec"]["nodeName"] == n1, f"{worker} went to {first['spec']['nodeName']}")
        say(f"Deployment pod {worker} on {n1} at start {start_of(first)}")
        env.kube.delete(f"/api/v1/namespaces/{ns}/pods/filler")
        mig_node(n2, 2)
        bare_and_whole("bare", n2, "whole")

        status, body = main.get_text("/defrag?format=json")
        check(status == 200, f"/defrag: HTTP {status} {body[:300]}")
        plan = json.loads(body)
        say(f"/defrag: mode {plan['mode']}, steps "
            f"{[(s['pod'], s['node'], s.get('replacedNode')) for s in plan['steps']]}")
        check(plan["mode"] == "admit-pending", f"/defrag mode {plan['mode']}: {body[:400]}")
        check([s["pod"] for s in plan["steps"]] == [f"{ns}/{worker}"],
              f"/defrag should evict exactly {ns}/{worker}: {plan['steps']}")
        check(plan["steps"][0]["replacedNode"] == n2, f"re-placed on {plan['steps'][0]}")
        check(f"{ns}/bare" in plan["unmovable"], f"bare pod not listed unmovable: {plan}")
        _, metrics = main.get_text("/metrics")
        check('tessera_defrag_plans_total{mode="admit-pending"}' in metrics,
              "tessera_defrag_plans_total{mode=admit-pending} missing")
        frag_before = metric_value(metrics, "tessera_cluster_mig_fragmentation_ratio")

        r = subprocess.run([c.tessera_bin, "defrag", "--kubeconfig", c.kubeconfigs["admin"],
                            "--execute", "--step-timeout", "60"],
                           capture_output=True, text=True, timeout=90)
        say("tessera defrag --execute:\n    " + (r.stdout + r.stderr).strip().replace(
            "\n", "\n    "))
        check(r.returncode == 0, f"tessera defrag --execute exited {r.returncode}")
        got = env.wait_bound(ns, ["whole"], 30)["whole"]
        migs = gpu.decode_mig(got["metadata"]["annotations"][gpu.MIG_ALLOCATIONS])
        check(got["spec"]["nodeName"] == n1 and migs[0]["profile"] == "4g.96gb",
              f"whole: {describe(got)}")
        now = worker_pods()
        check(len(now) == 1 and now[0]["metadata"]["name"] != worker
              and now[0]["spec"].get("nodeName") == n2,
              f"the Deployment's pod should be recreated on {n2}: "
              f"{[describe(p) for p in now]}")
        check(env.kube.pod(ns, "bare")["spec"]["nodeName"] == n2, "the bare pod moved")
        events = env.kube.get(f"/api/v1/namespaces/{ns}/events",
                              query={"fieldSelector": "reason=TesseraDefragEvicted"})["items"]
        check([e["involvedObject"]["name"] for e in events] == [worker],
              f"one TesseraDefragEvicted event on {worker}: {events}")
        _, metrics = main.get_text("/metrics")
        frag_after = metric_value(metrics, "tessera_cluster_mig_fragmentation_ratio")
        say(f"MIG fragmentation {frag_before} -> {frag_after}")
        check(frag_before is not None and frag_after is not None and frag_after < frag_before,
              f"the cluster's MIG fragmentation should drop: {frag_before} -> {frag_after}")
        # A second run finds nothing to do and the hourly count includes the first.
        r = subprocess.run([c.tessera_bin, "defrag", "--kubeconfig", c.kubeconfigs["admin"],
                            "--execute", "--max-evictions-per-hour", "1"],
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 0 and "leave 0 for this plan" in r.stdout,
              f"a second run within the hour: {r.stdout} {r.stderr}")

        # The controller mode: the same fragmentation the other way round (a bare pod on n1,
        # the Deployment's pod on n2, a whole-GPU pod pending), left to a replica with
        # --defrag-interval.
        replacement = now[0]["metadata"]["name"]
        for name in ("whole", "bare"):
            env.kube.delete(f"/api/v1/namespaces/{ns}/pods/{name}")
        bare_and_whole("bare2", n1, "whole2")
        # The chart's RBAC for the controller (scheduler.defragInterval) on tessera's account.
        rendered = subprocess.run(
            [os.path.join(c.bins, "helm"), "template", "tessera",
             os.path.join(env.repo, "deploy/helm/tessera"), "--namespace", NAMESPACE,
             "--kube-version", "v1.36.3", "-f",
             os.path.join(env.repo, "deploy/helm/plain-manifests.values.yaml"),
             "--set", "scheduler.defragInterval=1s", "--show-only", "templates/10-rbac.yaml"],
            capture_output=True, text=True, timeout=60, check=True).stdout
        docs = [d for d in rendered.split("\n---\n") if "name: tessera-defrag" in d]
        check(len(docs) == 2, f"the chart's defrag ClusterRole and binding: {len(docs)} found")
        rbac_file = os.path.join(c.work, "defrag-rbac.yaml")
        with open(rbac_file, "w", encoding="utf-8") as f:
            f.write("\n---\n".join(docs))
        c.kubectl("apply", "-f", rbac_file)
        defragger = c.new_tessera("tessera-defrag", ["--defrag-interval", "1s"]).start()
        try:
            defragger.wait_ready(60)
            got = env.wait_bound(ns, ["whole2"], 60)["whole2"]
            check(got["spec"]["nodeName"] == n2, f"whole2: {describe(got)}")
            wait_until(lambda: [p for p in worker_pods() if p["spec"].get("nodeName") == n1
                                and p["metadata"]["name"] != replacement],
                       30, 0.5, f"the Deployment's pod recreated on {n1}")
            # The controller counts the run once its last poll has seen the step delivered.
            metrics = ""

            def counted() -> bool:
                nonlocal metrics
                metrics = defragger.get_text("/metrics")[1]
                return 'tessera_defrag_executions_total{result="delivered"} 1' in metrics
            try:
                wait_until(counted, 10, 0.5, "the controller's run counted")
            finally:
                say("controller: " + ", ".join(
                    ln for ln in metrics.splitlines() if ln.startswith("tessera_defrag_e")
                    or ln.startswith("tessera_defrag_admitted")))
            check("tessera_defrag_evictions_total 1" in metrics
                  and "tessera_defrag_admitted_pods_total 1" in metrics,
                  "the controller's metrics should count one eviction and one pod admitted")
        finally:
            defragger.stop()

        # Mode (b): nothing pending, the Deployment's pod alone on n1 and a bare pod on n2.
        # Moving it to n2 leaves n1's GPU whole for the 4g.96gb demand seen; carried out, the
        # evicted pod is marked with n2 and its replacement placed there (the move steered).
        on_n1 = [p for p in worker_pods() if p["spec"].get("nodeName") == n1]
        check(len(on_n1) == 1, f"one Deployment pod on {n1}: {[describe(p) for p in on_n1]}")
        mover = on_n1[0]["metadata"]["name"]
        for name in ("whole2", "bare2"):
            env.kube.delete(f"/api/v1/namespaces/{ns}/pods/{name}")
        env.kube.create_pod(on(n2, gpu_pod(ns, "bare3", {"nvidia.com/gpu": 1,
                                                         "nvidia.com/gpumem": 8000},
                                           group=group, annotations=mig)))
        env.wait_bound(ns, ["bare3"], 40)
        status, body = main.get_text("/defrag?format=json")
        plan = json.loads(body)
        say(f"/defrag with nothing pending: mode {plan['mode']}, steps "
            f"{[(s['pod'], s['node'], s.get('replacedNode')) for s in plan['steps']]}")
        check(plan["mode"] == "raise-placeability"
              and [(s["pod"], s["replacedNode"]) for s in plan["steps"]] == [(f"{ns}/{mover}", n2)],
              f"/defrag should move {ns}/{mover} to {n2}: {body[:600]}")
        steered_before = metric_value(main.get_text("/metrics")[1],
                                      "tessera_defrag_steered_pods_total") or 0
        # Carried out by a replica with --defrag-raise-placeability; the hour's budget (two
        # evictions so far) leaves it exactly one.
        mover_replica = c.new_tessera("tessera-defrag-b", [
            "--defrag-interval", "1s", "--defrag-raise-placeability",
            "--defrag-max-evictions-per-hour", "3"]).start()
        try:
            mover_replica.wait_ready(60)
            moved = wait_until(lambda: [p for p in worker_pods()
                                        if p["spec"].get("nodeName") == n2], 60, 0.5,
                               f"the Deployment's pod recreated on {n2}")
            check(moved[0]["metadata"]["name"] != mover, f"{mover} was not moved")
            metrics = ""

            def moved_counted() -> bool:
                nonlocal metrics
                metrics = mover_replica.get_text("/metrics")[1]
                return 'tessera_defrag_executions_total{result="delivered"} 1' in metrics
            wait_until(moved_counted, 10, 0.5, "the controller's move counted")
            check("tessera_defrag_evictions_total 1" in metrics
                  and "tessera_defrag_admitted_pods_total 0" in metrics,
                  "the controller's metrics should count one eviction and no pod admitted")
        finally:
            mover_replica.stop()
        check(len(worker_pods()) == 1, f"one Deployment pod: {[describe(p) for p in worker_pods()]}")
        steered = metric_value(main.get_text("/metrics")[1], "tessera_defrag_steered_pods_total")
        say(f"tessera_defrag_steered_pods_total {steered_before} -> {steered}")
        check(steered is not None and steered == steered_before + 1,
              f"the replacement should be steered by the move: {steered_before} -> {steered}")
    finally:
        env.kube.delete(f"{deployments}/worker", grace0=False)
        for rs in env.kube.get(f"/apis/apps/v1/namespaces/{ns}/replicasets")["items"]:
            env.kube.delete(f"/apis/apps/v1/namespaces/{ns}/replicasets/"
                            f"{rs['metadata']['name']}", grace0=False)
        c.stop_controller_manager()
        env.kube.delete_all_pods(ns)
        for kind in ("clusterrolebindings", "clusterroles"):
            env.kube.delete(f"/apis/rbac.authorization.k8s.io/v1/{kind}/tessera-defrag",
                            grace0=False)


def metric_value(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return None


def sharing_fleet(env: Env, group: str, nodes: int, gpus_per_node: int) -> None:
    for i in range(nodes):
        devs = [gpu.sharing_gpu(f"GPU-{group}-{i:02d}-{j}", j, devmem=24576, count=10)
                for j in range(gpus_per_node)]
        env.cluster.create_node(f"{group}-n{i:02d}", devs, group)


def mixed_pods(ns: str, group: str, count: int, seed: int) -> list[dict]:
    rnd = random.Random(seed)
    pods = []
    for i in range(count):
        limits = {"nvidia.com/gpu": 2 if rnd.random() < 0.1 else 1,
                  "nvidia.com/gpumem": rnd.choice([1000, 2000, 3000, 4000])}
        cores = rnd.choice([0, 5, 10, 20])
        if cores:
            limits["nvidia.com/gpucores"] = cores
        pods.append(gpu_pod(ns, f"p{i:03d}", limits, group=group))
    return pods


def create_concurrently(env: Env, pods: list[dict], workers: int = 16) -> None:
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        for f in [ex.submit(env.kube.create_pod, p) for p in pods]:
            f.result()


@scenario("c", "200 pods at once on 20 sharing nodes: all bound, nothing over-committed", 200)
def s_bulk(env: Env, ns: str, group: str):
    env.require_main()
    sharing_fleet(env, group, 20, 2)
    pods = mixed_pods(ns, group, 200, seed=7)
    t0 = time.monotonic()
    create_concurrently(env, pods)
    say(f"created 200 pods in {time.monotonic() - t0:.1f}s")
    bound = env.wait_bound(ns, [p["metadata"]["name"] for p in pods], 150)
    say(f"all 200 bound {time.monotonic() - t0:.1f}s after the first create")
    problems, use = gpu.check_assignments(list(bound.values()), env.node_gpus(group))
    check(not problems, f"{len(problems)} problems: " + "; ".join(problems[:10]))
    say(f"{len(use)} of 40 GPUs used; max memory {max(u.mem for u in use.values())} MiB, "
        f"max cores {max(u.cores for u in use.values())}, "
        f"max tasks {max(u.tasks for u in use.values())}")


@scenario("d", "kill -9 tessera three times while 120 pods are being scheduled (placement "
               "written in bind, the default), restart each time: all bound, nothing "
               "over-committed, bound pods keep their assignment", 240)
def s_crash(env: Env, ns: str, group: str):
    main = env.require_main()
    sharing_fleet(env, group, 10, 2)
    pods = mixed_pods(ns, group, 120, seed=11)
    names = [p["metadata"]["name"] for p in pods]
    errors: list[str] = []

    def creator():
        try:
            for i in range(0, len(pods), 6):
                create_concurrently(env, pods[i:i + 6], 6)
                time.sleep(0.1)
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))
    t = threading.Thread(target=creator, daemon=True)
    t.start()

    # Seeded moments: after that many pods are bound, and a fraction of a second more, so the
    # kills land between some pod's filter and its bind.
    rnd = random.Random(20261206)
    moments = sorted(rnd.sample(range(10, 90), 3))
    snapshot: dict = {}
    placed_at_bind = 0
    for threshold in moments:
        def some_bound():
            bound = [p for p in env.kube.pods(ns) if p["spec"].get("nodeName")]
            return bound if len(bound) >= threshold else None
        before = wait_until(some_bound, 90, 0.05, f"{threshold} pods bound before the kill")
        time.sleep(rnd.uniform(0.0, 0.25))
        _, metrics = main.get_text("/metrics")
        for ln in metrics.splitlines():
            if ln.startswith("tessera_binds_placed_at_bind_total "):
                placed_at_bind += int(float(ln.split()[1]))
        main.kill()
        say(f"killed tessera (kill -9) with {len(before)}+ pods bound")
        snapshot.update({p["metadata"]["name"]: (p["spec"]["nodeName"],
                                                 p["metadata"]["annotations"].get(gpu.ALLOCATED))
                         for p in env.kube.pods(ns) if p["spec"].get("nodeName")})
        time.sleep(1)
        main.start()
        main.wait_ready(60)
        say(f"tessera restarted and ready; {len(snapshot)} pods were bound at the kill")
    t.join(60)
    check(not errors, f"pod creation failed: {errors}")
    bound = env.wait_bound(ns, names, 150)
    _, metrics = main.get_text("/metrics")
    for ln in metrics.splitlines():
        if ln.startswith("tessera_binds_placed_at_bind_total "):
            placed_at_bind += int(float(ln.split()[1]))
    say(f"binds that placed their pod themselves after a restart: {placed_at_bind}")
    problems, _ = gpu.check_assignments(list(bound.values()), env.node_gpus(group))
    for name, (node, alloc) in snapshot.items():
        p = bound[name]
        now = (p["spec"]["nodeName"], p["metadata"]["annotations"].get(gpu.ALLOCATED))
        if now != (node, alloc):
            problems.append(f"{name}: assignment changed after restart: {(node, alloc)} -> {now}")
    check(not problems, f"{len(problems)} problems: " + "; ".join(problems[:10]))


@scenario("y", "a restart between filter and bind (placement written in bind): the bind places "
               "the pod on its node itself where it still fits (written with bind-phase, counted "
               "in tessera_binds_placed_at_bind_total) and is refused where another pod took the "
               "room since; nothing over-committed", 90)
def s_bind_after_restart(env: Env, ns: str, group: str):
    main = env.require_main()
    node = f"{group}-n1"
    env.cluster.create_node(node, [gpu.sharing_gpu(f"GPU-{group}-0", 0, devmem=24576)], group)
    # kube-scheduler never filters these pods (no node has their label), so the harness plays its
    # part: /filter, then the bind it would send, with tessera killed in between.
    def pod(name: str) -> dict:
        p = gpu_pod(ns, name, {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 12000}, group=None)
        p["spec"]["nodeSelector"] = {"tessera-e2e/group": f"{group}-nowhere"}
        return env.kube.create_pod(p)

    def filter_(p: dict) -> list:
        status, ans = main.post("/filter", {"Pod": p, "NodeNames": [node]})
        check(status == 200 and isinstance(ans, dict), f"/filter: HTTP {status} {ans}")
        return ans.get("NodeNames") or []

    def bind(p: dict) -> str:
        md = p["metadata"]
        status, ans = main.post("/bind", {"PodName": md["name"], "PodNamespace": ns,
                                          "PodUID": md["uid"], "Node": node})
        check(status == 200 and isinstance(ans, dict), f"/bind: HTTP {status} {ans}")
        return ans.get("Error") or ""

    def restart():
        main.kill()
        time.sleep(0.5)
        main.start()
        main.wait_ready(60)

    def placed_at_bind() -> int:
        _, metrics = main.get_text("/metrics")
        for ln in metrics.splitlines():
            if ln.startswith("tessera_binds_placed_at_bind_total "):
                return int(float(ln.split()[1]))
        return -1

    first = pod("first")
    time.sleep(1)  # tessera's pod informer
    check(filter_(first) == [node], "first was not offered the node")
    restart()
    err = bind(first)
    check(err == "", f"the bind after the restart was refused: {err}")
    p = env.kube.pod(ns, "first")
    ann = p["metadata"].get("annotations") or {}
    check(p["spec"].get("nodeName") == node, f"first is not bound to {node}: {p['spec']}")
    check(ann.get(gpu.ALLOCATED, "").startswith(f"GPU-{group}-0,NVIDIA,12000,"),
          f"first's placement was not written: {ann.get(gpu.ALLOCATED)!r}")
    check(ann.get(gpu.BIND_PHASE) == "allocating", f"bind-phase {ann.get(gpu.BIND_PHASE)!r}")
    check(placed_at_bind() == 1, "tessera_binds_placed_at_bind_total should be 1")
    say(f"first: filtered, tessera killed and restarted, bound by the bind: {ann[gpu.ALLOCATED]}")

    second, third = pod("second"), pod("third")
    time.sleep(1)
    check(filter_(second) == [node], "second was not offered the node")
    restart()
    # second's reservation died with the process: third's filter takes the room it had.
    check(filter_(third) == [node], "third was not offered the node after the restart")
    err = bind(second)
    check("no longer fits on node" in err,
          f"second's bind should be refused for want of room (third holds it): {err!r}")
    say(f"second's bind after the restart, its room taken by third: {err}")
    check(bind(third) == "", "third's bind was refused")
    time.sleep(1)
    bound = [q for q in env.kube.pods(ns) if q["spec"].get("nodeName")]
    names = sorted(q["metadata"]["name"] for q in bound)
    check(names == ["first", "third"], f"bound: {names}")
    problems, _ = gpu.check_assignments(bound, env.node_gpus(group))
    check(not problems, "; ".join(problems))


@scenario("e", "kube-apiserver restart (+ etcd compaction): tessera recovers its watches", 180)
def s_apiserver_restart(env: Env, ns: str, group: str):
    main = env.require_main()
    c = env.cluster
    uuid = f"GPU-{group}-0"
    env.cluster.create_node(f"{group}-n1", [gpu.sharing_gpu(uuid, 0)], group)
    env.kube.create_pod(gpu_pod(ns, "big-1", {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 20000},
                                group=group))
    env.wait_bound(ns, ["big-1"], 30)
    allocated = "hami_gpu_memory_allocated_bytes"
    wait_until(lambda: env.gpu_metric(main, allocated, uuid) == 20000 * 2**20, 10, 0.5,
               f"{allocated} of {uuid} to show big-1")
    c.stop_apiserver()
    rev = c.etcd_bump_and_compact()
    say(f"apiserver stopped; etcd compacted at revision {rev}")
    c.start_apiserver()
    say(f"apiserver restarted; tessera reports {env.gpu_metric(main, allocated, uuid)} "
        f"bytes on {uuid}")
    check(main.proc.running(), "tessera exited while the apiserver was down")
    # The deletion of big-1 is only visible to tessera through a re-established watch/list.
    env.kube.delete_pod(ns, "big-1")
    t0 = time.monotonic()
    try:
        wait_until(lambda: env.gpu_metric(main, allocated, uuid) == 0, 30, 0.5,
                   "tessera to release big-1's memory")
    except TimeoutError as e:
        raise Fail(f"{e}: {allocated} for {uuid} is still "
                   f"{env.gpu_metric(main, allocated, uuid)}") from None
    say(f"tessera saw the deletion {time.monotonic() - t0:.1f}s after it was made")
    names = ["big-2"] + [f"small-{i}" for i in range(4)]
    env.kube.create_pod(gpu_pod(ns, "big-2", {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 20000},
                                group=group))
    for n in names[1:]:
        env.kube.create_pod(gpu_pod(ns, n, {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1000},
                                    group=group))
    bound = env.wait_bound(ns, names, 120)
    problems, _ = gpu.check_assignments(list(bound.values()), env.node_gpus(group))
    check(not problems, "; ".join(problems))
    wait_until(lambda: main.status("/readyz") == 200, 30, 0.5, "tessera /readyz after restart")


@scenario("g", "mutating webhook: sets schedulerName, denies bad pods, skips ignored ones", 90)
def s_webhook(env: Env, ns: str, group: str):
    main = env.require_main()
    c = env.cluster
    ignored_ns = ns + "-ignored"
    env.kube.ensure_namespace(ignored_ns, {"hami.io/webhook": "ignore"})
    mwc = next(o for o in c.manifest_objects("40-webhook.yaml")
               if o["kind"] == "MutatingWebhookConfiguration")
    mwc["metadata"]["name"] = "tessera-e2e-webhook"
    for w in mwc["webhooks"]:
        w["clientConfig"] = {"url": f"https://127.0.0.1:{main.port}/webhook",
                             "caBundle": base64.b64encode(open(c.pki.ca.cert, "rb").read())
                             .decode()}
    path = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
    env.kube.create(path, mwc)
    try:
        gpu1 = {"nvidia.com/gpu": 1}
        # The apiserver picks the configuration up asynchronously: retry the first pod.
        attempt = [0]

        def mutated():
            attempt[0] += 1
            name = f"gpu-{attempt[0]}"
            p = env.kube.create_pod(gpu_pod(ns, name, gpu1, group="none", scheduler=None))
            if p["spec"]["schedulerName"] == SCHEDULER_NAME:
                return p
            env.kube.delete_pod(ns, name)
            return None
        try:
            p = wait_until(mutated, 20, 0.5, "webhook to set schedulerName")
        except TimeoutError as e:
            raise Fail(f"{e}; last pod kept schedulerName default-scheduler") from None
        say(f"{p['metadata']['name']}: schedulerName={p['spec']['schedulerName']}, limits="
            f"{p['spec']['containers'][0]['resources']['limits']}")

        def denied(pod: dict, needle: str) -> None:
            try:
                env.kube.create_pod(pod)
            except ApiError as e:
                msg = e.body.get("message", "") if isinstance(e.body, dict) else str(e.body)
                say(f"{pod['metadata']['name']}: denied, HTTP {e.status}: {msg}")
                check(needle in msg, f"denial message lacks {needle!r}: {msg!r}")
                return
            raise Fail(f"{pod['metadata']['name']} was admitted")
        denied(gpu_pod(ns, "pct-150", {"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 150},
                       group="none", scheduler=None), "gpumem-percentage")
        denied(gpu_pod(ns, "privileged", gpu1, group="none", scheduler=None, privileged=True),
               "privileged")

        def untouched(pod: dict, why: str) -> None:
            got = env.kube.create_pod(pod)
            want_limits = pod["spec"]["containers"][0]["resources"]["limits"]
            check(got["spec"]["schedulerName"] == "default-scheduler" and
                  got["spec"]["containers"][0]["resources"].get("limits", {}) == want_limits,
                  f"{why}: pod was mutated: schedulerName={got['spec']['schedulerName']} "
                  f"limits={got['spec']['containers'][0]['resources'].get('limits')}")
        untouched(gpu_pod(ignored_ns, "gpu", gpu1, group="none", scheduler=None),
                  "namespace labelled hami.io/webhook=ignore")
        untouched(gpu_pod(ns, "labelled", gpu1, group="none", scheduler=None,
                          labels={"hami.io/webhook": "ignore"}), "pod labelled ignore")
        untouched(gpu_pod(ns, "cpu-only", {"cpu": "100m"}, group="none", scheduler=None),
                  "pod without GPU resources")
        # v1beta1 AdmissionReview straight to the endpoint (the apiserver only sends v1 here).
        review = {"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview",
                  "request": {"uid": "e2e-v1beta1-uid", "kind": {"group": "", "version": "v1",
                                                                  "kind": "Pod"},
                              "resource": {"group": "", "version": "v1", "resource": "pods"},
                              "namespace": ns, "operation": "CREATE",
                              "object": gpu_pod(ns, "beta", gpu1, group="none",
                                                scheduler="default-scheduler")}}
        status, body = main.post("/webhook", review)
        check(status == 200 and isinstance(body, dict), f"v1beta1 review: HTTP {status} {body}")
        resp = body.get("response") or {}
        check(body.get("apiVersion") == "admission.k8s.io/v1beta1" and
              resp.get("uid") == "e2e-v1beta1-uid" and resp.get("allowed") is True,
              f"v1beta1 review answer: {body}")
        patch = base64.b64decode(resp.get("patch", "")).decode() if resp.get("patch") else ""
        check(SCHEDULER_NAME in patch, f"v1beta1 patch does not set schedulerName: {patch!r}")
    finally:
        env.kube.delete(f"{path}/tessera-e2e-webhook", grace0=False)
        env.kube.delete_all_pods(ignored_ns)


@scenario("i", "the pod as shipped in deploy/: kube-scheduler sidecar (leader) + tessera "
               "--leader-elect-mode=follow with the Deployment's args, as the ServiceAccount", 120)
def s_shipped_pod(env: Env, ns: str, group: str):
    main = env.require_main()
    c = env.cluster
    dep = c.shipped_deployment()
    containers = {k["name"]: k for k in dep["spec"]["template"]["spec"]["containers"]}
    check(set(containers) == {"kube-scheduler", "tessera"}, f"containers {sorted(containers)}")
    port = procs.free_port()
    hostname = socket.gethostname()  # kube-scheduler's holder identity is "<hostname>_<uuid>"
    subst = {"$(POD_NAME)": hostname, "$(POD_NAMESPACE)": NAMESPACE,
             "/tls/tls.crt": c.tessera_tls.cert, "/tls/tls.key": c.tessera_tls.key,
             "/etc/tessera/device-config.yaml": c.device_config,
             "0.0.0.0:8443": f"127.0.0.1:{port}"}
    argv = [*containers["tessera"].get("command", []), *containers["tessera"].get("args", [])]
    check(argv[:2] == ["tessera", "serve"], f"tessera container runs {argv[:2]}")
    rest = []
    # The Deployment serves the extender verbs on their own loopback port (--extender-bind),
    # which its kube-scheduler calls; that port is moved here too.
    verbs_port = port
    for a in argv[2:]:
        for k, v in subst.items():
            a = a.replace(k, v)
        if a.startswith("--extender-bind="):
            check(a.startswith("--extender-bind=127.0.0.1:"), f"shipped {a}")
            verbs_port = procs.free_port()
            a = f"--extender-bind=127.0.0.1:{verbs_port}"
        rest.append(a)
    check(any(a.startswith("--http-bind=127.0.0.1:") for a in rest), f"args {rest}")
    # In a pod tessera finds the in-cluster config; here it gets the ServiceAccount's kubeconfig.
    shipped = Tessera(c, "tessera-shipped", [])
    shipped.port = port
    shipped.proc = procs.Proc("tessera-shipped", [c.tessera_bin, "serve", "--kubeconfig",
                                                  c.kubeconfigs["tessera"], *rest],
                              os.path.join(c.work, "tessera-shipped.log"))
    kc = c.kubeconfigs["tessera"]
    sched_args = [a for a in containers["kube-scheduler"]["command"][1:]
                  if not a.startswith("--config=")]
    sidecar = c.scheduler_proc("shipped-kube-scheduler",
                               c.shipped_scheduler_config("shipped-scheduler", kc, verbs_port),
                               kc, sched_args)
    # The shipped pair replaces the harness's kube-scheduler + tessera for this scenario.
    c.procs["kube-scheduler"].stop(5)
    main.stop()
    c.tesseras.append(shipped)
    try:
        shipped.start()
        sidecar.start()
        c.wait_scheduler_healthy(sidecar)
        shipped.wait_ready(45)
        holder = env.kube.get(LEASE_PATH)["spec"].get("holderIdentity", "")
        say(f"shipped tessera ready on :{port}; Lease {LEASE_NAME} held by {holder!r}")
        check(holder.startswith(hostname + "_"), f"lease holder {holder!r}")
        c.create_node(f"{group}-n1", [gpu.sharing_gpu(f"GPU-{group}-0", 0),
                                      gpu.sharing_gpu(f"GPU-{group}-1", 1)], group)
        names = ["p0", "p1", "p2"]
        for n in names:
            env.kube.create_pod(gpu_pod(ns, n, {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 3000},
                                        group=group))
        bound = env.wait_bound(ns, names, 40)
        problems, _ = gpu.check_assignments(list(bound.values()), env.node_gpus(group))
        check(not problems, "; ".join(problems))
        forbidden = [ln for ln in (shipped.proc.log_tail(300) + sidecar.log_tail(300))
                     .splitlines() if "forbidden" in ln.lower()]
        check(not forbidden, "permission errors:\n" + "\n".join(forbidden[:5]))
    finally:
        sidecar.stop(5)
        shipped.stop()
        env.kube.delete(LEASE_PATH, grace0=False)
        c.start_scheduler()
        main.start()
        main.wait_ready(60)


# --- the node agent --------------------------------------------------------------------------
DEVICE_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"  # kubelet-dm serves the kubelet's path
RTX_UUID = "GPU-4b1e5c0e-8a56-4f1c-9d2e-rtx0000000001"
T4_UUID = "GPU-7d0c2a9b-1f3e-4e2d-8c5b-t40000000001"


class Agent:
    """`tessera agent` on the simulated NVML, and the kubelet's device manager (kubelet-dm)."""

    def __init__(self, env: Env, node: str):
        c = env.cluster
        self.env, self.node = env, node
        self.dir = os.path.join(c.work, f"agent-{node}")
        os.makedirs(self.dir, exist_ok=True)
        self.state = os.path.join(self.dir, "nvml-state.json")
        with open(self.state, "w", encoding="utf-8") as f:
            json.dump({"gpus": [
                {"uuid": RTX_UUID, "model": "RTX-PRO-6000-Blackwell-96GB", "migMode": True},
                {"uuid": T4_UUID, "name": "Tesla T4", "memoryMiB": 15360}]}, f)
        with open(os.path.join(self.dir, "config.json"), "w", encoding="utf-8") as f:
            json.dump({"nodeconfig": [{"name": node, "operatingmode": "mig"}]}, f)
        sim = os.path.join(os.path.dirname(env.args.tessera), "libtessera-nvml-sim.so")
        self.http_port = procs.free_port()
        argv = [env.args.tessera, "agent", "--node-name", node,
                "--kubeconfig", c.kubeconfigs["admin"], "--nvml-library", sim,
                "--device-config-file", c.device_config,
                "--node-config-file", os.path.join(self.dir, "config.json"),
                "--plugin-dir", DEVICE_PLUGIN_DIR, "--ledger", os.path.join(self.dir, "ledger.json"),
                "--hook-path", os.path.join(self.dir, "vgpu-hook"),
                "--http-bind", f"127.0.0.1:{self.http_port}", "--reconcile-interval", "1s",
                "--reconcile-grace", "2s",
                "--register-interval", "5s"]
        self.proc = procs.Proc(f"agent-{node}", argv, os.path.join(c.work, f"agent-{node}.log"),
                               env={**os.environ, "TESSERA_NVML_SIM_STATE": self.state})
        self.dm = procs.Proc("kubelet-dm", [os.path.join(env.args.bins, "kubelet-dm"),
                                            "--kubeconfig", c.kubeconfigs["admin"], "--node", node],
                             os.path.join(c.work, f"kubelet-dm-{node}.log"))

    def instances(self) -> list[dict]:
        """(GPU, start, size, MIG UUID) of every instance the simulated driver holds."""
        with open(self.state, encoding="utf-8") as f:
            state = json.load(f)
        out = []
        for g in state["gpus"]:
            for gi in g.get("gpuInstances", []):
                cis = gi.get("computeInstances", [])
                out.append({"gpu": g["uuid"], "start": gi["start"], "size": gi["size"],
                            "profile": gi["profile"], "uuid": cis[0]["uuid"] if cis else None})
        return sorted(out, key=lambda i: i["start"])

    def ready(self) -> bool:
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=2)
            c.request("GET", "/readyz")
            ok = c.getresponse().status == 200
            c.close()
            return ok
        except OSError:
            return False

    def metrics(self) -> str:
        """/metrics, read as deploy/README.md says (the agent's --read-auth is delegated)."""
        status, text = agent_http(self.http_port, "/metrics", self.env.cluster.reader_token)
        check(status == 200, f"agent /metrics as tessera-e2e-reader: HTTP {status} {text[:200]}")
        return text

    def start_registered(self) -> list[dict]:
        """Starts kubelet-dm and the agent; returns the node's registered devices once both GPUs
        are in the register annotation and the kubelet's capacity."""
        self.dm.start()
        self.start_agent()
        kube, node = self.env.kube, self.node

        def registered():
            n = kube.get(f"/api/v1/nodes/{node}")
            devs = json.loads(n["metadata"]["annotations"].get(gpu.REGISTER, "[]"))
            alloc = n.get("status", {}).get("allocatable", {}).get("nvidia.com/gpu", "0")
            return len(devs) == 2 and int(alloc) > 0 and devs
        return wait_until(registered, 30, 0.3, "register annotation and kubelet capacity")

    def start_agent(self, timeout: float = 60) -> None:
        self.proc.start()

        def up():
            if not self.proc.running():
                raise Fail(f"the agent exited with {self.proc.popen.returncode}: "
                           f"{self.proc.log_tail(15)}")
            return self.ready()
        wait_until(up, timeout, 0.3, "tessera agent /readyz == 200")

    def rss_mib(self) -> float:
        with open(f"/proc/{self.proc.pid}/status", encoding="utf-8") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        for p in (self.proc, self.dm):
            if p.running():
                p.stop(5)


def agent_http(port: int, path: str, token: str | None = None,
               with_headers: bool = False):
    """(status, body) of a GET to an agent's plain-HTTP port on 127.0.0.1; with_headers adds
    the WWW-Authenticate header: (status, body, header)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
        r = c.getresponse()
        text = r.read().decode("utf-8", "replace")
        if with_headers:
            return r.status, text, r.getheader("WWW-Authenticate")
        return r.status, text
    finally:
        c.close()


def wait_phase(env: Env, ns: str, names: list[str], phase: str, timeout: float) -> dict[str, dict]:
    got: dict[str, dict] = {}

    def done():
        env.cluster.check_tesseras_alive()
        for n in names:
            got[n] = env.kube.pod(ns, n)
        return all(got[n].get("status", {}).get("phase") == phase for n in names)
    try:
        wait_until(done, timeout, 0.3, f"{names} {phase}")
    except TimeoutError as e:
        raise Fail(f"{e}: " + "; ".join(
            f"{describe(p)} phase={p.get('status', {}).get('phase')} "
            f"{p.get('status', {}).get('message', '')}" for p in got.values())) from None
    return got


def mig_uuids(pod: dict) -> list[tuple[int, str]]:
    """(start, migUUID) of the pod's allocations, in device order."""
    migs = gpu.decode_mig(pod["metadata"]["annotations"][gpu.MIG_ALLOCATIONS])
    return [(m["placement"]["start"], m.get("migUUID")) for m in migs]


def device_env(pod: dict) -> dict:
    return json.loads(pod["metadata"].get("annotations", {}).get("tessera-e2e/device-env", "{}"))


@scenario("j", "tessera agent + the kubelet's device manager: MIG instances made at the reserved "
               "placements, HAMi-core env for a shared GPU, reclaim on delete, agent kill -9, "
               "kubelet restart, agent abort inside Allocate", 240)
def s_agent(env: Env, ns: str, group: str):
    env.require_main()
    if os.geteuid() != 0:
        raise Fail("needs root: kubelet-dm serves /var/lib/kubelet/device-plugins")
    if not os.path.exists(os.path.join(env.args.bins, "kubelet-dm")):
        raise Fail(f"{env.args.bins}/kubelet-dm is missing (e2e/k8s-bins/build.sh builds it)")
    os.makedirs(DEVICE_PLUGIN_DIR, exist_ok=True)
    node = f"{group}-n1"
    env.cluster.create_node(node, [], group)  # no GPUs until the agent registers them
    agent = Agent(env, node)
    try:
        devs = agent.start_registered()
        check(devs[0]["mode"] == "mig" and devs[1]["mode"] == "hami-core",
              f"registered modes: {[d['mode'] for d in devs]}")
        say(f"agent registered {[d['id'][:12] + '/' + d['mode'] for d in devs]}, "
            f"RSS {agent.rss_mib():.1f} MiB")

        mig = {"nvidia.com/vgpu-mode": "mig"}
        two = {"nvidia.com/gpu": 2, "nvidia.com/gpumem": 8000}
        env.kube.create_pod(gpu_pod(ns, "p1", two, group=group, annotations=mig))
        p1 = wait_phase(env, ns, ["p1"], "Running", 60)["p1"]
        env.kube.create_pod(gpu_pod(ns, "p2", two, group=group, annotations=mig))
        p2 = wait_phase(env, ns, ["p2"], "Running", 60)["p2"]
        u1, u2 = mig_uuids(p1), mig_uuids(p2)
        say(f"p1 {u1}\n    p2 {u2}")
        all_uuids = [u for _, u in u1 + u2]
        check(all(all_uuids) and len(set(all_uuids)) == 4, f"MIG UUIDs not 4 distinct: {u1} {u2}")
        check([s for s, _ in u1] == [9, 6] and [s for s, _ in u2] == [3, 0],
              f"placements p1 {[s for s, _ in u1]} p2 {[s for s, _ in u2]}, want 9/6 then 3/0")
        inst = agent.instances()
        check([(i["start"], i["uuid"]) for i in inst] ==
              sorted((s, u) for s, u in u1 + u2), f"driver instances {inst} differ from pods")
        for name, pod, uu in (("p1", p1, u1), ("p2", p2, u2)):
            seen = device_env(pod).get("c0", {}).get("NVIDIA_VISIBLE_DEVICES", "")
            check(seen == ",".join(u for _, u in uu), f"{name} container env {seen!r} != {uu}")
            check(pod["metadata"]["annotations"].get(gpu.BIND_PHASE) == "success",
                  f"{name} bind-phase {pod['metadata']['annotations'].get(gpu.BIND_PHASE)}")

        env.kube.create_pod(gpu_pod(ns, "p3", {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 8000},
                                    group=group, annotations=mig))
        msg = env.wait_unschedulable(ns, "p3", 30, "CardInsufficientMemory")
        check("CardInsufficientMemory" in msg, f"p3: {msg!r}")

        # kill -9 the agent and restart it: nothing is destroyed, nothing made twice.
        agent.proc.kill()
        agent.start_agent()
        check(agent.instances() == inst, f"after the agent restart: {agent.instances()} != {inst}")
        say("agent kill -9 + restart: instances unchanged")

        # The kubelet restarts: it removes the plugin sockets; the agent registers again.
        agent.dm.kill()
        agent.dm.start()
        wait_until(lambda: "registered nvidia.com/gpu again" in agent.proc.log_tail(50) or None,
                   30, 0.3, "the agent re-registers with the restarted kubelet")
        say("kubelet-dm restart: the agent registered again")

        env.kube.delete_pod(ns, "p1")
        nudges = 0

        def p3_bound():
            nonlocal nudges
            if env.kube.pod(ns, "p3")["spec"].get("nodeName"):
                return True
            # kube-scheduler retries an unschedulable pod on cluster events. When its retry after
            # p1's delete raced tessera's view of that delete, it waits for the next event: a
            # short-lived CPU pod on the node provides one (as any pod churn would).
            nudges += 1
            nudge = {"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": f"nudge-{nudges}", "namespace": ns},
                     "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                              "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                              "resources": {"requests": {"cpu": "10m"}}}]}}
            env.kube.create_pod(nudge)
            env.kube.delete_pod(ns, nudge["metadata"]["name"])
            return False
        wait_until(p3_bound, 60, 3.0, "p3 bound after p1's delete")
        p3 = wait_phase(env, ns, ["p3"], "Running", 60)["p3"]
        u3 = mig_uuids(p3)
        check(u3[0][0] in (9, 6), f"p3 got start {u3[0][0]}, not one of p1's 9/6")

        def reclaimed():
            now = agent.instances()
            return len(now) == 3 and now
        final = wait_until(reclaimed, 30, 0.3, "p1's instances destroyed, p3's made")
        check({(i["start"], i["uuid"]) for i in final} == set(u2) | set(u3),
              f"driver instances {final}, want p2's {u2} and p3's {u3}")
        check(u3[0][1] not in [u for _, u in u1], "p3 reused a MIG UUID of p1")
        say(f"delete p1 -> its instances destroyed; p3 {u3}")

        # A shared GPU gets HAMi-core's environment.
        env.kube.create_pod(gpu_pod(ns, "s1", {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 3000,
                                               "nvidia.com/gpucores": 30}, group=group))
        s1 = wait_phase(env, ns, ["s1"], "Running", 60)["s1"]
        e = device_env(s1).get("c0", {})
        check(e.get("NVIDIA_VISIBLE_DEVICES") == T4_UUID and
              e.get("CUDA_DEVICE_MEMORY_LIMIT_0") == "3000m" and
              e.get("CUDA_DEVICE_SM_LIMIT") == "30", f"s1 env {e}")
        metrics = agent.metrics()
        check("tessera_agent_mig_instances_created_total 1" in metrics and
              "tessera_agent_mig_instances_destroyed_total 2" in metrics,
              "agent metrics after restart: " + " ".join(
                  ln for ln in metrics.splitlines() if "instances" in ln and "#" not in ln))
        say(f"s1 env {e}; agent RSS {agent.rss_mib():.1f} MiB")

        # The agent dies in the middle of an Allocate (right after creating the GPU instance):
        # the kubelet fails the pod, and the restarted agent reclaims the half-made instance.
        before = agent.instances()
        agent.proc.stop(5)
        agent.proc.env = {**agent.proc.env, "TESSERA_NVML_SIM_FAULTS":
                          "abort-after:nvmlDeviceCreateGpuInstanceWithPlacement:1"}
        agent.start_agent()
        env.kube.create_pod(gpu_pod(ns, "p4", {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 8000},
                                    group=group, annotations=mig))
        p4 = wait_phase(env, ns, ["p4"], "Failed", 60)["p4"]
        wait_until(lambda: not agent.proc.running(), 10, 0.2, "the agent aborted")
        check(len(agent.instances()) == len(before) + 1, f"no half-made instance: {agent.instances()}")
        del agent.proc.env["TESSERA_NVML_SIM_FAULTS"]
        agent.start_agent()
        wait_until(lambda: agent.instances() == before or None, 30, 0.3,
                   "the failed pod's instance reclaimed after the restart")
        say(f"agent abort inside Allocate: p4 {p4['status'].get('reason')}, its instance reclaimed")
    except Exception:
        for p in (agent.proc, agent.dm):
            print(f"  --- {p.name} log (last 30 lines, {p.log_path}):\n{p.log_tail(30)}")
        raise
    finally:
        agent.stop()


@scenario("u", "HAMi's own scheduler (built from a HAMi checkout, configured by its chart) with "
               "tessera's agent: a MIG gpu:2 pod on an RTX PRO 6000 and a shared pod realised at "
               "HAMi's placements, UUIDs recorded, HAMi-core env, node lock released, reclaim", 180)
def s_hami_scheduler_tessera_agent(env: Env, ns: str, group: str):
    why = hami.available(env.args.hami)
    if why:
        raise Skip(why)
    if os.geteuid() != 0:
        raise Fail("needs root: kubelet-dm serves /var/lib/kubelet/device-plugins")
    os.makedirs(DEVICE_PLUGIN_DIR, exist_ok=True)
    node = f"{group}-n1"
    env.cluster.create_node(node, [], group)
    agent = Agent(env, node)
    running = None
    try:
        agent.start_registered()
        running = hami.start(
            env.cluster, env.args.hami,
            lambda text: sum(1 for ln in text.splitlines()
                             if ln.startswith("hami_gpu_memory_limit_bytes{")
                             and f'node="{node}"' in ln) == 2)
        say(f"HAMi's scheduler registered {node}'s two GPUs (profile {running.profile})")

        mig = {"nvidia.com/vgpu-mode": "mig"}
        env.kube.create_pod(gpu_pod(ns, "p1", {"nvidia.com/gpu": 2, "nvidia.com/gpumem": 8000},
                                    group=group, annotations=mig, scheduler=running.profile))
        p1 = wait_phase(env, ns, ["p1"], "Running", 60)["p1"]
        ann = p1["metadata"]["annotations"]
        migs = gpu.decode_mig(ann[gpu.MIG_ALLOCATIONS])
        check(len(migs) == 2 and all(m["gpuUUID"] == RTX_UUID and m["profile"] == "1g.24gb"
                                     for m in migs), f"HAMi's MIG allocations {migs}")
        placed = sorted((m["placement"]["start"], m["placement"]["size"], m.get("migUUID"))
                        for m in migs)
        inst = agent.instances()
        check([(i["start"], i["size"], i["uuid"]) for i in inst] == placed,
              f"driver instances {inst} differ from HAMi's placements {placed}")
        check(all(u for _, _, u in placed), f"MIG UUIDs not recorded: {placed}")
        seen = device_env(p1).get("c0", {}).get("NVIDIA_VISIBLE_DEVICES", "")
        check(sorted(seen.split(",")) == sorted(u for _, _, u in placed),
              f"p1 container env {seen!r}, want the UUIDs {placed}")
        check(ann.get(gpu.BIND_PHASE) == "success", f"p1 bind-phase {ann.get(gpu.BIND_PHASE)}")
        say(f"p1 (HAMi's placement) realised: {placed}")

        env.kube.create_pod(gpu_pod(ns, "s1", {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 3000,
                                               "nvidia.com/gpucores": 30},
                                    group=group, scheduler=running.profile))
        s1 = wait_phase(env, ns, ["s1"], "Running", 60)["s1"]
        e = device_env(s1).get("c0", {})
        check(e.get("NVIDIA_VISIBLE_DEVICES") == T4_UUID and
              e.get("CUDA_DEVICE_MEMORY_LIMIT_0") == "3000m" and
              e.get("CUDA_DEVICE_SM_LIMIT") == "30", f"s1 env {e}")
        check(s1["metadata"]["annotations"].get(gpu.BIND_PHASE) == "success",
              f"s1 bind-phase {s1['metadata']['annotations'].get(gpu.BIND_PHASE)}")
        lock = env.kube.get(f"/api/v1/nodes/{node}")["metadata"].get("annotations", {}).get(
            gpu.NODE_LOCK)
        check(lock is None, f"HAMi's node lock not released after Allocate: {lock!r}")
        say(f"s1 env {e}; node lock released")

        env.kube.delete_pod(ns, "p1")
        wait_until(lambda: not agent.instances() or None, 30, 0.3,
                   "p1's instances destroyed after its delete")
        say("delete p1 -> its instances destroyed")
    except Exception:
        for p in (agent.proc, agent.dm, *((running.extender,) if running else ())):
            print(f"  --- {p.name} log (last 30 lines, {p.log_path}):\n{p.log_tail(30)}")
        raise
    finally:
        if running:
            running.stop()
        agent.stop()


@scenario("k", "a running pod with an unreadable hami.io/vgpu-mig-allocations holds its GPU: "
               "the next pod waits with CardNotHealth until it is deleted", 90)
def s_unreadable_running_pod(env: Env, ns: str, group: str):
    env.require_main()
    uuid = "GPU-c0ffee00-0000-0000-0000-000000000001"
    env.cluster.create_node(f"{group}-n1", [gpu.sharing_gpu(uuid, 0, devmem=8000)], group)
    running = gpu_pod(ns, "running", {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 7000},
                      group=group, annotations={
                          "hami.io/vgpu-node": f"{group}-n1",
                          "hami.io/bind-phase": "success",
                          gpu.ALLOCATED: f"{uuid},NVIDIA,7000,0:;",
                          gpu.MIG_ALLOCATIONS: json.dumps([
                              {"containerIndex": 0, "deviceIndex": 0, "gpuUUID": uuid,
                               "profile": "1g.5gb", "placement": {"start": 0, "size": 1}},
                              {"containerIndex": 0, "deviceIndex": 0, "gpuUUID": uuid,
                               "profile": "1g.5gb", "placement": {"start": 1, "size": 1}}])})
    running["spec"]["nodeName"] = f"{group}-n1"  # placed before tessera saw it
    env.kube.create_pod(running)
    env.kube.create_pod(gpu_pod(ns, "next", {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 7000},
                                group=group))
    msg = env.wait_unschedulable(ns, "next", 30, "CardNotHealth")
    say(f"next: {msg}")
    check("CardNotHealth" in msg, f"next should wait with CardNotHealth: {msg!r}")
    env.kube.delete_pod(ns, "running")
    env.wait_bound(ns, ["next"], 40)
    say("running deleted -> next bound")


@scenario("l", "GPU quota per namespace: with limits.nvidia.com/gpumem 16000 two 8000 MiB pods "
               "bind, the third waits with ResourceQuotaNotFit; the webhook denies an over-quota "
               "pod; the quota raised, tessera requeues the third and it binds", 90)
def s_quota(env: Env, ns: str, group: str):
    main = env.require_main()
    env.cluster.create_node(f"{group}-n1", [gpu.sharing_gpu(f"GPU-{group}-0", 0, devmem=32000),
                                            gpu.sharing_gpu(f"GPU-{group}-1", 1, devmem=32000)],
                            group)
    quotas = f"/api/v1/namespaces/{ns}/resourcequotas"
    env.kube.create(quotas, {"apiVersion": "v1", "kind": "ResourceQuota",
                             "metadata": {"name": "gpu", "namespace": ns},
                             "spec": {"hard": {"limits.nvidia.com/gpumem": "16000"}}})
    try:
        def review(name: str, mem: int) -> dict:
            status, body = main.post("/webhook", {
                "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "request": {"uid": f"e2e-quota-{name}", "namespace": ns, "operation": "CREATE",
                            "kind": {"group": "", "version": "v1", "kind": "Pod"},
                            "resource": {"group": "", "version": "v1", "resource": "pods"},
                            "object": gpu_pod(ns, name, {"nvidia.com/gpu": 1,
                                                         "nvidia.com/gpumem": mem},
                                              group=group)}})
            check(status == 200 and isinstance(body, dict), f"review: HTTP {status} {body}")
            return body.get("response") or {}
        # The informer delivers the quota asynchronously: an over-quota review says when.
        wait_until(lambda: review("probe", 24000).get("allowed") is False, 20, 0.3,
                   "tessera to see the ResourceQuota")
        for name in ("p1", "p2"):
            env.kube.create_pod(gpu_pod(ns, name, {"nvidia.com/gpu": 1,
                                                   "nvidia.com/gpumem": 8000}, group=group))
        env.wait_bound(ns, ["p1", "p2"], 40)
        env.kube.create_pod(gpu_pod(ns, "p3", {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 8000},
                                    group=group))
        msg = env.wait_unschedulable(ns, "p3", 30, "ResourceQuotaNotFit")
        say(f"p3: {msg}")
        check("ResourceQuotaNotFit" in msg, f"p3 should wait with ResourceQuotaNotFit: {msg!r}")
        denied = review("p4", 8000)
        why = (denied.get("status") or {}).get("message", "")
        say(f"webhook on a 4th pod: allowed={denied.get('allowed')} {why!r}")
        check(denied.get("allowed") is False and "exceeding resource quota" in why,
              f"the webhook should deny an over-quota pod: {denied}")
        # kube-scheduler does not watch ResourceQuotas, so the raise is no event to it: p3 is
        # tried again because tessera requeues it (--requeue-after, 500 ms by default).
        env.kube.merge_patch(f"{quotas}/gpu",
                             {"spec": {"hard": {"limits.nvidia.com/gpumem": "24000"}}})
        env.wait_bound(ns, ["p3"], 40)
        stamp = env.kube.pod(ns, "p3")["metadata"].get("annotations", {}).get(
            "tessera.io/requeued-at")
        check(stamp is not None, "p3 should carry tessera.io/requeued-at")
        say(f"quota raised to 24000 -> tessera requeued p3 (requeued-at {stamp}) -> bound")
    finally:
        env.kube.delete(f"{quotas}/gpu", grace0=False)


@scenario("n", "explain: a pod waiting for GPU memory is explained by the running scheduler "
               "(GET /explain, text and JSON) and by `tessera explain` against the API server: "
               "the GPU's reason, who holds it, and which pod's departure admits it", 60)
def s_explain(env: Env, ns: str, group: str):
    c = env.cluster
    main = env.require_main()
    node = f"{group}-n1"
    model = f"NVIDIA E2E-EXPLAIN-{group}"  # a type no other scenario's node has
    c.create_node(node, [gpu.sharing_gpu(f"GPU-{group}-0", 0, model=model, devmem=8000)], group)
    typed = {"nvidia.com/use-gputype": model}
    env.kube.create_pod(gpu_pod(ns, "holder", {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 6000},
                                group=group, annotations=typed))
    env.wait_bound(ns, ["holder"], 30)
    env.kube.create_pod(gpu_pod(ns, "waiting", {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4000},
                                group=group, annotations=typed))
    msg = env.wait_unschedulable(ns, "waiting", 30, "CardInsufficientMemory")
    say(f"waiting: {msg}")
    status, text = main.get_text(f"/explain?pod={ns}/waiting&node={node}")
    check(status == 200, f"/explain: HTTP {status} {text}")
    say("/explain says:\n" + "\n".join(
        line for line in text.splitlines() if node in line or "GPU-" in line or "would" in line))
    check(f"node {node}: 1/1 CardInsufficientMemory" in text, f"node verdict missing: {text}")
    check(f"held by {ns}/holder" in text, f"holder missing: {text}")
    check(f"1 pod leaving node {node}: {ns}/holder" in text, f"remedy missing: {text}")
    status, body = main.get_text(f"/explain?pod={ns}/waiting&format=json")
    check(status == 200, f"/explain json: HTTP {status}")
    j = json.loads(body)
    check(j.get("remedy", {}).get("pods") == [f"{ns}/holder"], f"JSON remedy: {j.get('remedy')}")
    check(main.status(f"/explain?pod={ns}/waiting&bogus=1") == 400, "an unknown parameter is 400")
    r = subprocess.run([c.tessera_bin, "explain", f"{ns}/waiting", "--kubeconfig",
                        c.kubeconfigs["tessera"], "--device-config", c.device_config],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"tessera explain exited {r.returncode}: {r.stderr}")
    check(f"1 pod leaving node {node}: {ns}/holder" in r.stdout,
          f"tessera explain should name the holder: {r.stdout}")
    say("tessera explain (CLI, one list from the API server) names the same pod")
    env.kube.delete_pod(ns, "holder")
    env.wait_bound(ns, ["waiting"], 40)
    say("holder deleted -> waiting bound")


@scenario("m", "node liveness: allocatable nvidia.com/gpu drops to 0 -> after the grace period "
               "the node gets no new GPU pod; restored -> it does again", 90)
def s_liveness(env: Env, ns: str, group: str):
    c = env.cluster
    main = env.require_main()
    # A replica with a short grace period takes the extender calls for this scenario. The proxy
    # forwards TCP: kube-scheduler's kept-alive connections to the main replica end only when it
    # stops, so it is stopped meanwhile and restarted afterwards.
    main.stop()
    quick = c.new_tessera("tessera-liveness", ["--node-liveness-grace", "4s"]).start()
    c.proxy.set_backends([quick.port])
    try:
        quick.wait_ready(60)
        node = f"{group}-n1"
        c.create_node(node, [gpu.sharing_gpu(f"GPU-{group}-0", 0)], group)
        gpu1 = {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1000}
        env.kube.create_pod(gpu_pod(ns, "before", gpu1, group=group))
        env.wait_bound(ns, ["before"], 30)

        def set_gpus(n: str) -> None:
            alloc = env.kube.get(f"/api/v1/nodes/{node}")["status"]["allocatable"]
            alloc["nvidia.com/gpu"] = n
            env.kube.merge_patch(f"/api/v1/nodes/{node}/status",
                                 {"status": {"allocatable": alloc, "capacity": alloc}})
        probe = gpu_pod(ns, "probe", gpu1, group=group)

        def usable() -> bool:  # prioritize has no side effects: 10 for the node filter picks
            status, body = quick.post("/prioritize", {"Pod": probe, "Nodes": None,
                                                      "NodeNames": [node]})
            check(status == 200 and isinstance(body, list) and body, f"prioritize: {body}")
            return body[0].get("Score") == 10
        check(usable(), "the node should take GPU pods while its plugin is alive")
        set_gpus("0")  # what the kubelet does when the device plugin is gone
        t0 = time.monotonic()
        wait_until(lambda: not usable(), 20, 0.2, "tessera to stop offering the node")
        took = time.monotonic() - t0
        say(f"node not offered {took:.1f}s after allocatable fell to 0 (grace 4s)")
        check(took >= 3.5, f"the node was dropped before its grace period: {took:.1f}s")
        env.kube.create_pod(gpu_pod(ns, "after", gpu1, group=group))
        msg = env.wait_unschedulable(ns, "after", 30, "no live device plugin")
        say(f"after: {msg}")
        check("no live device plugin" in msg, f"'after' should wait for a live plugin: {msg!r}")
        set_gpus("10")
        # kube-scheduler retries the pod on that node update, possibly before tessera has seen
        # it. A real kubelet keeps updating its node; here one more update, once tessera would
        # place a pod there (prioritize has no side effects), stands in for that.
        wait_until(usable, 20, 0.2, "tessera to see the node's GPUs again")
        env.kube.merge_patch(f"/api/v1/nodes/{node}",
                             {"metadata": {"labels": {"tessera-e2e/heartbeat": "1"}}})
        env.wait_bound(ns, ["after"], 60)
        say("allocatable restored -> after bound")
    finally:
        quick.stop()
        main.start()
        c.proxy.set_backends([main.port])
        main.wait_ready(60)


def host_address() -> str | None:
    """A non-loopback IPv4 address of this host: the source address of the route to a public
    address (connecting a UDP socket sends nothing), else one the host name resolves to; None
    when there is only loopback."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("8.8.8.8", 53))
            addr = s.getsockname()[0]
            if not addr.startswith("127.") and addr != "0.0.0.0":
                return addr
    except OSError:
        pass
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            if not info[4][0].startswith("127."):
                return info[4][0]
    except OSError:
        pass
    return None


def https_call(env: Env, host: str, port: int, method: str, path: str, *,
               token: str | None = None, body: dict | None = None, timeout: float = 10):
    """(status, WWW-Authenticate, body) of one HTTPS request to tessera at host:port, the server
    verified with our CA (not its name: the certificate does not name this host's address)."""
    ctx = ssl.create_default_context(cafile=env.cluster.pki.ca.cert)
    ctx.check_hostname = False
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = None
    if body is not None:
        data = json.dumps(body)
        headers["Content-Type"] = "application/json"
    c = http.client.HTTPSConnection(host, port, context=ctx, timeout=timeout)
    try:
        c.request(method, path, body=data, headers=headers)
        r = c.getresponse()
        raw = r.read()
        return r.status, r.getheader("WWW-Authenticate"), raw.decode("utf-8", "replace")
    finally:
        c.close()


@scenario("s", "authenticated read endpoints and local-only extender verbs: /metrics, /ui/state, "
               "/explain, /defrag 401 without a token, 403 without tessera-reader, 200 with it; "
               "a forged "
               "/bind from loopback is refused; the verbs answer 403 from another address; "
               "--extender-bind on 127.0.0.1 is unreachable from it and kube-scheduler schedules "
               "through it", 40)
def s_access(env: Env, ns: str, group: str):
    c = env.cluster
    main = env.require_main()
    node = f"{group}-n1"
    c.create_node(node, [gpu.sharing_gpu(f"GPU-{group}-0", 0)], group)
    addr = host_address()
    if addr is None:
        say("SKIP the checks from another address: this host has only loopback")
    crb = f"tessera-e2e-{ns}-reader"
    crb_path = f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{crb}"
    # Two more replicas, on all interfaces: `open` serves the verbs on its main port (for this
    # host only), `split` on their own loopback port as deploy/ does. Started now, used below.
    open_t = c.new_tessera("tessera-open", [], bind_host="0.0.0.0").start()
    verbs_port = procs.free_port()
    split = c.new_tessera("tessera-split", ["--extender-bind", f"127.0.0.1:{verbs_port}"],
                          bind_host="0.0.0.0").start()
    profile = "tessera-e2e-split"
    sched = c.scheduler_proc("split-kube-scheduler", c._scheduler_config(
        "split-scheduler-config", profile, f"http://127.0.0.1:{verbs_port}"),
        c.kubeconfigs["scheduler"], ["--v=2"])
    sched.start()
    try:
        # --- a forged /bind from loopback, to the tessera kube-scheduler calls ------------------
        # A GPU pod kube-scheduler never sends anyone (nobody serves its schedulerName).
        forged = env.kube.create_pod(gpu_pod(ns, "forged", {"nvidia.com/gpu": 1,
                                                            "nvidia.com/gpumem": 1000},
                                             group=group, scheduler="tessera-e2e-nobody"))
        uid = forged["metadata"]["uid"]
        for what, pod_uid in (("never filtered", uid), ("empty PodUID", "")):
            status, ans = main.post("/bind", {"PodName": "forged", "PodNamespace": ns,
                                              "PodUID": pod_uid, "Node": node})
            check(isinstance(ans, dict) and ans.get("Error"),
                  f"forged /bind ({what}) was not refused: HTTP {status} {ans}")
            say(f"forged /bind ({what}): HTTP {status}, Error {ans['Error']!r}")
        time.sleep(1)
        p = env.kube.pod(ns, "forged")
        check(not p["spec"].get("nodeName"), f"forged /bind bound the pod to "
                                             f"{p['spec'].get('nodeName')}")
        written = [k for k in (p["metadata"].get("annotations") or {}) if k.startswith("hami.io/")]
        check(not written, f"forged /bind wrote {written} on the pod")
        say("forged: still unbound, no hami.io/ annotation")

        # --- the read endpoints: token, TokenReview, SubjectAccessReview ---------------------
        no_role = c.service_account_token(ns, "no-role", 600)
        c.bind_cluster_role(crb, "tessera-reader", ns, "reader")
        reader = c.service_account_token(ns, "reader", 600)
        # tessera caches a denial for 10 s: ask the API server first whether RBAC has the
        # binding, so the reader's first request to tessera is already allowed.
        sar = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
               "spec": {"user": f"system:serviceaccount:{ns}:reader",
                        "groups": ["system:serviceaccounts", f"system:serviceaccounts:{ns}"],
                        "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}}
        wait_until(lambda: env.kube.create("/apis/authorization.k8s.io/v1/subjectaccessreviews",
                                           sar)["status"].get("allowed"), 10, 0.2,
                   "RBAC to allow the reader")
        status, _, _ = https_call(env, "127.0.0.1", main.port, "GET", "/metrics")
        check(status == 401, f"the harness's tessera /metrics without a token: HTTP {status}")
        open_t.wait_ready(40)
        host = addr or "127.0.0.1"
        paths = ["/metrics", "/ui/state", f"/explain?pod={ns}/forged", "/defrag"]
        for path in ("/healthz", "/ui"):
            status, _, _ = https_call(env, host, open_t.port, "GET", path)
            check(status == 200, f"{path} without a token from {host}: HTTP {status}")
        for path in paths:
            status, www, text = https_call(env, host, open_t.port, "GET", path)
            check(status == 401 and (www or "").startswith("Bearer"),
                  f"{path} without a token: HTTP {status}, WWW-Authenticate {www!r}: {text[:200]}")
            status, _, text = https_call(env, host, open_t.port, "GET", path,
                                         token="not-a-token")
            check(status == 401, f"{path} with an invalid token: HTTP {status}: {text[:200]}")
            status, _, text = https_call(env, host, open_t.port, "GET", path, token=no_role)
            check(status == 403, f"{path} as {ns}/no-role (no tessera-reader): HTTP {status}: "
                                 f"{text[:200]}")
            got: list = []

            def allowed(path=path):
                got[:] = https_call(env, host, open_t.port, "GET", path, token=reader)
                return got[0] == 200
            try:
                wait_until(allowed, 12, 0.5, f"{path} as {ns}/reader to be 200")
            except TimeoutError as e:
                raise Fail(f"{e}: HTTP {got[0] if got else None} "
                           f"{got[2][:200] if got else ''}") from None
        status, _, text = https_call(env, host, open_t.port, "GET", "/metrics", token=reader)
        check(status == 200 and "# TYPE" in text, f"/metrics as reader: HTTP {status} {text[:200]}")
        say(f"from {host}: /healthz, /ui 200 without a token; {', '.join(paths)}: 401 without or "
            f"with a bad token, 403 as no-role, 200 as reader (tessera-reader)")

        # --- the verbs from another address of this host ------------------------------------
        probe = {"Pod": gpu_pod(ns, "probe", {"nvidia.com/gpu": 1}, group=group,
                                scheduler="tessera-e2e-nobody"), "Nodes": None, "NodeNames": []}
        status, _, _ = https_call(env, "127.0.0.1", open_t.port, "POST", "/filter", body=probe)
        check(status == 200, f"/filter from 127.0.0.1: HTTP {status}")
        if addr:
            for verb in ("/filter", "/prioritize", "/bind"):
                status, _, text = https_call(env, addr, open_t.port, "POST", verb, body=probe)
                check(status == 403, f"POST {verb} to {addr}:{open_t.port} (peer {addr}): "
                                     f"HTTP {status} {text[:200]}")
            say(f"POST /filter, /prioritize, /bind to {addr}: 403 (from 127.0.0.1: 200)")
            status, _, text = https_call(env, "127.0.0.1", open_t.port, "GET", "/metrics",
                                         token=reader)
            forbidden = sum(float(ln.rsplit(" ", 1)[1]) for ln in text.splitlines()
                            if ln.startswith("tessera_http_refused_total{")
                            and 'reason="forbidden"' in ln)
            check(forbidden >= 3, f"tessera_http_refused_total{{reason=forbidden}} {forbidden}")

        # --- --extender-bind 127.0.0.1:P: not on the network, and kube-scheduler uses it ----
        split.wait_ready(40)
        if addr:
            try:
                socket.create_connection((addr, verbs_port), timeout=3).close()
                raise Fail(f"{addr}:{verbs_port} (--extender-bind 127.0.0.1) accepted a connection")
            except ConnectionRefusedError:
                pass
            status, _, _ = https_call(env, addr, split.port, "GET", "/healthz")
            check(status == 200, f"split /healthz on {addr}: HTTP {status}")
            status, _, text = https_call(env, addr, split.port, "POST", "/filter", body=probe)
            check(status != 200, f"split serves /filter on its main port: {text[:200]}")
            say(f"split: {addr}:{verbs_port} refuses connections; main port {addr}:{split.port} "
                f"answers /healthz 200, POST /filter {status}")
        c.wait_scheduler_healthy(sched)
        env.kube.create_pod(gpu_pod(ns, "via-split", {"nvidia.com/gpu": 1,
                                                      "nvidia.com/gpumem": 2000},
                                    group=group, scheduler=profile))
        bound = env.wait_bound(ns, ["via-split"], 30)
        problems, _ = gpu.check_assignments(list(bound.values()), env.node_gpus(group))
        check(not problems, "; ".join(problems))
        say(f"via-split -> {bound['via-split']['spec']['nodeName']} through kube-scheduler "
            f"-> http://127.0.0.1:{verbs_port}")
        check(not env.kube.pod(ns, "forged")["spec"].get("nodeName"), "forged got bound")
    finally:
        sched.stop(5)
        open_t.stop()
        split.stop()
        env.kube.delete(crb_path, grace0=False)


def api_as(env: Env, token: str, method: str, path: str, body: dict | None = None,
           content_type: str = "application/merge-patch+json"):
    """(status, decoded body) of one request to kube-apiserver with a bearer token, i.e. as the
    token's user rather than the harness's admin."""
    c = http.client.HTTPSConnection("127.0.0.1", env.cluster.api_port,
                                    context=env.cluster.client_ctx, timeout=15)
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body)
        headers["Content-Type"] = content_type
    try:
        c.request(method, path, body=data, headers=headers)
        r = c.getresponse()
        raw = r.read()
        try:
            return r.status, json.loads(raw) if raw else None
        except ValueError:
            return r.status, raw.decode("utf-8", "replace")
    finally:
        c.close()


@scenario("v", "the agent's least privilege on the real API server: deploy/'s admission "
               "policies let the agent's node-bound ServiceAccount token patch only its own "
               "node and pods, only hami.io/ annotations; the agent runs under them; its "
               "/metrics wants a token", 30)
def s_agent_policy(env: Env, ns: str, group: str):
    c = env.cluster
    agent_objs = c.manifest_objects("50-agent.yaml")
    sa = next(o for o in agent_objs if o["kind"] == "ServiceAccount")["metadata"]
    sa_ns, sa_name = sa["namespace"], sa["name"]
    policy_file = "55-agent-admission-policy.yaml"
    policies = [o["kind"] for o in c.manifest_objects(policy_file)]
    check(policies.count("ValidatingAdmissionPolicy") == 2 and
          policies.count("ValidatingAdmissionPolicyBinding") == 2, f"{policy_file}: {policies}")
    # deploy/'s agent identity (ServiceAccount, ClusterRole, binding) and its policies, for real.
    rbac = os.path.join(c.work, "agent-rbac.json")
    with open(rbac, "w", encoding="utf-8") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": [
            o for o in agent_objs
            if o["kind"] in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding")]}, f)
    c.kubectl("apply", "-f", rbac, "-f", c.deploy_path(policy_file))
    node_a, node_b = f"{group}-a", f"{group}-b"
    for n in (node_a, node_b):
        c.create_node(n, [gpu.sharing_gpu(f"GPU-{n}-0", 0)], group)

    def bound_pod(pod_ns: str, name: str, node: str, sa_name_: str | None = None) -> dict:
        spec = {"nodeName": node, "terminationGracePeriodSeconds": 0,
                "schedulerName": "tessera-e2e-nobody",
                "containers": [{"name": "c0", "image": "registry.k8s.io/pause:3.10"}]}
        if sa_name_:
            spec["serviceAccountName"] = sa_name_
        return env.kube.create_pod({"apiVersion": "v1", "kind": "Pod",
                                    "metadata": {"name": name, "namespace": pod_ns,
                                                 "labels": {"tessera-e2e": "1"}},
                                    "spec": spec})
    # The agent's own pod on node A: the kubelet would mount a token bound to it; here the
    # TokenRequest API makes the same token (boundObjectRef), and the API server adds the pod's
    # node to its user (authentication.kubernetes.io/node-name).
    anchor_name = f"tessera-agent-e2e-{group}"
    anchor = bound_pod(sa_ns, anchor_name, node_a, sa_name)
    anchor_path = f"/api/v1/namespaces/{sa_ns}/pods/{anchor_name}"
    agent = None
    try:
        bound_pod(ns, "on-a", node_a)
        bound_pod(ns, "on-b", node_b)
        token_path = f"/api/v1/namespaces/{sa_ns}/serviceaccounts/{sa_name}/token"
        token = env.kube.create(token_path, {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": 600, "boundObjectRef": {
                "apiVersion": "v1", "kind": "Pod", "name": anchor_name,
                "uid": anchor["metadata"]["uid"]}}})["status"]["token"]
        unbound = env.kube.create(token_path, {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": 600}})["status"]["token"]
        status, me = api_as(env, token, "POST",
                            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                            {"apiVersion": "authentication.k8s.io/v1",
                             "kind": "SelfSubjectReview"}, "application/json")
        user = (me or {}).get("status", {}).get("userInfo", {}) if status == 201 else {}
        check(user.get("username") == f"system:serviceaccount:{sa_ns}:{sa_name}" and
              user.get("extra", {}).get("authentication.kubernetes.io/node-name") == [node_a],
              f"SelfSubjectReview of the bound token: HTTP {status} {me}")
        say(f"token of {sa_ns}/{sa_name} bound to pod {anchor_name}: user {user['username']}, "
            f"node-name {node_a}")

        node = "/api/v1/nodes/"
        pod = f"/api/v1/namespaces/{ns}/pods/"

        def ann(value):
            return {"metadata": {"annotations": value}}

        # The API server loads new policies (and RBAC) within moments; until then node B's
        # patch passes, or RBAC refuses it.
        last: list = []

        def in_force():
            last[:] = api_as(env, token, "PATCH", node + node_b, ann({"hami.io/e2e-probe": "x"}))
            return last[0] == 403 and "may not change node" in str(last[1])
        try:
            wait_until(in_force, 10, 0.2, "the policies in force")
        except TimeoutError as e:
            raise Fail(f"{e}: the last patch of {node_b}: HTTP {last[0]} {str(last[1])[:400]}")

        def refused(what: str, tok: str, path: str, body: dict, needle: str,
                    content_type: str = "application/merge-patch+json") -> None:
            """403 with `needle` in the message, and the object unchanged."""
            before = env.kube.get(path)["metadata"]["resourceVersion"]
            status, got = api_as(env, tok, "PATCH", path, body, content_type)
            msg = got.get("message", "") if isinstance(got, dict) else str(got)
            check(status == 403 and needle in msg, f"{what}: HTTP {status} {msg[:300]!r}, want "
                                                   f"403 with {needle!r}")
            check(env.kube.get(path)["metadata"]["resourceVersion"] == before,
                  f"{what}: the object changed")
            say(f"refused: {what}: {msg[msg.find('denied request: ') + 16:][:110]}")

        refused(f"node {node_b}'s annotations", token, node + node_b,
                ann({gpu.REGISTER: "[]"}), f"on node {node_a} may not change node {node_b}")
        refused(f"pod {ns}/on-b (on {node_b})", token, pod + "on-b",
                ann({gpu.BIND_PHASE: "success"}),
                f"may not change pod {ns}/on-b on node {node_b}")
        refused("the image of pod on-a (its own node)", token, pod + "on-a",
                {"spec": {"containers": [{"name": "c0", "image": "registry.k8s.io/pause:3.9"}]}},
                "only annotations of pods on its node", "application/strategic-merge-patch+json")
        refused(f"a label on node {node_a}", token, node + node_a,
                {"metadata": {"labels": {"e2e-agent": "x"}}}, "only annotations of its node")
        refused(f"a taint on node {node_a}", token, node + node_a,
                {"spec": {"taints": [{"key": "e2e", "effect": "NoSchedule"}]}},
                "only annotations of its node")
        refused(f"a non-hami.io annotation on node {node_a}", token, node + node_a,
                ann({"example.com/e2e": "x"}),
                "only hami.io/ annotations and tessera.io/foreign-mig-instances of its node, not "
                "example.com/e2e")
        refused(f"node {node_a} with a token bound to no node", unbound, node + node_a,
                ann({gpu.REGISTER: "[]"}), "this token is bound to no node")
        # Its pods' status: only to fail a pod on its own node (a MIG instance gone for good).
        failed = {"status": {"phase": "Failed", "reason": "MigInstanceLost", "message": "e2e"}}
        refused(f"the status of pod {ns}/on-b (on {node_b})", token, pod + "on-b/status",
                failed, f"may not change pod {ns}/on-b on node {node_b}",
                "application/strategic-merge-patch+json")
        refused("the status of pod on-a to Succeeded", token, pod + "on-a/status",
                {"status": {"phase": "Succeeded"}}, "only to fail it, not to phase Succeeded",
                "application/strategic-merge-patch+json")

        # What the agent writes: allowed.
        status, body = api_as(env, token, "PATCH", pod + "on-a",
                              ann({gpu.BIND_PHASE: "success"}))
        check(status == 200 and body["metadata"]["annotations"].get(gpu.BIND_PHASE) ==
              "success", f"agent patch of {ns}/on-a's {gpu.BIND_PHASE}: HTTP {status} "
                         f"{str(body)[:300]}")
        status, body = api_as(env, token, "PATCH", node + node_a,
                              ann({"hami.io/e2e-agent": "v", gpu.NODE_LOCK: None,
                                   "tessera.io/foreign-mig-instances": "[]",
                                   "tessera.io/gpu-usage": "v1;0:12,1024"}))
        check(status == 200 and body["metadata"]["annotations"].get("tessera.io/gpu-usage") ==
              "v1;0:12,1024", f"agent patch of node {node_a}: HTTP {status} {str(body)[:300]}")
        status, body = api_as(env, token, "PATCH", pod + "on-a/status", failed,
                              "application/strategic-merge-patch+json")
        check(status == 200 and body.get("status", {}).get("phase") == "Failed",
              f"agent fails pod {ns}/on-a (its own node): HTTP {status} {str(body)[:300]}")
        say(f"allowed: hami.io/ annotations, tessera.io/foreign-mig-instances and "
            f"tessera.io/gpu-usage of node {node_a}, "
            f"hami.io/ annotations of pod {ns}/on-a, and setting it Failed")

        # The agent itself with that token: its registration goes through the policies, its
        # pod informer and reviews through deploy/'s ClusterRole; /metrics wants a token.
        d = os.path.join(c.work, f"agent-{group}")
        os.makedirs(d, exist_ok=True)
        state = os.path.join(d, "nvml-state.json")
        with open(state, "w", encoding="utf-8") as f:
            json.dump({"gpus": [{"uuid": T4_UUID, "name": "Tesla T4", "memoryMiB": 15360}]}, f)
        kubeconfig = write_token_kubeconfig(c, os.path.join(d, "agent.kubeconfig"), token)
        port = procs.free_port()
        agent = procs.Proc(f"agent-{group}", [
            env.args.tessera, "agent", "--node-name", node_a, "--kubeconfig", kubeconfig,
            "--nvml-library",
            os.path.join(os.path.dirname(env.args.tessera), "libtessera-nvml-sim.so"),
            "--device-config-file", c.device_config,
            "--node-config-file", os.path.join(d, "none.json"), "--kubelet-socket", "",
            "--ledger", os.path.join(d, "ledger.json"), "--hook-path", os.path.join(d, "vgpu"),
            "--http-bind", f"127.0.0.1:{port}", "--register-interval", "5s"],
            os.path.join(c.work, f"agent-{group}.log"),
            env={**os.environ, "TESSERA_NVML_SIM_STATE": state}).start()

        def ready():
            if not agent.running():
                raise Fail(f"the agent exited with {agent.popen.returncode}: "
                           f"{agent.log_tail(10)}")
            try:
                return agent_http(port, "/readyz")[0] == 200
            except OSError:
                return False
        wait_until(ready, 15, 0.2, "the agent ready (registered through the policies)")
        reg = env.kube.get(node + node_a)["metadata"]["annotations"].get(gpu.REGISTER, "")
        check(T4_UUID in reg, f"node {node_a}'s {gpu.REGISTER} is not the agent's: {reg[:200]}")
        status, text, www = agent_http(port, "/metrics", with_headers=True)
        check(status == 401 and (www or "").startswith("Bearer"),
              f"agent /metrics without a token: HTTP {status} {www!r} {text[:200]}")
        status, text = agent_http(port, "/metrics", unbound)
        check(status == 403, f"agent /metrics as {sa_name} (no tessera-reader): HTTP {status} "
                             f"{text[:200]}")
        status, text = agent_http(port, "/metrics", c.reader_token)
        patches = [float(ln.split()[1]) for ln in text.splitlines()
                   if ln.startswith("tessera_agent_registration_patches_total ")]
        check(status == 200 and patches and patches[0] >= 1,
              f"agent /metrics as tessera-e2e-reader: HTTP {status} {text[:300]}")
        check(agent_http(port, "/healthz")[0] == 200, "agent /healthz without a token")
        say(f"agent on {node_a} as {sa_name}: registered {T4_UUID}; /metrics 401 without a "
            f"token, 403 as {sa_name}, 200 as tessera-e2e-reader; /healthz open")
    finally:
        if agent is not None and agent.running():
            agent.stop(5)
        env.kube.delete(anchor_path)


@scenario("f", "two tessera replicas with --leader-elect: one ready leader, the follower does "
               "not schedule, failover after kill -9", 150)
def s_leader_election(env: Env, ns: str, group: str):
    c = env.cluster
    env.require_main().stop()  # replaced by the two replicas below
    c.create_node(f"{group}-n1", [gpu.sharing_gpu(f"GPU-{group}-0", 0)], group)
    reps = []
    for ident in ("replica-a", "replica-b"):
        t = c.new_tessera(f"tessera-{ident}", ["--leader-elect", "--leader-elect-namespace",
                                               NAMESPACE, "--leader-elect-name", LEASE_NAME,
                                               "--leader-elect-identity", ident])
        reps.append((ident, t.start()))
    c.proxy.set_backends([t.port for _, t in reps])

    def one_leader():
        for i, t in reps:
            if not t.proc.running():
                raise Fail(f"{t.name} exited with code {t.proc.popen.returncode}: "
                           f"{t.proc.log_tail(3)}")
        ready = [(i, t) for i, t in reps if t.status("/readyz") == 200]
        return ready[0] if len(ready) == 1 else None
    leader_id, leader = wait_until(one_leader, 45, 0.5, "exactly one replica with /readyz 200")
    follower_id, follower = next((i, t) for i, t in reps if t is not leader)
    time.sleep(3)
    check(leader.status("/readyz") == 200 and follower.status("/readyz") != 200,
          f"readiness flapped: leader {leader.status('/readyz')}, "
          f"follower {follower.status('/readyz')}")
    check(follower.status("/healthz") == 200, "follower /healthz is not 200")
    lease = env.kube.get(f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/"
                         f"{LEASE_NAME}")
    holder = lease["spec"].get("holderIdentity")
    say(f"leader {leader_id}, lease holder {holder!r}")
    check(holder and holder.startswith(leader_id), f"lease holder {holder!r} is not {leader_id}")
    # The follower must not place pods. A pod kube-scheduler ignores (unknown schedulerName):
    probe = env.kube.create_pod(gpu_pod(ns, "probe", {"nvidia.com/gpu": 1,
                                                      "nvidia.com/gpumem": 1000},
                                        group=group, scheduler="tessera-e2e-nobody"))
    t0 = time.monotonic()
    status, body = follower.post("/filter", {"Pod": probe, "Nodes": None,
                                              "NodeNames": [f"{group}-n1"]}, timeout=25)
    say(f"follower /filter after {time.monotonic() - t0:.1f}s: HTTP {status} {str(body)[:160]}")
    check(status is not None, f"follower did not answer /filter within 25s: {body}")
    check(status != 200 or (isinstance(body, dict) and body.get("Error")),
          f"follower answered /filter without an error: {body}")
    time.sleep(1)
    ann = env.kube.pod(ns, "probe")["metadata"].get("annotations") or {}
    check(gpu.VGPU_NODE not in ann, f"follower wrote {gpu.VGPU_NODE} on the probe pod: {ann}")
    env.kube.create_pod(gpu_pod(ns, "via-leader", {"nvidia.com/gpu": 1,
                                                   "nvidia.com/gpumem": 1000}, group=group))
    env.wait_bound(ns, ["via-leader"], 30)
    leader.kill()
    t0 = time.monotonic()
    wait_until(lambda: follower.status("/readyz") == 200, 40, 0.5,
               f"{follower_id} to become ready after the leader was killed")
    took = time.monotonic() - t0
    say(f"{follower_id} ready {took:.1f}s after kill -9 of {leader_id}")
    check(took <= 30, f"failover took {took:.1f}s (> 30s)")
    env.kube.create_pod(gpu_pod(ns, "via-new-leader", {"nvidia.com/gpu": 1,
                                                       "nvidia.com/gpumem": 1000}, group=group))
    bound = env.wait_bound(ns, ["via-leader", "via-new-leader"], 40)
    problems, _ = gpu.check_assignments(list(bound.values()), env.node_gpus(group))
    check(not problems, "; ".join(problems))


# --- runner ------------------------------------------------------------------------------------
def dump_diagnostics(env: Env, ns: str) -> None:
    print("  --- pods:")
    try:
        for p in env.kube.pods(ns)[:15]:
            print("   ", describe(p)[:600])
    except Exception as e:  # noqa: BLE001
        print(f"    (cannot list pods: {e})")
    for t in env.cluster.tesseras:
        print(f"  --- {t.name} log (last 40 lines, {t.proc.log_path}):")
        print(t.proc.log_tail(40))
    for name in ("kube-scheduler", "kube-apiserver"):
        p = env.cluster.procs.get(name)
        if p:
            print(f"  --- {name} log (last 15 lines, {p.log_path}):")
            print(p.log_tail(15))
    p = env.cluster.procs.get("kube-apiserver")
    if p:
        calls = [ln for ln in p.log_tail(3000).splitlines() if "failed calling webhook" in ln]
        if calls:
            print("  --- kube-apiserver webhook call failures (last 3):")
            print("\n".join(calls[-3:]))


def cleanup(env: Env, ns: str, group: str) -> None:
    try:
        env.kube.delete_all_pods(ns)
        wait_until(lambda: not env.kube.pods(ns), 20, 0.3, f"pods of {ns} deleted")
        env.cluster.delete_nodes(group)
    except Exception as e:  # noqa: BLE001
        print(f"  (cleanup of {ns}: {e})")


def tessera_usable(path: str) -> str | None:
    """None when `tessera serve --help` works, else why not."""
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        return f"{path} is not an executable file (build it first)"
    r = subprocess.run([path, "serve", "--help"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        return f"`{path} serve --help` exited {r.returncode}: {(r.stdout + r.stderr)[-300:]}"
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bins", required=True, help="dir with etcd, kube-apiserver, "
                                                  "kube-scheduler, kubectl")
    ap.add_argument("--tessera", required=True, help="tessera binary")
    ap.add_argument("--repo", default=os.path.dirname(os.path.dirname(os.path.abspath(
        __file__))))
    ap.add_argument("--only", default="", help="comma-separated scenario keys (e.g. o,w)")
    ap.add_argument("--work", default="", help="work dir (default: a new temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the work dir")
    ap.add_argument("--node-lock", default="hami", choices=["hami", "none"])
    ap.add_argument("--hami", default=os.environ.get("TESSERA_HAMI_DIR"),
                    help="a directory with HAMi's scheduler binary and its rendered chart "
                         "(e2e/README.md), for scenario u (skipped without it)")
    args = ap.parse_args()

    procs.install_cleanup()
    work = args.work or tempfile.mkdtemp(prefix="tessera-e2e-")
    os.makedirs(work, exist_ok=True)
    print(f"e2e-real: work dir {work}", flush=True)
    only = {k.strip() for k in args.only.split(",") if k.strip()}
    selected = [s for s in SCENARIOS if not only or s[0] in only]
    passed = failed = skipped = 0
    t_all = time.monotonic()
    cluster = Cluster(work=work, bins=args.bins, repo=args.repo, tessera_bin=args.tessera,
                      node_lock=args.node_lock)
    try:
        try:
            cluster.start()
        except Exception:  # noqa: BLE001
            print("FAIL control plane did not start:")
            traceback.print_exc()
            for p in cluster.procs.values():
                print(f"--- {p.name} ({p.log_path}):\n{p.log_tail(30)}")
            print(f"e2e-real: 0 passed, {len(selected)} failed")
            return 1
        print(f"e2e-real: control plane up in {cluster.startup_seconds:.1f}s "
              f"(apiserver :{cluster.api_port}, extender proxy :{cluster.proxy_port})",
              flush=True)
        env = Env(cluster, args)
        why = tessera_usable(args.tessera)
        if why:
            env.main_error = why
        else:
            env.main = cluster.new_tessera("tessera")
            env.main.start()
            cluster.proxy.set_backends([env.main.port])
            try:
                env.main.wait_ready(60)
                print(f"e2e-real: tessera serve ready on :{env.main.port}", flush=True)
            except Exception as e:  # noqa: BLE001
                env.main_error = f"never ready: {e}\n{env.main.proc.log_tail(30)}"
        if env.main_error:
            print(f"e2e-real: tessera serve unavailable: {env.main_error}", flush=True)
        for key, title, timeout, fn in selected:
            ns = f"e2e-{key}"
            env.kube.ensure_namespace(ns)
            t0 = time.monotonic()
            print(f"--- [{key}] {title}", flush=True)
            ok, detail = True, ""
            # Scenario bodies run in the main thread (they restart processes) and bound every
            # wait themselves; the timer only reports an overrun while it happens.
            timer = threading.Timer(timeout, lambda k=key, t=timeout: print(
                f"  !! [{k}] exceeded its {t:.0f}s budget", flush=True))
            timer.start()
            err = None
            try:
                fn(env, ns, f"g{key}")
            except Exception as e:  # noqa: BLE001 - reported below; signals still abort
                err = e
            finally:
                timer.cancel()
            elapsed = time.monotonic() - t0
            if isinstance(err, Skip):
                skipped += 1
                print(f"SKIP [{key}] {title}: {err}", flush=True)
                cleanup(env, ns, f"g{key}")
                continue
            if err is not None:
                ok = False
                if isinstance(err, (Abort, TimeoutError)):
                    detail = str(err)
                else:
                    detail = "".join(traceback.format_exception(err)).rstrip()
            elif elapsed > timeout:
                ok, detail = False, f"took {elapsed:.0f}s, budget {timeout:.0f}s"
            if ok:
                passed += 1
                print(f"PASS [{key}] {title} ({elapsed:.1f}s)", flush=True)
            else:
                failed += 1
                print(f"FAIL [{key}] {title} ({elapsed:.1f}s)\n  {detail}", flush=True)
                dump_diagnostics(env, ns)
            cleanup(env, ns, f"g{key}")
    finally:
        cluster.stop()
        procs.kill_all()
        print(f"e2e-real: total {time.monotonic() - t_all:.0f}s", flush=True)
        if failed == 0 and not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"e2e-real: logs kept in {work}", flush=True)
    tail = f", {skipped} skipped" if skipped else ""
    print(f"e2e-real: {passed} passed, {failed} failed{tail}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
