"""One writer per folder (runtime/folder_lock.py): two writers interleaved by a pipe, never by timing;
gone holders taken over; a file that is not ours refused and kept; re-entrant in its process."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import types

import pytest
from support.folder_holder import holding

from xmdata.runtime import folder_lock
from xmdata.runtime.folder_lock import remove_stray_temp_files
from xmdata.runtime.folder_lock import FolderBusy, ForeignLock, one_writer

# A second process that takes FOLDER's lock, starts a write (a temp file, as a shard's ParquetStream
# leaves one until it finishes), says "held", and lets go when its stdin closes.
HOLDER = """
import sys
from xmdata.runtime.folder_lock import one_writer
with one_writer(sys.argv[1]):
    open(sys.argv[1] + "/.tmp-holders-shard.part", "wb").write(b"half")
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def held(tmp_path):
    """(folder, process): FOLDER's lock held by another live process until the test ends."""
    folder = tmp_path / "out"
    with holding(folder, HOLDER) as holder:
        yield folder, holder


def write_lock(folder, **fields) -> None:
    """A lock file as another writer would have left it."""
    holder = folder_lock.this_process("xmdata translate in.jsonl --out X")
    data = {"format": folder_lock.FORMAT, **holder.__dict__, "token": "theirs", **fields}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / folder_lock.LOCK_NAME).write_text(json.dumps(data))


def test_a_second_writer_is_refused_and_its_sweep_spares_the_first_writers_temp_files(held):
    folder, holder = held
    (folder / "translate" / "data").mkdir(parents=True)
    shard = folder / "translate" / "data" / ".tmp-a.part"  # the first writer's shard, half-written
    shard.write_bytes(b"half")
    with pytest.raises(FolderBusy, match="is being written by pid") as refused:
        with one_writer(str(folder)):
            pytest.fail("a second writer got the lock")
    message = str(refused.value)
    assert message.startswith(f"{folder} is being written by pid {holder.pid} (command ")
    assert f"`xmdata unlock {folder}` if it is gone" in message and "--wait-lock SECONDS" in message
    # The sweeps a second writer runs (a flow's start, run_shards' end) find another live writer's folder.
    assert remove_stray_temp_files(str(folder)) == 0
    assert remove_stray_temp_files(str(folder / "translate")) == 0
    assert shard.exists() and (folder / ".tmp-holders-shard.part").exists()
    # Control: once the first writer has let go, the same sweep removes what it left.
    holder.stdin.close()
    holder.wait(timeout=60)
    assert not (folder / folder_lock.LOCK_NAME).exists()
    assert remove_stray_temp_files(str(folder)) == 2 and not shard.exists()


def test_a_folder_under_another_writers_folder_is_refused_and_a_sweep_above_spares_it(held, tmp_path):
    folder, _ = held
    with pytest.raises(FolderBusy, match=f"^{folder} is being written by"):
        with one_writer(str(folder / "translate")):
            pass
    with one_writer(str(tmp_path)) as fresh:  # the folder above: its own writer, free to take
        assert fresh
        assert (folder / ".tmp-holders-shard.part").exists()  # its sweep left the live writer's folder alone


