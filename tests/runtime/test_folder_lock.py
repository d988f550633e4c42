"""One writer per folder (runtime/folder_lock.py, on filelock): two writers interleaved by a pipe, never
by timing; a killed holder's lock taken over; a file system without flock refused; the lease when chosen;
a file that is not ours refused and kept; re-entrant in its process."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import types

import pytest
from support.folder_holder import holding

from xmdata.runtime import folder_lock, lock_files
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


def killed_holder(folder, env=None) -> int:
    """The pid of a writer of FOLDER killed (SIGKILL) while it held the lock, a temp file half-written."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)
    assert holder.stdout.readline() == "held\n"
    holder.kill()
    holder.wait(timeout=60)
    assert (folder / folder_lock.LOCK_NAME).exists() and (folder / folder_lock.HOLDER_NAME).exists()
    return holder.pid


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


def test_a_killed_holders_lock_is_free_and_taken_over_with_a_line_and_its_temp_files_swept(tmp_path, capsys):
    folder = tmp_path / "out"
    pid = killed_holder(folder)  # the kernel let its flock go; its files stay
    with one_writer(str(folder)) as fresh:
        assert fresh
        mine = json.loads((folder / folder_lock.HOLDER_NAME).read_text())
        assert mine["pid"] == os.getpid() and mine["format"] == folder_lock.FORMAT
        assert not (folder / ".tmp-holders-shard.part").exists()  # a gone writer's: swept
    assert f"{folder}: took over the lock of pid {pid} (command -c" in capsys.readouterr().err
    assert os.listdir(folder) == []  # let go at the end: no lock file, no holder record


def test_a_file_system_without_flock_is_refused_in_one_line_and_nothing_is_left(tmp_path, monkeypatch):
    """A stand-in for such a file system (Lustre mounted -o noflock answers ENOSYS): fcntl.flock refusing."""
    import errno
    import fcntl

    def no_flock(fd, operation):
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(fcntl, "flock", no_flock)
    for where in (tmp_path / "new" / "out", tmp_path):
        with pytest.raises(folder_lock.NoFlock, match="choose the lease") as refused:
            with one_writer(str(where)):
                pytest.fail("a lock without flock was taken")
        assert str(refused.value).splitlines() == [
            f"{where}: its file system does not support flock, so a lock there would not hold; choose the lease "
            f"instead with XMDATA_LOCK=lease (every writer of the folder alike; it is taken over once not renewed "
            f"for XMDATA_LOCK_LEASE_S=300 s)"]
    assert os.listdir(tmp_path) == []  # neither the folder made for it nor filelock's empty file
    monkeypatch.setenv("XMDATA_LOCK", "lease")  # the lease needs no flock
    with one_writer(str(tmp_path)) as fresh:
        assert fresh and (tmp_path / folder_lock.LOCK_NAME).exists()
    assert os.listdir(tmp_path) == []


