import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xmdata.runtime.atomic import sha256_file, write_parquet_atomic
from xmdata.runtime.process import process_shard
from xmdata.runtime.records import finished_record
from xmdata.runtime.shards import ShardPaths, shard_assignment, shard_of, split_into_shards
from xmdata.runtime.stage import Stage
from xmdata.tasks.build.ingest import ingest
from xmdata.tasks.build.rejects import make_rejects, no_rejects
from xmdata.tasks.build.rows import reject_bad_ids


def upper(table, params):
    text = [t.upper() for t in table.column("text").to_pylist()]
    return table.set_column(1, "text", pa.array(text)), make_rejects("upper", "empty_text", [])


def sample(n=40):
    return pa.table({"id": [f"r{i}" for i in range(n)], "text": [f"row {i}" for i in range(n)]})


def test_shard_assignment_is_stable_and_order_free():
    table = sample()
    shards = split_into_shards(table, "id", 4)
    assert sum(s.num_rows for s in shards) == 40
    reversed_shards = split_into_shards(table.take(list(range(39, -1, -1))), "id", 4)
    for a, b in zip(shards, reversed_shards):
        assert sorted(a.column("id").to_pylist()) == sorted(b.column("id").to_pylist())
        assert a.column("id").to_pylist() == sorted(a.column("id").to_pylist(), key=lambda k: int(k[1:]))
    for index, shard in enumerate(shards):  # every row sits in the shard its id alone names
        assert all(shard_of(k, 4) == index for k in shard.column("id").to_pylist())
    assert split_into_shards(table, "id", 1)[0].equals(table)


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string()])
def test_a_batch_of_ids_goes_where_each_id_alone_goes(kind):
    """The batch form (bytes from Arrow, the modulo in numpy) is `shard_of` of each id: non-ASCII ids,
    an empty one, a null (where the text "None" goes), several chunks, and shard counts past 2**32."""
    ids = ["r1", "", "猫-7", "vélo", None, "c0000042", "x" * 300] + [f"c{i:07d}" for i in range(200)]
    chunked = pa.chunked_array([pa.array(ids[:3], kind), pa.array(ids[3:], kind)])
    for n_shards in (2, 7, 4096, 2**40 + 3):
        assert shard_assignment(chunked, n_shards).tolist() == [shard_of(str(k), n_shards) for k in ids]
    assert shard_assignment(pa.array([3, 1]), 5).tolist() == [shard_of("3", 5), shard_of("1", 5)]


def test_atomic_write_leaves_only_the_file_or_nothing(tmp_path):
    write_parquet_atomic(pa.table({"x": [1]}), str(tmp_path / "d" / "out.parquet"))
    assert os.listdir(tmp_path / "d") == ["out.parquet"]  # no temp file left behind
    with pytest.raises(AttributeError, match="has no attribute 'combine_chunks'"):  # fails mid-write
        write_parquet_atomic("not a table", str(tmp_path / "e" / "out.parquet"))
    assert os.listdir(tmp_path / "e") == []


