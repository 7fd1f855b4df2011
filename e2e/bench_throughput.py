#!/usr/bin/env python3
"""End-to-end scheduling throughput through the real kube-scheduler (issue 5, "Measurements").

For each cluster size: one control plane (etcd, kube-apiserver, kube-scheduler) with one
`tessera serve` as its extender (no node lock, no leader election; kube-scheduler calls tessera
directly, without the harness's Service proxy), N fake GPU-sharing nodes (HAMi register
annotation, 8 GPUs each, as e2e/real_e2e.py makes them), then:

  1. GPU pods (gpu 1, gpumem 4000, gpucores 20; 40 fit per node) created at once from a thread
     pool; time from the first create until a watch has seen every pod with spec.nodeName.
  2. The same number of CPU-only pods (cpu 100m, no managed resource: kube-scheduler never calls
     the extender for them) on the same nodes: kube-scheduler alone.
  3. Pending-retry delay: on a node of its own whose GPUs are all taken, a pod that needs a
     whole GPU is refused and left pending; one GPU is freed (a pod deleted); the time until the
     pending pod is bound (kube-scheduler's own requeue, and tessera's --requeue-after nudge);
     then the same after a ResourceQuota is raised and after a node joins with free GPUs.
  4. tessera's /metrics (tessera_filter_duration_seconds, tessera_bind_duration_seconds, deltas
     over phase 1): mean time tessera spent per pod and its share of the wall time; plus CPU
     seconds used by each process during each phase (/proc/PID/stat) and each process's peak
     resident memory so far (VmHWM, /proc/PID/status).

Not part of the test suite. Usage:

  python3 e2e/bench_throughput.py [--nodes 100,1000] [--pods N] [--keep] [--json FILE]

Env: TESSERA_BIN (default build/release/src/tessera), TESSERA_K8S_BINS (default: the directory
`e2e/k8s-bins/build.sh` prints).
"""

import argparse
import concurrent.futures
import http.client
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from lib import gpu, hami, procs  # noqa: E402
from lib.procs import free_port  # noqa: E402
from lib.cluster import SCHEDULER_NAME, Cluster, Tessera, wait_until  # noqa: E402
from lib.kube import ApiError  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
GROUP = "bench"
GPUS_PER_NODE = 8
GPU_LIMITS = {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "4000", "nvidia.com/gpucores": "20"}
# --mode mig: A100-40GB GPUs in MIG mode (profiles from data/mig-profiles.json), each pod one
# 1g.5gb instance (4000 MiB): 7 per GPU.
MIG_MODEL = "NVIDIA A100-SXM4-40GB"
MIG_PROFILES = ["1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"]
MIG_LIMITS = {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "4000"}
MIG_PODS_PER_NODE_FIT = GPUS_PER_NODE * 7
MODE = "sharing"  # set by --mode
PODS_PER_NODE_FIT = GPUS_PER_NODE * 5  # 20 cores each: 5 per GPU (memory allows 6)
CLK_TCK = os.sysconf("SC_CLK_TCK")


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --- the control plane, with kube-scheduler pointed straight at tessera -----------------------
class BenchCluster(Cluster):
    """Cluster whose kube-scheduler calls tessera's port directly (no Python proxy in the path)
    and optionally with a different client QPS/burst."""

    def __init__(self, *, sched_qps: float | None, sched_burst: int | None,
                 tessera_args: list[str] | None = None, extender: str = "loopback",
                 node_lock: str = "hami", **kw):
        # No NodeLockReleaser thread (it lists every node 7 times a second): with the node lock,
        # the phases release it from their watch (DevicePluginStandIn).
        super().__init__(node_lock=node_lock, lock_releaser=False, **kw)
        self.sched_qps, self.sched_burst = sched_qps, sched_burst
        self.tessera_args = tessera_args or []
        self.extender = extender
        self.main: Tessera | None = None

    def _start_scheduler(self) -> None:
        if self.proxy:
            self.proxy.close()
            self.proxy = None
        # The Tessera object picks its port now; it is started once the nodes exist.
        if self.extender == "loopback":
            # As deploy/ ships it: kube-scheduler in tessera's pod calls --extender-bind,
            # plain HTTP on 127.0.0.1.
            port = free_port()
            self.main = self.new_tessera("tessera", self.tessera_args +
                                         ["--extender-bind", f"127.0.0.1:{port}"])
            self.proxy_port, self.extender_tls = port, False
        else:  # HTTPS to tessera's main port, verified with the harness's CA
            self.main = self.new_tessera("tessera", self.tessera_args)
            self.proxy_port = self.main.port
        super()._start_scheduler()

    def _scheduler_config(self) -> str:
        path = super()._scheduler_config()
        if self.sched_qps is None and self.sched_burst is None:
            return path
        with open(path, encoding="utf-8") as f:
            text = f.read()
        extra = ""
        if self.sched_qps is not None:
            extra += f"  qps: {self.sched_qps}\n"
        if self.sched_burst is not None:
            extra += f"  burst: {self.sched_burst}\n"
        text = text.replace("clientConnection:\n", "clientConnection:\n" + extra, 1)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path


