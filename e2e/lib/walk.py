"""The migration walk's pieces (scenario w of real_e2e.py): the shell steps of
docs/migrating-from-hami.md, a stand-in for HAMi's webhook, and stand-ins for the controllers and
kubelets a real cluster has (no kube-controller-manager, no kubelet here).

- guide_steps() reads the fenced ```sh blocks that follow `<!-- e2e:step NAME -->` (and the
  variables block after `<!-- e2e:vars -->`), so the test runs the guide's commands as written.
- HamiWebhook answers kube-apiserver as HAMi's mutating webhook does for NVIDIA pods: a pod that
  asks for nvidia.com/ resources and names no scheduler (or default-scheduler) gets
  hami-scheduler; a pod that names another scheduler is left alone.
- StandIns plays (pumped by the scenario) the DaemonSet controller and the kubelet for the two
  device plugin DaemonSets: a pod per matching node, made from the template and bound to it,
  deleted (gracefully: it stops half a second later) when the node stops matching or the
  DaemonSet is gone; HAMi's pod writes HAMi's
  registration on its node as HAMi's device plugin does and is Ready at once; tessera's pod runs
  a real `tessera agent` with the DaemonSet's arguments and a token bound to that pod, and is
  Ready when the agent's /readyz is. And the Deployment controller: status as if every replica
  were available, and HAMi's scheduler (a kube-scheduler with its profile) runs while its
  Deployment has replicas. It records the most device plugin pods it ever saw on one node.
"""

import base64
import http.server
import json
import re
import ssl
import textwrap
import threading
import time

from . import gpu
from .kube import ApiError