def test_the_one_writer_makes_private_files_folders_that_appear_whole_and_moves_files_in(tmp_path, monkeypatch):
    from xmdata.runtime import atomic
    from xmdata.runtime.owner_only import write_private

    atomic.write_bytes_atomic(b"shared", str(tmp_path / "a" / "shared.bin"), sync=False)
    write_private(str(tmp_path / "a" / "secret.txt"), "mine")
    modes = [oct(os.stat(tmp_path / "a" / n).st_mode & 0o777) for n in ("shared.bin", "secret.txt")]
    assert modes == ["0o644", "0o600"] and sorted(os.listdir(tmp_path / "a")) == ["secret.txt", "shared.bin"]

    def fill(folder, text):
        with open(os.path.join(folder, "part"), "w") as f:
            f.write(text)

    assert atomic.publish_folder(str(tmp_path / "model"), lambda folder: fill(folder, "first"))
    assert not atomic.publish_folder(str(tmp_path / "model"), lambda folder: fill(folder, "second"))  # first stands
    assert (tmp_path / "model" / "part").read_text() == "first" and sorted(os.listdir(tmp_path)) == ["a", "model"]
    with pytest.raises(ZeroDivisionError, match="division by zero"):
        atomic.publish_folder(str(tmp_path / "broken"), lambda folder: 1 / 0)
    assert sorted(os.listdir(tmp_path)) == ["a", "model"]  # nothing half-made is left

    staged, order, replace = tmp_path / "staged", [], atomic._replace_local
    for name in ("card.json", "w/weights.bin", "config.json"):
        atomic.write_bytes_atomic(name.encode(), str(staged / name))
    monkeypatch.setattr(atomic, "_replace_local", lambda path, *a, **k: order.append(path) or replace(path, *a, **k))
    atomic.move_files_atomic(str(staged), str(tmp_path / "model"), private=True, last=("card.json",))
    assert [os.path.relpath(p, tmp_path / "model") for p in order] == ["config.json", "w/weights.bin", "card.json"]
    for name in ("card.json", "w/weights.bin", "config.json"):
        assert (tmp_path / "model" / name).read_bytes() == name.encode()
        assert oct(os.stat(tmp_path / "model" / name).st_mode & 0o777) == "0o600"
    assert not [files for _, _, files in os.walk(staged) if files]  # moved, not copied


def test_process_shard_writes_record_last_and_detects_changes(tmp_path):
    src = tmp_path / "in" / "shard-00003.parquet"
    write_parquet_atomic(sample(5), str(src))
    stage = Stage("upper", "1", upper, {"k": 1})
    record = process_shard(stage, str(src), str(tmp_path), 3)
    paths = ShardPaths(str(tmp_path), "upper", 3)
    assert record == json.load(open(paths.record))
    assert record["rows_in"] == record["rows_out"] == 5
    assert pq.read_table(paths.data).column("text")[0].as_py() == "ROW 0"
    input_sha = sha256_file(str(src))
    assert finished_record(stage, paths, input_sha) == record
    assert finished_record(Stage("upper", "1", upper, {"k": 2}), paths, input_sha) is None
    assert finished_record(Stage("upper", "2", upper, {"k": 1}), paths, input_sha) is None
    assert finished_record(stage, paths, "other-input") is None
    with open(paths.data, "ab") as f:  # a damaged output is redone, not trusted
        f.write(b"x")
    assert finished_record(stage, paths, input_sha) is None


def test_bad_ids_are_rejected_with_reasons():
    table = pa.table({"id": ["a", "", None, "b", "a", " "], "text": list("123456")})
    kept, rejects = reject_bad_ids(table, "ingest")
    assert kept.column("id").to_pylist() == ["a", "b"]
    assert kept.column("text").to_pylist() == ["1", "4"]
    assert sorted(rejects.column("reason").to_pylist()) == ["duplicate_id", "empty_id", "empty_id", "empty_id"]
    assert set(rejects.column("stage").to_pylist()) == {"ingest"}


def test_ingest_skips_finished_shards_and_counts_them(tmp_path):
    table = pa.table({"id": ["a", "a", "b", "c"], "text": ["1", "2", "3", "4"]})
    first = ingest(table, "captions", 3, str(tmp_path))
    assert (first.shards_run, first.shards_skipped) == (3, 0)
    assert first.rows_out == 3 and first.rejected == {"duplicate_id": 1}
    os.remove(ShardPaths(str(tmp_path), "captions", 1).record)
    second = ingest(table, "captions", 3, str(tmp_path))
    assert (second.shards_run, second.shards_skipped) == (1, 2)
    assert second.records == first.records
    assert no_rejects().num_rows == 0


def test_fewer_shards_on_rerun_leave_no_stale_shards(tmp_path):
    table = pa.table({"id": [f"r{i}" for i in range(30)], "text": ["t"] * 30})
    ingest(table, "captions", 6, str(tmp_path))
    report = ingest(table, "captions", 3, str(tmp_path))
    for kind in ("data", "rejects", "_done"):
        assert len(os.listdir(tmp_path / "captions" / kind)) == 3
    assert report.rows_out == 30


