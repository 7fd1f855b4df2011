"""HAMi wire formats the harness writes (node register annotation) and checks (pod annotations).

Formats: hami-protocol.md 1.1.1 (DeviceInfo JSON), 1.2.1 (container devices), 1.2.2 (MIG
allocations). Only what the checks need; a decode error is reported as a finding, not raised.
"""

import json
import math
import os
import time
from dataclasses import dataclass, field

REGISTER = "hami.io/node-nvidia-register"
HANDSHAKE = "hami.io/node-handshake"
NODE_LOCK = "hami.io/mutex.lock"
VGPU_NODE = "hami.io/vgpu-node"
VGPU_TIME = "hami.io/vgpu-time"
TO_ALLOCATE = "hami.io/vgpu-devices-to-allocate"
ALLOCATED = "hami.io/vgpu-devices-allocated"
MIG_ALLOCATIONS = "hami.io/vgpu-mig-allocations"
BIND_PHASE = "hami.io/bind-phase"
BIND_TIME = "hami.io/bind-time"


def sharing_gpu(uuid: str, index: int, *, model: str = "NVIDIA A10", devmem: int = 24576,
                count: int = 10, devcore: int = 100, numa: int = 0) -> dict:
    d = {"id": uuid, "index": index, "count": count, "devmem": devmem, "devcore": devcore,
         "type": model, "numa": numa, "mode": "hami-core", "health": True}
    return {k: v for k, v in d.items() if v not in (0, "")}  # Go omitempty


def mig_gpu(repo: str, uuid: str, alias: str, profile_names: list[str], index: int = 0) -> dict:
    """A MIG-mode DeviceInfo as HAMi's device plugin reports it, from data/mig-profiles.json:
    count = max instance count, devmem = total MiB, core = ceil(SM*100 / max SM)."""
    with open(os.path.join(repo, "data", "mig-profiles.json"), encoding="utf-8") as f:
        table = json.load(f)
    gpu = next(g for g in table if alias in g["aliases"])
    by_name = {p["name"]: p for p in gpu["profiles"]}
    max_sm = max(p["smCount"] for p in gpu["profiles"] if p.get("smCount"))
    profiles = []
    for name in profile_names:
        p = by_name[name]
        profiles.append({"name": name, "memoryMB": p["memoryMiB"],
                         "core": math.ceil(p["smCount"] * 100 / max_sm),
                         "sliceCount": p["sliceCount"], "placements": p["placements"]})
    d = {"id": uuid, "index": index,
         "count": max(by_name[n]["maxCount"] for n in profile_names),
         "devmem": gpu["memoryMiB"], "devcore": 100, "type": alias, "health": True,
         "mode": "mig", "migProfiles": profiles}
    return {k: v for k, v in d.items() if v not in (0, "")}


def handshake_now() -> str:
    return "Requesting_" + time.strftime("%Y-%m-%d %H:%M:%S")


def node_object(name: str, gpus: list[dict], group: str) -> dict:
    alloc = {"cpu": "64", "memory": "512Gi", "pods": "110", "ephemeral-storage": "1Ti",
             "nvidia.com/gpu": str(sum(g.get("count", 1) for g in gpus))}
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                       "gpu": "on", "tessera-e2e/group": group},
            "annotations": {REGISTER: json.dumps(gpus, separators=(",", ":")),
                            HANDSHAKE: handshake_now()},
        },
        "spec": {},
        "status": {
            "capacity": alloc, "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "tessera e2e fake node", "lastHeartbeatTime": now,
                            "lastTransitionTime": now}],
            "nodeInfo": {"kubeletVersion": "v1.36.3", "architecture": "amd64",
                         "operatingSystem": "linux"},
        },
    }


# --- pod annotation decoding -------------------------------------------------------------------
@dataclass
class Dev:
    uuid: str
    type: str
    mem: int
    cores: int


def decode_pod_devices(text: str) -> list[list[Dev]]:
    """`pod := (container ";")*`, `container := (device ":")*`, device = uuid,type,mem,cores."""
    slots = text.split(";")
    if slots and slots[-1] == "":
        slots.pop()  # the trailing ';'
    out = []
    for slot in slots:
        devs = []
        for piece in slot.split(":"):
            if "," not in piece:
                continue
            f = piece.split(",")
            if len(f) < 4:
                raise ValueError(f"device entry {piece!r} has {len(f)} fields")
            devs.append(Dev(f[0], f[1], int(f[2]), int(f[3])))
        out.append(devs)
    return out


def decode_mig(text: str) -> list[dict]:
    if not text:
        return []
    items = json.loads(text)
    for i, m in enumerate(items):
        if m.get("containerIndex", -1) < 0 or m.get("deviceIndex", -1) < 0 or not m.get(
                "gpuUUID") or not m.get("profile") or not m.get("placement", {}).get("size"):
            raise ValueError(f"MIG allocation {i} is incomplete: {m}")
    return items


