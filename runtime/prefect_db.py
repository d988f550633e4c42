"""A fresh Prefect home starts from a copy of an empty, migrated database instead of running
Prefect's ~200 migrations (measured: 8.8 s of a 10.5-s first server start on the 2-core machine).

The template is Prefect's own schema, made by Prefect's own code (`create_db`, then its block
registration), once per Prefect version and Python environment: by `./run setup`
(`python -m xmdata.runtime.prefect_db`), or else kept from the first server that had to make its
database itself. Only Prefect's default database (SQLite under PREFECT_HOME) is seeded; a home that
has a database, or a configured database URL, is left to Prefect.
"""
from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import os
import sqlite3
import sys
import tempfile

SQLITE_PREFIX = "sqlite+aiosqlite:///"


def home_database() -> str | None:
    """The SQLite file of Prefect's default database URL, or None when another one is configured."""
    from prefect.settings import get_current_settings  # noqa: PLC0415 — settings only, not the server

    settings = get_current_settings()
    database = os.path.join(str(settings.home), "prefect.db")
    url = settings.server.database.connection_url
    return database if url is None or url.get_secret_value() == SQLITE_PREFIX + database else None


def template_path() -> str:
    """Keyed by Prefect's version: another version's schema is never copied. (Read from the
    package's metadata: importing Prefect would fix its settings before build_template sets them.)"""
    name = f"prefect-{importlib.metadata.version('prefect')}-empty.db"
    folder = os.path.join(sys.prefix, "share", "xmdata")
    with contextlib.suppress(OSError):
        os.makedirs(folder, exist_ok=True)
    if not os.access(folder, os.W_OK):  # a read-only environment: the user's cache instead
        from .storage import cache_root  # noqa: PLC0415

        folder = os.path.join(cache_root(), "prefect")
        os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, name)


def seed_home_database() -> str | None:
    """Copy the template into a home without a database. Returns the path of a database that the
    server is left to make itself (no template yet; `keep_as_template` keeps it once it answers)."""
    database = home_database()
    if database is None or os.path.exists(database):
        return None
    template = template_path()
    if not os.path.exists(template):
        return database
    os.makedirs(os.path.dirname(database), exist_ok=True)
    _copy_sqlite(template, database)
    return None


def keep_as_template(database: str) -> None:
    """Called once the server that made `database` answers and before any client knows its address:
    it holds Prefect's schema and registered blocks, nothing else."""
    if not os.path.exists(template_path()):
        _copy_sqlite(database, template_path())


def _copy_sqlite(source: str, target: str) -> None:
    """SQLite's online backup (a WAL database's unmerged pages included), renamed into place."""
    fd, part = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".tmp-", suffix=".db")
    os.close(fd)
    try:
        with contextlib.closing(sqlite3.connect(source)) as src, contextlib.closing(sqlite3.connect(part)) as dst:
            src.backup(dst)
        os.replace(part, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(part)


async def _make_database() -> None:
    from prefect.server.database import provide_database_interface  # noqa: PLC0415
    from prefect.server.models.block_registration import run_block_auto_registration  # noqa: PLC0415

    db = provide_database_interface()
    await db.create_db()
    async with await db.session() as session:
        await run_block_auto_registration(session=session)


def build_template() -> str:
    """Make the template with Prefect's own migrations, in a folder of its own (PREFECT_HOME there)."""
    target = template_path()
    if os.path.exists(target):
        return target
    with tempfile.TemporaryDirectory(dir=os.path.dirname(target)) as home:
        os.environ["PREFECT_HOME"] = home  # before Prefect reads its settings: its database is here
        os.environ.pop("PREFECT_API_DATABASE_CONNECTION_URL", None)
        os.environ.pop("PREFECT_SERVER_DATABASE_CONNECTION_URL", None)
        asyncio.run(_make_database())
        _copy_sqlite(os.path.join(home, "prefect.db"), target)
    return target


if __name__ == "__main__":
    print(build_template())
