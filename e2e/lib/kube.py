"""A small Kubernetes REST client on http.client + ssl (client-certificate auth)."""

import http.client
import json
import ssl
import threading
import time
import urllib.parse


class ApiError(Exception):
    def __init__(self, status: int, body, method: str, path: str):
        self.status = status
        self.body = body
        msg = body.get("message") if isinstance(body, dict) else body
        super().__init__(f"{method} {path}: HTTP {status}: {msg}")


class Kube:
    """One keep-alive connection per thread; reconnects (and retries) on connection errors."""

    def __init__(self, host: str, port: int, ca: str, cert: str, key: str):
        self.host, self.port = host, port
        self.ctx = ssl.create_default_context(cafile=ca)
        self.ctx.load_cert_chain(cert, key)
        self._local = threading.local()

    def _conn(self) -> tuple[http.client.HTTPSConnection, bool]:
        """(connection, whether it was used before)."""
        c = getattr(self._local, "conn", None)
        if c is None:
            c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=30)
            self._local.conn = c
            return c, False
        return c, True

    def _drop(self) -> None:
        c = getattr(self._local, "conn", None)
        if c is not None:
            c.close()
        self._local.conn = None

    def request(self, method: str, path: str, body=None, *, query: dict | None = None,
                content_type: str = "application/json", ok=(200, 201, 202),
                retry_for: float = 0.0, timeout: float = 30.0):
        """Returns the decoded JSON body. Raises ApiError on a status outside `ok`.
        Connection failures are retried for `retry_for` seconds (apiserver restarts)."""
        if query:
            path = path + "?" + urllib.parse.urlencode(query)
        data = None
        headers = {"Accept": "application/json", "User-Agent": "tessera-e2e"}
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
            if isinstance(data, str):
                data = data.encode()
            headers["Content-Type"] = content_type
        end = time.monotonic() + retry_for
        while True:
            reused = False
            try:
                c, reused = self._conn()
                c.timeout = timeout
                c.request(method, path, body=data, headers=headers)
                r = c.getresponse()
                raw = r.read()
                status = r.status
                break
            except (OSError, http.client.HTTPException):
                self._drop()
                if reused:
                    continue  # a kept-alive connection the server closed: one fresh try
                if time.monotonic() >= end:
                    raise
                time.sleep(0.5)
        try:
            decoded = json.loads(raw) if raw else None
        except ValueError:
            decoded = raw.decode("utf-8", "replace")
        if status not in ok:
            raise ApiError(status, decoded, method, path)
        return decoded

    # --- conveniences ------------------------------------------------------------------------
    def get(self, path: str, **kw):
        return self.request("GET", path, **kw)

    def create(self, path: str, obj: dict, **kw):
        return self.request("POST", path, obj, **kw)

    def merge_patch(self, path: str, patch: dict, **kw):
        return self.request("PATCH", path, patch, content_type="application/merge-patch+json",
                            **kw)

    def delete(self, path: str, *, grace0: bool = True, **kw):
        q = {"gracePeriodSeconds": "0"} if grace0 else None
        return self.request("DELETE", path, query=q, ok=(200, 202, 404), **kw)

    def exists(self, path: str) -> bool:
        try:
            self.get(path)
            return True
        except ApiError as e:
            if e.status == 404:
                return False
            raise

    def pods(self, ns: str, label_selector: str | None = None, **kw) -> list[dict]:
        q = {"labelSelector": label_selector} if label_selector else None
        return self.get(f"/api/v1/namespaces/{ns}/pods", query=q, **kw)["items"]

    def pod(self, ns: str, name: str) -> dict:
        return self.get(f"/api/v1/namespaces/{ns}/pods/{name}")

    def create_pod(self, pod: dict) -> dict:
        ns = pod["metadata"].get("namespace", "default")
        return self.create(f"/api/v1/namespaces/{ns}/pods", pod)

    def delete_pod(self, ns: str, name: str) -> None:
        self.delete(f"/api/v1/namespaces/{ns}/pods/{name}")

    def delete_all_pods(self, ns: str, **kw) -> None:
        self.request("DELETE", f"/api/v1/namespaces/{ns}/pods",
                     query={"gracePeriodSeconds": "0"}, ok=(200, 404), **kw)

    def ensure_namespace(self, name: str, labels: dict | None = None) -> None:
        obj = {"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": name, "labels": labels or {}}}
        try:
            self.create("/api/v1/namespaces", obj)
        except ApiError as e:
            if e.status != 409:
                raise
