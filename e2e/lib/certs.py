"""Test PKI made with the openssl CLI: one CA, serving and client certificates, an SA key pair."""

import os
import subprocess
from dataclasses import dataclass

_CURVE = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]


@dataclass(frozen=True)
class KeyPair:
    cert: str
    key: str


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


class Pki:
    """Writes everything under `directory`; file names are derived from the given names."""

    def __init__(self, directory: str):
        self.dir = directory
        os.makedirs(directory, exist_ok=True)
        self.ca = KeyPair(os.path.join(directory, "ca.crt"), os.path.join(directory, "ca.key"))
        _openssl("req", "-x509", *_CURVE, "-nodes", "-days", "3650", "-subj",
                 "/CN=tessera-e2e-ca", "-keyout", self.ca.key, "-out", self.ca.cert)

    def issue(self, name: str, subject: str, *, server: bool = False,
              client: bool = False, sans: tuple[str, ...] = ()) -> KeyPair:
        """`subject` in openssl's /O=../CN=.. form; `sans` like "IP:127.0.0.1"."""
        pair = KeyPair(os.path.join(self.dir, name + ".crt"), os.path.join(self.dir, name + ".key"))
        csr = os.path.join(self.dir, name + ".csr")
        ext = os.path.join(self.dir, name + ".ext")
        usages = [u for u, on in (("serverAuth", server), ("clientAuth", client)) if on]
        lines = ["basicConstraints=critical,CA:FALSE",
                 "keyUsage=critical,digitalSignature,keyEncipherment",
                 "extendedKeyUsage=" + ",".join(usages)]
        if sans:
            lines.append("subjectAltName=" + ",".join(sans))
        with open(ext, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        _openssl("req", "-new", *_CURVE, "-nodes", "-subj", subject, "-keyout", pair.key,
                 "-out", csr)
        _openssl("x509", "-req", "-in", csr, "-CA", self.ca.cert, "-CAkey", self.ca.key,
                 "-CAcreateserial", "-days", "365", "-extfile", ext, "-out", pair.cert)
        return pair

    def service_account_keys(self) -> KeyPair:
        """RSA key pair for --service-account-{key,signing-key}-file (cert = public key PEM)."""
        pair = KeyPair(os.path.join(self.dir, "sa.pub"), os.path.join(self.dir, "sa.key"))
        _openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                 "-out", pair.key)
        _openssl("pkey", "-in", pair.key, "-pubout", "-out", pair.cert)
        return pair