def test_every_flow_takes_its_output_folder(held, monkeypatch):
    """The flows are the door every caller shares (CLI, UI, Python): each refuses a held folder
    before it reads anything (`.fn` is the flow's own function, without a Prefect run)."""
    from xmdata.flows import (clean, download_images, evaluate, language_id, release, score, select_images,
                              train_clipscore, train_distill, translate, translate_qa)

    folder, _ = held
    out = str(folder)
    monkeypatch.setattr(train_distill, "check_distill", lambda *a: None)  # their checks come before the lock
    monkeypatch.setattr(train_clipscore, "check_clipscore", lambda *a: None)
    calls = {
        "identify-language": lambda: language_id.identify_language_flow.fn("none.jsonl", out),
        "select-images": lambda: select_images.select_images_flow.fn("none.jsonl", out),
        "score": lambda: score.score_flow.fn("none.jsonl", out, None),
        "translate": lambda: translate.translate_flow.fn("none.jsonl", out, None),
        "translate-qa": lambda: translate_qa.translate_qa_flow.fn("none.jsonl", out, None),
        "dedup": lambda: clean.dedup_flow.fn("none.jsonl", out),
        "contamination": lambda: clean.contamination_flow.fn("none.jsonl", [], out),
        "download-images": lambda: download_images.download_images_flow.fn("none.jsonl", out),
        "evaluate": lambda: evaluate.evaluate_flow.fn(types.SimpleNamespace(metric="m"), "none.jsonl", out),
        "train-distill": lambda: train_distill.train_distill_flow.fn("none", out, None),
        "train-clipscore": lambda: train_clipscore.train_clipscore_flow.fn("none", out, None),
        "release": lambda: release.publish_release(None, out, None, None),
        "release, its work folder": lambda: release.publish_release(None, str(folder.parent / "rel"), out, None),
    }
    for name, call in calls.items():
        with pytest.raises(FolderBusy, match="is being written by pid"):
            call()
    assert not (folder.parent / "rel" / folder_lock.LOCK_NAME).exists()  # let go of what it took first


def test_a_gone_holders_lock_is_taken_over_with_a_line_and_its_temp_files_swept(tmp_path, capsys):
    finished = subprocess.Popen(["true"])
    finished.wait()  # its pid is free now (and not reused this soon)
    cases = {"no such pid": {"pid": finished.pid},
             "its pid, started at another time": {"pid_start": folder_lock.process_start(os.getpid()) + 1},
             "another boot of this host": {"boot": "an-earlier-boot"}}
    for n, (case, fields) in enumerate(cases.items()):
        folder = tmp_path / str(n)
        write_lock(folder, **fields)
        (folder / ".tmp-gone.part").write_bytes(b"half")
        with one_writer(str(folder)) as fresh:
            assert fresh, case
            mine = json.loads((folder / folder_lock.LOCK_NAME).read_text())
            assert mine["pid"] == os.getpid() and mine["token"] != "theirs", case
            assert not (folder / ".tmp-gone.part").exists(), case  # a gone writer's: swept
        err = capsys.readouterr().err
        assert f"{folder}: took over the lock of pid" in err, case
        assert not (folder / folder_lock.LOCK_NAME).exists(), case  # let go at the end
    assert sorted(os.listdir(tmp_path / "0")) == []  # no private or moved lock file left behind


