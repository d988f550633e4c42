"""A real SLURM cluster on this host for tests and `./run bench slurm`: Debian's `slurm-wlm`
(slurmctld, slurmd, the client commands) and `munge`, every file of it — munge key and socket,
slurm.conf, state, spool, logs — in one owner-only temp folder; slurmctld and slurmd on free ports
bound to 127.0.0.1 (CONF), every message between them and from sbatch, squeue and scancel
authenticated by munge (its socket in that folder).
Nothing mocked: sbatch, squeue and scancel talk to this slurmctld as they would to a lab's.

The configuration is the one docs/how-to/clusters.md says ran here (SLURM 22.05, munge 0.5.15):
controller and node on one host, root as the Slurm user, no cgroups, no accounting. Needs root
(slurmd runs jobs as their owner); the caller skips, or fails with XMDATA_REQUIRE_SLURM=1 (CI).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass

DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "sinfo", "sbatch", "squeue", "scancel", "scontrol")
PARTITION = "debug"


def missing() -> str | None:
    """Why no SLURM can start here, or None."""
    absent = [name for name in DAEMONS if not _which(name)]
    if absent:
        return f"{', '.join(absent)} missing (apt-get install slurm-wlm munge)"
    if os.geteuid() != 0:
        return "slurmd runs jobs as their owner: needs root"
    return None


def _which(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


def step_daemons(conf: str) -> list[int]:
    """The pids of the slurmstepd processes (a job's) of the SLURM whose slurm.conf is CONF: their
    environment has its SLURM_CONF, from slurmd's (start_slurm); another SLURM's are not ours."""
    pids, ours = [], f"SLURM_CONF={conf}".encode()
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError):
            if (entry.isdigit() and open(f"/proc/{entry}/comm").read().strip() == "slurmstepd"
                    and ours in open(f"/proc/{entry}/environ", "rb").read().split(b"\0")):
                pids.append(int(entry))
    return pids


@dataclass
class Slurm:
    folder: str
    conf: str
    munge_socket: str

    def env(self) -> dict:
        """What a client (sbatch, squeue… and dask-jobqueue, which calls them) needs: this slurm.conf."""
        return {"SLURM_CONF": self.conf}

    def run(self, *command: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run([_which(command[0]), *command[1:]], env={**os.environ, **self.env()},
                              capture_output=True, text=True, timeout=timeout)

    def jobs(self) -> list[tuple[str, str]]:
        """(job id, state) of every job in the queue."""
        out = self.run("squeue", "-h", "-o", "%i %T").stdout.split()
        return list(zip(out[::2], out[1::2]))

    def queued(self) -> list[str]:
        """The jobs pending or running (not those SLURM is completing after their scancel)."""
        return [job for job, state in self.jobs() if state != "COMPLETING"]

    def idle(self) -> bool:
        return self.run("sinfo", "-h", "-o", "%T").stdout.split() == ["idle"]

    def cancel_all(self) -> None:
        self.run("scancel", "--full", "-u", "root")

    def stop(self, timeout: float = 15) -> None:
        """Every job cancelled and waited for (bounded: `timeout`) until the queue is empty and no
        slurmstepd is left (a job's step outlives its scancel by KillWait, and a slurmd stopped
        before would leave it running); then slurmd, slurmctld and munged stopped together (each
        takes ~2 s after its SIGTERM), waited for."""
        self.cancel_all()
        deadline = time.monotonic() + timeout
        while (self.jobs() or step_daemons(self.conf)) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in step_daemons(self.conf):  # past the bound: this SLURM's own
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
        pids = []
        for name in ("slurmd", "slurmctld", "munged"):
            try:
                pids.append(int(open(os.path.join(self.folder, f"{name}.pid")).read().strip()))
                os.kill(pids[-1], 15)
            except (OSError, ValueError):
                continue
        deadline = time.monotonic() + timeout
        while pids:
            for pid in list(pids):
                try:
                    os.kill(pid, 0 if time.monotonic() < deadline else 9)
                except ProcessLookupError:
                    pids.remove(pid)
            time.sleep(0.05)


# Bound to loopback (slurm.conf(5), 22.05): SlurmctldHost's and NodeAddr's address, and
# CommunicationParameters NoCtldInAddrAny (slurmctld) and NoInAddrAny (slurmd, slurmstepd) to bind
# that address instead of every interface, their default. munge authenticates every message anyway.
CONF = """\
ClusterName=xmtest
SlurmctldHost=localhost(127.0.0.1)
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd.pid
SlurmctldLogFile={folder}/slurmctld.log
SlurmdLogFile={folder}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
KillWait=5
NodeName=localhost NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName={partition} Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""


def start_slurm(folder: str, timeout: float = 30.0) -> Slurm:
    """munged, slurmctld and slurmd with their files under `folder` (made 0700); returns once
    `sinfo` shows the node idle. The node is this machine: all its cores, 90% of its memory."""
    from xmdata.runtime.prefect_api import free_port

    os.makedirs(folder, mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)
    for sub in ("state", "spool"):
        os.makedirs(os.path.join(folder, sub), mode=0o700, exist_ok=True)
    key, munge_socket = os.path.join(folder, "munge.key"), os.path.join(folder, "munge.socket")
    subprocess.run([_which("mungekey"), "-c", "-f", "-k", key], check=True, capture_output=True)
    # --force: munged wants its socket's folders open to all (x); this one is the owner's only.
    subprocess.run([_which("munged"), "--force", f"--socket={munge_socket}", f"--key-file={key}",
                    f"--log-file={folder}/munged.log", f"--pid-file={folder}/munged.pid",
                    f"--seed-file={folder}/munged.seed"], check=True, capture_output=True, timeout=timeout)
    memory_mb = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20 * 0.9)
    conf = os.path.join(folder, "slurm.conf")
    with open(conf, "w") as f:
        f.write(CONF.format(folder=folder, munge_socket=munge_socket, ctld_port=free_port(),
                            slurmd_port=free_port(), cpus=os.cpu_count(), memory_mb=memory_mb,
                            partition=PARTITION))
    slurm = Slurm(folder, conf, munge_socket)
    try:
        for daemon in (["slurmctld", "-f", conf], ["slurmd", "-f", conf, "-N", "localhost"]):
            subprocess.run([_which(daemon[0]), *daemon[1:]], check=True, capture_output=True, timeout=timeout,
                           env={**os.environ, **slurm.env()})
        deadline = time.monotonic() + timeout
        while not slurm.idle():
            if time.monotonic() > deadline:
                raise RuntimeError(f"SLURM's node not idle in {timeout} s: {slurm.run('sinfo').stdout}"
                                   + open(os.path.join(folder, "slurmd.log")).read()[-2000:])
            time.sleep(0.1)
    except BaseException:
        slurm.stop()
        raise
    return slurm
