"""A stand-in for a Kubernetes Service in front of tessera: a TCP (TLS pass-through) proxy
that forwards each new connection to the first backend whose GET /readyz answers 200.

A Service's endpoints are its ready pods, and tessera's /readyz is 200 only on the leader, so
one kube-scheduler in front of several `--leader-elect` replicas always reaches the leader; this
proxy reproduces that on loopback (scenario f). With a single backend it is transparent."""

import http.client
import socket
import ssl
import threading
import time


class ServiceProxy:
    def __init__(self, port: int, ca_file: str | None, tls: bool = True):
        self.port = port
        self.tls = tls
        self.ctx = ssl.create_default_context(cafile=ca_file) if tls else None
        self._backends: list[int] = []
        self._ready: list[int] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.connections = 0
        self.refused = 0
        self._srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._srv.bind(("127.0.0.1", port))
        self._srv.listen(128)
        threading.Thread(target=self._accept_loop, daemon=True, name="svc-accept").start()
        threading.Thread(target=self._probe_loop, daemon=True, name="svc-probe").start()

    def set_backends(self, ports: list[int]) -> None:
        with self._lock:
            self._backends = list(ports)
            self._ready = [p for p in self._ready if p in ports]

    def ready_backends(self) -> list[int]:
        with self._lock:
            return list(self._ready)

    def probe(self, port: int, path: str = "/readyz", timeout: float = 1.0) -> int | None:
        """HTTP status of GET path on a backend, None when unreachable."""
        try:
            if self.tls:
                c = http.client.HTTPSConnection("127.0.0.1", port, context=self.ctx,
                                                timeout=timeout)
            else:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
            c.request("GET", path)
            r = c.getresponse()
            r.read()
            c.close()
            return r.status
        except (OSError, http.client.HTTPException):
            return None

    def _probe_loop(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                backends = list(self._backends)
            ready = [p for p in backends if self.probe(p) == 200]
            with self._lock:
                self._ready = [p for p in ready if p in self._backends]
            self._stop.wait(0.3)

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._srv.accept()
            except OSError:
                return
            with self._lock:
                target = self._ready[0] if self._ready else None
            if target is None:
                self.refused += 1
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", target), timeout=5)
                upstream.settimeout(None)
            except OSError:
                self.refused += 1
                client.close()
                continue
            self.connections += 1
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self) -> None:
        self._stop.set()
        self._srv.close()

    def wait_ready(self, timeout: float) -> list[int]:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            r = self.ready_backends()
            if r:
                return r
            time.sleep(0.2)
        return []
