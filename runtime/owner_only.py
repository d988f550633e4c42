"""Only the owner gets in: private folders and files, and the credentials of what xmdata starts.

On a shared machine the loopback interface is everybody's, so a port on 127.0.0.1 is no boundary:
- **Dask: mutual TLS.** Every cluster xmdata starts (the service's, a run's LocalCluster, dask-cuda's)
  listens on `tls://` and asks every peer — client, worker, nanny, scheduler — for a certificate
  signed by its own CA. The CA is made per service (per run for a cluster of one run) and its
  private key is dropped once it has signed the one certificate the cluster's processes present:
  nobody, the owner included, can make another. The service's files are 0600 in a 0700 folder.
- **Prefect: HTTP basic auth** (`server.api.auth_string`), a random string per server; the
  owner's processes find it themselves (`PREFECT_API_AUTH_STRING`), the UI asks for it once.
- **Private files**: a folder xmdata keeps state in is 0700 and refused if someone else owns it
  or can write to it (they could plant a state file naming their own scheduler); its files 0600.
"""
from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
import stat
import sys
import urllib.parse
from dataclasses import dataclass

from xmdata.schemas.contract import ContractError

PRIVATE_FOLDER = 0o700
PRIVATE_FILE = 0o600
CERT_DAYS = 30  # a service lives an hour unused; a long build keeps it, and its certificate, longer
AUTH_USER = "xmdata"


class NotPrivate(ContractError):
    """A folder xmdata keeps secrets or state in is not the owner's alone."""


def private_folder(path: str) -> str:
    """`path`, made 0700 if missing; refused if another user owns it or can write to it (tightened
    to 0700 if others could only read it)."""
    os.makedirs(path, mode=PRIVATE_FOLDER, exist_ok=True)
    st = os.stat(path)
    if st.st_uid != os.geteuid():
        raise NotPrivate(f"{path} belongs to uid {st.st_uid}, not to you (uid {os.geteuid()}): "
                         f"xmdata keeps its state and credentials only in a folder of your own")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise NotPrivate(f"{path} can be written by other users (mode {stat.S_IMODE(st.st_mode):o}): "
                         f"anyone could plant a state file there; `chmod 700 {path}` and run again")
    if stat.S_IMODE(st.st_mode) != PRIVATE_FOLDER:
        os.chmod(path, PRIVATE_FOLDER)
    return path


def write_private(path: str, data: str | bytes) -> None:
    """Atomic (runtime/atomic.py), 0600 from the first byte, in a private folder; on a store, one PUT
    (who reads it there is the bucket's policy)."""
    from . import storage
    from .atomic import write_bytes_atomic  # here: atomic imports pyarrow.parquet; the service imports this

    if not storage.is_url(path):
        private_folder(os.path.dirname(os.path.abspath(path)))
    write_bytes_atomic(data.encode() if isinstance(data, str) else data, path, private=True)


