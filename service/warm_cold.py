"""Warm or cold, declared once: a command runs in a fork of the service's warm command process
(service/command_server.py) only where what it runs is the same as in a process of its own. The
client decides with these rules (`decide`, service/client.py), the command process checks every
request with them (`import_time_hashes`, `differing`), and the settings reference prints them
(`markdown`, xmdata/docs_reference.py). Importable for nearly nothing (the `xmdata` entry point).

Variables read as Python starts or as the libraries load (the warm process loaded them once, with its
values) send a command cold when their values differ from the warm process's, each family for its
reason; any other variable is read as the command runs, and the fork has the command's whole environment.
"""
from __future__ import annotations

import hashlib

from xmdata.runtime import settings

from .service_files import command_environment

COLD_WHEN_DIFFERENT = (
    (("PYTHON",), "Python reads them as it starts: the import path, the hash seed, -X options, warnings"),
    (("PREFECT_",), "Prefect's settings, read as it loads"),
    (("DASK_",), "Dask's config, read as it loads"),
    (("OMP_", "MKL_", "OPENBLAS_", "NUMEXPR_", "POLARS_", "ARROW_", "RAYON_"),
     "thread pools and kernels, chosen as the libraries load"),
    (("HF_", "TRANSFORMERS_", "TOKENIZERS_", "TORCH", "PYTORCH_", "CUDA_", "NVIDIA_"),
     "the model libraries' caches, devices and switches, read as they load"),
    (("LD_", "MALLOC_"), "the shared libraries and allocator a process starts with"),
    (("TZ", "LANG", "LC_", "HOME", "TMPDIR", "XDG_"), "locale, time zone and home folders, resolved as the libraries load"),
)
# Credentials: read when a command calls the Hub or a store (huggingface_hub's get_token reads HF_TOKEN then;
# s3fs/botocore read AWS_* as a client is made), never as the libraries load; the fork has the command's own.
# Never hashed into commands.json (a hash of a token is a thing to guess it against), never a reason for cold.
CREDENTIALS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
# ... but these, whose difference changes nothing a command writes or prints, leave it warm.
WARM_WHEN_DIFFERENT = {
    **{name: "a credential, read as the command calls the Hub or a store, from the command's own environment; "
             "never hashed into the service's files" for name in CREDENTIALS},
    settings.PYTHONDONTWRITEBYTECODE.name: "whether .pyc files are written: the fork follows the command's value "
                                           "for what it imports (sys.dont_write_bytecode)",
    settings.PYTHONUNBUFFERED.name: "when output reaches its reader, not what it is: the fork makes the command's "
                                    "stdout and stderr unbuffered",
}
HERE = ("up", "down", "status", "worker", "serve")  # the service itself, or long-running: a process of its own
VERBOSE = ("-v", "--verbose")  # its logging is configured as the libraries load: a process of its own


def cold_reason(name: str) -> str | None:
    """Why a difference in NAME sends a command cold; None when it does not."""
    if name in WARM_WHEN_DIFFERENT:
        return None
    return next((why for prefixes, why in COLD_WHEN_DIFFERENT if name.startswith(prefixes)), None)


def import_time_hashes(env: dict[str, str]) -> dict[str, str]:
    """{variable: hash of its value} of what Python and the libraries read as they load
    (COLD_WHEN_DIFFERENT), in a command's environment: the warm command process publishes its
    own, so a client tells which differ without the values (its state folder is the owner's only)."""
    return {k: hashlib.sha256(v.encode()).hexdigest()[:16] for k, v in command_environment(env).items()
            if cold_reason(k) is not None}


def differing(mine: dict[str, str], theirs: dict[str, str]) -> list[str]:
    """The variables whose hashed values (import_time_hashes) differ, set on one side only included."""
    return sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))


def decide(argv: list[str], env: dict[str, str], info: dict | None) -> tuple[str | None, str]:
    """(the warm command process's socket, or None for this process; why), for ARGV whose environment
    is ENV (compared with the one the command process published in INFO, commands.json; None: there is
    none for this code). XMDATA_SERVICE is read as every setting is, from this process."""
    if not argv or argv[0] in HERE:
        return None, f"cold: `{argv[0] if argv else 'xmdata'}` manages or is the service: it runs in its own process"
    try:
        if not settings.SERVICE.get():
            return None, f"cold: {settings.SERVICE.name}=off"
    except ValueError:  # a bad XMDATA_SERVICE: the command here refuses it in one line, exit 2
        return None, f"cold: {settings.SERVICE.name} is not on or off"
    if info is None:
        return None, "cold: no warm command process for this code (the service is down, starting, or runs other code)"
    differ = differing(import_time_hashes(env), info.get("import_time") or {})
    why = [f"{name} differs from the warm command process's ({cold_reason(name)})" for name in differ[:1]]
    why += [f"{len(differ) - 1} more: {', '.join(differ[1:])}"] if len(differ) > 1 else []
    if argv[0] in VERBOSE:
        verbose = "-v (Prefect's and Dask's log levels are set as they load; the warm command process has them quiet)"
        return None, "cold: " + verbose + (f"; and {'; '.join(why)}" if why else "")
    if why:
        return None, "cold: " + "; ".join(why)
    return info["socket"], "warm: the service's command process"


def markdown() -> str:
    """The settings reference's warm-or-cold tables."""
    lines = ["Warm or cold: with the service up, a command runs in a fork of its warm command process unless "
             "one of these differs from that process's value (then in a process of its own; `-v` says which):",
             "", "| variables | why |", "|---|---|"]
    lines += [f"| {', '.join(f'`{p}…`' for p in prefixes)} | {why} |" for prefixes, why in COLD_WHEN_DIFFERENT]
    lines += ["", "These differ without sending a command cold:", "", "| variable | why |", "|---|---|"]
    lines += [f"| `{name}` | {why} |" for name, why in WARM_WHEN_DIFFERENT.items()]
    return "\n".join(lines) + "\n"
