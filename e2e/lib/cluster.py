"""A throw-away control plane on 127.0.0.1: etcd, kube-apiserver, kube-scheduler (with tessera as
its extender behind a Service-like proxy), plus helpers to run tessera replicas.

No kubelet (kubernetes.md 1.7): Node objects are created by hand, pods stay Pending with
spec.nodeName set once bound, and deletions use gracePeriodSeconds=0. kube-controller-manager runs
only inside the scenarios that need a controller (start_controller_manager)."""

import base64
import http.client
import json
import os
import re
import ssl
import subprocess
import threading
import time

from . import gpu
from .certs import Pki
from .kube import ApiError, Kube
from .procs import Proc, free_port
from .svcproxy import ServiceProxy

NAMESPACE = "tessera-system"  # deploy/00-namespace.yaml
SERVICE_ACCOUNT = "tessera"  # deploy/10-rbac.yaml
SCHEDULER_NAME = "tessera-scheduler"
LEASE_NAME = "tessera-scheduler"
MANAGED_RESOURCES = ["nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpucores",
                     "nvidia.com/gpumem-percentage", "nvidia.com/priority"]


def _b64file(path: str) -> str:
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


class Abort(Exception):
    """Raised inside a wait_until condition: stop waiting now (e.g. the process exited)."""


def wait_until(fn, timeout: float, interval: float = 0.2, what: str = "condition"):
    """Polls fn() until it returns a truthy value; raises TimeoutError naming `what`. Other
    exceptions from fn() are retried until the deadline, except Abort."""
    end = time.monotonic() + timeout
    last_exc = None
    while True:
        try:
            v = fn()
            if v:
                return v
        except Abort:
            raise
        except Exception as e:  # noqa: BLE001 - retried until the deadline
            last_exc = e
        if time.monotonic() >= end:
            extra = f" (last error: {last_exc})" if last_exc else ""
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}{extra}")
        time.sleep(interval)


def _https_status(port: int, path: str, ctx: ssl.SSLContext, timeout: float = 2.0,
                  headers: dict | None = None):
    try:
        c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=timeout)
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        body = r.read()
        c.close()
        return r.status, body
    except (OSError, http.client.HTTPException) as e:
        return None, str(e).encode()


