"""A TCP (TLS pass-through) proxy in front of kube-apiserver that can silently stall the
connections it carries: the way a watch "stops delivering without an error" (a half-dead NAT
entry, a stuck load balancer, an apiserver that stopped sending on one stream).

stall(seconds) freezes the connections open at that moment: no byte moves from the API server
to the client until the stall ends, then the held bytes flow again, late. The sockets stay open,
so the client sees no error and no EOF, only silence. A frozen connection on which the client
sends a request is thawed at once (it is a kept-alive connection being reused, not a watch), and
connections opened during the stall flow normally: only the streams that were open and that the
client only reads, i.e. its watches, stay silent. stall(seconds, everything=True) freezes every
open connection in both directions instead, requests included. The soak (e2e/soak.py) puts one
in front of each node agent to stall its pod watch."""

import socket
import threading
import time


class StallProxy:
    def __init__(self, upstream_port: int, port: int):
        self.upstream_port = upstream_port
        self.port = port
        self._lock = threading.Lock()
        self._conns: list[dict] = []  # {"frozen_until": monotonic}
        self._stop = threading.Event()
        self.connections = 0
        self.stalls = 0
        self._srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._srv.bind(("127.0.0.1", port))
        self._srv.listen(128)
        threading.Thread(target=self._accept_loop, daemon=True, name="stall-accept").start()

    def stall(self, seconds: float, everything: bool = False) -> int:
        """Freezes the connections open now for `seconds`; returns how many it froze."""
        until = time.monotonic() + seconds
        with self._lock:
            live = [c for c in self._conns if not c["closed"]]
            for c in live:
                c["frozen_until"] = max(c["frozen_until"], until)
                c["everything"] = everything
            self._conns = live
        self.stalls += 1
        return len(live)

    def unstall(self) -> None:
        """Ends every stall now."""
        with self._lock:
            for c in self._conns:
                c["frozen_until"] = 0.0

    def stalled(self) -> bool:
        now = time.monotonic()
        with self._lock:
            return any(c["frozen_until"] > now and not c["closed"] for c in self._conns)

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._srv.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            conn = {"frozen_until": 0.0, "closed": False, "everything": False}
            with self._lock:
                self._conns.append(conn)
            self.connections += 1
            for a, b, up in ((client, upstream, True), (upstream, client, False)):
                threading.Thread(target=self._pipe, args=(a, b, conn, up), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, conn: dict, up: bool) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if up and not conn["everything"]:
                    conn["frozen_until"] = 0.0  # a request: not a watch; thaw it
                while not up or conn["everything"]:  # hold the bytes while frozen
                    wait = conn["frozen_until"] - time.monotonic()
                    if wait <= 0 or self._stop.is_set():
                        break
                    time.sleep(min(wait, 0.5))
                dst.sendall(data)
        except OSError:
            pass
        finally:
            conn["closed"] = True
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self) -> None:
        self._stop.set()
        self._srv.close()