def test_another_hosts_lock_is_live_while_its_lease_is_renewed(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XMDATA_LOCK_LEASE_S", "60")
    folder = tmp_path / "shared"
    write_lock(folder, host="another-host", pid=1, pid_start=1)
    with pytest.raises(FolderBusy, match=f"being written by pid 1 on host another-host"):
        with one_writer(str(folder)):
            pass
    stale = time.time() - 61
    os.utime(folder / folder_lock.LOCK_NAME, (stale, stale))
    with one_writer(str(folder)) as fresh:
        assert fresh
    assert "its lease was not refreshed for 61 s (XMDATA_LOCK_LEASE_S=60)" in capsys.readouterr().err


def test_the_holder_renews_its_lease(tmp_path, monkeypatch):
    monkeypatch.setenv("XMDATA_LOCK_LEASE_S", "0.4")  # renewed every 0.1 s
    lock = tmp_path / folder_lock.LOCK_NAME
    with one_writer(str(tmp_path)):
        old = time.time() - 1000
        os.utime(lock, (old, old))
        deadline = time.monotonic() + 30
        while os.stat(lock).st_mtime == old and time.monotonic() < deadline:
            time.sleep(0.05)
        assert os.stat(lock).st_mtime > old + 900


def test_a_lock_file_not_ours_is_refused_and_nothing_is_deleted(tmp_path):
    for n, text in enumerate(["not json", json.dumps({"format": "another tool 3", "pid": 1}), "{}", "[]",
                              json.dumps({"format": folder_lock.FORMAT, "pid": 1})]):
        folder = tmp_path / str(n)
        folder.mkdir()
        (folder / folder_lock.LOCK_NAME).write_text(text)
        (folder / ".tmp-x.part").write_bytes(b"half")
        with pytest.raises(ForeignLock, match=f"^{folder}: .*is not an xmdata lock file; nothing was deleted"):
            with one_writer(str(folder)):
                pass
        assert remove_stray_temp_files(str(folder)) == 0  # a sweep leaves it as it is, too
        assert (folder / folder_lock.LOCK_NAME).read_text() == text and (folder / ".tmp-x.part").exists()
        assert sorted(os.listdir(folder)) == sorted([folder_lock.LOCK_NAME, ".tmp-x.part"])


def test_reentrant_in_its_process_and_taken_again_after(tmp_path):
    work = tmp_path / "release" / "build"
    with one_writer(str(tmp_path / "release")) as outer:
        (tmp_path / "release" / ".tmp-mine.part").write_bytes(b"half")
        with one_writer(str(tmp_path / "release")) as again, one_writer(str(work)) as inside:
            assert outer and not again and not inside  # a flow inside a flow: no deadlock, no second sweep
        assert (tmp_path / "release" / ".tmp-mine.part").exists()
        assert (tmp_path / "release" / folder_lock.LOCK_NAME).exists()  # the inner blocks' end let nothing go
        assert not work.exists() or folder_lock.LOCK_NAME not in os.listdir(work)
    assert not (tmp_path / "release" / folder_lock.LOCK_NAME).exists()


def test_wait_lock_waits_for_the_writer_then_takes_the_folder(tmp_path, monkeypatch):
    folder = tmp_path / "out"
    sleeper = subprocess.Popen(["sleep", "600"])  # a live process, named as the holder
    try:
        write_lock(folder, pid=sleeper.pid, pid_start=folder_lock.process_start(sleeper.pid))
        pauses = []

        def holder_finishes(seconds):  # the holder lets go during the first pause: no timing involved
            pauses.append(seconds)
            os.unlink(folder / folder_lock.LOCK_NAME)

        monkeypatch.setattr(folder_lock, "_pause", holder_finishes)
        with pytest.raises(FolderBusy, match="is being written by pid"):  # no wait asked: refused at once, no pause
            with one_writer(str(folder)):
                pass
        assert pauses == []
        with folder_lock.waiting_for_locks(30), one_writer(str(folder)) as fresh:
            assert fresh and len(pauses) == 1
        write_lock(folder, pid=sleeper.pid, pid_start=folder_lock.process_start(sleeper.pid))
        monkeypatch.setattr(folder_lock, "_pause", lambda seconds: pauses.append(seconds))
        with pytest.raises(FolderBusy, match=r"after waiting 0\.001 s"):
            with folder_lock.waiting_for_locks(0.001), one_writer(str(folder)):
                pass
    finally:
        sleeper.kill()
        sleeper.wait()


def test_object_store_folders_are_not_locked():
    with one_writer("s3://bucket/out") as fresh:
        assert fresh is False
    assert folder_lock.held_here("s3://bucket/out") is None


def test_a_refused_or_failed_writer_leaves_no_folder_it_made_for_the_lock(held, tmp_path):
    folder, _ = held
    with pytest.raises(FolderBusy, match="is being written by pid"):
        with one_writer(str(folder / "new" / "deeper")):
            pass
    assert not (folder / "new").exists()
    with pytest.raises(ValueError, match="^a refused input, before anything was written$"):
        with one_writer(str(tmp_path / "a" / "b")):
            assert (tmp_path / "a" / "b" / folder_lock.LOCK_NAME).exists()
            raise ValueError("a refused input, before anything was written")
    assert not (tmp_path / "a").exists()
    with one_writer(str(tmp_path / "c" / "d")):
        (tmp_path / "c" / "d" / "kept.json").write_text("{}")
    assert os.listdir(tmp_path / "c" / "d") == ["kept.json"]  # what the writer wrote stays, the lock goes
