"""Test certificates for the fake PVE server, made with the openssl CLI.

    python3 certs.py DIR      (or pve_fake.py --cert-dir DIR, which calls this
                               when DIR has no server.pem)
writes into DIR:
  ca.pem, ca.key          a test CA (EC P-256, 10 years)
  server.pem, server.key  the server's certificate, signed by the CA, for
                          localhost and 127.0.0.1: what a client verifies with
                          ca.pem or pins by fingerprint
  server.sha256           its SHA-256 fingerprint as PVE shows it, "AA:BB:..."
  other.pem, other.key    a self-signed certificate for the same names: what
                          the server presents under a TLS fault (a pinned or
                          CA-verifying client must refuse it)
  other.sha256            its fingerprint
Bring your own instead: put server.pem/server.key (and other.pem/other.key)
in DIR before starting the server; only missing files are generated.
"""

import hashlib
import os
import ssl
import subprocess
import sys
import tempfile

NAMES = "DNS:localhost,IP:127.0.0.1"
KEY_ARGS = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
DAYS = "3650"


def fingerprint(pem_path: str) -> str:
    with open(pem_path, encoding="ascii") as handle:
        der = ssl.PEM_cert_to_DER_cert(handle.read())
    return ":".join(f"{b:02X}" for b in hashlib.sha256(der).digest())


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _make_ca(directory: str) -> None:
    _openssl("req", "-x509", *KEY_ARGS, "-keyout", f"{directory}/ca.key", "-out", f"{directory}/ca.pem",
             "-days", DAYS, "-subj", "/CN=pve_fake test CA",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")


def _make_server(directory: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        request, extensions = f"{scratch}/server.csr", f"{scratch}/ext.cnf"
        with open(extensions, "w", encoding="ascii") as handle:
            handle.write(f"subjectAltName={NAMES}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
        _openssl("req", *KEY_ARGS, "-keyout", f"{directory}/server.key", "-out", request,
                 "-subj", "/CN=localhost")
        _openssl("x509", "-req", "-in", request, "-CA", f"{directory}/ca.pem", "-CAkey", f"{directory}/ca.key",
                 "-set_serial", str(int.from_bytes(os.urandom(8), "big")), "-days", DAYS,
                 "-extfile", extensions, "-out", f"{directory}/server.pem")


def _make_other(directory: str) -> None:
    _openssl("req", "-x509", *KEY_ARGS, "-keyout", f"{directory}/other.key", "-out", f"{directory}/other.pem",
             "-days", DAYS, "-subj", "/CN=localhost", "-addext", f"subjectAltName={NAMES}")


def ensure_certificates(directory: str) -> None:
    """Creates whatever of the files above is missing in `directory`."""
    os.makedirs(directory, exist_ok=True)
    if not os.path.exists(f"{directory}/server.pem"):
        if not os.path.exists(f"{directory}/ca.pem"):
            _make_ca(directory)
        _make_server(directory)
    if not os.path.exists(f"{directory}/other.pem"):
        _make_other(directory)
    for name in ("server", "other"):
        with open(f"{directory}/{name}.sha256", "w", encoding="ascii") as handle:
            handle.write(fingerprint(f"{directory}/{name}.pem") + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: certs.py DIR")
    ensure_certificates(sys.argv[1])
