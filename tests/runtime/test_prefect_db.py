"""A new Prefect home starts from a copy of the empty, migrated database (runtime/prefect_db.py)."""
from __future__ import annotations

import os
import sqlite3

import pytest

from xmdata.runtime import prefect_db


TEMPLATE = "template #1?.db"


def _alembic_version(path) -> str:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT version_num FROM alembic_version").fetchone()[0]


def _fake_template(path, version: str = "head-of-the-template", runs: int = 0) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE alembic_version (version_num TEXT)")
        db.execute("INSERT INTO alembic_version VALUES (?)", (version,))
        db.execute("CREATE TABLE block_type (id TEXT)")
        db.execute("INSERT INTO block_type VALUES ('a block type')")
        db.execute("CREATE TABLE flow_run (id TEXT)")
        db.executemany("INSERT INTO flow_run VALUES (?)", [(f"run {i}",) for i in range(runs)])


@pytest.fixture
def new_home(tmp_path, monkeypatch):
    """A Prefect home with no database yet, and a template path with nothing there (a name that
    needs quoting in SQLite's file: URIs)."""
    from prefect.settings import PREFECT_HOME, temporary_settings

    home = tmp_path / "home"
    monkeypatch.setenv("PREFECT_HOME", str(home))  # the server's process reads it from here
    monkeypatch.setattr(prefect_db, "template_paths", lambda: [str(tmp_path / TEMPLATE)])
    with temporary_settings(updates={PREFECT_HOME: str(home)}):
        yield home


def test_a_new_home_gets_a_copy_of_the_template_and_an_old_one_is_left_alone(new_home, tmp_path):
    _fake_template(tmp_path / TEMPLATE)
    assert prefect_db.seed_home_database() is None  # seeded: nothing left for the server to make
    assert _alembic_version(new_home / "prefect.db") == "head-of-the-template"
    assert oct(os.stat(new_home / "prefect.db").st_mode & 0o777) == oct(0o600)  # the owner's runs will be in it
    with sqlite3.connect(new_home / "prefect.db") as db:
        db.execute("UPDATE alembic_version SET version_num = 'the-home-s-own'")
    assert prefect_db.seed_home_database() is None
    assert _alembic_version(new_home / "prefect.db") == "the-home-s-own"  # never overwritten


def test_a_template_holding_runs_or_no_schema_is_never_copied(new_home, tmp_path):
    _fake_template(tmp_path / TEMPLATE, runs=2)
    assert prefect_db.seed_home_database() == str(new_home / "prefect.db")  # left to Prefect's migrations
    assert not (new_home / "prefect.db").exists()
    prefect_db.keep_as_template(str(tmp_path / "nowhere.db"))  # a template already there: kept as it is
    os.unlink(tmp_path / TEMPLATE)
    prefect_db.keep_as_template(str(tmp_path / "nowhere.db"))  # a database that is not there
    assert not (tmp_path / "nowhere.db").exists() and not (tmp_path / TEMPLATE).exists()
    _fake_template(tmp_path / "used.db", runs=1)
    prefect_db.keep_as_template(str(tmp_path / "used.db"))  # somebody's runs: not a template
    assert not (tmp_path / TEMPLATE).exists()


def test_what_a_killed_server_left_of_a_database_is_not_seeded_over(new_home, tmp_path):
    _fake_template(tmp_path / TEMPLATE)
    new_home.mkdir()
    (new_home / "prefect.db-wal").write_bytes(b"pages of a database deleted after a kill")
    assert prefect_db.seed_home_database() is None
    assert not (new_home / "prefect.db").exists()


def test_a_configured_database_is_not_seeded(new_home, tmp_path):
    from prefect.settings import PREFECT_API_DATABASE_CONNECTION_URL, temporary_settings

    _fake_template(tmp_path / TEMPLATE)
    other = tmp_path / "elsewhere.db"
    with temporary_settings(updates={PREFECT_API_DATABASE_CONNECTION_URL: f"sqlite+aiosqlite:///{other}"}):
        assert prefect_db.home_database() is None
        assert prefect_db.seed_home_database() is None
    assert not other.exists() and not (new_home / "prefect.db").exists()


@pytest.mark.slow
def test_without_a_template_the_first_server_s_database_becomes_it_and_the_next_starts_on_a_copy(
        new_home, tmp_path, monkeypatch):
    """Prefect's own migrations make the first home's database, kept as the template once the server
    answers; a server in a second new home starts on a copy of it."""
    from prefect.settings import PREFECT_HOME, temporary_settings

    from xmdata.runtime.prefect_api import start_prefect_server, stop_process_group

    assert prefect_db.seed_home_database() == str(new_home / "prefect.db")  # no template: left to Prefect
    server, url = start_prefect_server()
    stop_process_group(server)
    template = tmp_path / TEMPLATE
    version = _alembic_version(template)
    assert version == _alembic_version(new_home / "prefect.db")
    with sqlite3.connect(template) as db:  # Prefect's registered blocks come with it, no runs
        assert db.execute("SELECT count(*) FROM block_type").fetchone()[0] > 0
        assert db.execute("SELECT count(*) FROM flow_run").fetchone()[0] == 0
    second = tmp_path / "second"
    monkeypatch.setenv("PREFECT_HOME", str(second))
    with temporary_settings(updates={PREFECT_HOME: str(second)}):
        assert prefect_db.seed_home_database() is None and (second / "prefect.db").exists()
        # the copy is the migrated database; that a server starts on a copy, every test session's
        # service shows (its home is new, the template exists)
        assert _alembic_version(second / "prefect.db") == version