_STEP = re.compile(r"^[ \t]*<!-- e2e:(step [\w-]+|vars) -->[ \t]*\n(?:[ \t]*\n)*"
                   r"([ \t]*)```(?:sh|bash)[ \t]*\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S)


def guide_steps(path: str) -> tuple[dict[str, str], list[str]]:
    """({step name: its shell text}, the variable names the `vars` block sets)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    steps: dict[str, str] = {}
    variables: list[str] = []
    for m in _STEP.finditer(text):
        kind, body = m.group(1), textwrap.dedent(m.group(3))
        if kind == "vars":
            variables = re.findall(r"^([A-Z_][A-Z0-9_]*)=", body, re.M)
        else:
            name = kind.split()[1]
            if name in steps:
                raise ValueError(f"{path}: step {name} appears twice")
            steps[name] = body
    return steps, variables


# How long a deleted device plugin pod takes to stop (its kubelet's part): long enough that a
# step which does not wait for it lets two device plugins meet on a node.
TERMINATION_SECONDS = 0.5

NVIDIA_RESOURCES = ("nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpumem-percentage",
                    "nvidia.com/gpucores")


class HamiWebhook:
    """HTTPS on 127.0.0.1 with the given serving certificate; v1beta1 AdmissionReviews, as HAMi's
    chart registers its webhook (admissionReviewVersions: [v1beta1])."""

    def __init__(self, cert: str, key: str, scheduler_name: str = "hami-scheduler"):
        outer = self
        self.mutated: list[str] = []
        self.reviews = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def do_POST(self):  # noqa: N802
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                req = review["request"]
                pod = req.get("object") or {}
                spec = pod.get("spec", {})
                resp = {"uid": req["uid"], "allowed": True}
                outer.reviews += 1
                asks = any(k in NVIDIA_RESOURCES
                           for c in spec.get("containers", [])
                           for part in ("limits", "requests")
                           for k in (c.get("resources", {}).get(part) or {}))
                if asks and spec.get("schedulerName") in (None, "", "default-scheduler"):
                    patch = [{"op": "add", "path": "/spec/schedulerName",
                              "value": scheduler_name}]
                    resp["patchType"] = "JSONPatch"
                    resp["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
                    outer.mutated.append(pod.get("metadata", {}).get("name", "?"))
                body = json.dumps({"apiVersion": review.get("apiVersion",
                                                            "admission.k8s.io/v1beta1"),
                                   "kind": "AdmissionReview", "response": resp}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True,
                                       name="hami-webhook")
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _matches(selector: dict | None, labels: dict) -> bool:
    return all(labels.get(k) == v for k, v in (selector or {}).items())


class StandIns:
    """See the module docstring. `daemonsets`: (namespace, name, kind) with kind "hami" or
    "agent"; `hami_gpus`: node -> the DeviceInfo list HAMi's device plugin registers there;
    `start_agent(pod) -> handle`, `agent_ready(handle)` and `stop_agent(handle)` run tessera's
    agent for a pod; `deployments`: (namespace, name, start(), stop()) whose status is written
    as if all their replicas were available, start() and stop() (or None) called when the
    replicas go above 0 and back (HAMi's scheduler); `hooks`: called on every pass.

    No thread: processes are started from the main thread only (lib/procs.py), so the scenario
    calls pump() while a guide step runs and settle() after it."""

    def __init__(self, kube, group: str, daemonsets: list[tuple[str, str, str]],
                 hami_gpus: dict[str, list[dict]], start_agent, agent_ready, stop_agent,
                 deployments: list[tuple[str, str, object, object]], hooks=()):
        self.kube, self.group = kube, group
        self.daemonsets = daemonsets
        self.hami_gpus = hami_gpus
        self.start_agent, self.agent_ready, self.stop_agent = start_agent, agent_ready, stop_agent
        self.deployments = deployments
        self.running: set[tuple[str, str]] = set()
        self.hooks = list(hooks)
        self.agents: dict[str, object] = {}  # pod uid -> handle
        self.stopping: dict[str, float] = {}  # pod uid -> when its termination was first seen
        self.selectors: dict[tuple[str, str], dict] = {}  # last seen pod selector per DaemonSet
        self.max_plugins_per_node = 0
        self.max_plugins_at = ""
        self.errors: list[str] = []

    def stop(self) -> None:
        for handle in self.agents.values():
            self.stop_agent(handle)
        self.agents.clear()
        for ns, name, _, stop in self.deployments:
            if (ns, name) in self.running and stop:
                stop()
        self.running.clear()

    def pump(self) -> bool:
        """One pass; False (and the error recorded) when it failed."""
        try:
            self._pass()
            return True
        except Exception as e:  # noqa: BLE001 - the API server's conflicts etc.; next pass
            self.errors.append(f"{type(e).__name__}: {e}")
            del self.errors[:-20]
            return False

    def settle(self, passes: int = 2) -> None:
        for _ in range(passes):
            self.pump()

    def _pass(self) -> None:
        nodes = {n["metadata"]["name"]: n for n in self.kube.get("/api/v1/nodes", query={
            "labelSelector": f"tessera-e2e/group={self.group}"})["items"]}
        per_node: dict[str, int] = {}
        seen: set[str] = set()
        for ns, name, kind in self.daemonsets:
            try:
                ds = self.kube.get(f"/apis/apps/v1/namespaces/{ns}/daemonsets/{name}")
                self.selectors[(ns, name)] = ds["spec"]["selector"]["matchLabels"]
            except ApiError as e:
                if e.status != 404:
                    raise
                ds = None
            sel = self.selectors.get((ns, name))
            if sel is None:
                continue
            pods = self.kube.pods(ns, ",".join(f"{k}={v}" for k, v in sel.items()))
            want = set()
            if ds is not None:
                node_selector = ds["spec"]["template"]["spec"].get("nodeSelector")
                want = {n for n, obj in nodes.items()
                        if _matches(node_selector, obj["metadata"].get("labels") or {})}
            have: dict[str, dict] = {}
            terminating: set[str] = set()
            for p in pods:
                node = p["spec"].get("nodeName")
                if node not in nodes:
                    continue
                seen.add(p["metadata"]["uid"])
                # A pod being deleted still runs until its kubelet has stopped it: it counts.
                per_node[node] = per_node.get(node, 0) + 1
                if p["metadata"].get("deletionTimestamp"):
                    terminating.add(node)
                    self._terminate(p)
                elif node not in want or node in have:  # the node left, or a duplicate
                    self._delete(p)
                else:
                    have[node] = p
            # As the DaemonSet controller: no new pod beside one that is still terminating.
            for node in sorted(want - set(have) - terminating):
                have[node] = self._create(ds, node)
                seen.add(have[node]["metadata"]["uid"])
                per_node[node] = per_node.get(node, 0) + 1
            for node, p in have.items():
                self._run(kind, p, node)
        for uid in [u for u in self.agents if u not in seen]:  # pods deleted by others
            self.stop_agent(self.agents.pop(uid))
        for uid in [u for u in self.stopping if u not in seen]:
            del self.stopping[uid]
        if per_node:
            worst = max(per_node.values())
            if worst > self.max_plugins_per_node:
                self.max_plugins_per_node = worst
                self.max_plugins_at = ", ".join(f"{n}: {k}" for n, k in sorted(per_node.items()))
        for ns, name, start, stop in self.deployments:
            path = f"/apis/apps/v1/namespaces/{ns}/deployments/{name}"
            try:
                dep = self.kube.get(path)
                replicas = dep["spec"].get("replicas", 1)
                status = {"observedGeneration": dep["metadata"]["generation"],
                          "replicas": replicas, "updatedReplicas": replicas,
                          "readyReplicas": replicas, "availableReplicas": replicas}
                if any(dep.get("status", {}).get(k, 0) != v for k, v in status.items()):
                    self.kube.merge_patch(path + "/status", {"status": status})
            except ApiError as e:
                if e.status != 404:
                    raise
                replicas = 0
            if replicas and (ns, name) not in self.running:
                if start:
                    start()
                self.running.add((ns, name))
            elif not replicas and (ns, name) in self.running:
                if stop:
                    stop()
                self.running.discard((ns, name))
        for hook in self.hooks:
            hook()

    def _create(self, ds: dict, node: str) -> dict:
        tmpl = ds["spec"]["template"]
        md = ds["metadata"]
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"generateName": f"{md['name']}-", "namespace": md["namespace"],
                            "labels": dict(tmpl["metadata"].get("labels") or {}),
                            "annotations": dict(tmpl["metadata"].get("annotations") or {}),
                            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                                 "name": md["name"], "uid": md["uid"],
                                                 "controller": True}]},
               "spec": {**tmpl["spec"], "nodeName": node}}
        return self.kube.create_pod(pod)

    def _delete(self, pod: dict) -> None:
        """As the DaemonSet controller: a graceful deletion; the pod stays, terminating, until
        its kubelet has stopped it (_terminate)."""
        md = pod["metadata"]
        self.kube.request("DELETE", f"/api/v1/namespaces/{md['namespace']}/pods/{md['name']}",
                          query={"gracePeriodSeconds": "30"}, ok=(200, 202, 404))

    def _terminate(self, pod: dict) -> None:
        """As the kubelet: stops the pod's containers (tessera's agent) a moment after the
        deletion, then removes the pod."""
        md = pod["metadata"]
        first = self.stopping.setdefault(md["uid"], time.monotonic())
        if time.monotonic() - first < TERMINATION_SECONDS:
            return
        handle = self.agents.pop(md["uid"], None)
        if handle is not None:
            self.stop_agent(handle)
        self.kube.delete_pod(md["namespace"], md["name"])

    def _ready(self, pod: dict) -> None:
        md = pod["metadata"]
        self.kube.request("PATCH", f"/api/v1/namespaces/{md['namespace']}/pods/{md['name']}"
                          "/status", {"status": {"phase": "Running", "conditions": [
                              {"type": "PodScheduled", "status": "True"},
                              {"type": "Ready", "status": "True"}]}},
                          content_type="application/strategic-merge-patch+json")

    @staticmethod
    def _is_ready(pod: dict) -> bool:
        return any(c.get("type") == "Ready" and c.get("status") == "True"
                   for c in pod.get("status", {}).get("conditions") or [])

    def _run(self, kind: str, pod: dict, node: str) -> None:
        if self._is_ready(pod):
            return
        if kind == "hami":
            # HAMi's device plugin registers its node's GPUs when it starts.
            self.kube.merge_patch(f"/api/v1/nodes/{node}", {"metadata": {"annotations": {
                gpu.REGISTER: json.dumps(self.hami_gpus[node], separators=(",", ":")),
                gpu.HANDSHAKE: gpu.handshake_now()}}})
            self._ready(pod)
            return
        uid = pod["metadata"]["uid"]
        if uid not in self.agents:
            self.agents[uid] = self.start_agent(pod)
        if self.agent_ready(self.agents[uid]):
            self._ready(pod)
