"""HAMi's own scheduler (extender + its kube-scheduler) on the harness's control plane, configured
from HAMi's Helm chart. The directory given holds HAMi's `scheduler` binary and its chart
rendered as `rendered.yaml`; this repository neither builds nor ships them (e2e/README.md).
start() runs both with the chart's flags and KubeSchedulerConfiguration,
changing only addresses, certificate paths, leader election (one replica) and, when asked, the
client limits. Used by e2e/bench_throughput.py --hami and scenario u of e2e/real_e2e.py."""

import http.client
import os
import re
from dataclasses import dataclass

from .cluster import Cluster, wait_until
from .procs import Proc, free_port


@dataclass
class Chart:
    scheduler_config: str  # the KubeSchedulerConfiguration of the chart's ConfigMap
    device_config: str  # device-config.yaml of the chart's device ConfigMap
    args: list[str]  # the extender container's command after `scheduler`
    env: dict[str, str]  # its literal env values


@dataclass
class Running:
    profile: str  # the schedulerName HAMi's kube-scheduler serves
    extender: Proc
    kube_scheduler: Proc
    metrics_port: int

    def metrics(self) -> str | None:
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=10)
            c.request("GET", "/metrics")
            text = c.getresponse().read().decode("utf-8", "replace")
            c.close()
            return text
        except (OSError, http.client.HTTPException):
            return None

    def stop(self) -> None:
        self.kube_scheduler.stop(5)
        self.extender.stop(5)


def available(hami_dir: str | None) -> str | None:
    """None when hami_dir holds HAMi's scheduler and rendered chart, else why not."""
    if not hami_dir:
        return ("no HAMi scheduler given (--hami DIR, or TESSERA_HAMI_DIR): the Go module proxy "
                "refuses HAMi's module and this repository does not build HAMi")
    for name in ("scheduler", "rendered.yaml"):
        if not os.path.isfile(os.path.join(hami_dir, name)):
            return f"{hami_dir}/{name} is missing (see e2e/README.md)"
    return None


def chart(cluster: Cluster, hami_dir: str) -> Chart:
    objs = cluster.objects_of(os.path.join(hami_dir, "rendered.yaml"), "--validate=false")

    def config_map_key(key: str) -> str:
        found = [o["data"][key] for o in objs
                 if o["kind"] == "ConfigMap" and key in o.get("data", {})]
        if len(found) != 1:
            raise RuntimeError(f"HAMi chart: want one ConfigMap with {key}, found {len(found)}")
        return found[0]
    containers = [c for o in objs if o["kind"] == "Deployment"
                  for c in o["spec"]["template"]["spec"]["containers"]
                  if c.get("command", [""])[0] == "scheduler"]
    if len(containers) != 1:
        raise RuntimeError(f"HAMi chart: want one container running `scheduler`, "
                           f"found {len(containers)}")
    c = containers[0]
    return Chart(config_map_key("config.yaml"), config_map_key("device-config.yaml"),
                 c["command"][1:] + c.get("args", []),
                 {e["name"]: e["value"] for e in c.get("env", []) if "value" in e})


def start(cluster: Cluster, hami_dir: str, ready, *, qps: float | None = None,
          burst: int | None = None, scheduler_qps: float | None = None,
          scheduler_burst: int | None = None, ready_timeout: float = 120,
          overrides: dict[str, str | None] | None = None) -> Running:
    """Starts HAMi's extender and a second kube-scheduler for its profile. ready(metrics_text)
    says when the extender has registered the nodes the caller needs (HAMi registers nodes on
    a 15 s loop). qps/burst: the extender's client limits (None: the chart's, 5 QPS / burst
    10); scheduler_qps/scheduler_burst: kube-scheduler's (None: its own defaults). overrides:
    more of the extender's flags to change (`-v`: "2"), add, or drop (None)."""
    spec = chart(cluster, hami_dir)
    port, metrics_port = free_port(), free_port()
    dev_cfg = os.path.join(cluster.work, "hami-device-config.yaml")
    with open(dev_cfg, "w", encoding="utf-8") as f:
        f.write(spec.device_config)
    replaced = {"--http_bind": f"127.0.0.1:{port}", "--cert_file": cluster.tessera_tls.cert,
                "--key_file": cluster.tessera_tls.key,
                "--metrics-bind-address": f"127.0.0.1:{metrics_port}",
                "--device-config-file": dev_cfg, "--leader-elect": "false"}
    if qps is not None:
        replaced["--kube-qps"] = str(qps)
    if burst is not None:
        replaced["--kube-burst"] = str(burst)
    extra = dict(overrides or {})
    replaced.update({k: v for k, v in extra.items() if v is not None})
    argv = [os.path.join(hami_dir, "scheduler")]
    for a in spec.args:
        key = a.split("=", 1)[0]
        if key.startswith("--leader-elect-resource") or (key in extra and extra[key] is None):
            continue
        argv.append(f"{key}={replaced.pop(key)}" if key in replaced else a)
    argv += [f"{k}={v}" for k, v in replaced.items()
             if k in ("--kube-qps", "--kube-burst") or k in extra]
    env = dict(os.environ, KUBECONFIG=cluster.kubeconfigs["admin"], **spec.env)
    extender = Proc("hami-scheduler", argv, os.path.join(cluster.work, "hami-scheduler.log"), env)
    cluster.procs["hami-scheduler"] = extender
    extender.start()
    running = Running("", extender, None, metrics_port)  # type: ignore[arg-type]

    def registered() -> bool:
        if not extender.running():
            raise RuntimeError(f"HAMi's scheduler exited: {extender.log_tail(8)}")
        text = running.metrics()
        return text is not None and ready(text)
    wait_until(registered, ready_timeout, 0.5, "HAMi's scheduler to register the nodes")

    text = spec.scheduler_config
    profiles = re.findall(r"^- schedulerName: (\S+)$", text, re.M)
    urls = re.findall(r'urlPrefix: "?https://127\.0\.0\.1:443"?', text)
    if len(profiles) != 1 or len(urls) != 1 or "leaderElect: true" not in text \
            or "clientConnection" in text:
        raise RuntimeError(f"HAMi chart's scheduler config is not the expected shape:\n{text}")
    text = text.replace(urls[0], f"urlPrefix: https://127.0.0.1:{port}")
    text = text.replace("leaderElect: true", "leaderElect: false")
    text += f"\nclientConnection:\n  kubeconfig: {cluster.kubeconfigs['scheduler']}\n"
    if scheduler_qps is not None:
        text += f"  qps: {scheduler_qps}\n"
    if scheduler_burst is not None:
        text += f"  burst: {scheduler_burst}\n"
    path = os.path.join(cluster.work, "hami-scheduler-config.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    ks = cluster.scheduler_proc("kube-scheduler-hami", path, cluster.kubeconfigs["scheduler"],
                                ["--v=2"])
    cluster.procs["kube-scheduler-hami"] = ks
    ks.start()
    cluster.wait_scheduler_healthy(ks)
    running.profile, running.kube_scheduler = profiles[0], ks
    return running
