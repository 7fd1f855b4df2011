"""Child processes in their own process groups, logged to files, all killed when we exit."""

import atexit
import ctypes
import os
import signal
import socket
import subprocess
import threading
import time

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)
_live: "set[Proc]" = set()
_live_lock = threading.Lock()


def _child_setup() -> None:
    # Own process group (killpg takes the whole tree) and SIGKILL if the harness dies hard.
    os.setpgid(0, 0)
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Proc:
    """One long-running component. start() may be called again after stop()/kill()."""

    def __init__(self, name: str, argv: list[str], log_path: str, env: dict | None = None):
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.env = env
        self.popen: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> "Proc":
        assert not self.running(), f"{self.name} already running"
        self.starts += 1
        log = open(self.log_path, "ab")
        log.write(f"\n===== start #{self.starts} {time.strftime('%H:%M:%S')}: "
                  f"{' '.join(self.argv)}\n".encode())
        log.flush()
        # PDEATHSIG follows the forking thread: only the main thread starts processes.
        assert threading.current_thread() is threading.main_thread()
        self.popen = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, env=self.env,
                                      preexec_fn=_child_setup, close_fds=True)
        log.close()
        with _live_lock:
            _live.add(self)
        return self

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def _signal_group(self, sig: int) -> None:
        if self.popen is None:
            return
        try:
            os.killpg(self.popen.pid, sig)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        """kill -9, no grace period."""
        self._signal_group(signal.SIGKILL)
        self._reap(10)

    def stop(self, grace: float = 10.0) -> None:
        if self.popen is None:
            return
        if self.popen.poll() is None:
            self._signal_group(signal.SIGTERM)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
        self._reap(10)

    def _reap(self, timeout: float) -> None:
        if self.popen is not None:
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
            self._signal_group(signal.SIGKILL)  # stray grandchildren
        with _live_lock:
            _live.discard(self)

    def log_tail(self, lines: int = 40) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - 200_000))
                data = f.read().decode("utf-8", "replace").splitlines()
        except OSError as e:
            return f"(no log: {e})"
        return "\n".join(data[-lines:])


def kill_all() -> None:
    with _live_lock:
        procs = list(_live)
    for p in reversed(procs):
        p._signal_group(signal.SIGKILL)
        p._reap(5)


def _on_signal(signum, _frame):
    kill_all()
    raise SystemExit(128 + signum)


def install_cleanup() -> None:
    atexit.register(kill_all)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, _on_signal)