def test_the_lease_when_chosen_refuses_a_live_writer_and_takes_a_killed_ones(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XMDATA_LOCK", "lease")
    folder = tmp_path / "out"
    with holding(folder, HOLDER) as holder:
        assert (folder / folder_lock.LOCK_NAME).read_text()  # filelock's marker, not an empty flock file
        with pytest.raises(FolderBusy, match=f"^{folder} is being written by pid {holder.pid} "):
            with one_writer(str(folder)):
                pass
    assert not (folder / folder_lock.LOCK_NAME).exists()  # SoftFileLease removes its marker when let go
    pid = killed_holder(folder, env={**os.environ, "XMDATA_LOCK": "lease"})
    with one_writer(str(folder)) as fresh:  # on its own host, a claim whose process is gone is taken at once
        assert fresh and not (folder / ".tmp-holders-shard.part").exists()
    assert f"took over the lock of pid {pid}" in capsys.readouterr().err
    assert os.listdir(folder) == []


def test_a_taker_holding_a_file_unlinked_by_its_last_holder_lets_it_go(tmp_path):
    """`_still_there`, filelock's on_acquired: the file held must be the one at the path still."""
    lock = tmp_path / folder_lock.LOCK_NAME
    lock.write_bytes(b"")
    fd = os.open(lock, os.O_RDWR)
    try:
        taken = {}
        lock_files._still_there(str(lock), fd, taken)
        assert taken["file"] == (os.fstat(fd).st_dev, os.fstat(fd).st_ino)
        os.unlink(lock)
        with pytest.raises(lock_files._Moved, match=re.escape(str(lock))):
            lock_files._still_there(str(lock), fd, {})
        lock.write_bytes(b"")  # a new writer's file at the name
        with pytest.raises(lock_files._Moved, match=re.escape(str(lock))):
            lock_files._still_there(str(lock), fd, {})
    finally:
        os.close(fd)


def test_a_lock_file_not_ours_is_refused_and_nothing_is_deleted(tmp_path):
    earlier = json.dumps({"format": folder_lock.EARLIER_FORMAT, "pid": 1, "host": "h"})
    holder = json.dumps({"format": folder_lock.FORMAT, "pid": 1})
    cases = [(folder_lock.LOCK_NAME, text, "is not an xmdata lock file") for text in ["not json", "{}", "[]", holder]]
    cases += [(folder_lock.LOCK_NAME, earlier, r"is the lock of an earlier xmdata \(pid 1 on host h\)")]
    cases += [(folder_lock.HOLDER_NAME, text, "is not an xmdata lock file")
              for text in ["not json", json.dumps({"format": "another tool 3", "pid": 1}), "{}", "[]", holder]]
    for n, (name, text, expected) in enumerate(cases):
        folder = tmp_path / str(n)
        folder.mkdir()
        (folder / name).write_text(text)
        (folder / ".tmp-x.part").write_bytes(b"half")
        with pytest.raises(ForeignLock, match=f"^{folder}: {folder / name} {expected}.*; nothing was deleted"):
            with one_writer(str(folder)):
                pass
        assert remove_stray_temp_files(str(folder)) == 0  # a sweep leaves it as it is, too
        assert (folder / name).read_text() == text and (folder / ".tmp-x.part").exists()
        assert sorted(os.listdir(folder)) == sorted([name, ".tmp-x.part"])


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


def test_wait_lock_waits_for_the_writer_then_takes_the_folder(held, monkeypatch):
    folder, holder = held
    pauses = []

    def holder_finishes(seconds):  # the holder lets go during the first pause: no timing involved
        pauses.append(seconds)
        holder.stdin.close()
        holder.wait(timeout=60)

    monkeypatch.setattr(folder_lock, "_pause", holder_finishes)
    with pytest.raises(FolderBusy, match="is being written by pid"):  # no wait asked: refused at once, no pause
        with one_writer(str(folder)):
            pass
    assert pauses == []
    with folder_lock.waiting_for_locks(30), one_writer(str(folder)) as fresh:
        assert fresh and len(pauses) == 1


def test_wait_lock_refuses_once_its_time_is_up(held, monkeypatch):
    folder, _ = held
    pauses = []
    monkeypatch.setattr(folder_lock, "_pause", lambda seconds: pauses.append(seconds))
    with pytest.raises(FolderBusy, match=r"after waiting 0\.001 s"):
        with folder_lock.waiting_for_locks(0.001), one_writer(str(folder)):
            pass


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


MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 0:50 / /home rw,relatime shared:20 - nfs4 srv:/home rw,vers=4.2,local_lock=none,addr=10.0.0.1
41 22 0:51 / /scratch\\040old rw,relatime shared:21 - nfs srv:/old rw,vers=3,local_lock=flock,addr=10.0.0.1
42 22 0:52 / /lustre rw shared:22 - lustre 10.0.0.2@tcp:/fs rw,localflock
43 22 0:53 / /lustre2 rw shared:23 - lustre 10.0.0.2@tcp:/fs2 rw,flock
44 22 0:54 / /gpfs/fs1 rw,relatime shared:24 - gpfs fs1 rw
"""


def test_a_file_system_whose_flock_stays_on_each_host_is_told_from_its_mount():
    reach = {path: folder_lock.node_local_flock(path, MOUNTINFO) for path in (
        "/data/out", "/home/me/out", "/scratch old/out", "/scratchold", "/lustre/out", "/lustre2/out", "/gpfs/fs1")}
    assert reach == {
        "/data/out": None, "/home/me/out": None, "/lustre2/out": None, "/scratchold": None,
        "/scratch old/out": "it is on NFS mounted at /scratch old with local_lock=flock, which keeps flock on each "
                            "host (nfs(5))",
        "/lustre/out": "it is on Lustre mounted at /lustre with localflock, which keeps flock on each client "
                       "(mount.lustre(8))",
        "/gpfs/fs1": "it is on GPFS (/gpfs/fs1), whose flock has been measured node-local"}


def test_a_folder_whose_flock_stays_on_its_host_is_refused_in_one_line(tmp_path, monkeypatch):
    planted = tmp_path.parent / f"{tmp_path.name}-mountinfo"
    planted.write_text(open(lock_files.MOUNTS).read()
                       + f"99 22 0:99 / {tmp_path} rw shared:99 - lustre 10.0.0.2@tcp:/fs rw,localflock\n")
    monkeypatch.setattr(lock_files, "MOUNTS", str(planted))
    with pytest.raises(folder_lock.NoFlock, match="choose the lease") as refused:
        with one_writer(str(tmp_path / "out")):
            pytest.fail("taken")
    assert str(refused.value).splitlines() == [
        f"{tmp_path / 'out'}: it is on Lustre mounted at {tmp_path} with localflock, which keeps flock on each client "
        f"(mount.lustre(8)), so a writer on another host would not see its lock; choose the lease instead with "
        f"XMDATA_LOCK=lease (every writer of the folder alike)"]
    assert os.listdir(tmp_path) == []
    monkeypatch.setenv("XMDATA_LOCK", "lease")
    with one_writer(str(tmp_path / "out")) as fresh:
        assert fresh