# --- measurement helpers -----------------------------------------------------------------------
def cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            stat = f.read()
    except OSError:
        return 0.0
    fields = stat[stat.rfind(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def cpu_snapshot(cluster: BenchCluster) -> dict[str, float]:
    out = {name: cpu_seconds(p.pid) for name, p in cluster.procs.items() if p.running()}
    if cluster.main and cluster.main.proc.running():
        out["tessera"] = cpu_seconds(cluster.main.proc.pid)
    t = os.times()
    out["harness"] = t.user + t.system
    return out


def peak_rss_mib(pid: int, field: str = "VmHWM") -> float | None:
    """VmHWM: the most resident memory the process has held since it started (VmRSS: now)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def rss_snapshot(cluster: BenchCluster) -> dict[str, float | None]:
    out = {name: peak_rss_mib(p.pid) for name, p in cluster.procs.items() if p.running()}
    if cluster.main and cluster.main.proc.running():
        out["tessera"] = peak_rss_mib(cluster.main.proc.pid)
    return out


def cpu_delta(a: dict, b: dict) -> dict[str, float]:
    return {k: round(b[k] - a.get(k, 0.0), 2) for k in b}


def parse_metrics(text: str) -> dict[str, float]:
    """name{labels} -> value, for the lines we use."""
    out = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        if line.startswith(("tessera_", "scheduler_scheduling_attempt_duration_seconds_",
                            "scheduler_scheduling_algorithm_duration_seconds_",
                            "apiserver_request_duration_seconds_sum",
                            "apiserver_request_duration_seconds_count")):
            key, _, val = line.rpartition(" ")
            try:
                out[key] = float(val)
            except ValueError:
                pass
    return out


def metric_sum(m: dict[str, float], prefix: str) -> float:
    """Sum of all series whose name{labels} starts with prefix (e.g. over result labels)."""
    return sum(v for k, v in m.items() if k == prefix or k.startswith(prefix + "{"))


def tessera_metrics(t: Tessera | None) -> dict[str, float]:
    """tessera's /metrics; {} while it is stopped (the HAMi phase)."""
    if t is None or not t.proc.running():
        return {}
    status, text = t.get_text("/metrics")
    if status != 200:
        raise RuntimeError(f"tessera /metrics: HTTP {status}")
    return parse_metrics(text)


def scheduler_metrics(cluster: BenchCluster, proc: str = "kube-scheduler") -> dict[str, float]:
    """kube-scheduler's /metrics with the admin certificate (delegated authn/authz); {} when it
    cannot be read."""
    p = cluster.procs[proc]
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.load_cert_chain(cluster.admin.cert, cluster.admin.key)
    try:
        c = http.client.HTTPSConnection("127.0.0.1", p.port, context=ctx, timeout=10)
        c.request("GET", "/metrics")
        r = c.getresponse()
        body = r.read().decode("utf-8", "replace")
        c.close()
    except (OSError, http.client.HTTPException):
        return {}
    return parse_metrics(body) if r.status == 200 else {}


def apiserver_metrics(cluster: BenchCluster) -> dict[str, float]:
    try:
        text = cluster.kube.request("GET", "/metrics", timeout=30)
    except Exception:  # noqa: BLE001 - optional
        return {}
    return parse_metrics(text) if isinstance(text, str) else {}


# (verb, subresource) of pod writes -> label in the results
POD_WRITES = {("PATCH", ""): "pod_patch", ("POST", "binding"): "binding", ("POST", ""): "pod_create"}


def apiserver_write_latency(m0: dict, m1: dict) -> dict:
    """Mean server-side latency (ms) and count of pod writes between two /metrics snapshots."""
    acc: dict[str, list[float]] = {}
    for key, v1 in m1.items():
        if not key.startswith("apiserver_request_duration_seconds_") or 'resource="pods"' not in key:
            continue
        labels = dict(kv.split("=", 1) for kv in key[key.index("{") + 1:-1].split(","))
        labels = {k: v.strip('"') for k, v in labels.items()}
        what = POD_WRITES.get((labels.get("verb"), labels.get("subresource", "")))
        if not what:
            continue
        slot = acc.setdefault(what, [0.0, 0.0])
        slot[0 if key.startswith("apiserver_request_duration_seconds_sum") else 1] += \
            v1 - m0.get(key, 0.0)
    return {w: {"count": int(c), "mean_ms": round(1000 * s / c, 2) if c else None}
            for w, (s, c) in acc.items()}


class BindWatch:
    """Watches the pods of one namespace and records when each is first seen with
    spec.nodeName (monotonic clock)."""

    def __init__(self, cluster: BenchCluster, ns: str, on_bound=None):
        """on_bound(name, node): called on the watch's thread when a pod is first seen bound."""
        self.cluster, self.ns, self.on_bound = cluster, ns, on_bound
        self.bound: dict[str, float] = {}
        self.nodes: dict[str, str] = {}
        self.error: str | None = None
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._stop = False
        rv = cluster.kube.get(f"/api/v1/namespaces/{ns}/pods")["metadata"]["resourceVersion"]
        self._conn = http.client.HTTPSConnection("127.0.0.1", cluster.api_port,
                                                 context=cluster.kube.ctx, timeout=600)
        q = urllib.parse.urlencode({"watch": "1", "resourceVersion": rv,
                                    "timeoutSeconds": "3600"})
        self._conn.request("GET", f"/api/v1/namespaces/{ns}/pods?{q}",
                           headers={"Accept": "application/json"})
        self._resp = self._conn.getresponse()
        if self._resp.status != 200:
            raise RuntimeError(f"watch {ns}: HTTP {self._resp.status}")
        self.want = 0
        self.thread = threading.Thread(target=self._loop, daemon=True, name=f"watch-{ns}")
        self.thread.start()

    def _loop(self) -> None:
        try:
            while not self._stop:
                line = self._resp.readline()
                if not line:
                    break
                now = time.monotonic()
                ev = json.loads(line)
                obj = ev.get("object") or {}
                if ev.get("type") == "ERROR":
                    self.error = str(obj.get("message"))
                    break
                name = obj.get("metadata", {}).get("name")
                node = obj.get("spec", {}).get("nodeName")
                if name and node:
                    with self._lock:
                        first = name not in self.bound
                        if first:
                            self.bound[name] = now
                            self.nodes[name] = node
                            if self.want and len(self.bound) >= self.want:
                                self._done.set()
                    if first and self.on_bound:
                        self.on_bound(name, node)
        except Exception as e:  # noqa: BLE001 - reported by wait()
            if not self._stop:
                self.error = f"{type(e).__name__}: {e}"
        self._done.set()

    def wait(self, want: int, timeout: float) -> bool:
        with self._lock:
            self.want = want
            if len(self.bound) >= want:
                return True
            if self.error is None:
                self._done.clear()  # set by an earlier, smaller want
        # The API server closes a watcher it finds too slow ("Forcing ... watcher close due to
        # unresponsiveness") on saturated cores, and the stream can then stall rather than end:
        # when 20 s pass with no pod newly seen bound, a LIST counts the bound pods instead (their
        # time is when the LIST saw them, later than the bind: it can only lower the rate).
        deadline = time.monotonic() + timeout
        seen, last_progress = -1, time.monotonic()
        while not self._done.wait(min(5.0, max(0.0, deadline - time.monotonic()))):
            now = time.monotonic()
            if now >= deadline:
                break
            with self._lock:
                count = len(self.bound)
            if count != seen:
                seen, last_progress = count, now
            elif now - last_progress >= 20:
                self._catch_up_by_list()
                last_progress = now
        with self._lock:
            return len(self.bound) >= want

    def _catch_up_by_list(self) -> None:
        pods = self.cluster.kube.get(f"/api/v1/namespaces/{self.ns}/pods")["items"]
        now, missed = time.monotonic(), 0
        with self._lock:
            for p in pods:
                name, node = p["metadata"]["name"], p.get("spec", {}).get("nodeName")
                if node and name not in self.bound:
                    self.bound[name], self.nodes[name] = now, node
                    missed += 1
            if self.want and len(self.bound) >= self.want:
                self._done.set()
        if missed:
            self.listed = getattr(self, "listed", 0) + missed
            say(f"  watch {self.ns} stalled: {missed} bound pods found by LIST")

    def close(self) -> None:
        self._stop = True
        try:
            self._conn.sock.shutdown(2)
        except (OSError, AttributeError):
            pass
        self._conn.close()


def make_pod(ns: str, name: str, kind: str, scheduler: str = SCHEDULER_NAME) -> dict:
    annotations = {}
    if kind == "gpu" and MODE == "mig":
        res = {"limits": dict(MIG_LIMITS)}
        annotations["nvidia.com/vgpu-mode"] = "mig"
    elif kind == "gpu":
        res = {"limits": dict(GPU_LIMITS)}
    else:
        res = {"requests": {"cpu": "100m", "memory": "64Mi"}}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": {"tessera-bench": kind},
                         "annotations": annotations},
            "spec": {"schedulerName": scheduler, "terminationGracePeriodSeconds": 0,
                     "nodeSelector": {"tessera-e2e/group": GROUP},
                     "containers": [{"name": "c0", "image": "registry.k8s.io/pause:3.10",
                                     "resources": res}]}}


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def run_phase(cluster: BenchCluster, kind: str, n: int, workers: int,
              timeout: float, *, ns: str | None = None, scheduler: str = SCHEDULER_NAME,
              sched_proc: str = "kube-scheduler", on_bound=None) -> dict:
    """Creates n pods of `kind` for `scheduler` at once and waits until all are bound; ns
    defaults to bench-<kind>, sched_proc is the kube-scheduler process whose metrics count."""
    ns = ns or f"bench-{kind}"
    cluster.kube.ensure_namespace(ns)
    pods = [make_pod(ns, f"{kind}-{i:05d}", kind, scheduler) for i in range(n)]
    watch = BindWatch(cluster, ns, on_bound)
    t_metrics0 = tessera_metrics(cluster.main)
    s_metrics0 = scheduler_metrics(cluster, sched_proc)
    a_metrics0 = apiserver_metrics(cluster)
    cpu0 = cpu_snapshot(cluster)
    created: dict[str, float] = {}
    lock = threading.Lock()

    def create(p):
        cluster.kube.create_pod(p)
        with lock:
            created[p["metadata"]["name"]] = time.monotonic()

    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        for f in [ex.submit(create, p) for p in pods]:
            f.result()
    t_created = time.monotonic()
    ok = watch.wait(n, timeout)
    t_end = time.monotonic()
    cpu1 = cpu_snapshot(cluster)
    time.sleep(0.5)  # let the last bind's metric land
    t_metrics1 = tessera_metrics(cluster.main)
    s_metrics1 = scheduler_metrics(cluster, sched_proc)
    a_metrics1 = apiserver_metrics(cluster)
    watch.close()
    bound = dict(watch.bound)
    if not ok:
        say(f"  {kind}: only {len(bound)}/{n} bound after {timeout:.0f}s "
            f"(watch error: {watch.error})")
    last = max(bound.values()) if bound else t_end
    first = min(bound.values()) if bound else t_end
    lat = [bound[k] - created[k] for k in bound if k in created]
    after_created = sorted(v for v in bound.values() if v > t_created)
    wall = last - t0
    r = {
        "kind": kind, "pods": n, "bound": len(bound), "complete": ok,
        "create_s": round(t_created - t0, 2),
        "wall_s": round(wall, 2),
        "pods_per_s": round(len(bound) / wall, 1) if wall > 0 else None,
        "first_bind_s": round(first - t0, 2),
        # Rate once creation is over: the scheduler alone sets the pace.
        "rate_after_create": (round(len(after_created) / (last - t_created), 1)
                              if len(after_created) > 10 and last > t_created else None),
        "latency_p50_s": round(pct(lat, 0.5), 2), "latency_p99_s": round(pct(lat, 0.99), 2),
        "nodes_used": len(set(watch.nodes.values())),
        "cpu_s": cpu_delta(cpu0, cpu1),
        "peak_rss_mib": rss_snapshot(cluster),
        "tessera_rss_now_mib": (peak_rss_mib(cluster.main.proc.pid, "VmRSS")
                                if cluster.main and cluster.main.proc.running() else None),
        # tessera's heap by glibc's count at the end of the phase (tessera_heap_bytes): live
        # data against what the allocator keeps.
        "tessera_heap_mib": {k.split('"')[1]: round(v / 2**20, 1) for k, v in t_metrics1.items()
                             if k.startswith("tessera_heap_bytes{")},
    }
    d = {k: t_metrics1.get(k, 0.0) - t_metrics0.get(k, 0.0) for k in t_metrics1}
    fsum = d.get("tessera_filter_duration_seconds_sum", 0.0)
    fcnt = d.get("tessera_filter_duration_seconds_count", 0.0)
    bsum = d.get("tessera_bind_duration_seconds_sum", 0.0)
    bcnt = d.get("tessera_bind_duration_seconds_count", 0.0)
    r["tessera"] = {
        "filter_calls": int(fcnt), "bind_calls": int(bcnt),
        "filter_results": {k.split('"')[1]: int(v) for k, v in d.items()
                           if k.startswith("tessera_filter_requests_total{") and v},
        "bind_results": {k.split('"')[1]: int(v) for k, v in d.items()
                         if k.startswith("tessera_bind_requests_total{") and v},
        "filter_sum_s": round(fsum, 3), "bind_sum_s": round(bsum, 3),
        "filter_mean_ms": round(1000 * fsum / fcnt, 2) if fcnt else None,
        "bind_mean_ms": round(1000 * bsum / bcnt, 2) if bcnt else None,
        "per_pod_ms": round(1000 * (fsum + bsum) / max(len(bound), 1), 2),
        # Cumulative share of filter calls at or under each latency bound (histogram buckets).
        "filter_le": {k.split('"')[1]: round(v / fcnt, 3) for k, v in d.items()
                      if k.startswith("tessera_filter_duration_seconds_bucket{") and fcnt
                      and k.split('"')[1] in ("0.001", "0.0025", "0.005", "0.01", "0.025", "0.05")},
        "share_of_wall": round((fsum + bsum) / wall, 3) if wall > 0 else None,
        "filter_share_of_wall": round(fsum / wall, 3) if wall > 0 else None,
    }
    if a_metrics1:
        r["apiserver_pod_writes"] = apiserver_write_latency(a_metrics0, a_metrics1)
    if s_metrics1:
        sd = {k: s_metrics1.get(k, 0.0) - s_metrics0.get(k, 0.0) for k in s_metrics1}
        att_sum = metric_sum(sd, "scheduler_scheduling_attempt_duration_seconds_sum")
        att_cnt = metric_sum(sd, "scheduler_scheduling_attempt_duration_seconds_count")
        alg_sum = metric_sum(sd, "scheduler_scheduling_algorithm_duration_seconds_sum")
        alg_cnt = metric_sum(sd, "scheduler_scheduling_algorithm_duration_seconds_count")
        r["kube_scheduler"] = {
            "attempts": int(att_cnt),
            "attempt_mean_ms": round(1000 * att_sum / att_cnt, 2) if att_cnt else None,
            "algorithm_mean_ms": round(1000 * alg_sum / alg_cnt, 2) if alg_cnt else None,
            "attempt_share_of_wall": round(att_sum / wall, 3) if wall > 0 else None,
        }
    return r


