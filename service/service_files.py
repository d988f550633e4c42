"""Where a service's files are and which code it runs — importable by the `xmdata` entry point for
nearly nothing (no Prefect, no pyarrow): the command client finds the service's command process here.

One service per environment and Prefect home: its files are named by a hash of both. Prefect reads
its home from PREFECT_HOME, else from a `.env`, `prefect.toml` or `pyproject.toml` ([tool.prefect])
in the working folder, else `~/.prefect`; `light_prefect_home` says None when such a file could name
it, and the caller then asks Prefect itself.
"""
from __future__ import annotations

import hashlib
import os
import sys

from xmdata.runtime import settings

PREFECT_CONFIG_FILES = (".env", "prefect.toml")
# The warm command process's socket, its facts (pid, code) once it serves, and its pid from its start
# (the service stops it with itself), in the service's `.secrets/` folder.
SOCKET_NAME, INFO_NAME, PID_NAME = "commands.sock", "commands.json", "commands.pid"


def service_key(prefect_home: str) -> str:
    return hashlib.sha256(f"{sys.prefix}|{os.path.realpath(prefect_home)}".encode()).hexdigest()[:12]


def light_prefect_home() -> str | None:
    """PREFECT_HOME as Prefect would resolve it, without Prefect; None when a config file in the
    working folder might set it (then only Prefect can say)."""
    if home := settings.PREFECT_HOME.get():  # "~" expanded, as Prefect does
        return home
    if any(os.path.exists(name) for name in PREFECT_CONFIG_FILES):
        return None
    try:
        with open("pyproject.toml", encoding="utf-8", errors="replace") as f:
            if "tool.prefect" in f.read():
                return None
    except OSError:
        pass
    return os.path.expanduser("~/.prefect")


def service_base(prefect_home: str) -> str:
    """The path every file of this service starts with (state `.json`, `.log`, `.secrets/`…)."""
    return os.path.join(settings.CACHE.get(), "service", service_key(prefect_home))


# What a command sets for the libraries before they read it (xmdata/cli.py), unless the user set it:
# quiet logs unless -v. The command process imports them once, with these, for every command.
QUIET_LIBRARIES = {"PREFECT_LOGGING_LEVEL": "WARNING", "DASK_LOGGING__DISTRIBUTED": "warning"}
ALWAYS = {"PREFECT_SERVER_ANALYTICS_ENABLED": "false"}


def command_environment(env: dict[str, str], verbose: bool = False) -> dict[str, str]:
    """`env` with the defaults a command sets for the libraries (user-set values win)."""
    defaults = {**ALWAYS, **({} if verbose else QUIET_LIBRARIES)}
    return {**defaults, **env}