class Tessera:
    """One `tessera serve` process (HTTPS on bind_host:port, reached here on 127.0.0.1).

    Its /metrics, /ui/state and /explain want a bearer token RBAC allows (--read-auth=auto):
    status() and get_text() send the cluster's reader token, as Prometheus or an operator would."""

    def __init__(self, cluster: "Cluster", name: str, extra: list[str],
                 bind_host: str = "127.0.0.1"):
        self.cluster = cluster
        self.name = name
        self.port = free_port()
        c = cluster
        argv = [c.tessera_bin, "serve", "--kubeconfig", c.kubeconfigs["tessera"],
                "--http-bind", f"{bind_host}:{self.port}", "--scheduler-name", SCHEDULER_NAME,
                "--tls-cert-file", c.tessera_tls.cert, "--tls-key-file", c.tessera_tls.key,
                "--node-lock", c.node_lock, "--device-config", c.device_config, *extra]
        self.proc = Proc(name, argv, os.path.join(c.work, f"{name}.log"))
        self.expect_up = False

    def start(self) -> "Tessera":
        self.proc.start()
        self.expect_up = True
        return self

    def stop(self) -> None:
        self.expect_up = False
        self.proc.stop(5)

    def kill(self) -> None:
        """kill -9."""
        self.expect_up = False
        self.proc.kill()

    def check_alive(self) -> None:
        if self.expect_up and not self.proc.running():
            raise Abort(f"{self.name} died (exit code {self.proc.popen.returncode}); log tail:\n"
                        f"{self.proc.log_tail(8)}")

    def status(self, path: str) -> int | None:
        return _https_status(self.port, path, self.cluster.client_ctx,
                             headers=self.cluster.reader_headers())[0]

    def get_text(self, path: str) -> tuple[int | None, str]:
        status, body = _https_status(self.port, path, self.cluster.client_ctx, timeout=5,
                                     headers=self.cluster.reader_headers())
        return status, body.decode("utf-8", "replace")

    def wait_ready(self, timeout: float) -> None:
        def ready():
            if not self.proc.running():
                raise Abort(f"{self.name} exited with code {self.proc.popen.returncode}: "
                            f"{self.proc.log_tail(5)}")
            return self.status("/readyz") == 200
        wait_until(ready, timeout, 0.2, f"{self.name} /readyz == 200")

    def post(self, path: str, body: dict, timeout: float = 10.0):
        """(status, decoded body) of a POST; (None, error text) on timeout/connection error."""
        try:
            c = http.client.HTTPSConnection("127.0.0.1", self.port,
                                            context=self.cluster.client_ctx, timeout=timeout)
            c.request("POST", path, body=json.dumps(body),
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            raw = r.read()
            c.close()
        except (OSError, http.client.HTTPException) as e:
            return None, f"{type(e).__name__}: {e}"
        try:
            return r.status, json.loads(raw)
        except ValueError:
            return r.status, raw.decode("utf-8", "replace")


class NodeLockReleaser:
    """Plays the part of HAMi's device plugin for hami.io/mutex.lock: once the pod named in a
    node's lock is bound to that node (or gone, or the lock is 10 s old), remove the lock with a
    resourceVersion-guarded merge patch, as the device plugin does after Allocate. Every node the
    harness made (label tessera-e2e/group), gpu=on or not: scenario w moves one to tessera's
    agent, which has no kubelet here to call its Allocate."""

    def __init__(self, kube: Kube):
        self.kube = kube
        self.released = 0
        self._stop = threading.Event()
        self._first_seen: dict[tuple[str, str], float] = {}
        self.thread = threading.Thread(target=self._loop, daemon=True, name="lock-releaser")
        self.thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.wait(0.15):
            try:
                self._pass()
            except Exception:  # noqa: BLE001 - apiserver restarts etc.; try again
                pass

    def _pass(self) -> None:
        nodes = self.kube.get("/api/v1/nodes", query={"labelSelector": "tessera-e2e/group"},
                              timeout=5)["items"]
        now = time.monotonic()
        for n in nodes:
            md = n["metadata"]
            lock = (md.get("annotations") or {}).get(gpu.NODE_LOCK)
            if not lock:
                continue
            key = (md["name"], lock)
            first = self._first_seen.setdefault(key, now)
            parts = lock.split(",")
            release = now - first > 10
            if len(parts) == 3 and not release:
                try:
                    pod = self.kube.pod(parts[1], parts[2])
                    release = pod["spec"].get("nodeName") == md["name"]
                except ApiError as e:
                    release = e.status == 404
            if release:
                try:
                    self.kube.merge_patch(f"/api/v1/nodes/{md['name']}", {"metadata": {
                        "annotations": {gpu.NODE_LOCK: None},
                        "resourceVersion": md["resourceVersion"]}}, timeout=5)
                    self.released += 1
                    self._first_seen.pop(key, None)
                except ApiError:
                    pass  # changed meanwhile; next pass


class Cluster:
    def __init__(self, *, work: str, bins: str, repo: str, tessera_bin: str | None,
                 node_lock: str = "hami", extender_tls: bool = True,
                 lock_releaser: bool = True):
        """lock_releaser: with node_lock "hami", a thread plays HAMi's device plugin and
        releases the lock once its pod is bound; off when a real device plugin (tessera agent)
        releases it after Allocate."""
        self.work, self.bins, self.repo = work, bins, repo
        self.tessera_bin = tessera_bin
        self.node_lock = node_lock
        self.extender_tls = extender_tls
        self.lock_releaser = lock_releaser
        self.procs: dict[str, Proc] = {}
        self.kubeconfigs: dict[str, str] = {}
        self.tesseras: list[Tessera] = []
        self.proxy: ServiceProxy | None = None
        self.releaser: NodeLockReleaser | None = None
        self.kube: Kube | None = None
        self.reader_token: str | None = None

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        t0 = time.monotonic()
        self._make_pki()
        self._start_etcd()
        self._start_apiserver()
        self._write_kubeconfigs()
        self.kube = Kube("127.0.0.1", self.api_port, self.pki.ca.cert, self.admin.cert,
                         self.admin.key)
        self._apply_deploy_rbac()
        self._make_reader()
        self._extract_deploy_config()
        self.proxy_port = free_port()
        self.proxy = ServiceProxy(self.proxy_port, self.pki.ca.cert, tls=self.extender_tls)
        self._start_scheduler()
        if self.node_lock == "hami" and self.lock_releaser:
            self.releaser = NodeLockReleaser(self.kube)
        self.startup_seconds = time.monotonic() - t0

    def stop(self) -> None:
        if self.releaser:
            self.releaser.stop()
        for t in self.tesseras:
            t.stop()
        for name in ("kube-controller-manager", "kube-scheduler", "kube-apiserver", "etcd"):
            if name in self.procs:
                self.procs[name].stop(5)
        if self.proxy:
            self.proxy.close()

    def _bin(self, name: str) -> str:
        return os.path.join(self.bins, name)

    def _log(self, name: str) -> str:
        return os.path.join(self.work, f"{name}.log")

    # --- PKI and kubeconfigs -----------------------------------------------------------------
    def _make_pki(self) -> None:
        p = self.pki = Pki(os.path.join(self.work, "pki"))
        self.api_tls = p.issue("apiserver", "/CN=kube-apiserver", server=True,
                               sans=("IP:127.0.0.1", "DNS:localhost", "IP:10.0.0.1",
                                     "DNS:kubernetes", "DNS:kubernetes.default",
                                     "DNS:kubernetes.default.svc"))
        self.admin = p.issue("admin", "/O=system:masters/CN=tessera-e2e-admin", client=True)
        self.sched_client = p.issue("kube-scheduler", "/CN=system:kube-scheduler", client=True)
        # tessera authenticates as deploy/'s ServiceAccount, so the shipped RBAC is what it gets.
        self.tessera_user = f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"
        self.tessera_client = p.issue(
            "tessera-client", "/O=system:serviceaccounts/O=system:serviceaccounts:"
            f"{NAMESPACE}/CN={self.tessera_user}", client=True)
        self.tessera_tls = p.issue("tessera-serving", "/CN=tessera.tessera-system.svc",
                                   server=True, sans=("IP:127.0.0.1", "DNS:localhost",
                                                      "DNS:tessera.tessera-system.svc"))
        self.sa_keys = p.service_account_keys()
        self.client_ctx = ssl.create_default_context(cafile=p.ca.cert)

    def _write_kubeconfig(self, name: str, pair) -> str:
        path = os.path.join(self.work, f"{name}.kubeconfig")
        text = f"""apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: https://127.0.0.1:{self.api_port}
    certificate-authority-data: {_b64file(self.pki.ca.cert)}
users:
- name: {name}
  user:
    client-certificate-data: {_b64file(pair.cert)}
    client-key-data: {_b64file(pair.key)}
contexts:
- name: e2e
  context:
    cluster: e2e
    user: {name}
current-context: e2e
"""
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        self.kubeconfigs[name] = path
        return path

    def _write_kubeconfigs(self) -> None:
        self._write_kubeconfig("admin", self.admin)
        self._write_kubeconfig("scheduler", self.sched_client)
        self._write_kubeconfig("tessera", self.tessera_client)

    def kubectl(self, *args: str, check: bool = True, timeout: float = 60):
        r = subprocess.run([self._bin("kubectl"), "--kubeconfig", self.kubeconfigs["admin"],
                            *args], capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} failed ({r.returncode}):\n"
                               f"{r.stdout}{r.stderr}")
        return r

    # --- etcd --------------------------------------------------------------------------------
    def _start_etcd(self) -> None:
        self.etcd_port, peer = free_port(), free_port()
        client_url, peer_url = f"http://127.0.0.1:{self.etcd_port}", f"http://127.0.0.1:{peer}"
        argv = [self._bin("etcd"), "--name", "e2e", "--data-dir",
                os.path.join(self.work, "etcd-data"), "--listen-client-urls", client_url,
                "--advertise-client-urls", client_url, "--listen-peer-urls", peer_url,
                "--initial-advertise-peer-urls", peer_url, "--initial-cluster",
                f"e2e={peer_url}", "--unsafe-no-fsync", "--log-level", "warn"]
        self.procs["etcd"] = Proc("etcd", argv, self._log("etcd")).start()
        wait_until(lambda: self.etcd_call("GET", "/health").get("health") == "true", 30, 0.2,
                   "etcd /health")

    def etcd_call(self, method: str, path: str, body: dict | None = None) -> dict:
        """etcd's HTTP/JSON gRPC gateway (etcdctl is not built)."""
        c = http.client.HTTPConnection("127.0.0.1", self.etcd_port, timeout=5)
        c.request(method, path, body=json.dumps(body) if body is not None else None)
        r = c.getresponse()
        raw = r.read()
        c.close()
        if r.status != 200:
            raise RuntimeError(f"etcd {path}: HTTP {r.status}: {raw[:300]!r}")
        return json.loads(raw)

    def etcd_bump_and_compact(self, writes: int = 20) -> int:
        """Advances etcd's revision outside the apiserver's view and compacts to it, so a watch
        resumed from an older resourceVersion gets 410 Gone. Returns the compacted revision."""
        key = base64.b64encode(b"/tessera-e2e/bump").decode()
        rev = 0
        for i in range(writes):
            val = base64.b64encode(str(i).encode()).decode()
            rev = int(self.etcd_call("POST", "/v3/kv/put",
                                     {"key": key, "value": val})["header"]["revision"])
        self.etcd_call("POST", "/v3/kv/compaction", {"revision": str(rev), "physical": True})
        return rev

    # --- kube-apiserver ----------------------------------------------------------------------
    def _start_apiserver(self) -> None:
        self.api_port = free_port()
        argv = [self._bin("kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
                "--bind-address=127.0.0.1", f"--secure-port={self.api_port}",
                "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
                f"--tls-cert-file={self.api_tls.cert}",
                f"--tls-private-key-file={self.api_tls.key}",
                f"--client-ca-file={self.pki.ca.cert}",
                # Only so that kube-scheduler's delegated authn finds a complete configmap.
                f"--requestheader-client-ca-file={self.pki.ca.cert}",
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={self.sa_keys.cert}",
                f"--service-account-signing-key-file={self.sa_keys.key}",
                "--authorization-mode=Node,RBAC",
                "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
                "--enable-admission-plugins=MutatingAdmissionWebhook,ValidatingAdmissionWebhook",
                "--service-cluster-ip-range=10.0.0.0/24",
                # As kubeadm and managed clusters run it: node agents (deploy/50-agent.yaml) are
                # privileged DaemonSets.
                "--allow-privileged=true",
                f"--cert-dir={os.path.join(self.work, 'apiserver-certs')}",
                "--profiling=false", "--v=1"]
        self.procs["kube-apiserver"] = Proc("kube-apiserver", argv, self._log("kube-apiserver"))
        self.start_apiserver()

    def start_apiserver(self, timeout: float = 90) -> None:
        self.procs["kube-apiserver"].start()
        ctx = ssl.create_default_context(cafile=self.pki.ca.cert)
        ctx.load_cert_chain(self.admin.cert, self.admin.key)

        def ready():
            if not self.procs["kube-apiserver"].running():
                raise Abort("kube-apiserver exited")
            return _https_status(self.api_port, "/readyz", ctx)[0] == 200
        wait_until(ready, timeout, 0.3, "kube-apiserver /readyz")

    def stop_apiserver(self) -> None:
        # SIGTERM; it lingers ~15 s on open watches, so SIGKILL after 3 s (a crash is as good).
        self.procs["kube-apiserver"].stop(3)

    # --- deploy/ pieces used for real ---------------------------------------------------------
    def deploy_path(self, name: str) -> str:
        return os.path.join(self.repo, "deploy", name)

    def _apply_deploy_rbac(self) -> None:
        self.kubectl("apply", "-f", self.deploy_path("00-namespace.yaml"),
                     "-f", self.deploy_path("10-rbac.yaml"))

    def service_account_token(self, ns: str, name: str, seconds: int = 3600) -> str:
        """Creates ServiceAccount ns/name (if missing) and returns a token for it from the
        TokenRequest API, as `kubectl create token` does."""
        try:
            self.kube.create(f"/api/v1/namespaces/{ns}/serviceaccounts", {
                "apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": name, "namespace": ns}})
        except ApiError as e:
            if e.status != 409:
                raise
        tr = self.kube.create(f"/api/v1/namespaces/{ns}/serviceaccounts/{name}/token", {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": seconds}})
        return tr["status"]["token"]

    def bind_cluster_role(self, binding: str, role: str, ns: str, sa: str) -> None:
        """ClusterRoleBinding `binding` of ClusterRole `role` to ServiceAccount ns/sa."""
        path = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
        obj = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": binding},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": role},
               "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}]}
        try:
            self.kube.create(path, obj)
        except ApiError as e:
            if e.status != 409:
                raise
            self.kube.delete(f"{path}/{binding}", grace0=False)
            self.kube.create(path, obj)

    def _make_reader(self) -> None:
        """The harness reads tessera's /metrics and /explain as deploy/README.md says to: a
        ServiceAccount bound to deploy/'s ClusterRole tessera-reader, its token as bearer."""
        self.bind_cluster_role("tessera-e2e-reader", "tessera-reader", NAMESPACE,
                               "tessera-e2e-reader")
        self.reader_token = self.service_account_token(NAMESPACE, "tessera-e2e-reader", 6 * 3600)

    def reader_headers(self) -> dict:
        return {"Authorization": f"Bearer {self.reader_token}"} if self.reader_token else {}

    def deploy_configmap(self) -> dict:
        return next(o for o in self.manifest_objects("20-config.yaml")
                    if o["kind"] == "ConfigMap")["data"]

    def _extract_deploy_config(self) -> None:
        data = self.deploy_configmap()
        self.device_config = os.path.join(self.work, "device-config.yaml")
        with open(self.device_config, "w", encoding="utf-8") as f:
            f.write(data["device-config.yaml"])
        self.deploy_scheduler_config = os.path.join(self.work, "deploy-scheduler-config.yaml")
        with open(self.deploy_scheduler_config, "w", encoding="utf-8") as f:
            f.write(data["scheduler-config.yaml"])

    def shipped_scheduler_config(self, name: str, kubeconfig: str,
                                 extender_port: int | None = None) -> str:
        """deploy/'s KubeSchedulerConfiguration made runnable here: the in-pod CA path points at
        our CA, the extender's loopback port is moved to extender_port, and a clientConnection is
        added (--kubeconfig is ignored next to --config)."""
        with open(self.deploy_scheduler_config, encoding="utf-8") as f:
            text = f.read()
        if "clientConnection" in text:
            raise ValueError("shipped scheduler config sets clientConnection")
        text = text.replace("/tls/ca.crt", self.pki.ca.cert)
        if extender_port is not None:
            urls = re.findall(r"urlPrefix: (https?://127\.0\.0\.1:)(\d+)", text)
            if len(urls) != 1:
                raise ValueError(f"shipped scheduler config: want one extender on 127.0.0.1, "
                                 f"got {urls}")
            text = text.replace("".join(urls[0]), f"{urls[0][0]}{extender_port}")
        path = os.path.join(self.work, f"{name}.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"{text}\nclientConnection:\n  kubeconfig: {kubeconfig}\n")
        return path

    def shipped_deployment(self) -> dict:
        return next(o for o in self.manifest_objects("30-deployment.yaml")
                    if o["kind"] == "Deployment")

    def manifest_objects(self, name: str) -> list[dict]:
        """The objects of a deploy/ file as kubectl parses them (client side)."""
        return self.objects_of(self.deploy_path(name))

    def objects_of(self, path: str, *kubectl_args: str) -> list[dict]:
        """The objects of a YAML file as kubectl parses them (client side), Lists flattened."""
        text = self.kubectl("create", "--dry-run=client", *kubectl_args, "-o", "json", "-f",
                            path).stdout
        objs, pos, dec = [], 0, json.JSONDecoder()
        while True:
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos >= len(text):
                break
            obj, pos = dec.raw_decode(text, pos)
            objs.extend(obj["items"] if obj.get("kind") == "List" else [obj])
        return objs

    # --- kube-scheduler ----------------------------------------------------------------------
    def _scheduler_config(self, name: str = "scheduler-config",
                          profile: str = SCHEDULER_NAME, url: str | None = None) -> str:
        """The harness's KubeSchedulerConfiguration: profile `profile`, one extender at `url`
        (default: the Service proxy; HTTPS verified with our CA for https://, else plain)."""
        if url is None:
            scheme = "https" if self.extender_tls else "http"
            url = f"{scheme}://127.0.0.1:{self.proxy_port}"
        tls = ""
        if url.startswith("https://"):
            tls = f"""  enableHTTPS: true
  tlsConfig:
    caData: {_b64file(self.pki.ca.cert)}
"""
        managed = "".join(f"  - name: {r}\n    ignoredByScheduler: true\n"
                          for r in MANAGED_RESOURCES)
        text = f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: {self.kubeconfigs['scheduler']}
leaderElection:
  leaderElect: false
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 3
profiles:
- schedulerName: {profile}
extenders:
- urlPrefix: {url}
  filterVerb: filter
  bindVerb: bind
  preemptVerb: preempt
{tls}  nodeCacheCapable: true
  weight: 1
  httpTimeout: 30s
  managedResources:
{managed}"""
        path = os.path.join(self.work, f"{name}.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def scheduler_proc(self, name: str, config: str, kubeconfig: str,
                       extra: list[str] = ()) -> Proc:
        port = free_port()
        argv = [self._bin("kube-scheduler"), f"--config={config}",
                "--bind-address=127.0.0.1", f"--secure-port={port}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}", *extra]
        p = Proc(name, argv, self._log(name))
        p.port = port
        return p

    def wait_scheduler_healthy(self, p: Proc, timeout: float = 60) -> None:
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE

        def healthy():
            if not p.running():
                raise Abort(f"{p.name} exited")
            return _https_status(p.port, "/healthz", insecure)[0] == 200
        wait_until(healthy, timeout, 0.3, f"{p.name} /healthz")

    def _start_scheduler(self) -> None:
        p = self.scheduler_proc("kube-scheduler", self._scheduler_config(),
                                self.kubeconfigs["scheduler"], ["--v=2"])
        self.procs["kube-scheduler"] = p
        self.start_scheduler()

    def start_scheduler(self) -> None:
        self.procs["kube-scheduler"].start()
        self.wait_scheduler_healthy(self.procs["kube-scheduler"])

    # --- kube-controller-manager ---------------------------------------------------------------
    def start_controller_manager(self, controllers: str = "replicaset,deployment") -> Proc:
        """The real kube-controller-manager with only `controllers`, for the scenarios that need
        a controller to recreate evicted pods; stopped by stop_controller_manager (or at the
        end). Other scenarios run without it (module doc)."""
        port = free_port()
        kc = self.kubeconfigs["admin"]
        argv = [self._bin("kube-controller-manager"), f"--kubeconfig={kc}",
                f"--authentication-kubeconfig={kc}", f"--authorization-kubeconfig={kc}",
                f"--controllers={controllers}", "--leader-elect=false",
                "--bind-address=127.0.0.1", f"--secure-port={port}", "--v=2"]
        p = Proc("kube-controller-manager", argv, self._log("kube-controller-manager"))
        p.port = port
        self.procs["kube-controller-manager"] = p
        p.start()
        self.wait_scheduler_healthy(p)
        return p

    def stop_controller_manager(self) -> None:
        p = self.procs.pop("kube-controller-manager", None)
        if p:
            p.stop(5)

    # --- tessera -----------------------------------------------------------------------------
    def new_tessera(self, name: str, extra: list[str] | None = None,
                    bind_host: str = "127.0.0.1") -> Tessera:
        assert self.tessera_bin, "no tessera binary"
        t = Tessera(self, name, extra or [], bind_host)
        self.tesseras.append(t)
        return t

    def check_tesseras_alive(self) -> None:
        """Abort (ends any wait_until) when a tessera that should run has died."""
        for t in self.tesseras:
            t.check_alive()

    # --- nodes -------------------------------------------------------------------------------
    def create_node(self, name: str, gpus: list[dict], group: str) -> None:
        obj = gpu.node_object(name, gpus, group)
        try:
            self.kube.create("/api/v1/nodes", obj)
        except ApiError as e:
            if e.status != 409:
                raise
            self.kube.delete(f"/api/v1/nodes/{name}")
            self.kube.create("/api/v1/nodes", obj)
        got = self.kube.get(f"/api/v1/nodes/{name}")
        if got.get("status", {}).get("allocatable", {}).get("pods") != "110":
            self.kube.merge_patch(f"/api/v1/nodes/{name}/status", {"status": obj["status"]})

    def delete_nodes(self, group: str) -> None:
        for n in self.kube.get("/api/v1/nodes", query={
                "labelSelector": f"tessera-e2e/group={group}"})["items"]:
            self.kube.delete(f"/api/v1/nodes/{n['metadata']['name']}")