RETRY_GROUP = "bench-retry"
WHOLE_GPU = {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "24576", "nvidia.com/gpucores": "100"}


def refused_by_scheduler(pod: dict) -> bool:
    return any(c.get("type") == "PodScheduled" and c.get("status") == "False"
               for c in pod.get("status", {}).get("conditions", []))


def retry_phase(cluster: BenchCluster, rounds: int, pending_s: float, *,
                hami_run: "hami.Running | None" = None, quota: bool = True) -> dict:
    """How soon a pending GPU pod is bound once a GPU frees (HAMi #1368: about 5 minutes there).
    One node of its own (8 GPUs, each taken whole by a blocker pod); per round a probe pod that
    needs a whole GPU is created, refused, left pending `pending_s`, then one blocker is deleted:
    the delay is from that delete until a watch sees the probe bound. Then, with `quota`, the
    same after a ResourceQuota is raised, and (tessera only) after a node joins the group
    (node_added_delay). With hami_run the pods are HAMi's scheduler's (on a
    node and in namespaces of their own), and nothing reads tessera's metrics."""
    suffix = "-hami" if hami_run else ""
    group = RETRY_GROUP + suffix
    ns = "bench-retry" + suffix
    scheduler = hami_run.profile if hami_run else SCHEDULER_NAME
    cluster.kube.ensure_namespace(ns)
    name = f"{group}-n0"
    devs = [gpu.sharing_gpu(f"GPU-{group}-{j}", j, devmem=24576, count=10)
            for j in range(GPUS_PER_NODE)]
    if hami_run:
        cluster.create_node(name, devs, group)
        wait_until(lambda: f'node="{name}"' in (hami_run.metrics() or ""), 60, 0.2,
                   f"HAMi's scheduler to register {name}")
    else:
        gpus_before = cluster_gpus(cluster)
        cluster.create_node(name, devs, group)
        wait_tessera_sees(cluster, gpus_before + GPUS_PER_NODE, 60)

    def pod(pod_name: str) -> dict:
        p = make_pod(ns, pod_name, "gpu", scheduler)
        p["spec"]["nodeSelector"] = {"tessera-e2e/group": group}
        p["spec"]["containers"][0]["resources"] = {"limits": dict(WHOLE_GPU)}
        return p

    locks = hami_run is not None or cluster.node_lock == "hami"
    stand_in = DevicePluginStandIn(cluster, ns) if locks else None
    watch = BindWatch(cluster, ns, stand_in.on_bound if stand_in else None)
    for i in range(GPUS_PER_NODE):
        cluster.kube.create_pod(pod(f"blocker-{i}"))
    if not watch.wait(GPUS_PER_NODE, 120):
        raise RuntimeError(f"retry phase: blockers not bound ({watch.error})")
    m0 = tessera_metrics(cluster.main)
    delays = []
    for r in range(rounds):
        probe = f"probe-{r}"
        cluster.kube.create_pod(pod(probe))
        wait_until(lambda: refused_by_scheduler(cluster.kube.pod(ns, probe)), 60, 0.1,
                   f"{probe} refused")
        time.sleep(pending_s)
        t = time.monotonic()
        cluster.kube.delete_pod(ns, f"blocker-{r}")
        if not watch.wait(GPUS_PER_NODE + r + 1, 600):
            raise RuntimeError(f"retry phase: {probe} not bound within 600s ({watch.error})")
        delays.append(watch.bound[probe] - t)
    m1 = tessera_metrics(cluster.main)
    requeued = (m1.get("tessera_requeued_pods_total", 0.0) -
                m0.get("tessera_requeued_pods_total", 0.0))
    result = {"rounds": rounds, "pending_s": pending_s,
              "delay_s": [round(d, 2) for d in delays],
              "delay_p50_s": round(pct(delays, 0.5), 2), "delay_max_s": round(max(delays), 2),
              "requeue_nudges": int(requeued), "quota_raise_delay_s": None}
    if not quota:
        watch.close()
        if stand_in:
            stand_in.close()
        cluster.kube.delete_all_pods(ns)
        return result

    # A quota raised: kube-scheduler watches no ResourceQuota, so only tessera's nudge
    # (--requeue-after) tries the pod again. A GPU is freed first; the quota keeps the probe out.
    qns = "bench-retry-quota" + suffix
    cluster.kube.ensure_namespace(qns)
    quotas = f"/api/v1/namespaces/{qns}/resourcequotas"
    cluster.kube.create(quotas, {"apiVersion": "v1", "kind": "ResourceQuota",
                                 "metadata": {"name": "gpu", "namespace": qns},
                                 "spec": {"hard": {"limits.nvidia.com/gpumem": "1000"}}})
    if hami_run:
        time.sleep(2)  # HAMi's quota informer; it exposes nothing to wait on
    else:
        wait_until(lambda: f'namespace="{qns}"' in cluster.main.get_text("/metrics")[1], 60,
                   0.2, "tessera to see the ResourceQuota")
    cluster.kube.delete_pod(ns, f"blocker-{rounds}")
    q_stand_in = DevicePluginStandIn(cluster, qns) if locks else None
    qwatch = BindWatch(cluster, qns, q_stand_in.on_bound if q_stand_in else None)
    probe = pod("probe-quota")
    probe["metadata"]["namespace"] = qns
    cluster.kube.create_pod(probe)
    wait_until(lambda: refused_by_scheduler(cluster.kube.pod(qns, "probe-quota")), 60, 0.1,
               "probe-quota refused")
    time.sleep(pending_s)
    t = time.monotonic()
    cluster.kube.merge_patch(f"{quotas}/gpu",
                             {"spec": {"hard": {"limits.nvidia.com/gpumem": "100000"}}})
    if not qwatch.wait(1, 600):
        raise RuntimeError(f"retry phase: probe-quota not bound within 600s ({qwatch.error})")
    quota_delay = qwatch.bound["probe-quota"] - t
    qwatch.close()
    result["quota_raise_delay_s"] = round(quota_delay, 2)
    result["node_add_delay_s"] = None if hami_run else node_added_delay(
        cluster, group, devs, pod, watch, pending_s)
    watch.close()
    for si in (stand_in, q_stand_in):
        if si:
            si.close()
    cluster.kube.delete_all_pods(qns)
    cluster.kube.delete_all_pods(ns)
    return result


