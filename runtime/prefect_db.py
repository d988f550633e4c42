"""A fresh Prefect home starts from a copy of an empty, migrated database instead of running
Prefect's 114 SQLite migrations (measured: 8.8 s of a 10.5-s first server start on the 2-core machine).

The template is Prefect's own schema, made by Prefect's own code (`create_db`, then its block
registration), once per set of Prefect migrations and Python environment: by `./run setup`
(`python -m xmdata.runtime.prefect_db`), or else kept from the first server that had to make its
database itself. Only Prefect's default database (SQLite under PREFECT_HOME) is seeded; a home that
has a database (or what is left of one), or a configured database URL, is left to Prefect. All of it
is best effort: whatever goes wrong, Prefect makes its database itself, as without a template.
"""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.util
import logging
import os
import sqlite3
import sys
import tempfile
from urllib.request import pathname2url

SQLITE_PREFIX = "sqlite+aiosqlite:///"
# What an empty database holds: the schema's revision and Prefect's registered block types. A file
# with rows anywhere else (runs, flows, logs) is somebody's data and is never copied into a home.
TEMPLATE_TABLES = {"alembic_version", "block_type", "block_schema", "block_schema_reference"}
log = logging.getLogger(__name__)


def home_database() -> str | None:
    """The SQLite file of Prefect's default database URL, or None when another one is configured."""
    from prefect.settings import get_current_settings  # noqa: PLC0415 — settings only, not the server

    settings = get_current_settings()
    database = os.path.join(str(settings.home), "prefect.db")
    url = settings.server.database.connection_url
    return database if url is None or url.get_secret_value() == SQLITE_PREFIX + database else None


def _migrations_key() -> str:
    """Prefect's SQLite migrations by name (their revision ids): a dev build with the same version
    number but other migrations gets a template of its own. Found without importing Prefect."""
    prefect_dir = list(importlib.util.find_spec("prefect").submodule_search_locations)[0]
    names = sorted(os.listdir(os.path.join(prefect_dir, "server", "database", "_migrations", "versions", "sqlite")))
    return hashlib.sha256("\n".join(n for n in names if n.endswith(".py")).encode()).hexdigest()[:16]


def template_paths() -> list[str]:
    """Where a template may be, in order: the environment's own (made by `./run setup`), then the
    user's cache (for an environment this user cannot write to)."""
    from .storage import cache_root  # noqa: PLC0415

    name = f"prefect-{_migrations_key()}-empty.db"
    return [os.path.join(sys.prefix, "share", "xmdata", name), os.path.join(cache_root(), "prefect", name)]


def seed_home_database() -> str | None:
    """Copy a template into a home without a database. Returns the path of a database that the
    server is left to make itself (no template yet; `keep_as_template` keeps it once it answers)."""
    database = home_database()
    if database is None or any(os.path.exists(database + end) for end in ("", "-wal", "-shm", "-journal")):
        return None  # a home's database, or what a killed server left of one, is Prefect's to open
    for template in template_paths():
        if os.path.exists(template):
            try:
                os.makedirs(os.path.dirname(database), mode=0o700, exist_ok=True)
                _place_copy(template, database)
                return None
            except (OSError, sqlite3.Error, ValueError) as exc:
                log.warning("xmdata: Prefect's database template %s not used: %s", template, exc)
    return database


def make_home_private() -> None:
    """The database of runs (parameters, logs, artifacts) is the owner's alone: the files a server
    of an earlier version made with the user's umask are made 0600 (the server itself runs with
    umask 077)."""
    database = home_database()
    for path in [database + end for end in ("", "-wal", "-shm", "-journal")] if database else []:
        with contextlib.suppress(OSError):
            if os.stat(path).st_uid == os.geteuid():
                os.chmod(path, 0o600)


def keep_as_template(database: str) -> None:
    """Called once the server that made `database` answers and before this process has published its
    address; the content check refuses it if anyone else's runs are in it all the same."""
    templates = template_paths()
    if any(os.path.exists(t) for t in templates):
        return
    for template in [t for t in templates if _writable_folder(t)]:
        try:
            _place_copy(database, template)
            return
        except (OSError, sqlite3.Error, ValueError) as exc:
            log.warning("xmdata: Prefect's database not kept as a template at %s: %s", template, exc)


def _check_empty(db: sqlite3.Connection, source: str) -> None:
    tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    if "alembic_version" not in tables or db.execute("SELECT count(*) FROM alembic_version").fetchone()[0] != 1:
        raise ValueError(f"{source} holds no migrated Prefect database")
    holding = [t for t in tables if t not in TEMPLATE_TABLES and not t.startswith("sqlite_")
               and db.execute(f'SELECT EXISTS (SELECT 1 FROM "{t}")').fetchone()[0]]
    if holding:
        raise ValueError(f"{source} is not empty (rows in {', '.join(holding[:3])})")


def _place_copy(source: str, target: str) -> None:
    """SQLite's online backup of an empty Prefect database (checked), in rollback-journal mode (a
    reader makes no -wal/-shm files next to it; Prefect turns WAL on when it connects), the owner's
    alone (0600, as mkstemp makes it: a home's copy will hold the owner's runs), linked into place:
    a file already there is never replaced."""
    fd, part = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".tmp-", suffix=".db")
    os.close(fd)
    try:
        with contextlib.closing(sqlite3.connect(f"file:{pathname2url(source)}?mode=ro", uri=True)) as src, \
                contextlib.closing(sqlite3.connect(part)) as dst:
            src.backup(dst)
            dst.execute("PRAGMA journal_mode=DELETE")
            _check_empty(dst, source)
        with contextlib.suppress(FileExistsError):  # another process placed one first: it stays
            os.link(part, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(part)


def _writable_folder(path: str) -> bool:
    with contextlib.suppress(OSError):
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    return os.access(os.path.dirname(path), os.W_OK)


async def _make_database() -> None:
    from prefect.server.database import provide_database_interface  # noqa: PLC0415
    from prefect.server.models.block_registration import run_block_auto_registration  # noqa: PLC0415

    db = provide_database_interface()
    await db.create_db()
    async with await db.session() as session:
        await run_block_auto_registration(session=session)


def build_template() -> str:
    """Make the template with Prefect's own migrations, in a folder of its own. Its own process:
    Prefect fixes its settings when first imported, so they are set before."""
    if "prefect" in sys.modules:
        raise RuntimeError("build_template runs in a process that has not imported Prefect yet")
    templates = template_paths()
    existing = [t for t in templates if os.path.exists(t)]
    if existing:
        return existing[0]
    target = next(t for t in templates if _writable_folder(t))
    with tempfile.TemporaryDirectory(dir=os.path.dirname(target)) as home:
        # Environment variables win over .env, prefect.toml and profiles: this database, nobody's own.
        os.environ.update(PREFECT_HOME=home,
                          PREFECT_SERVER_DATABASE_CONNECTION_URL=f"{SQLITE_PREFIX}{home}/prefect.db")
        os.environ.pop("PREFECT_API_DATABASE_CONNECTION_URL", None)
        asyncio.run(_make_database())
        _place_copy(os.path.join(home, "prefect.db"), target)
    return target


if __name__ == "__main__":
    print(build_template())
