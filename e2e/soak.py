#!/usr/bin/env python3
"""A chaos soak of the whole system (issue 38, "Prove it"; docs/reliability.md).

Real etcd, kube-apiserver and kube-scheduler (lib/cluster.py); `tessera serve` twice with leader
election behind the Service stand-in; `tessera agent` on three simulated-NVML nodes (A100-40GB,
H100 80GB, RTX PRO 6000 Blackwell in MIG mode, each beside a shared GPU), each driven by the
kubelet's real device manager (kubelet-dm). For --duration seconds a seeded churn creates and
deletes GPU pods (MIG, shared, and some that can never fit) while seeded chaos events kill and
restart the agents, the scheduler leader, kube-scheduler and the kubelets, stall an agent's
watch, restart an agent with NVML faults, reboot a node and add a foreign MIG instance by hand.
A monitor checks the invariants every few seconds and again at the end:

  double-booked    no two live pods' MIG placements overlap on a GPU, no MIG UUID in two live
                   pods, no two instances overlap in the driver, no shared GPU over-committed
  leaked           every instance is claimed by a live pod or foreign (after the churn and a
                   settle period), and every non-foreign instance is gone once all pods are
  live-destroyed   no running pod's recorded instance vanishes, or is replaced, without a
                   reboot of its node; after a reboot every running pod's instance is back
  foreign-touched  every foreign instance is still there (same GI id, placement, MIG UUID) and
                   never handed to a pod (a reboot of its node is the only excuse)
  unplaced         every pod that fits an empty cluster is bound once the churn stops; a pod
                   that fits nowhere is never bound
  rss              each tessera process's RSS is flat (rss.csv, rss.svg; rule in --help)
  crashes          no tessera component exits on its own (injected aborts excepted)

Prints a summary table; writes summary.txt, summary.json, rss.csv, rss.svg and events.log to
--out. Exit status 1 on any violation, 2 when the soak itself could not run to the end (the
summary of what it found until then is still printed, then the error)."""

import argparse
import collections
import json
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
import traceback

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from lib import gpu, procs  # noqa: E402
from lib.cluster import LEASE_NAME, NAMESPACE, SCHEDULER_NAME, Cluster, wait_until  # noqa: E402
from lib.kube import ApiError  # noqa: E402
from lib.simnode import SimNode, rss_kib  # noqa: E402
from lib.stallproxy import StallProxy  # noqa: E402
from lib.svgplot import line_chart  # noqa: E402

NS = "soak"
GROUP = "soak"
MIG = {"nvidia.com/vgpu-mode": "mig"}
SHARED = {"nvidia.com/vgpu-mode": "hami-core"}
SHARED_GPU_T4 = {"name": "Tesla T4", "memoryMiB": 15360}
SHARED_GPU_L4 = {"name": "NVIDIA L4", "memoryMiB": 23034}
# node name, MIG model (data/mig-profiles.json), the allow-listed 1-slice profile, shared GPU
NODES = [("soak-a100", "A100-40GB", "1g.5gb", SHARED_GPU_T4),
         ("soak-h100", "H100-SXM5-80GB", "1g.10gb", SHARED_GPU_L4),
         ("soak-rtx", "RTX-PRO-6000-Blackwell-96GB", "1g.24gb", SHARED_GPU_T4)]

# Pod shapes: name, weight, limits (callable on the RNG), annotations, fits an empty cluster.
SHAPES = [
    ("mig-small", 28, lambda r: {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4000}, MIG, True),
    ("mig-medium", 13, lambda r: {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 9000}, MIG, True),
    ("mig-large", 8, lambda r: {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 18000}, MIG, True),
    ("mig-whole", 4, lambda r: {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 38000}, MIG, True),
    ("mig-two", 6, lambda r: {"nvidia.com/gpu": 2, "nvidia.com/gpumem": 4000}, MIG, True),
    ("shared", 29, lambda r: {"nvidia.com/gpu": 1,
                              "nvidia.com/gpumem": r.choice([1000, 2000, 3000, 5000]),
                              "nvidia.com/gpucores": r.choice([10, 20, 30])}, SHARED, True),
    # Never fit: no MIG GPU has 120 GB; each node has one shared GPU.
    ("nofit-mig", 6, lambda r: {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 120000}, MIG, False),
    ("nofit-shared", 6, lambda r: {"nvidia.com/gpu": 2, "nvidia.com/gpumem": 1000}, SHARED,
     False),
]
SHAPE_BY_NAME = {s[0]: s for s in SHAPES}

EVENT_KINDS = ["agent-kill", "agent-sigstop", "agent-watch-stall", "agent-nvml-faults",
               "node-reboot", "kubelet-restart", "leader-kill", "kube-scheduler-restart",
               "foreign-instance"]
EVENT_WEIGHTS = {"agent-kill": 3, "agent-sigstop": 2, "agent-watch-stall": 2,
                 "agent-nvml-faults": 3, "node-reboot": 1, "kubelet-restart": 2,
                 "leader-kill": 2, "kube-scheduler-restart": 2, "foreign-instance": 1}
# NVML faults for an agent restart (TESSERA_NVML_SIM_FAULTS, src/nvml_sim/sim_faults.h).
FAULTS = [
    "fail:nvmlDeviceGetGpuInstances:2:UNKNOWN",
    "fail:nvmlDeviceGetGpuInstances:*:GPU_IS_LOST",
    "fail:nvmlDeviceCreateGpuInstanceWithPlacement:1:INSUFFICIENT_RESOURCES",
    "fail:nvmlGpuInstanceCreateComputeInstance:1:UNKNOWN",
    "fail:nvmlGpuInstanceDestroy:1:IN_USE,fail:nvmlComputeInstanceDestroy:2:UNKNOWN",
    "fail:nvmlEventSetCreate:*:UNKNOWN",
    "abort-after:nvmlDeviceCreateGpuInstanceWithPlacement:1",
    "abort-after:nvmlGpuInstanceDestroy:1",
]
INVARIANTS = ["double-booked", "leaked", "live-destroyed", "foreign-touched", "unplaced",
              "rss", "crashes"]
TERMINAL = ("Succeeded", "Failed")
# After the churn nothing is killed: an API connection refused then is a busy machine, retried.
END_RETRY_S = 30.0


def load_profiles(repo: str) -> dict:
    with open(os.path.join(repo, "data", "mig-profiles.json"), encoding="utf-8") as f:
        return {g["model"]: {p["name"]: p for p in g["profiles"]} for g in json.load(f)}


def make_pod(name: str, shape: str, rng: random.Random) -> dict:
    _, _, limits, ann, fits = SHAPE_BY_NAME[shape]
    container = {"name": "c0", "image": "registry.k8s.io/pause:3.10",
                 "resources": {"limits": {k: str(v) for k, v in limits(rng).items()}}}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "annotations": dict(ann),
                         "labels": {"soak-shape": shape, "soak-fits": "yes" if fits else "no"}},
            "spec": {"containers": [container], "terminationGracePeriodSeconds": 0,
                     "schedulerName": SCHEDULER_NAME,
                     "nodeSelector": {"tessera-e2e/group": GROUP}}}


def overlaps(a_start, a_size, b_start, b_size) -> bool:
    return a_start < b_start + b_size and b_start < a_start + a_size