def node_added_delay(cluster: BenchCluster, group: str, devs: list, pod, watch: "BindWatch",
                     pending_s: float) -> float:
    """A node added: the group's node is full, a probe that needs a whole GPU there is refused
    and left pending, then a second node of the group registers with free GPUs; the delay is from
    its creation until the probe is bound (kube-scheduler's own requeue on the node's arrival, and
    tessera's nudge once its node feed shows room)."""
    ns = watch.ns
    probe = "probe-node-added"
    want = len(watch.bound) + 1
    cluster.kube.create_pod(pod(probe))
    wait_until(lambda: refused_by_scheduler(cluster.kube.pod(ns, probe)), 60, 0.1,
               f"{probe} refused")
    time.sleep(pending_s)
    added = f"{group}-n1"
    t = time.monotonic()
    cluster.create_node(added, [dict(d, id=d["id"] + "-added") for d in devs], group)
    if not watch.wait(want, 600):
        raise RuntimeError(f"retry phase: {probe} not bound within 600s ({watch.error})")
    delay = watch.bound[probe] - t
    if watch.nodes.get(probe) != added:
        raise RuntimeError(f"retry phase: {probe} bound to {watch.nodes.get(probe)}, not {added}")
    return round(delay, 2)


def cluster_gpus(cluster: BenchCluster) -> int:
    status, text = cluster.main.get_text("/metrics")
    return sum(1 for ln in text.splitlines() if ln.startswith("hami_gpu_memory_limit_bytes{"))