def test_positive_shard_and_worker_counts_only(capsys):
    from xmdata.cli import main

    for bad in (["--shards", "0"], ["--workers", "-1"]):
        with pytest.raises(SystemExit, match="^2$") as exit_info:
            main(["demo", *bad])
        assert exit_info.value.code == 2
    assert "must be at least 1" in capsys.readouterr().err


def test_a_named_prefect_api_is_used_as_is_and_the_environment_restored(monkeypatch):
    from prefect.settings import PREFECT_API_URL

    from xmdata.runtime.prefect_api import prefect_api

    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:1/api")
    with prefect_api(url="http://127.0.0.1:2/api") as url:  # no server is started for a named API
        assert url == os.environ["PREFECT_API_URL"] == PREFECT_API_URL.value() == "http://127.0.0.1:2/api"
    assert os.environ["PREFECT_API_URL"] == "http://127.0.0.1:1/api"



def test_a_run_sends_no_flow_heartbeat_unless_the_user_asked_for_them():
    """Prefect's heartbeat thread sleeps a second at a time and a flow run's end joins it (0-1 s
    more a run); only a user's own automation reads the heartbeats."""
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, get_current_settings, temporary_settings

    from xmdata.runtime.prefect_api import prefect_api

    with prefect_api(url="http://127.0.0.1:2/api"):
        assert get_current_settings().flows.heartbeat_frequency is None
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: 60}), prefect_api(url="http://127.0.0.1:2/api"):
        assert get_current_settings().flows.heartbeat_frequency == 60


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_settings_reference_lists_exactly_the_declared_variables():
    from xmdata.docs_reference import settings_page
    from xmdata.runtime import settings

    page = open(os.path.join(ROOT, "docs", "reference", "settings.md"), encoding="utf-8").read()
    assert page == settings_page(), "regenerate it: python -m xmdata.docs_reference"
    assert settings.markdown() in page
    declared = {s.name for s in settings.ALL}
    assert len(declared) == len(settings.ALL)
    assert {s.name for s in settings.USER} == {line.split(" ")[0] for line in settings.describe()}


def test_every_xmdata_variable_the_repository_names_is_declared():
    """Names in text, strings and comments (a Python identifier, such as a constant named like one, is no
    environment variable)."""
    import io
    import re
    import subprocess
    import tokenize

    from xmdata.runtime import settings

    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    named = set()
    for rel in files:
        path = os.path.join(ROOT, rel)
        if not os.path.isfile(path) or rel.endswith((".png", ".parquet", ".ftz", ".lock")):
            continue
        text = open(path, errors="ignore").read()
        if rel.endswith(".py"):
            text = " ".join(t.string for t in tokenize.generate_tokens(io.StringIO(text).readline)
                            if t.type in (tokenize.STRING, tokenize.COMMENT, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)))
        named |= set(re.findall(r"\bXMDATA_[A-Z0-9_]*[A-Z0-9]", text))
    assert named == {s.name for s in settings.ALL if s.name.startswith("XMDATA_")}


def test_a_setting_is_read_when_asked_and_a_bad_value_is_one_line(monkeypatch):
    from xmdata.runtime import settings
    from xmdata.schemas import ContractError

    monkeypatch.delenv("XMDATA_IDLE_MINUTES", raising=False)
    assert settings.IDLE_MINUTES.get() == 60.0
    monkeypatch.setenv("XMDATA_IDLE_MINUTES", "0.5")
    assert settings.IDLE_MINUTES.get() == 0.5
    monkeypatch.setenv("XMDATA_CACHE", "~/elsewhere")
    assert settings.CACHE.get() == os.path.expanduser("~/elsewhere")
    for setting, bad in ((settings.IDLE_MINUTES, "soon"), (settings.IDLE_MINUTES, "-1"),
                         (settings.SERVICE, "maybe"), (settings.GPU_WORKERS, "1.5")):
        monkeypatch.setenv(setting.name, bad)
        with pytest.raises(ContractError, match=f"^{setting.name}='{bad}': expected "):
            setting.get()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert settings.CUDA_VISIBLE_DEVICES.get() is None and settings.CUDA_VISIBLE_DEVICES.raw() == ""


