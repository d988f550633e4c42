"""CPU-seconds summed over every process a run involves: this process, the commands it ran and
waited for, and the xmdata service's tree (its scheduler, its Prefect server, its workers).

A process that started during the measurement counts whole; one that existed before counts
from the snapshot. Wall time is measured beside it.

A command the client hands to the warm command process runs in a fork of it, which tells the client its
status before it exits; its CPU-s reach the command process's children times only once that process
reaps it (its accept loop does, within a second). The meter waits for that before it reads: read at
once, a command's CPU-s were missed, or counted with the next measurement's.
"""
from __future__ import annotations

import resource
import time

REAPED_WITHIN_S = 5.0  # the command process reaps between accepts (1 s timeout): a fork's end is counted by then

import psutil


def _own_cpu() -> float:
    self_, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return self_.ru_utime + self_.ru_stime + children.ru_utime + children.ru_stime


def _tree_cpu() -> dict[int, float]:
    """Per pid CPU of the service's processes (read from its state file, if it is up)."""
    procs, commands = service_processes()
    cpu = {}
    for proc in procs:
        try:
            t = proc.cpu_times()
            cpu[proc.pid] = t.user + t.system
        except psutil.NoSuchProcess:
            pass
    if commands is not None:  # its own session; the commands it forked count once reaped
        try:
            t = commands.cpu_times()
            cpu[commands.pid] = t.user + t.system + t.children_user + t.children_system
        except psutil.NoSuchProcess:
            pass
    return cpu


def service_processes() -> tuple[list[psutil.Process], psutil.Process | None]:
    """(the service's process tree, its warm command process: a session of its own), found from the
    service's state file; ([], None) when it is not up."""
    from xmdata.service.service import read_state

    state = read_state()
    if not state:
        return [], None
    try:
        root = psutil.Process(state["pid"])
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return [], None
    return procs, _command_process(state)


def _forks_reaped() -> None:
    """Until the warm command process has no fork left (running or unreaped), at most REAPED_WITHIN_S."""
    from xmdata.service.service import read_state

    state = read_state()
    commands = _command_process(state) if state else None
    deadline = time.monotonic() + REAPED_WITHIN_S
    try:
        while commands is not None and commands.children() and time.monotonic() < deadline:
            time.sleep(0.02)
    except psutil.NoSuchProcess:
        pass


def _command_process(state: dict):
    import json
    import os

    from xmdata.service.service_files import INFO_NAME

    try:
        with open(os.path.join(state["secrets"], INFO_NAME), encoding="utf-8") as f:
            return psutil.Process(json.load(f)["pid"])
    except (OSError, ValueError, KeyError, psutil.Error):
        return None


class CpuMeter:
    """`with CpuMeter() as m: ...` then m.cpu_s (all processes) and m.wall_s."""

    def __enter__(self):
        self.wall0, self.own0, self.tree0 = time.perf_counter(), _own_cpu(), _tree_cpu()
        return self

    def __exit__(self, *exc):
        self.wall_s = time.perf_counter() - self.wall0
        _forks_reaped()
        tree = _tree_cpu()
        self.service_s = sum(cpu - self.tree0.get(pid, 0.0) for pid, cpu in tree.items())
        self.own_s = _own_cpu() - self.own0
        self.cpu_s = self.own_s + self.service_s
        return False