def delete_phase_pods(cluster: BenchCluster, kind: str) -> None:
    ns = f"bench-{kind}"
    cluster.kube.delete_all_pods(ns)
    wait_until(lambda: not cluster.kube.pods(ns), 120, 0.5, f"pods of {ns} deleted")


def create_nodes(cluster: BenchCluster, n: int, workers: int) -> None:
    def one(i: int):
        name = f"{GROUP}-n{i:04d}"
        if MODE == "mig":
            devs = [gpu.mig_gpu(REPO, f"GPU-{GROUP}-{i:04d}-{j}", MIG_MODEL, MIG_PROFILES, index=j)
                    for j in range(GPUS_PER_NODE)]
        else:
            devs = [gpu.sharing_gpu(f"GPU-{GROUP}-{i:04d}-{j}", j, devmem=24576, count=10)
                    for j in range(GPUS_PER_NODE)]
        cluster.create_node(name, devs, GROUP)
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        for f in [ex.submit(one, i) for i in range(n)]:
            f.result()


def wait_tessera_sees(cluster: BenchCluster, gpus: int, timeout: float) -> None:
    def seen():
        status, text = cluster.main.get_text("/metrics")
        return status == 200 and sum(1 for ln in text.splitlines()
                                     if ln.startswith("hami_gpu_memory_limit_bytes{")) >= gpus
    wait_until(seen, timeout, 0.5, f"tessera to report {gpus} GPUs")