def live(pod: dict) -> bool:
    return bool(pod["spec"].get("nodeName")) and \
        pod.get("status", {}).get("phase") not in TERMINAL


class Node:
    """A SimNode plus the soak's bookkeeping about it."""

    def __init__(self, sim: SimNode, proxy: StallProxy, model: str, small: str):
        self.sim, self.proxy, self.model, self.small = sim, proxy, model, small
        self.name = sim.name
        self.mig_gpu = sim.read_state()["gpus"][0]["uuid"]
        self.expect_agent = False
        self.expect_dm = False
        self.expect_abort = False  # an abort-after fault is armed
        self.busy_until = 0.0
        self.reboot_gen = 0  # bumped when a reboot starts
        self.reboot_walls: list[float] = []  # time.time() of each reboot
        self.rebooting = False  # from the kill until the marker is consumed


class Soak:
    def __init__(self, args, cluster: Cluster, out: str):
        self.args, self.cluster, self.out = args, cluster, out
        self.kube = cluster.kube
        self.rng = random.Random(args.seed)
        self.pod_rng = random.Random(args.seed * 7919 + 1)
        self.profiles = load_profiles(args.repo)
        self.t0 = time.monotonic()
        self.lock = threading.Lock()
        self.stop_monitor = threading.Event()
        self.events = collections.Counter()  # injected, by kind
        self.skipped = collections.Counter()
        self.notes = collections.Counter()  # things seen that are not violations
        self.violations: dict[str, dict[str, str]] = {k: {} for k in INVARIANTS}
        self.created = collections.Counter()
        self.deleted = 0
        self.alive: dict[str, str] = {}  # pod name -> shape, as created by the churn
        self.seq = 0
        self.bound_uids: set[str] = set()
        self.running_uids: set[str] = set()
        self.failed: dict[str, str] = {}  # uid -> reason
        self.on_foreign: set[str] = set()
        self.foreign: list[dict] = []
        self.track: dict[tuple, tuple] = {}  # (uid, ci, di) -> (uuid, reboot_gen)
        self.suspects: dict[tuple, str] = {}
        self.unclaimed_since: dict[tuple, float] = {}
        self.max_unclaimed_age = 0.0
        self.checks = 0
        self.monitor_errors = 0
        self.rss: list[tuple[float, str, int, int]] = []
        self.actions: list[tuple[float, str, object]] = []  # (due, what, fn)
        self.log = open(os.path.join(out, "events.log"), "w", encoding="utf-8")
        self.nodes: list[Node] = []
        self.replicas = []

    # --- output ------------------------------------------------------------------------------
    def now(self) -> float:
        return time.monotonic() - self.t0

    def say(self, msg: str) -> None:
        line = f"[{self.now():7.1f}s] {msg}"
        print(line, flush=True)
        self.log.write(line + "\n")
        self.log.flush()

    def violation(self, inv: str, key: str, msg: str) -> None:
        with self.lock:
            if key in self.violations[inv]:
                return
            self.violations[inv][key] = msg
        self.say(f"VIOLATION {inv}: {msg}")

    # --- setup -------------------------------------------------------------------------------
    def start(self) -> None:
        c = self.cluster
        self.kube.ensure_namespace(NS)
        for ident in ("a", "b"):
            t = c.new_tessera(f"tessera-{ident}", [
                "--leader-elect", "--leader-elect-namespace", NAMESPACE,
                "--leader-elect-name", LEASE_NAME, "--leader-elect-identity", f"replica-{ident}"])
            self.replicas.append(t.start())
        c.proxy.set_backends([t.port for t in self.replicas])
        with open(c.kubeconfigs["admin"], encoding="utf-8") as f:
            admin_kc = f.read()
        os.makedirs(os.path.join(c.work, "plugins"), exist_ok=True)
        for i, (name, model, small, shared) in enumerate(NODES):
            proxy = StallProxy(c.api_port, procs.free_port())
            kc = os.path.join(c.work, f"{name}-via-proxy.kubeconfig")
            with open(kc, "w", encoding="utf-8") as f:
                f.write(admin_kc.replace(f"127.0.0.1:{c.api_port}", f"127.0.0.1:{proxy.port}"))
            gpus = [{"uuid": f"GPU-50ac{i}001-0000-4000-8000-00000000a001",
                     "model": model, "migMode": True},
                    {"uuid": f"GPU-50ac{i}002-0000-4000-8000-00000000a002", **shared}]
            sim = SimNode(name=name, work=c.work, tessera=self.args.tessera, bins=self.args.bins,
                          gpus=gpus, kubeconfig=kc, dm_kubeconfig=c.kubeconfigs["admin"],
                          device_config=c.device_config,
                          agent_args=["--reconcile-interval", "2s", "--reconcile-grace", "5s",
                                      "--register-interval", "5s"])
            c.create_node(name, [], GROUP)
            node = Node(sim, proxy, model, small)
            self.nodes.append(node)
            sim.dm.start()
            node.expect_dm = True
            sim.start_agent()
            node.expect_agent = True

        def registered():
            for n in self.nodes:
                if not n.sim.agent.running():
                    raise RuntimeError(f"agent {n.name} exited: {n.sim.agent.log_tail(15)}")
                obj = self.kube.get(f"/api/v1/nodes/{n.name}")
                devs = json.loads(obj["metadata"].get("annotations", {}).get(gpu.REGISTER,
                                                                              "[]"))
                alloc = obj.get("status", {}).get("allocatable", {}).get("nvidia.com/gpu", "0")
                if len(devs) != 2 or int(alloc) <= 0 or not n.sim.ready():
                    return False
            return True
        wait_until(registered, 90, 0.5, "three agents ready and registered with kubelet-dm")
        ready = wait_until(lambda: [t for t in self.replicas if t.status("/readyz") == 200],
                           60, 0.5, "a tessera leader")
        self.say(f"ready: leader {ready[0].name}; nodes "
                 + ", ".join(f"{n.name} ({n.model})" for n in self.nodes))

    # --- background: monitor and RSS ---------------------------------------------------------
    def components(self):
        out = [(t.name, t.proc) for t in self.replicas]
        out += [(f"agent-{n.name}", n.sim.agent) for n in self.nodes]
        return out

    def rss_loop(self) -> None:
        while not self.stop_monitor.wait(2.0):
            t = self.now()
            for name, p in self.components():
                try:
                    if p.running():
                        kib = rss_kib(p.pid)
                        if kib and kib > 4096:  # not a process between fork and exec
                            self.rss.append((t, name, p.pid, kib))
                except Exception:  # noqa: BLE001 - a process restarting right now
                    pass

    def monitor_loop(self) -> None:
        while not self.stop_monitor.wait(self.args.check_interval):
            try:
                self.check()
            except Exception as e:  # noqa: BLE001 - an apiserver hiccup; next round
                self.monitor_errors += 1
                if self.monitor_errors <= 5:
                    self.say(f"monitor: check failed: {type(e).__name__}: {e}")

    def snapshot(self, retry_for: float = 0.0):
        """(nodes to judge, states, pods, registered devices by uuid). The driver states are
        read before the pods, and a node in the middle of a reboot is left out."""
        gens = {n.name: (n.reboot_gen, n.rebooting) for n in self.nodes}
        states = {n.name: n.sim.read_state() for n in self.nodes}
        pods = self.kube.pods(NS, retry_for=retry_for)
        nodes = self.kube.get("/api/v1/nodes", query={
            "labelSelector": f"tessera-e2e/group={GROUP}"}, retry_for=retry_for)["items"]
        devs = {}
        self.node_annotations = {n["metadata"]["name"]: n["metadata"].get("annotations") or {}
                                 for n in nodes}
        for n in nodes:
            for d in json.loads((n["metadata"].get("annotations") or {}).get(gpu.REGISTER,
                                                                              "[]") or "[]"):
                devs[d["id"]] = d
        judge = {n.name for n in self.nodes
                 if not gens[n.name][1] and not n.rebooting and n.reboot_gen == gens[n.name][0]}
        return judge, states, pods, devs

    def check(self, final: bool = False) -> dict:
        """One pass over every invariant that can be judged from a snapshot. Returns the
        instances that are unclaimed and the running pods' instances that are missing."""
        # The foreign instances known before the driver states are read: one added by hand
        # while this check runs is judged by the next, not missed in a state read before it.
        with self.lock:
            foreign = [f for f in self.foreign if f["alive"]]
        judge, states, pods, devs = self.snapshot(END_RETRY_S if final else 0.0)
        self.checks += 1
        node_of = {n.name: n for n in self.nodes}
        inst_by_node = {n: node_of[n].sim.instances(s) for n, s in states.items()}
        uuids_by_node = {n: {i["uuid"] for i in insts if i["uuid"]}
                         for n, insts in inst_by_node.items()}
        claims = collections.defaultdict(list)  # gpu -> (start, size, pod key, uuid)
        uuid_owner: dict[str, str] = {}
        env_owner: dict[str, str] = {}
        shared_use = collections.defaultdict(lambda: [0, 0])
        foreign_uuids = {f["uuid"]: f for f in foreign}
        missing = []
        for p in pods:
            md, spec, st = p["metadata"], p["spec"], p.get("status", {})
            uid, key = md["uid"], f"{md['namespace']}/{md['name']}"
            fits = md.get("labels", {}).get("soak-fits") == "yes"
            node = spec.get("nodeName")
            phase = st.get("phase")
            if node:
                self.bound_uids.add(uid)
                if not fits:
                    self.violation("unplaced", f"nofit-bound/{uid}",
                                   f"{key} cannot fit anywhere but was bound to {node}")
            if phase == "Running":
                self.running_uids.add(uid)
            if phase == "Failed" and uid not in self.failed:
                msg = st.get("message", "")
                self.failed[uid] = msg
                self.say(f"monitor: {key} failed at admission on {node}: {msg[:300]}")
            if not live(p):
                continue
            ann = md.get("annotations") or {}
            try:
                migs = gpu.decode_mig(ann.get(gpu.MIG_ALLOCATIONS, ""))
                slots = gpu.decode_pod_devices(ann.get(gpu.ALLOCATED, ""))
            except (ValueError, TypeError) as e:
                self.notes["undecodable pod annotations"] += 1
                self.say(f"monitor: {key}: undecodable annotations: {e}")
                continue
            for devs_ in slots:
                for d in devs_:
                    info = devs.get(d.uuid)
                    if info and info.get("mode") != "mig":
                        shared_use[d.uuid][0] += d.mem
                        shared_use[d.uuid][1] += 1
            if phase == "Running":
                self.check_wiring(p, node_of.get(node), migs, slots, env_owner)
            for m in migs:
                pl = m["placement"]
                u = m.get("migUUID") or None
                claims[m["gpuUUID"]].append((pl["start"], pl["size"], key, u))
                if u:
                    if u in uuid_owner and uuid_owner[u] != key:
                        self.violation("double-booked", f"uuid/{u}",
                                       f"MIG UUID {u} is in two live pods: {uuid_owner[u]}, {key}")
                    uuid_owner[u] = key
                    if u in foreign_uuids:
                        self.violation("foreign-touched", f"adopted/{u}",
                                       f"foreign instance {u} was handed to {key}")
                for f in foreign:
                    if f["gpu"] == m["gpuUUID"] and overlaps(pl["start"], pl["size"],
                                                             f["start"], f["size"]):
                        if uid not in self.on_foreign:
                            self.on_foreign.add(uid)
                            self.say(f"monitor: {key} was placed on the slices of foreign "
                                     f"instance {f['uuid']} ({f['node']} start {f['start']})")
                # A running pod's instance: vanished, or replaced, without a reboot?
                if phase != "Running" or not u or node not in judge:
                    continue
                tkey = (uid, m["containerIndex"], m["deviceIndex"])
                gen = node_of[node].reboot_gen
                prev = self.track.get(tkey)  # (uuid, reboot generation) last seen in the driver
                if prev is not None and prev[0] != u and prev[1] == gen:
                    self.violation("live-destroyed", f"replaced/{tkey}/{u}",
                                   f"{key}: its instance {prev[0]} was replaced by {u} "
                                   f"without a reboot of {node}")
                if u in uuids_by_node.get(node, set()):
                    self.track[tkey] = (u, gen)
                    self.suspects.pop(tkey, None)
                    continue
                missing.append(f"{key} {u}")
                # Judged only once seen in the driver since the node's last reboot; after a
                # reboot recreation is pending and the final check judges it.
                if final or prev != (u, gen):
                    continue
                if self.suspects.get(tkey) == u:
                    self.violation("live-destroyed", f"gone/{tkey}/{u}",
                                   f"{key} is Running with MIG instance {u} on {node}, which "
                                   f"is gone from the driver (no reboot since it was seen)")
                else:
                    self.suspects[tkey] = u  # confirm on the next pass (races with deletes)
        # Pods on pods, instances on instances, shared GPUs over-committed.
        for g, cl in claims.items():
            cl = sorted(cl)
            for a, b in zip(cl, cl[1:]):
                if overlaps(a[0], a[1], b[0], b[1]):
                    self.violation("double-booked", f"pods/{g}/{a[2]}/{b[2]}",
                                   f"{g}: {a[2]} (start {a[0]}, size {a[1]}) and {b[2]} "
                                   f"(start {b[0]}, size {b[1]}) overlap")
        for n, insts in inst_by_node.items():
            by_gpu = collections.defaultdict(list)
            for i in insts:
                by_gpu[i["gpu"]].append(i)
            for g, lst in by_gpu.items():
                lst.sort(key=lambda i: i["start"])
                for a, b in zip(lst, lst[1:]):
                    if overlaps(a["start"], a["size"], b["start"], b["size"]):
                        self.violation("double-booked", f"inst/{g}/{a['id']}/{b['id']}",
                                       f"{n} {g}: instances {a} and {b} overlap")
        for u, (mem, tasks) in shared_use.items():
            info = devs[u]
            if mem > info.get("devmem", 1 << 30) or tasks > info.get("count", 1 << 30):
                self.violation("double-booked", f"shared/{u}/{mem}/{tasks}",
                               f"shared GPU {u}: {mem} MiB by {tasks} pods > devmem "
                               f"{info.get('devmem')} / count {info.get('count')}")
        # Foreign instances untouched.
        for f in foreign:
            if f["node"] not in judge:
                continue
            same = [i for i in inst_by_node[f["node"]] if i["uuid"] == f["uuid"]]
            ok = len(same) == 1 and all(same[0][k] == f[k] for k in
                                        ("gpu", "id", "profile", "start", "size"))
            if not ok:
                self.violation("foreign-touched", f"changed/{f['uuid']}",
                               f"foreign instance {f} is now {same or 'gone'}")
            published = self.node_annotations.get(f["node"], {}).get(
                "tessera.io/foreign-mig-instances", "")
            if published and not f.get("published"):
                try:
                    listed = json.loads(published)
                except ValueError:
                    listed = []
                if any(isinstance(e, dict) and e.get("start") == f["start"] and
                       f["gpu"] in json.dumps(e) for e in listed):
                    f["published"] = self.now()
                    self.notes["foreign instances published on the node"] += 1
        # Instances nobody claims (a leak once the churn has settled).
        unclaimed = []
        now = self.now()
        seen = set()
        for n, insts in inst_by_node.items():
            if n not in judge:
                continue
            for i in insts:
                if i["uuid"] in foreign_uuids:
                    continue
                if any(c[0] == i["start"] and c[1] == i["size"] for c in claims.get(i["gpu"], [])):
                    continue
                k = (n, i["gpu"], i["id"], i["uuid"])
                seen.add(k)
                first = self.unclaimed_since.setdefault(k, now)
                self.max_unclaimed_age = max(self.max_unclaimed_age, now - first)
                unclaimed.append(f"{n} {i['gpu']} GI {i['id']} {i['profile']} start "
                                 f"{i['start']} {i['uuid']}")
        for k in list(self.unclaimed_since):
            if k not in seen:
                del self.unclaimed_since[k]
        return {"unclaimed": unclaimed, "missing": missing, "pods": pods}

    def check_wiring(self, pod: dict, node: "Node | None", migs: list, slots: list,
                     env_owner: dict) -> None:
        """What the kubelet handed the container (kubelet-dm records Allocate's environment as
        tessera-e2e/device-env) is what the scheduler reserved for this pod: its own MIG
        UUIDs, or its own shared GPUs; and no device is in two running containers. A reboot of
        the node since the pod was created excuses the MIG UUIDs (recreated, new UUIDs)."""
        md = pod["metadata"]
        key = f"{md['namespace']}/{md['name']}"
        try:
            env = json.loads((md.get("annotations") or {}).get("tessera-e2e/device-env", "{}"))
        except ValueError:
            return
        got = (env.get("c0") or {}).get("NVIDIA_VISIBLE_DEVICES")
        if not got:
            return
        got_set = set(got.split(","))
        if migs:
            want = {m.get("migUUID") for m in migs}
            created = md.get("creationTimestamp", "")
            try:
                created_wall = time.mktime(time.strptime(created, "%Y-%m-%dT%H:%M:%SZ")) - \
                    time.timezone
            except ValueError:
                created_wall = 0
            if node is not None and any(w >= created_wall - 2 for w in node.reboot_walls):
                return
        else:
            want = {d.uuid for d in (slots[0] if slots else [])}
        if None in want or not want:
            return
        if got_set != want:
            self.violation("double-booked", f"wired/{md['uid']}",
                           f"{key}'s container was given {sorted(got_set)}, but the pod holds "
                           f"{sorted(want)} (another pod's devices?)")
        if migs:
            for u in got_set:
                if u in env_owner and env_owner[u] != key:
                    self.violation("double-booked", f"env-twice/{u}",
                                   f"{u} is in the containers of {env_owner[u]} and {key}")
                env_owner[u] = key

    # --- processes and chaos ------------------------------------------------------------------
    def after(self, delay: float, what: str, fn) -> None:
        self.actions.append((time.monotonic() + delay, what, fn))

    def run_due_actions(self, all_now: bool = False) -> None:
        now = time.monotonic()
        due = [a for a in self.actions if all_now or a[0] <= now]
        self.actions = [a for a in self.actions if a not in due]
        for _, what, fn in sorted(due, key=lambda a: a[0]):
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                self.say(f"action {what} failed: {type(e).__name__}: {e}")

    def start_agent(self, n: Node, faults: str = "") -> None:
        if n.sim.agent.running():
            return
        n.sim.start_agent(faults)
        n.expect_agent = True
        n.expect_abort = faults.startswith("abort") or ",abort" in faults

    def start_dm(self, n: Node) -> None:
        if not n.sim.dm.running():
            n.sim.dm.start()
        n.expect_dm = True

    def watch_processes(self) -> None:
        """Restarts what died; a death nobody caused is a crash."""
        for n in self.nodes:
            a = n.sim.agent
            if n.expect_agent and not a.running():
                rc = a.popen.returncode
                # Only an armed abort-after fault excuses an exit (SIGABRT, as told); any other
                # fault must be survived (issue 38 D: no crash).
                if n.expect_abort and rc == -6:
                    self.notes[f"agent exits under injected faults (rc {rc})"] += 1
                    self.say(f"{n.name}: agent exited rc {rc} under faults {n.sim.faults!r}; "
                             f"restarting it without faults")
                else:
                    self.violation("crashes", f"agent/{n.name}/{a.starts}",
                                   f"agent on {n.name} exited rc {rc}: ...{a.log_tail(6)}")
                n.expect_agent = False
                self.start_agent(n)
            if n.rebooting and n.sim.agent.running() and \
                    not os.path.exists(n.sim.state + ".reboot"):
                n.rebooting = False
            if n.expect_dm and not n.sim.dm.running():
                self.violation("crashes", f"dm/{n.name}/{n.sim.dm.starts}",
                               f"kubelet-dm on {n.name} exited: {n.sim.dm.log_tail(6)}")
                self.start_dm(n)
        for t in self.replicas:
            if t.expect_up and not t.proc.running():
                self.violation("crashes", f"{t.name}/{t.proc.starts}",
                               f"{t.name} exited rc {t.proc.popen.returncode}: "
                               f"{t.proc.log_tail(6)}")
                t.start()
        ks = self.cluster.procs["kube-scheduler"]
        if getattr(ks, "expect_up", True) and not ks.running():
            self.notes["kube-scheduler exits (not ours)"] += 1
            ks.start()

    def free_node(self, need_agent: bool = True) -> Node | None:
        now = time.monotonic()
        free = [n for n in self.nodes if n.busy_until <= now and not n.rebooting
                and (not need_agent or n.sim.agent.running())]
        return self.rng.choice(free) if free else None

    def inject(self, kind: str) -> bool | None:
        """Runs one chaos event; False when it cannot run now (target busy), None when there
        is nothing to do."""
        r = self.rng
        if kind in ("leader-kill",):
            if any(not t.proc.running() for t in self.replicas):
                return False
            leaders = [t for t in self.replicas if t.status("/readyz") == 200]
            if len(leaders) != 1:
                return False
            t = leaders[0]
            t.kill()
            delay = r.uniform(3, 8)
            self.say(f"leader-kill: kill -9 {t.name} (the leader); restart in {delay:.0f}s")
            self.after(delay, f"start {t.name}", t.start)
            return True
        if kind == "kube-scheduler-restart":
            ks = self.cluster.procs["kube-scheduler"]
            if not ks.running():
                return False
            ks.expect_up = False
            ks.kill()
            delay = r.uniform(1, 4)
            self.say(f"kube-scheduler-restart: kill -9; restart in {delay:.0f}s")

            def restart():
                ks.expect_up = True
                if not ks.running():
                    ks.start()
            self.after(delay, "start kube-scheduler", restart)
            return True
        if kind == "foreign-instance":
            return self.add_foreign()
        n = self.free_node()
        if n is None:
            return False
        sim = n.sim
        if kind == "agent-kill":
            n.expect_agent = False
            sim.agent.kill()
            delay = r.uniform(1, 4)
            n.busy_until = time.monotonic() + delay + 3
            self.say(f"agent-kill: kill -9 the agent on {n.name}; restart in {delay:.0f}s")
            self.after(delay, f"start agent {n.name}", lambda: self.start_agent(n))
        elif kind == "agent-sigstop":
            secs = r.uniform(5, 20)
            sim.signal_agent(signal.SIGSTOP)
            n.busy_until = time.monotonic() + secs + 3
            self.say(f"agent-sigstop: SIGSTOP the agent on {n.name} for {secs:.0f}s")
            self.after(secs, f"SIGCONT agent {n.name}",
                       lambda: sim.signal_agent(signal.SIGCONT))
        elif kind == "agent-watch-stall":
            # Now and then longer than the agent's 2-minute silent-watch restart.
            secs = r.uniform(130, 160) if self.args.duration >= 600 and r.random() < 0.25 \
                else r.uniform(20, 60)
            frozen = n.proxy.stall(secs)
            n.busy_until = time.monotonic() + secs + 3
            self.say(f"agent-watch-stall: {n.name}: {frozen} open API connections of the agent "
                     f"(its watches) silent for {secs:.0f}s")
        elif kind == "agent-nvml-faults":
            faults = r.choice(FAULTS)
            secs = r.uniform(10, 25)
            n.expect_agent = False
            sim.agent.stop(5)
            self.start_agent(n, faults)
            n.busy_until = time.monotonic() + secs + 3
            self.say(f"agent-nvml-faults: {n.name}: agent restarted with "
                     f"TESSERA_NVML_SIM_FAULTS={faults} for {secs:.0f}s")

            def clean():
                if sim.faults:
                    n.expect_agent = False
                    sim.agent.stop(5)
                    self.start_agent(n)
            self.after(secs, f"agent {n.name} without faults", clean)
        elif kind == "node-reboot":
            n.rebooting = True
            n.reboot_gen += 1
            n.reboot_walls.append(time.time())
            n.expect_agent = n.expect_dm = False
            sim.agent.kill()
            sim.dm.kill()
            sim.mark_reboot()
            with self.lock:
                for f in self.foreign:
                    if f["node"] == n.name and f["alive"]:
                        f["alive"] = False
                        self.notes["foreign instances wiped by a reboot"] += 1
            delay = r.uniform(2, 5)
            n.busy_until = time.monotonic() + delay + 10
            self.say(f"node-reboot: {n.name}: agent and kubelet killed, every MIG instance "
                     f"wiped at the next start; back in {delay:.0f}s")

            def boot():
                self.start_dm(n)
                self.start_agent(n)
            self.after(delay, f"boot {n.name}", boot)
        elif kind == "kubelet-restart":
            n.expect_dm = False
            sim.dm.kill()
            delay = r.uniform(1, 3)
            n.busy_until = time.monotonic() + delay + 3
            self.say(f"kubelet-restart: kill -9 kubelet-dm on {n.name}; restart in {delay:.0f}s")
            self.after(delay, f"start kubelet-dm {n.name}", lambda: self.start_dm(n))
        else:
            raise ValueError(kind)
        return True

    def free_placements(self, n: Node, pods: list[dict]) -> list[dict]:
        """Placements of the node's 1-slice profile that no instance and no live pod holds."""
        prof = self.profiles[n.model][n.small]
        held = [(i["start"], i["size"]) for i in n.sim.instances() if i["gpu"] == n.mig_gpu]
        for p in pods:
            if not live(p):
                continue
            try:
                migs = gpu.decode_mig((p["metadata"].get("annotations") or {}).get(
                    gpu.MIG_ALLOCATIONS, ""))
            except (ValueError, TypeError):
                continue
            held += [(m["placement"]["start"], m["placement"]["size"]) for m in migs
                     if m["gpuUUID"] == n.mig_gpu]
        return [pl for pl in prof["placements"]
                if not any(overlaps(pl["start"], pl["size"], s, z) for s, z in held)]

    def add_foreign(self) -> bool | None:
        """Stops a node's agent, adds a 1-slice instance at a free placement to its driver by
        hand (as nvidia-mig-parted or an operator would), restarts the agent. One per GPU."""
        now = time.monotonic()
        with self.lock:
            has = {f["node"] for f in self.foreign if f["alive"]}
        if len(has) == len(self.nodes):
            self.skipped["foreign-instance"] += 1
            return None  # nothing to add: every MIG GPU has one (a reboot wipes them)
        cands = [n for n in self.nodes if n.busy_until <= now and not n.rebooting
                 and n.sim.agent.running() and n.name not in has]
        if not cands:
            return False
        pods = self.kube.pods(NS)
        cands = [(len(self.free_placements(n, pods)), n) for n in cands]
        cands = [(k, n) for k, n in cands if k > 0]
        if not cands:
            return False
        n = max(cands, key=lambda c: c[0])[1]
        prof = self.profiles[n.model][n.small]
        n.expect_agent = False
        n.sim.agent.kill()
        try:
            free = self.free_placements(n, self.kube.pods(NS))  # again, with the agent down
            if not free:
                return False
            pl = self.rng.choice(free)
            f = n.sim.add_foreign_instance(n.mig_gpu, n.small, pl["start"], pl["size"],
                                           prof["sliceCount"])
            f["alive"] = True
            with self.lock:
                self.foreign.append(f)
            self.say(f"foreign-instance: {n.name}: agent stopped, {n.small} GI {f['id']} at start "
                     f"{f['start']} ({f['uuid']}) added to the driver by hand, agent restarted")
        finally:
            n.busy_until = time.monotonic() + 5
            self.start_agent(n)
        return True

    # --- churn ---------------------------------------------------------------------------------
    def create_pod(self) -> None:
        shape = self.pod_rng.choices([s[0] for s in SHAPES], [s[1] for s in SHAPES])[0]
        self.seq += 1
        name = f"p{self.seq:05d}-{shape}"
        try:
            self.kube.create_pod(make_pod(name, shape, self.pod_rng))
            self.alive[name] = shape
            self.created[shape] += 1
        except (ApiError, OSError) as e:
            self.notes["pod create errors"] += 1
            self.say(f"create {name}: {e}")

    def delete_pod(self, name: str) -> None:
        try:
            self.kube.delete_pod(NS, name)
            self.deleted += 1
            self.alive.pop(name, None)
        except (ApiError, OSError) as e:
            self.notes["pod delete errors"] += 1
            self.say(f"delete {name}: {e}")

    def churn_step(self, pods_by_name: dict) -> None:
        r = self.pod_rng
        # Pods that failed admission are replaced by their controller in real life: delete.
        for name, p in pods_by_name.items():
            if p.get("status", {}).get("phase") in TERMINAL and r.random() < 0.5:
                self.delete_pod(name)
        if len(self.alive) < self.args.max_pods and r.random() < 0.7:
            self.create_pod()
        if self.alive and (len(self.alive) > self.args.max_pods * 0.6 and r.random() < 0.45):
            self.delete_pod(r.choice(sorted(self.alive)))

    def plan(self, duration: float) -> list[tuple[float, str]]:
        n = max(len(EVENT_KINDS), int(duration / self.args.event_interval))
        kinds = list(EVENT_KINDS)
        kinds += self.rng.choices(EVENT_KINDS, [EVENT_WEIGHTS[k] for k in EVENT_KINDS],
                                  k=n - len(kinds))
        self.rng.shuffle(kinds)
        lo, hi = min(20.0, duration * 0.1), duration - min(25.0, duration * 0.12)
        times = sorted(self.rng.uniform(lo, hi) for _ in kinds)
        return list(zip(times, kinds))

    def run_churn(self) -> None:
        duration = self.args.duration
        plan = self.plan(duration)
        self.say(f"churn for {duration:.0f}s with {len(plan)} chaos events (seed "
                 f"{self.args.seed})")
        start = self.now()
        last_list = 0.0
        pods_by_name = {}
        while self.now() - start < duration:
            self.run_due_actions()
            self.watch_processes()
            if time.monotonic() - last_list > 2:
                try:
                    pods_by_name = {p["metadata"]["name"]: p for p in self.kube.pods(NS)}
                    self.alive = {k: v for k, v in self.alive.items() if k in pods_by_name}
                except (ApiError, OSError):
                    pass
                last_list = time.monotonic()
            self.churn_step(pods_by_name)
            pods_by_name = {k: v for k, v in pods_by_name.items() if k in self.alive}
            # Due events in order; one whose target is busy waits (retried each step, skipped
            # after a minute) without holding up the others.
            elapsed = self.now() - start
            for ev in [ev for ev in plan if ev[0] <= elapsed]:
                t, kind = ev
                try:
                    done = self.inject(kind)
                except Exception as e:  # noqa: BLE001 - e.g. an API call refused; try again
                    self.say(f"{kind} failed: {type(e).__name__}: {e}")
                    done = False
                if done is None:  # nothing to do (counted as skipped)
                    plan.remove(ev)
                elif done:
                    plan.remove(ev)
                    self.events[kind] += 1
                elif elapsed - t > 60:
                    plan.remove(ev)
                    self.skipped[kind] += 1
            time.sleep(self.args.tick)
        self.churn_end = self.now()
        for _, kind in plan:
            self.skipped[kind] += 1

    def restore(self) -> None:
        """The end of the chaos: every pending restart now, stalls and SIGSTOPs lifted, faults
        cleared, every component up."""
        self.run_due_actions(all_now=True)
        for n in self.nodes:
            n.proxy.unstall()
            n.sim.signal_agent(signal.SIGCONT)
            if n.sim.faults and n.sim.agent.running():
                n.expect_agent = False
                n.sim.agent.stop(5)
            self.start_dm(n)
            self.start_agent(n)
        for t in self.replicas:
            if not t.proc.running():
                t.start()
        ks = self.cluster.procs["kube-scheduler"]
        ks.expect_up = True
        if not ks.running():
            ks.start()
        try:
            wait_until(lambda: all(n.sim.ready() for n in self.nodes), 90, 0.5, "agents ready")
        except TimeoutError:
            for n in self.nodes:
                if not n.sim.ready():
                    self.violation("crashes", f"unready/{n.name}",
                                   f"agent on {n.name} not ready 90s after the chaos ended: "
                                   f"...{n.sim.agent.log_tail(6)}")
        try:
            wait_until(lambda: [t for t in self.replicas if t.status("/readyz") == 200], 90,
                       0.5, "a tessera leader")
        except TimeoutError:
            self.violation("crashes", "no-leader",
                           "no tessera replica ready 90s after the chaos ended")

    # --- the end -------------------------------------------------------------------------------
    def nudge(self) -> None:
        """A short-lived CPU pod on a node: a cluster event on which kube-scheduler retries
        unschedulable pods (as any churn would)."""
        self.seq += 1
        name = f"nudge-{self.seq}"
        try:
            self.kube.create_pod({
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
                "spec": {"nodeName": self.nodes[0].name, "terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                         "resources": {"requests": {"cpu": "10m"}}}]}})
            self.kube.delete_pod(NS, name)
        except (ApiError, OSError):
            pass

    def placement_rounds(self) -> None:
        """Every pod that fits an empty cluster is bound: rounds of deleting every bound pod
        and waiting for at least one waiting pod to bind; a round without progress on an empty
        cluster is a violation for every pod still waiting."""
        round_no = 0
        while True:
            pods = self.kube.pods(NS, retry_for=END_RETRY_S)
            waiting = [p for p in pods if not p["spec"].get("nodeName")
                       and p["metadata"].get("labels", {}).get("soak-fits") == "yes"]
            if not waiting:
                self.say(f"placement: every pod that fits is bound ({round_no} rounds)")
                return
            round_no += 1
            bound = [p for p in pods if p["spec"].get("nodeName")
                     and p["metadata"]["name"].startswith("p")]
            self.say(f"placement round {round_no}: {len(waiting)} fitting pods wait; deleting "
                     f"the {len(bound)} bound pods")
            for p in bound:
                self.delete_pod(p["metadata"]["name"])
            names = {p["metadata"]["name"] for p in waiting}
            end = time.monotonic() + self.args.place_timeout
            progressed = False
            while time.monotonic() < end:
                time.sleep(3)
                self.watch_processes()
                now_waiting = {p["metadata"]["name"] for p in self.kube.pods(
                    NS, retry_for=END_RETRY_S)
                               if not p["spec"].get("nodeName")} & names
                if len(now_waiting) < len(names):
                    progressed = True
                    break
                self.nudge()
            if not progressed:
                for name in sorted(names):
                    self.violation("unplaced", f"unplaced/{name}",
                                   f"{NS}/{name} fits an empty cluster but stayed unbound "
                                   f"{self.args.place_timeout:.0f}s with every bound pod gone")
                return
            if round_no >= 20:
                return

    def final_checks(self) -> None:
        # Settled: every instance claimed (or foreign), every running pod's instance present.
        end = time.monotonic() + self.args.settle_timeout
        while True:
            r = self.check(final=True)
            if not r["unclaimed"] and not r["missing"]:
                break
            if time.monotonic() > end:
                for u in r["unclaimed"]:
                    self.violation("leaked", f"settled/{u}",
                                   f"unclaimed after {self.args.settle_timeout:.0f}s: {u}")
                for m in r["missing"]:
                    self.violation("live-destroyed", f"final/{m}",
                                   f"running pod's instance missing at the end: {m}")
                break
            time.sleep(2)
        self.say("final: instances claimed, running pods' instances present" if not
                 r["unclaimed"] and not r["missing"] else "final: see violations")
        # Every pod deleted: every non-foreign instance destroyed.
        self.kube.delete_all_pods(NS, retry_for=END_RETRY_S)
        end = time.monotonic() + self.args.settle_timeout
        left = []
        while time.monotonic() < end:
            with self.lock:
                foreign = {f["uuid"] for f in self.foreign if f["alive"]}
            left = [f"{n.name} {i['gpu']} GI {i['id']} {i['profile']} start {i['start']} "
                    f"{i['uuid']}" for n in self.nodes for i in n.sim.instances()
                    if i["uuid"] not in foreign]
            if not left and not self.kube.pods(NS, retry_for=END_RETRY_S):
                break
            time.sleep(2)
        for u in left:
            self.violation("leaked", f"after-delete/{u}",
                           f"still on the GPU {self.args.settle_timeout:.0f}s after every pod "
                           f"was deleted: {u}")
        self.check(final=True)  # foreign instances one last time
        self.say(f"final: {len(left)} non-foreign instances left after deleting every pod")

    # --- RSS ----------------------------------------------------------------------------------
    def rss_report(self) -> list[dict]:
        rows = []
        warm = min(30.0, self.args.duration * 0.1) + self.churn_start
        end = self.churn_end
        third = (end - warm) / 3
        by = collections.defaultdict(list)
        for t, name, pid, kib in self.rss:
            by[name].append((t, pid, kib))
        for name, _ in self.components():
            pts = by.get(name, [])
            first = [k for t, _, k in pts if warm <= t < warm + third]
            last = [k for t, _, k in pts if end - third <= t <= end]
            if not first or not last:
                rows.append({"component": name, "ok": True, "note": "too few samples"})
                continue
            a, b = statistics.median(first) / 1024, statistics.median(last) / 1024
            ok = b <= max(a * self.args.rss_ratio, a + self.args.rss_slack_mib)
            by_pid = collections.defaultdict(list)
            for t, pid, k in pts:
                by_pid[pid].append((t, k))
            longest = max(by_pid.values(), key=lambda v: v[-1][0] - v[0][0])
            rows.append({"component": name, "start_mib": round(a, 1), "end_mib": round(b, 1),
                         "peak_mib": round(max(k for _, _, k in pts) / 1024, 1),
                         "processes": len(by_pid), "ok": ok,
                         "longest_process_s": round(longest[-1][0] - longest[0][0]),
                         "longest_process_mib": [round(longest[0][1] / 1024, 1),
                                                 round(longest[-1][1] / 1024, 1)]})
            if not ok:
                self.violation("rss", name, f"{name}: RSS median {a:.1f} MiB in the first third "
                               f"-> {b:.1f} MiB in the last third")
        return rows

    def write_rss(self) -> None:
        with open(os.path.join(self.out, "rss.csv"), "w", encoding="utf-8") as f:
            f.write("t_s,component,pid,rss_kib\n")
            for t, name, pid, kib in self.rss:
                f.write(f"{t:.1f},{name},{pid},{kib}\n")
        series = {}
        for name, _ in self.components():
            pts, last_pid = [], None
            for t, n, pid, kib in self.rss:
                if n != name:
                    continue
                if last_pid is not None and pid != last_pid:
                    pts.append((t, None))  # a restart: break the line
                pts.append((t - self.churn_start, kib / 1024))
                last_pid = pid
            series[name] = pts
        svg = line_chart(series, title=f"RSS of tessera's processes, soak seed {self.args.seed}, "
                         f"{self.args.duration:.0f}s of churn and chaos",
                         xlabel="seconds since the churn started (gaps: restarts)",
                         ylabel="VmRSS (MiB)",
                         marks=[(self.churn_end - self.churn_start, "churn ends")])
        with open(os.path.join(self.out, "rss.svg"), "w", encoding="utf-8") as f:
            f.write(svg)

    # --- summary -------------------------------------------------------------------------------
    def admission_failures(self) -> None:
        """Pods kubelet-dm failed (UnexpectedAdmissionError), by reason, from its logs: the
        churn deletes failed pods within seconds, so the monitor sees only some of them."""
        reasons = [("an instance tessera did not create", "on a foreign instance"),
                   ("the slices are taken by", "slices taken by another instance"),
                   ("is waiting for", "no pod waiting (bind-phase allocating)"),
                   ("no healthy devices", "no healthy device (agent down or restarting)"),
                   ("is held by pod", "instance still held by an ended pod"),
                   ("(NVML code", "an injected NVML fault"),
                   ("not found", "pod deleted during its Allocate"),
                   ("context deadline exceeded", "Allocate timed out (agent stopped)"),
                   ("connection refused", "agent unreachable"),
                   ("Unavailable", "agent unreachable")]
        for n in self.nodes:
            try:
                with open(n.sim.dm.log_path, encoding="utf-8", errors="replace") as f:
                    lines = [ln for ln in f if ln.startswith("kubelet-dm: rejected ")]
            except OSError:
                continue
            for ln in lines:
                self.notes["pods failed at admission"] += 1
                why = next((label for text, label in reasons if text in ln), "other")
                self.notes[f"  {why}"] += 1  # indented: a reason of the line above
                if why == "other":
                    self.say(f"admission failure: {ln.strip()[:300]}")

    def summary(self, rss_rows: list[dict], stopped_early: bool = False) -> str:
        lines = [f"soak: seed {self.args.seed}, churn {self.args.duration:.0f}s, node lock "
                 f"{self.args.node_lock}, "
                 f"total {self.now():.0f}s, {self.checks} invariant passes "
                 f"(every {self.args.check_interval:g}s), {self.monitor_errors} failed passes"]
        lines.append("")
        lines.append("events injected")
        for k in EVENT_KINDS:
            extra = f"   (skipped {self.skipped[k]})" if self.skipped[k] else ""
            lines.append(f"  {k:<34} {self.events[k]:>6}{extra}")
        lines.append(f"  {'total':<34} {sum(self.events.values()):>6}")
        lines.append("")
        lines.append("pods")
        lines.append(f"  {'created':<34} {sum(self.created.values()):>6}   " + ", ".join(
            f"{k} {v}" for k, v in sorted(self.created.items())))
        lines.append(f"  {'deleted by the churn':<34} {self.deleted:>6}")
        lines.append(f"  {'bound (placed)':<34} {len(self.bound_uids):>6}")
        lines.append(f"  {'running (admitted by kubelet-dm)':<34} {len(self.running_uids):>6}")
        lines.append(f"  {'seen bound on a foreign instance':<34} {len(self.on_foreign):>6}")
        for k, v in sorted(self.notes.items(), key=lambda kv: (kv[0].startswith(" "), kv[0])):
            if not k.startswith(" "):
                lines.append(f"  {k:<34} {v:>6}")
        fails = sorted((k for k in self.notes if k.startswith(" ")), key=lambda k: -self.notes[k])
        for k in fails:
            lines.append(f"    {k.strip():<48} {self.notes[k]:>6}")
        lines.append(f"  {'longest unclaimed instance (s)':<34} {self.max_unclaimed_age:>6.0f}")
        lines.append("")
        lines.append("invariants (violations)")
        for k in INVARIANTS:
            lines.append(f"  {k:<34} {len(self.violations[k]):>6}")
        lines.append("")
        lines.append("RSS (MiB; median of the first and last third of the churn after warm-up)")
        for r in rss_rows:
            if "start_mib" in r:
                lines.append(f"  {r['component']:<26} {r['start_mib']:>7} -> {r['end_mib']:>7}"
                             f"   peak {r['peak_mib']:>7}   {r['processes']} processes"
                             f"   {'flat' if r['ok'] else 'GROWING'}"
                             f"   (longest-lived: {r['longest_process_mib'][0]} -> "
                             f"{r['longest_process_mib'][1]} over {r['longest_process_s']}s)")
            else:
                lines.append(f"  {r['component']:<26} {r.get('note')}")
        bad = sum(len(v) for v in self.violations.values())
        lines.append("")
        for k in INVARIANTS:
            for msg in list(self.violations[k].values())[:10]:
                lines.append(f"  ! {k}: {msg}")
        if stopped_early:
            lines.append(f"soak: FAIL: stopped on an error before the end (below); "
                         f"{len(INVARIANTS)} invariants, {bad} violations until then")
        else:
            lines.append(f"soak: {'PASS' if bad == 0 else 'FAIL'}: {len(INVARIANTS)} "
                         f"invariants, {bad} violations")
        return "\n".join(lines)

    def write_json(self, rss_rows) -> None:
        data = {"seed": self.args.seed, "duration_s": self.args.duration,
                "node_lock": self.args.node_lock,
                "events": dict(self.events), "skipped": dict(self.skipped),
                "pods": {"created": dict(self.created), "deleted": self.deleted,
                         "bound": len(self.bound_uids), "running": len(self.running_uids),
                         "on_foreign": len(self.on_foreign)},
                "notes": dict(self.notes),
                "violations": {k: list(v.values()) for k, v in self.violations.items()},
                "rss": rss_rows, "checks": self.checks, "monitor_errors": self.monitor_errors,
                "max_unclaimed_age_s": self.max_unclaimed_age,
                "foreign": self.foreign}
        with open(os.path.join(self.out, "summary.json"), "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)

    def run(self) -> int:
        self.start()
        threads = [threading.Thread(target=self.monitor_loop, daemon=True, name="monitor"),
                   threading.Thread(target=self.rss_loop, daemon=True, name="rss")]
        for th in threads:
            th.start()
        self.churn_start = self.now()
        # The soak failing to run to the end is a failure too (exit status 2), but what it
        # found until then is still reported: the summary comes first, the error last.
        harness_error = ""
        try:
            self.run_churn()
            self.say("churn over: lifting stalls and faults, restarting what is down")
            self.restore()
            time.sleep(self.args.settle)
            self.placement_rounds()
            self.final_checks()
        except Exception:  # noqa: BLE001 - reported below, after what was found
            harness_error = traceback.format_exc()
            self.say("the soak stopped on an error (at the end of its output)")
        finally:
            self.stop_monitor.set()
            for th in threads:
                th.join(10)
        self.admission_failures()
        rows = self.rss_report()
        self.write_rss()
        self.write_json(rows)
        text = self.summary(rows, stopped_early=bool(harness_error))
        with open(os.path.join(self.out, "summary.txt"), "w", encoding="utf-8") as f:
            f.write(text + "\n" + harness_error)
        print(text, flush=True)
        if harness_error:
            print(harness_error.rstrip(), flush=True)
            print("soak: could not run to the end", flush=True)
            return 2
        return 1 if any(self.violations.values()) else 0

    def stop(self) -> None:
        for n in self.nodes:
            n.expect_agent = n.expect_dm = False
            n.sim.stop()
            n.proxy.close()


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="RSS rule: per component, the median VmRSS over the last third of the churn "
               "must be at most max(first-third median x --rss-ratio, first-third median + "
               "--rss-slack-mib); the first third starts after a warm-up of min(30 s, 10%% of "
               "--duration). Restarts start a fresh process (the CSV has the pid).")
    ap.add_argument("--bins", required=True, help="etcd, kube-apiserver, kube-scheduler, kubectl, "
                                                  "kubelet-dm")
    ap.add_argument("--tessera", required=True, help="tessera binary (libtessera-nvml-sim.so "
                                                     "beside it)")
    ap.add_argument("--repo", default=os.path.dirname(os.path.dirname(os.path.abspath(
        __file__))))
    ap.add_argument("--duration", type=float, default=180, help="seconds of churn and chaos")
    ap.add_argument("--seed", type=int, default=None, help="RNG seed (default: random, printed)")
    ap.add_argument("--out", default="", help="folder for summary, CSV, SVG (default: work dir)")
    ap.add_argument("--work", default="", help="work dir (default: a new temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the work dir")
    ap.add_argument("--event-interval", type=float, default=12.0,
                    help="mean seconds between chaos events")
    ap.add_argument("--max-pods", type=int, default=24, help="pods alive at most")
    ap.add_argument("--tick", type=float, default=0.7, help="seconds between churn steps")
    ap.add_argument("--check-interval", type=float, default=3.0)
    ap.add_argument("--settle", type=float, default=8.0,
                    help="seconds after the churn before the final checks")
    ap.add_argument("--settle-timeout", type=float, default=60.0)
    ap.add_argument("--place-timeout", type=float, default=45.0)
    ap.add_argument("--node-lock", default="hami", choices=["hami", "none"],
                    help="tessera serve's --node-lock (deploy/ ships hami; the agents release "
                         "the lock after Allocate, as HAMi's device plugin does)")
    ap.add_argument("--rss-ratio", type=float, default=1.5)
    ap.add_argument("--rss-slack-mib", type=float, default=24.0)
    args = ap.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 1 << 31)
    if os.geteuid() != 0:
        print("soak: needs root (kubelet-dm and its mount namespace)")
        return 2
    for b in ("etcd", "kube-apiserver", "kube-scheduler", "kubectl", "kubelet-dm"):
        if not os.path.exists(os.path.join(args.bins, b)):
            print(f"soak: {args.bins}/{b} is missing (e2e/k8s-bins/build.sh builds it)")
            return 2
    procs.install_cleanup()
    work = args.work or tempfile.mkdtemp(prefix="tessera-soak-")
    os.makedirs(work, exist_ok=True)
    out = args.out or os.path.join(work, "out")
    os.makedirs(out, exist_ok=True)
    print(f"soak: seed {args.seed} (rerun with --seed {args.seed}), work dir {work}, "
          f"output {out}", flush=True)
    cluster = Cluster(work=work, bins=args.bins, repo=args.repo, tessera_bin=args.tessera,
                      node_lock=args.node_lock, lock_releaser=False)
    soak = None
    rc = 2
    try:
        cluster.start()
        print(f"soak: control plane up in {cluster.startup_seconds:.1f}s", flush=True)
        soak = Soak(args, cluster, out)
        rc = soak.run()
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        print("soak: could not run to the end")
        rc = 2
    finally:
        if soak:
            soak.stop()
        cluster.stop()
        procs.kill_all()
        if rc == 0 and not args.keep and not args.work:
            if args.out:
                shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"soak: logs kept in {work}", flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
