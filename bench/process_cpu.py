"""CPU-seconds of every process a command involves, by kind: `python -m bench.process_cpu -- CMD ...`.

What `bench.cpu_meter` cannot see: processes that are neither children nor the service's (a
detached `xmdata up`, Chromium, an external `dask worker`), and processes that end between two
looks. The kernel's process accounting (acct(2), needs root) writes one record per process when
it ends, with its own user+system CPU (threads included, children not); a sampler beside it keeps
each process's command line (the last one seen: exec changes it) to say what kind it was. A
process still running when the command returns has no record and is not counted: stop what you
start. Accounting is machine-wide: whatever else ends meanwhile counts too, under its own kind. Used for the CI budget of issue 29: `sudo .venv/bin/python -m bench.process_cpu -- env
CI=true bash .ci/run`.
"""
from __future__ import annotations

import argparse
import collections
import ctypes
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import threading
import time

import psutil

# (kind, pattern) in order, first match wins; a multiprocessing child is "worker of" its parent's kind.
KINDS = [
    ("chromium", r"chrom"),
    ("xmdata service", r"xmdata\.runtime\.service_main"),
    ("prefect server", r"prefect server start"),
    ("prefect flow-run process", r"prefect\.engine|prefect\.flow_engine"),
    ("pytest-xdist worker", r"exec\(eval\(sys\.stdin"),
    ("pytest", r"-m pytest"),
    ("setup: imports", r"-W ignore -c import"),
    ("setup: prefect database", r"xmdata\.runtime\.prefect_db"),
    ("uv / pip", r"bin/uv |-m pip "),
]
SPAWNED = re.compile(r"spawn_main|forkserver")
RECORD = struct.Struct("<BBHIIIIIIfHHHHHHHH16s")  # struct acct_v3 (linux/acct.h), 64 bytes


def kind_of(cmdline: str) -> str:
    for kind, pattern in KINDS:
        if re.search(pattern, cmdline):
            return kind
    command = re.search(r"bin/(xmdata|dask) (\S+)", cmdline)
    return " ".join(command.groups()) if command else (cmdline.split(" ")[0].rsplit("/", 1)[-1] or "?")


def _comp_t(value: int) -> float:
    """comp_t: 13-bit mantissa, 3-bit base-8 exponent, in clock ticks (AHZ = 100)."""
    return ((value & 0x1FFF) << (3 * ((value >> 13) & 7))) / 100.0


def read_records(path: str) -> list[tuple[int, int, str, float]]:
    """(pid, ppid, comm, CPU-s) per ended process."""
    data = open(path, "rb").read()
    records = []
    for offset in range(0, len(data) - RECORD.size + 1, RECORD.size):
        fields = RECORD.unpack_from(data, offset)
        pid, ppid, utime, stime, comm = fields[6], fields[7], fields[10], fields[11], fields[18]
        records.append((pid, ppid, comm.split(b"\0")[0].decode(errors="replace"), _comp_t(utime) + _comp_t(stime)))
    return records


def measure(command: list[str]) -> dict:
    libc = ctypes.CDLL(None, use_errno=True)
    fd, path = tempfile.mkstemp(prefix="xmdata-acct-")
    os.close(fd)
    if libc.acct(path.encode()) != 0:
        os.unlink(path)
        raise SystemExit(f"process accounting could not start ({os.strerror(ctypes.get_errno())}): run as root")
    seen: dict[int, str] = {}
    done = threading.Event()

    def sample():
        while not done.is_set():
            for proc in psutil.process_iter(["pid", "cmdline"]):
                if proc.info["cmdline"]:
                    seen[proc.info["pid"]] = " ".join(proc.info["cmdline"])[:400]
            done.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.monotonic()
    try:
        code = subprocess.call(command)
    except OSError as exc:  # no such program, not executable
        code = 127
        print(f"process_cpu: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
    finally:
        wall = time.monotonic() - started
        done.set()
        sampler.join()
        libc.acct(None)
    records = read_records(path)
    os.unlink(path)
    parent = {pid: ppid for pid, ppid, _, _ in records}

    def kind(pid: int, depth: int = 0) -> str:
        cmdline = seen.get(pid, "")
        if SPAWNED.search(cmdline) and depth < 4:
            return f"worker of {kind(parent.get(pid, 0), depth + 1)}"
        return kind_of(cmdline) if cmdline else "?"

    cpu, count = collections.Counter(), collections.Counter()
    for pid, _, comm, seconds in records:
        name = kind(pid)
        name = f"{name} ({comm})" if name == "?" else name
        cpu[name] += seconds
        count[name] += 1
    return {"command": command, "exit": code, "wall_s": round(wall, 1), "cpu_s": round(sum(cpu.values()), 1),
            "by_kind": {name: {"cpu_s": round(seconds, 1), "processes": count[name]}
                        for name, seconds in cpu.most_common()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.process_cpu", description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--most", type=int, default=25, help="kinds to print")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("name a command after --")
    result = measure(command)
    print(f"exit {result['exit']}  wall {result['wall_s']} s  CPU {result['cpu_s']} CPU-s "
          f"(every process that ended; {result['cpu_s'] / max(result['wall_s'], 1e-9):.2f} cores on average)")
    for name, row in list(result["by_kind"].items())[:args.most]:
        print(f"{row['cpu_s']:9.1f} CPU-s {row['processes']:5d}  {name}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=2)
    return result["exit"]  # the command's own: the wrapper does not hide a failure


if __name__ == "__main__":
    sys.exit(main())