# --- HAMi's scheduler on the same cluster (--hami) ----------------------------------------------
HAMI_NS = "bench-hami"
HAMI_LOCK = gpu.NODE_LOCK


def hami_overrides(flags: list[str]):
    """--hami-arg values: `-v=2` sets a flag of the chart's, `--debug=` (nothing after `=`) drops
    it."""
    for f in flags:
        key, _, value = f.partition("=")
        yield key, (value or None)


class DevicePluginStandIn:
    """What HAMi's device plugin does once a pod it scheduled reaches the node (kubelet Allocate):
    release the node's hami.io/mutex.lock that the pod's bind took (resourceVersion-guarded
    merge patch, as HAMi's ReleaseNodeLock). Without it every node stays locked for 5 minutes
    after its first pod. Runs on a pool, fed by the phase's watch."""

    def __init__(self, cluster: BenchCluster, ns: str, workers: int = 8):
        self.kube, self.ns = cluster.kube, ns
        self.pool = concurrent.futures.ThreadPoolExecutor(workers)
        self.released = 0
        self._lock = threading.Lock()

    def on_bound(self, name: str, node: str) -> None:
        self.pool.submit(self._release, name, node)

    def _release(self, name: str, node: str) -> None:
        path = f"/api/v1/nodes/{node}"
        for _ in range(10):
            md = self.kube.get(path)["metadata"]
            if not md.get("annotations", {}).get(HAMI_LOCK, "").endswith(f",{self.ns},{name}"):
                return
            try:
                self.kube.merge_patch(path, {"metadata": {"annotations": {HAMI_LOCK: None},
                                                          "resourceVersion":
                                                              md["resourceVersion"]}})
            except ApiError as e:
                if e.status == 409:
                    continue
                raise
            with self._lock:
                self.released += 1
            return

    def close(self) -> None:
        self.pool.shutdown(wait=True)


def hami_phase(cluster: BenchCluster, args, pods: int, gpus: int) -> dict:
    """The GPU phase again, on the same nodes, with HAMi's scheduler as the extender of a second
    kube-scheduler; tessera is stopped first so that both get the machine alone."""
    if cluster.main:
        cluster.main.stop()
    # By default HAMi's extender gets kube-scheduler's client limits of this run: the chart
    # leaves it at 5 QPS / burst 10, and registering a node takes it three GET+PATCH pairs, so
    # 1 000 nodes would take about 10 minutes before the first pod.
    chart_limits = args.hami_chart_client_limits
    running = hami.start(
        cluster, args.hami,
        lambda text: sum(1 for ln in text.splitlines()
                         if ln.startswith("hami_gpu_memory_limit_bytes{")) >= gpus,
        qps=None if chart_limits else args.scheduler_qps,
        burst=None if chart_limits else args.scheduler_burst,
        scheduler_qps=args.scheduler_qps, scheduler_burst=args.scheduler_burst,
        ready_timeout=120 + gpus / 4, overrides=dict(hami_overrides(args.hami_arg)))
    profile = running.profile
    say(f"HAMi's scheduler is up and sees every GPU (profile {profile})")
    stand_in = DevicePluginStandIn(cluster, HAMI_NS)
    try:
        r = run_phase(cluster, "gpu", pods, args.workers, max(120.0, pods / 3.0), ns=HAMI_NS,
                      scheduler=profile, sched_proc="kube-scheduler-hami",
                      on_bound=stand_in.on_bound)
    finally:
        stand_in.close()
    r["node_locks_released"] = stand_in.released
    del r["tessera"]
    if args.retry_rounds > 0:
        cluster.kube.delete_all_pods(HAMI_NS)
        r["retry"] = retry_phase(cluster, args.retry_rounds, args.retry_pending,
                                 hami_run=running, quota=args.hami_retry_quota)
        say(f"  HAMi pending-retry: a GPU freed -> the pending pod bound after "
            f"{r['retry']['delay_s']} s; a quota raised -> after "
            f"{r['retry']['quota_raise_delay_s']} s")
    return r