def test_a_child_env_and_library_settings_leave_this_process_as_it_was(monkeypatch):
    from xmdata.runtime import settings

    monkeypatch.setenv("PREFECT_API_URL", "http://a/api")
    monkeypatch.delenv("PREFECT_API_AUTH_STRING", raising=False)
    env = settings.child_env(drop=("PREFECT_API_URL",), CUDA_VISIBLE_DEVICES="1")
    assert "PREFECT_API_URL" not in env and env["CUDA_VISIBLE_DEVICES"] == "1" and env["PATH"] == os.environ["PATH"]
    with settings.environ_for_libraries({"PREFECT_API_URL": "http://b/api", "PREFECT_API_AUTH_STRING": "u:p"}):
        assert settings.PREFECT_API_URL.get() == "http://b/api" and settings.PREFECT_API_AUTH_STRING.get() == "u:p"
    assert os.environ["PREFECT_API_URL"] == "http://a/api" and "PREFECT_API_AUTH_STRING" not in os.environ


def test_storage_options_and_column_map_stay_in_their_block_and_reach_copied_threads():
    import contextvars
    from concurrent.futures import ThreadPoolExecutor

    from xmdata.runtime.storage import storage_options, using_storage_options
    from xmdata.schemas.column_map import active_column_map, column_mapping, rename_columns

    with using_storage_options({"anon": True}), column_mapping("A=a") as mapping, ThreadPoolExecutor(1) as pool:
        seen = pool.submit(contextvars.copy_context().run, lambda: (storage_options(), active_column_map())).result()
        assert seen == ({"anon": True}, {"A": "a"})
        assert pool.submit(storage_options).result() == {}  # a thread without the context sees none
        with column_mapping({"B": "b"}):
            rename_columns(pa.table({"A": [1]}), active_column_map(), "t.csv")
        assert mapping.unused() == []  # the inner block's read counts for the command's mapping
    assert storage_options() == {} and active_column_map() == {}


def test_the_model_cache_releases_least_recent_first_and_says_what_its_last_release_dropped(monkeypatch):
    from xmdata.models import model_cache
    from xmdata.models.base import ModelSpec

    sizes = {"a": 6, "b": 5, "c": 4}
    monkeypatch.setattr(model_cache, "model_bytes", lambda model: sizes[model])
    collections = []
    monkeypatch.setattr(model_cache, "free_memory", lambda: collections.append(1))
    monkeypatch.setenv("XMDATA_MODEL_MEMORY_GB", str(11 / 1e9))
    cache = model_cache.ModelCache()
    spec = {name: ModelSpec("fake", name) for name in sizes}
    for name in ("a", "b", "a"):
        assert cache.get("kind", spec[name], lambda n=name: n) == name
    assert cache.load_count == 2 and collections == [] and cache.released == []
    cache.get("kind", spec["c"], lambda: "c")  # 15 > 11: b, the least recently used, goes
    assert [m["model"] for m in cache.loaded()] == ["a", "c"] and cache.released == [("kind", "b")]
    cache.get("kind", spec["a"], lambda: "never")  # held: no load, no collection
    assert collections == [1] and cache.load_count == 3
    assert cache.release_all() == [("kind", "c"), ("kind", "a")] == cache.released and collections == [1, 1]
    assert cache.loaded() == [] and cache.release_all() == [] and collections == [1, 1]


def test_the_clis_progress_choice_wins_over_the_environment_and_ends_with_its_block(monkeypatch):
    from xmdata.runtime.progress import progress_shown, showing_progress

    monkeypatch.setenv("XMDATA_PROGRESS", "1")
    with showing_progress(False):  # --quiet
        assert not progress_shown()
    assert progress_shown()
    monkeypatch.delenv("XMDATA_PROGRESS")
    with showing_progress(True):
        assert progress_shown()
    assert not progress_shown()