# --- cluster-wide consistency check ------------------------------------------------------------
@dataclass
class GpuUse:
    mem: int = 0
    cores: int = 0
    tasks: int = 0
    placements: list = field(default_factory=list)  # (start, size, pod)


def check_assignments(pods: list[dict], node_gpus: dict[str, dict[str, dict]],
                      expect_bound: bool = True) -> tuple[list[str], dict[str, GpuUse]]:
    """Verifies every scheduled pod's annotations against the nodes' registered GPUs and that
    no GPU is over-committed. `node_gpus`: node -> uuid -> DeviceInfo. Returns (problems, use)."""
    problems: list[str] = []
    use: dict[str, GpuUse] = {}
    uuid_node = {u: n for n, gs in node_gpus.items() for u in gs}
    for pod in pods:
        md, spec = pod["metadata"], pod["spec"]
        key = f"{md['namespace']}/{md['name']}"
        node = spec.get("nodeName")
        ann = md.get("annotations") or {}
        if not node:
            if expect_bound:
                problems.append(f"{key}: not bound")
            continue
        if ann.get(VGPU_NODE) != node:
            problems.append(f"{key}: bound to {node} but {VGPU_NODE}={ann.get(VGPU_NODE)!r}")
        if ann.get(TO_ALLOCATE) != ann.get(ALLOCATED):
            problems.append(f"{key}: {TO_ALLOCATE} != {ALLOCATED}")
        if ann.get(BIND_PHASE) != "allocating" or not ann.get(BIND_TIME, "").isdigit():
            problems.append(f"{key}: bind-phase={ann.get(BIND_PHASE)!r} "
                            f"bind-time={ann.get(BIND_TIME)!r}")
        if not ann.get(VGPU_TIME, "").isdigit():
            problems.append(f"{key}: {VGPU_TIME}={ann.get(VGPU_TIME)!r}")
        try:
            slots = decode_pod_devices(ann.get(ALLOCATED, ""))
            migs = decode_mig(ann.get(MIG_ALLOCATIONS, ""))
        except (ValueError, TypeError) as e:
            problems.append(f"{key}: undecodable annotations: {e}")
            continue
        if not any(slots):
            problems.append(f"{key}: no devices in {ALLOCATED}")
        mig_at = {(m["containerIndex"], m["deviceIndex"]): m for m in migs}
        for ci, devs in enumerate(slots):
            seen_plain = set()
            for di, d in enumerate(devs):
                if d.type != "NVIDIA":
                    problems.append(f"{key}: device type {d.type!r}")
                if uuid_node.get(d.uuid) != node:
                    problems.append(f"{key}: device {d.uuid} is not on node {node} "
                                    f"(it is on {uuid_node.get(d.uuid)})")
                    continue
                info = node_gpus[node][d.uuid]
                u = use.setdefault(d.uuid, GpuUse())
                u.mem += d.mem
                u.cores += d.cores
                u.tasks += 1
                m = mig_at.pop((ci, di), None)
                if info.get("mode") == "mig":
                    if m is None:
                        problems.append(f"{key}: MIG device {d.uuid} slot {ci}/{di} has no "
                                        f"{MIG_ALLOCATIONS} entry")
                        continue
                    if m["gpuUUID"] != d.uuid:
                        problems.append(f"{key}: MIG entry {ci}/{di} names {m['gpuUUID']}")
                    prof = next((p for p in info["migProfiles"] if p["name"] == m["profile"]),
                                None)
                    pl = m["placement"]
                    if prof is None or {"start": pl["start"], "size": pl["size"]} not in \
                            prof["placements"]:
                        problems.append(f"{key}: MIG placement {m['profile']} {pl} is not a "
                                        f"legal placement of the GPU")
                    u.placements.append((pl["start"], pl["size"], key))
                else:
                    if d.uuid in seen_plain:
                        problems.append(f"{key}: container {ci} uses {d.uuid} twice")
                    seen_plain.add(d.uuid)
        for (ci, di) in mig_at:
            problems.append(f"{key}: {MIG_ALLOCATIONS} entry {ci}/{di} has no device")
    for uuid, u in use.items():
        info = node_gpus[uuid_node[uuid]][uuid]
        if u.mem > info["devmem"]:
            problems.append(f"{uuid}: memory over-committed {u.mem} > {info['devmem']}")
        if u.cores > max(info.get("devcore", 100), 100):
            problems.append(f"{uuid}: cores over-committed {u.cores} > {info.get('devcore')}")
        if u.tasks > info["count"]:
            problems.append(f"{uuid}: {u.tasks} tasks > count {info['count']}")
        ps = sorted(u.placements)
        for a, b in zip(ps, ps[1:]):
            if b[0] < a[0] + a[1]:
                problems.append(f"{uuid}: MIG placements overlap: {a} and {b}")
    return problems, use