def patch_latency(cluster: BenchCluster, n: int = 100) -> dict:
    """Sequential annotation merge patches of one pod (keep-alive, like tessera's filter write)
    on the otherwise idle cluster: what one pod write costs on this machine."""
    ns = "bench-probe"
    cluster.kube.ensure_namespace(ns)
    pod = make_pod(ns, "probe", "cpu")
    pod["spec"]["schedulerName"] = "nobody"  # stays Pending, untouched
    cluster.kube.create_pod(pod)
    path = f"/api/v1/namespaces/{ns}/pods/probe"
    times = []
    for i in range(n):
        t = time.monotonic()
        cluster.kube.merge_patch(path, {"metadata": {"annotations": {"bench/i": str(i)}}})
        times.append(time.monotonic() - t)
    cluster.kube.delete_pod(ns, "probe")
    return {"patches": n, "mean_ms": round(1000 * sum(times) / n, 2),
            "p50_ms": round(1000 * pct(times, 0.5), 2), "p90_ms": round(1000 * pct(times, 0.9), 2)}


def bench_size(args, nodes: int, pods: int, work: str) -> dict:
    say(f"=== {nodes} nodes x {GPUS_PER_NODE} GPUs ({MODE}), {pods} pods per phase")
    cluster = BenchCluster(work=work, bins=args.bins, repo=REPO, tessera_bin=args.tessera,
                           sched_qps=args.scheduler_qps, sched_burst=args.scheduler_burst,
                           tessera_args=args.tessera_arg, extender=args.extender,
                           node_lock=args.node_lock)
    result: dict = {"nodes": nodes, "pods": pods, "mode": MODE}
    try:
        cluster.start()
        say(f"control plane up in {cluster.startup_seconds:.1f}s (apiserver :{cluster.api_port},"
            f" tessera :{cluster.main.port})")
        t = time.monotonic()
        create_nodes(cluster, nodes, args.workers)
        say(f"{nodes} nodes created in {time.monotonic() - t:.1f}s")
        cluster.main.start()
        cluster.main.wait_ready(60)
        wait_tessera_sees(cluster, nodes * GPUS_PER_NODE, 60)
        time.sleep(2)  # kube-scheduler's node informer catches up as well
        say("tessera ready, sees every GPU")
        result["pod_patch"] = patch_latency(cluster)
        say(f"one pod annotation PATCH from the harness (idle cluster): {result['pod_patch']}")
        for kind in ("gpu", "cpu"):
            timeout = max(120.0, pods / 3.0)
            stand_in = (DevicePluginStandIn(cluster, f"bench-{kind}")
                        if kind == "gpu" and args.node_lock == "hami" else None)
            try:
                r = run_phase(cluster, kind, pods, args.workers, timeout,
                              on_bound=stand_in.on_bound if stand_in else None)
            finally:
                if stand_in:
                    stand_in.close()
            if stand_in:
                r["node_locks_released"] = stand_in.released
            result[kind] = r
            tm = r["tessera"]
            say(f"  {kind}: {r['bound']}/{pods} bound in {r['wall_s']}s -> {r['pods_per_s']} "
                f"pods/s (created in {r['create_s']}s; after creation {r['rate_after_create']} "
                f"pods/s; latency p50 {r['latency_p50_s']}s p99 {r['latency_p99_s']}s; "
                f"{r['nodes_used']} nodes used)")
            say(f"     tessera: {tm['filter_calls']} filters (mean {tm['filter_mean_ms']} ms), "
                f"{tm['bind_calls']} binds (mean {tm['bind_mean_ms']} ms), "
                f"{tm['share_of_wall']:.1%} of wall (filter alone {tm['filter_share_of_wall']:.1%});"
                f" filter latency CDF {tm['filter_le']}")
            say(f"     kube-scheduler: {r.get('kube_scheduler')}")
            say(f"     CPU seconds during the phase: {r['cpu_s']}")
            say(f"     peak RSS so far, MiB: {r['peak_rss_mib']}")
            say(f"     apiserver pod writes (server-side mean): {r.get('apiserver_pod_writes')}")
            delete_phase_pods(cluster, kind)
            time.sleep(2)
        if args.retry_rounds > 0:
            r = retry_phase(cluster, args.retry_rounds, args.retry_pending)
            result["retry"] = r
            say(f"  pending-retry: a GPU freed -> the pending pod bound after {r['delay_s']} s "
                f"(p50 {r['delay_p50_s']} s, max {r['delay_max_s']} s; pending {r['pending_s']} s "
                f"first; {r['requeue_nudges']} requeue nudges from tessera); a quota raised -> "
                f"bound after {r['quota_raise_delay_s']} s; a node added -> bound after "
                f"{r['node_add_delay_s']} s")
        if args.hami:
            r = hami_phase(cluster, args, pods, nodes * GPUS_PER_NODE)
            result["hami"] = r
            say(f"  HAMi gpu: {r['bound']}/{pods} bound in {r['wall_s']}s -> {r['pods_per_s']} "
                f"pods/s (created in {r['create_s']}s; latency p50 {r['latency_p50_s']}s p99 "
                f"{r['latency_p99_s']}s; {r['nodes_used']} nodes used; "
                f"{r['node_locks_released']} node locks released by the device-plugin stand-in)")
            say(f"     kube-scheduler: {r.get('kube_scheduler')}")
            say(f"     CPU seconds during the phase: {r['cpu_s']}")
            say(f"     peak RSS so far, MiB: {r['peak_rss_mib']}")
            say(f"     apiserver pod writes (server-side mean): {r.get('apiserver_pod_writes')}")
    finally:
        cluster.stop()
        procs.kill_all()
    return result


