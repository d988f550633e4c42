"""A new Prefect home starts from a copy of the empty, migrated database (runtime/prefect_db.py)."""
from __future__ import annotations

import sqlite3

import pytest

from xmdata.runtime import prefect_db


def _alembic_version(path) -> str:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT version_num FROM alembic_version").fetchone()[0]


@pytest.fixture
def new_home(tmp_path, monkeypatch):
    """A Prefect home with no database yet, and a template path with nothing there."""
    from prefect.settings import PREFECT_HOME, temporary_settings

    home = tmp_path / "home"
    monkeypatch.setenv("PREFECT_HOME", str(home))  # the server's process reads it from here
    monkeypatch.setattr(prefect_db, "template_path", lambda: str(tmp_path / "template.db"))
    with temporary_settings(updates={PREFECT_HOME: str(home)}):
        yield home


def test_a_new_home_gets_a_copy_of_the_template_and_an_old_one_is_left_alone(new_home, tmp_path):
    with sqlite3.connect(tmp_path / "template.db") as db:
        db.execute("CREATE TABLE alembic_version (version_num TEXT)")
        db.execute("INSERT INTO alembic_version VALUES ('head-of-the-template')")
    assert prefect_db.seed_home_database() is None  # seeded: nothing left for the server to make
    assert _alembic_version(new_home / "prefect.db") == "head-of-the-template"
    with sqlite3.connect(new_home / "prefect.db") as db:
        db.execute("UPDATE alembic_version SET version_num = 'the-home-s-own'")
    assert prefect_db.seed_home_database() is None
    assert _alembic_version(new_home / "prefect.db") == "the-home-s-own"  # never overwritten


def test_a_configured_database_is_not_seeded(new_home, tmp_path):
    from prefect.settings import PREFECT_API_DATABASE_CONNECTION_URL, temporary_settings

    other = tmp_path / "elsewhere.db"
    with temporary_settings(updates={PREFECT_API_DATABASE_CONNECTION_URL: f"sqlite+aiosqlite:///{other}"}):
        assert prefect_db.home_database() is None
        assert prefect_db.seed_home_database() is None
    assert not other.exists() and not (new_home / "prefect.db").exists()


def test_without_a_template_the_first_server_s_database_becomes_it(new_home, tmp_path):
    """Prefect's own migrations make the first home's database, kept as the template once the
    server answers; a server then starts on a copy of it (every service start in these tests does)."""
    from xmdata.runtime.prefect_api import healthy, start_prefect_server, stop_process_group

    assert prefect_db.seed_home_database() == str(new_home / "prefect.db")  # no template: left to Prefect
    server, url = start_prefect_server()
    try:
        assert healthy(url)
    finally:
        stop_process_group(server)
    template = tmp_path / "template.db"
    version = _alembic_version(template)
    assert version == _alembic_version(new_home / "prefect.db")
    with sqlite3.connect(template) as db:  # Prefect's registered blocks come with it, no runs
        assert db.execute("SELECT count(*) FROM block_type").fetchone()[0] > 0
        assert db.execute("SELECT count(*) FROM flow_run").fetchone()[0] == 0
