"""A GPU node made of `tessera agent` on the simulated NVML (libtessera-nvml-sim.so) and the
kubelet's real device manager (kubelet-dm), for tests that run several such nodes on one host.

kubelet-dm serves the kubelet's fixed path /var/lib/kubelet/device-plugins. Each node gets its
own folder, bind-mounted on that path in a private mount namespace (`unshare -m`) for its
kubelet-dm only; the agent is told the folder with --plugin-dir. A unix socket is its inode, so
both ends meet. Needs root (mount namespaces), as kubelet-dm does anyway.

The simulated driver's state is a JSON file (src/nvml_sim/sim_state.cc): the agent's NVML loads
it at nvmlInit and rewrites it (atomically) after every change, so the harness reads it at any
time but edits it only while the agent is stopped (add_foreign_instance). `<state>.reboot`
makes the next nvmlInit wipe every instance (a reboot, GPU reset or driver reload)."""

import json
import os
import signal
import uuid as uuidlib

from . import procs

KUBELET_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"
# NVML_COMPUTE_INSTANCE_PROFILE_* by slice count (sim_state.cc ComputeSlicesOf).
CI_PROFILE_BY_SLICES = {1: 0, 2: 1, 3: 2, 4: 3, 7: 4, 8: 5, 6: 6}


def read_json(path: str):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def rss_kib(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


class SimNode:
    """One node: its simulated GPUs (`gpus`: the state file's "gpus" entries), the agent and the
    kubelet stand-in. `kubeconfig` is what the agent uses (e.g. through a StallProxy)."""

    def __init__(self, *, name: str, work: str, tessera: str, bins: str, gpus: list[dict],
                 kubeconfig: str, dm_kubeconfig: str, device_config: str,
                 agent_args: list[str] = ()):
        self.name = name
        self.dir = os.path.join(work, f"node-{name}")
        self.plugin_dir = os.path.join(self.dir, "device-plugins")
        os.makedirs(self.plugin_dir, exist_ok=True)
        self.state = os.path.join(self.dir, "nvml-state.json")
        with open(self.state, "w", encoding="utf-8") as f:
            json.dump({"gpus": gpus}, f)
        with open(os.path.join(self.dir, "config.json"), "w", encoding="utf-8") as f:
            json.dump({"nodeconfig": [{"name": name, "operatingmode": "mig"}]}, f)
        self.ledger = os.path.join(self.dir, "ledger.json")
        self.http_port = procs.free_port()
        sim = os.path.join(os.path.dirname(tessera), "libtessera-nvml-sim.so")
        argv = [tessera, "agent", "--node-name", name, "--kubeconfig", kubeconfig,
                "--nvml-library", sim, "--device-config-file", device_config,
                "--node-config-file", os.path.join(self.dir, "config.json"),
                "--plugin-dir", self.plugin_dir, "--ledger", self.ledger,
                "--hook-path", os.path.join(self.dir, "vgpu-hook"),
                "--http-bind", f"127.0.0.1:{self.http_port}", *agent_args]
        self.base_env = {**os.environ, "TESSERA_NVML_SIM_STATE": self.state}
        self.base_env.pop("TESSERA_NVML_SIM_FAULTS", None)
        self.agent = procs.Proc(f"agent-{name}", argv, os.path.join(work, f"agent-{name}.log"),
                                env=dict(self.base_env))
        dm = os.path.join(bins, "kubelet-dm")
        # A private mount namespace per kubelet-dm: this node's folder on the kubelet's path.
        script = (f'mkdir -p {KUBELET_PLUGIN_DIR} && '
                  f'mount --bind "$0" {KUBELET_PLUGIN_DIR} && exec "$@"')
        self.dm = procs.Proc(f"kubelet-dm-{name}",
                             ["unshare", "-m", "--propagation", "private", "sh", "-c", script,
                              self.plugin_dir, dm, "--kubeconfig", dm_kubeconfig, "--node", name],
                             os.path.join(work, f"kubelet-dm-{name}.log"))
        self.faults = ""

    # --- processes ---------------------------------------------------------------------------
    def start_agent(self, faults: str = "") -> None:
        self.faults = faults
        env = dict(self.base_env)
        if faults:
            env["TESSERA_NVML_SIM_FAULTS"] = faults
        self.agent.env = env
        self.agent.start()

    def ready(self) -> bool:
        import http.client
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=2)
            c.request("GET", "/readyz")
            ok = c.getresponse().status == 200
            c.close()
            return ok
        except OSError:
            return False

    def signal_agent(self, sig: int) -> None:
        if self.agent.running():
            os.kill(self.agent.pid, sig)

    def stop(self) -> None:
        if self.agent.running():
            self.signal_agent(signal.SIGCONT)
        for p in (self.agent, self.dm):
            if p.running():
                p.stop(5)

    # --- the simulated driver ----------------------------------------------------------------
    def read_state(self) -> dict:
        return read_json(self.state)

    def instances(self, state: dict | None = None) -> list[dict]:
        """Every GPU instance the simulated driver holds: gpu, id, profile, start, size, uuid
        (its first compute instance's MIG UUID, None without one)."""
        state = state if state is not None else self.read_state()
        out = []
        for g in state["gpus"]:
            for gi in g.get("gpuInstances") or []:
                cis = gi.get("computeInstances") or []
                out.append({"gpu": g["uuid"], "id": gi["id"], "profile": gi["profile"],
                            "start": gi["start"], "size": gi["size"],
                            "uuid": cis[0]["uuid"] if cis else None})
        return out

    def mark_reboot(self) -> None:
        """The next nvmlInit (the agent's next start) finds every instance gone."""
        with open(self.state + ".reboot", "w", encoding="utf-8") as f:
            f.write("reboot\n")

    def add_foreign_instance(self, gpu_uuid: str, profile: str, start: int, size: int,
                             compute_slices: int) -> dict:
        """Adds a GPU instance + full compute instance to the state file, as nvidia-mig-parted
        or an operator would have made it. Only while the agent is stopped."""
        assert not self.agent.running(), "edit the simulated state only while the agent is down"
        state = self.read_state()
        g = next(g for g in state["gpus"] if g["uuid"] == gpu_uuid)
        gis = g.setdefault("gpuInstances", [])
        for gi in gis:
            if start < gi["start"] + gi["size"] and gi["start"] < start + size:
                raise ValueError(f"placement {start}+{size} overlaps instance {gi}")
        used = {gi["id"] for gi in gis}
        gi_id = next(i for i in range(1, 64) if i not in used)
        mig_uuid = f"MIG-{uuidlib.uuid4()}"
        gis.append({"id": gi_id, "profile": profile, "start": start, "size": size,
                    "computeInstances": [{"id": 0, "profileId": CI_PROFILE_BY_SLICES[compute_slices],
                                          "uuid": mig_uuid, "processes": 0}]})
        tmp = self.state + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(state, f, indent=1)
        os.replace(tmp, self.state)
        return {"node": self.name, "gpu": gpu_uuid, "id": gi_id, "profile": profile,
                "start": start, "size": size, "uuid": mig_uuid}