def open_private(path: str, mode: str = "ab"):
    """A file (log, lock) opened for writing, 0600 whether new or old."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if "a" in mode else os.O_TRUNC)
    fd = os.open(path, flags, PRIVATE_FILE)
    os.fchmod(fd, PRIVATE_FILE)
    return os.fdopen(fd, mode)


# --- Dask ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DaskCredentials:
    """The CA certificate and the one certificate + key every process of a cluster presents: PEM
    text (a run's cluster, in memory) or file paths (the service's, read by every command)."""
    ca: str
    cert: str
    key: str

    def security(self):
        from distributed.security import Security

        roles = {f"tls_{role}_{part}": getattr(self, part) for role in ("client", "scheduler", "worker")
                 for part in ("cert", "key")}
        return Security(tls_ca_file=self.ca, require_encryption=True, **roles)

    def worker_flags(self) -> list[str]:
        """For `dask worker` / `dask scheduler` (file paths only)."""
        return ["--tls-ca-file", self.ca, "--tls-cert", self.cert, "--tls-key", self.key]

    def write(self, folder: str) -> "DaskCredentials":
        """Written as ca.pem, cert.pem, key.pem (0600) in a private folder; returns the paths."""
        private_folder(folder)
        paths = {part: os.path.join(folder, f"{part}.pem") for part in ("ca", "cert", "key")}
        for part, path in paths.items():
            write_private(path, getattr(self, part))
        return DaskCredentials(**paths)

    @classmethod
    def read(cls, folder: str) -> "DaskCredentials":
        paths = {part: os.path.join(folder, f"{part}.pem") for part in ("ca", "cert", "key")}
        missing = [p for p in paths.values() if not os.path.exists(p)]
        if missing:
            raise NotPrivate(f"the service's Dask credentials are missing ({', '.join(missing)}); "
                             f"`xmdata down` and run again")
        return cls(**paths)


def new_dask_credentials(name: str = "xmdata") -> DaskCredentials:
    """A CA (its key dropped after signing) and one certificate for clients, scheduler and workers.
    ECDSA P-256: made in about a millisecond; X.509 strict-mode extensions (Python 3.13 checks them)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name} CA {secrets.token_hex(4)}")])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())

    def builder(subject, public_key):
        return (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_name).public_key(public_key)
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=CERT_DAYS)))

    ca = (builder(ca_name, ca_key.public_key())
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(ca_ski, critical=False)
          .sign(ca_key, hashes.SHA256()))
    cert = (builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]), key.public_key())
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=True, key_cert_sign=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return DaskCredentials(
        ca=ca.public_bytes(pem).decode(), cert=cert.public_bytes(pem).decode(),
        key=key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode())


@dataclass(frozen=True)
class DaskTarget:
    """A scheduler to connect to and how: an address and its Security (None: Dask's own config)."""
    address: str
    credentials: DaskCredentials | None = None

    def security(self):
        if self.credentials is not None:
            return self.credentials.security()
        from distributed.security import Security

        return Security()  # Dask's config: distributed.comm.tls.* (DASK_DISTRIBUTED__COMM__TLS__…)


def external_target(address: str, ca: str | None = None, cert: str | None = None,
                    key: str | None = None) -> DaskTarget:
    """A scheduler of the user's own (`--dask-address`): `tls://` takes the certificate flags, else
    Dask's own config; plain `tcp://` anywhere but loopback is accepted with a one-line warning."""
    given = [v for v in (ca, cert, key) if v]
    if given and len(given) != 3:
        raise ContractError("--tls-ca-file, --tls-cert and --tls-key go together")
    scheme = address.split("://", 1)[0] if "://" in address else "tcp"
    if given:
        if scheme != "tls":
            raise ContractError(f"--dask-address {address}: certificates are for a tls:// address")
        for flag, path in (("--tls-ca-file", ca), ("--tls-cert", cert), ("--tls-key", key)):
            if not os.path.isfile(path):
                raise ContractError(f"{flag} {path}: no such file")
        return DaskTarget(address, DaskCredentials(os.path.abspath(ca), os.path.abspath(cert), os.path.abspath(key)))
    if scheme == "tls":
        import dask

        if not (dask.config.get("distributed.comm.tls.ca-file", None)
                and dask.config.get("distributed.comm.tls.client.cert", None)):
            raise ContractError(f"--dask-address {address}: a tls:// scheduler needs --tls-ca-file, --tls-cert "
                                f"and --tls-key, or Dask's config distributed.comm.tls.ca-file / client.cert / "
                                f"client.key")
    elif scheme in ("tcp", "ucx", "ws") and not _loopback(address):
        print(f"xmdata: warning: {address} is not encrypted or authenticated: whoever reaches it can run "
              f"code as you on its workers (use tls:// with certificates)", file=sys.stderr)
    return DaskTarget(address)


def _loopback(address: str) -> bool:
    host = urllib.parse.urlsplit(address if "://" in address else "tcp://" + address).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# --- Prefect ------------------------------------------------------------------------------------

def new_auth_string() -> str:
    """`user:password` for Prefect's basic auth; the whole string is what the UI's login asks for."""
    return f"{AUTH_USER}:{secrets.token_urlsafe(24)}"


def read_private_text(path: str) -> str:
    st = os.stat(path)
    if st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise NotPrivate(f"{path} is not private to you (mode {stat.S_IMODE(st.st_mode):o}, uid {st.st_uid})")
    with open(path, encoding="utf-8") as f:
        return f.read().strip()