def print_table(results: list[dict]) -> None:
    print("\n| nodes | pods | GPU pods/s | CPU-only pods/s | HAMi GPU pods/s | "
          "p50 / p99 create->bound (HAMi) | tessera mean filter ms | mean bind ms | "
          "share of wall time in tessera (filter only) |")
    print("| ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |")
    for r in results:
        g, c, h = r.get("gpu"), r.get("cpu"), r.get("hami")
        if not g or not c:
            print(f"| {r['nodes']} | {r['pods']} | (incomplete) | | | | | | |")
            continue
        t = g["tessera"]
        hami = f"{h['pods_per_s']} ({h['bound']}/{h['pods']} bound)" if h else "-"
        lat = f"{g['latency_p50_s']} s / {g['latency_p99_s']} s"
        if h:
            lat += f" ({h['latency_p50_s']} s / {h['latency_p99_s']} s)"
        print(f"| {r['nodes']} | {r['pods']} | {g['pods_per_s']} | {c['pods_per_s']} | {hami} | "
              f"{lat} | {t['filter_mean_ms']} | {t['bind_mean_ms']} | {t['share_of_wall']:.1%} "
              f"({t['filter_share_of_wall']:.1%}) |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", default="100,1000", help="comma-separated cluster sizes")
    ap.add_argument("--pods", type=int, default=None,
                    help="pods per phase (default 500 up to 100 nodes, else 1000)")
    ap.add_argument("--workers", type=int, default=8, help="threads creating pods/nodes")
    ap.add_argument("--scheduler-qps", type=float, default=None,
                    help="kube-scheduler clientConnection.qps (default: kube-scheduler's, 50)")
    ap.add_argument("--scheduler-burst", type=int, default=None,
                    help="kube-scheduler clientConnection.burst (default: kube-scheduler's, 100)")
    ap.add_argument("--tessera-arg", action="append", default=[],
                    help="extra argument for tessera serve (repeatable), e.g. --write-placement=bind")
    ap.add_argument("--retry-rounds", type=int, default=5, choices=range(0, GPUS_PER_NODE),
                    help="pending-retry rounds after the phases (0: none)")
    ap.add_argument("--retry-pending", type=float, default=3.0,
                    help="seconds each probe stays pending before a GPU frees")
    ap.add_argument("--mode", choices=("sharing", "mig"), default="sharing",
                    help="GPU pods share GPUs (gpumem 4000, gpucores 20) or take one 1g.5gb MIG "
                         "instance of an A100-40GB each")
    ap.add_argument("--hami", metavar="DIR",
                    help="also run the GPU phase with HAMi's scheduler as the extender: DIR holds "
                         "HAMi's scheduler binary `scheduler` and HAMi's chart rendered as "
                         "`rendered.yaml` (e2e/README.md; not built by this repository)")
    ap.add_argument("--hami-chart-client-limits", action="store_true",
                    help="keep HAMi's client at the chart's 5 QPS / burst 10 (default: the same "
                         "--scheduler-qps/--scheduler-burst as kube-scheduler)")
    ap.add_argument("--hami-arg", action="append", default=[],
                    help="change a flag of the chart's for HAMi's extender (repeatable): -v=2 "
                         "sets it, --debug= drops it (the chart runs it with --debug -v=4)")
    ap.add_argument("--hami-retry-quota", action="store_true",
                    help="with --hami and retry rounds, also time HAMi's pending pod after a quota "
                         "is raised (kube-scheduler retries it only after its 5-minute flush)")
    ap.add_argument("--extender", choices=("loopback", "https"), default="loopback",
                    help="how kube-scheduler reaches tessera: plain HTTP to --extender-bind on "
                         "127.0.0.1 as deploy/ ships it (default), or HTTPS to the main port "
                         "(the runs before 2026-12-06 evening)")
    ap.add_argument("--node-lock", choices=("hami", "none"), default="hami",
                    help="tessera's --node-lock: hami as deploy/ ships it (default; the harness "
                         "releases the lock as the device plugin would once the pod is bound), "
                         "or none (the runs before 2026-12-06 evening)")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--keep", action="store_true", help="keep the work dirs (logs)")
    ap.add_argument("--bins", default=os.environ.get("TESSERA_K8S_BINS"))
    ap.add_argument("--tessera", default=os.environ.get(
        "TESSERA_BIN", os.path.join(REPO, "build", "release", "src", "tessera")))
    args = ap.parse_args()
    global MODE
    MODE = args.mode
    if not args.bins:
        r = subprocess.run(["bash", os.path.join(HERE, "k8s-bins", "build.sh")],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"bench: building Kubernetes binaries failed:\n{r.stderr[-2000:]}")
            return 2
        args.bins = r.stdout.strip().splitlines()[-1]
    if args.hami and not os.access(os.path.join(args.hami, "scheduler"), os.X_OK):
        print(f"bench: {args.hami}/scheduler is not executable (see e2e/README.md)")
        return 2
    if not os.access(args.tessera, os.X_OK):
        print(f"bench: {args.tessera} is not executable (build tessera first)")
        return 2
    procs.install_cleanup()
    sizes = [int(s) for s in args.nodes.split(",") if s.strip()]
    results = []
    t_all = time.monotonic()
    for nodes in sizes:
        pods = args.pods or (500 if nodes <= 100 else 1000)
        if pods > nodes * (MIG_PODS_PER_NODE_FIT if MODE == "mig" else PODS_PER_NODE_FIT):
            print(f"bench: {pods} GPU pods do not fit on {nodes} nodes")
            return 2
        work = tempfile.mkdtemp(prefix=f"tessera-bench-{nodes}-")
        try:
            results.append(bench_size(args, nodes, pods, work))
        except Exception as e:  # noqa: BLE001 - report, keep the logs, go on
            say(f"size {nodes} failed: {type(e).__name__}: {e}; logs in {work}")
            results.append({"nodes": nodes, "pods": pods, "error": str(e)})
            args.keep = True
        if args.keep:
            say(f"logs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print_table(results)
    print(f"\nbench: total {time.monotonic() - t_all:.0f}s", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
