"""A busy output folder on the command line, in real subprocesses: one line, exit 2, before any
server starts; `xmdata status FOLDER` and `xmdata unlock FOLDER`."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support.folder_holder import holding

from xmdata.data import sample_path
from xmdata.runtime import folder_lock

XMDATA = os.path.join(os.path.dirname(sys.executable), "xmdata")
HOLDER = """
import sys
from xmdata.runtime.folder_lock import one_writer
with one_writer(sys.argv[1], command="xmdata select-images images.csv --out OUT"):
    print("held", flush=True)
    sys.stdin.read()
"""


def xmdata(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "XMDATA_SERVICE": "off"}  # no background service started by a test's command
    return subprocess.run([XMDATA, *args], capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture
def held(tmp_path):
    folder = tmp_path / "out"
    with holding(folder, HOLDER) as holder:
        yield folder, holder


def test_a_busy_folder_is_refused_in_one_line_exit_2_and_waited_for_with_wait_lock(held):
    folder, holder = held
    run = xmdata("select-images", sample_path("images.csv"), "--out", str(folder))
    assert run.returncode == 2
    assert run.stderr.splitlines() == [
        f"xmdata: error: {folder} is being written by pid {holder.pid} (command xmdata select-images images.csv "
        f"--out OUT, since {run.stderr.split('since ')[1].split(')')[0]}); wait with --wait-lock SECONDS or "
        f"`xmdata unlock {folder}` if it is gone"]
    assert sorted(os.listdir(folder)) == [folder_lock.LOCK_NAME, folder_lock.HOLDER_NAME]  # nothing of the second run's
    waited = xmdata("select-images", sample_path("images.csv"), "--out", str(folder), "--wait-lock", "0.3")
    assert waited.returncode == 2 and "after waiting 0.3 s; wait with --wait-lock" in waited.stderr


def test_a_lock_file_not_ours_in_an_output_folder_is_refused_in_one_line_and_kept(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / folder_lock.LOCK_NAME).write_text("my notes")
    (folder / ".tmp-x.part").write_bytes(b"half")
    run = xmdata("select-images", sample_path("images.csv"), "--out", str(folder))
    assert run.returncode == 2
    assert run.stderr == (f"xmdata: error: {folder}: {folder / folder_lock.LOCK_NAME} is not an xmdata lock file; "
                          f"nothing was deleted (remove it yourself if no writer uses it)\n")
    assert sorted(os.listdir(folder)) == sorted([folder_lock.LOCK_NAME, ".tmp-x.part"])
    assert (folder / folder_lock.LOCK_NAME).read_text() == "my notes"


def test_status_and_unlock_of_a_live_writers_folder(held):
    folder, holder = held
    status = xmdata("status", str(folder))
    assert status.returncode == 0
    assert status.stdout.startswith(f"{folder}: being written by pid {holder.pid} (command xmdata select-images")
    refused = xmdata("unlock", str(folder))
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1
    assert f"{folder} is being written by pid {holder.pid}" in refused.stderr and "--force" in refused.stderr
    assert (folder / folder_lock.LOCK_NAME).exists()
    forced = xmdata("unlock", "--force", str(folder))
    assert forced.returncode == 0 and forced.stdout.startswith(f"{folder}: cleared the lock of pid {holder.pid}")
    assert not (folder / folder_lock.LOCK_NAME).exists()


def test_unlock_clears_a_killed_writers_lock_and_refuses_a_file_not_ours(tmp_path):
    folder = tmp_path / "out"
    gone = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert gone.stdout.readline() == "held\n"
    gone.kill()  # its flock goes with it; its lock file and holder record stay
    gone.wait(timeout=60)
    holder = folder_lock.read_holder(str(folder))
    status = xmdata("status", str(folder)).stdout
    assert status.startswith(f"{folder}: locked by {holder.named()}, which is gone (its lock is free)")
    cleared = xmdata("unlock", str(folder))
    assert cleared.returncode == 0
    assert cleared.stdout == f"{folder}: cleared the lock of {holder.named()}: it is gone (its lock was free)\n"
    assert os.listdir(folder) == []
    assert xmdata("unlock", str(folder)).stdout == f"{folder}: no lock to clear\n"
    lock = folder / folder_lock.LOCK_NAME
    lock.write_text("my own notes")
    for command in (("unlock", str(folder)), ("unlock", "--force", str(folder)), ("status", str(folder))):
        refused = xmdata(*command)
        assert refused.returncode == 2, command
        assert refused.stderr.startswith(f"xmdata: error: {folder}: {lock} is not an xmdata lock file"), command
        assert refused.stderr.endswith("; nothing was deleted (remove it yourself if no writer uses it)\n"), command
        assert len(refused.stderr.splitlines()) == 1
    assert lock.read_text() == "my own notes"


def test_every_deployment_runs_one_at_a_time(tmp_path):
    """Prefect's own concurrency limit: a scheduled run that would overlap the last one waits for it,
    whether deployed with `prefect deploy` (prefect.yaml) or served by `xmdata serve`."""
    import yaml

    from xmdata.serve import PROJECT_YAML, load_deployments

    spec = yaml.safe_load(open(PROJECT_YAML, encoding="utf-8"))
    assert [d.get("concurrency_limit") for d in spec["deployments"]] == [1] * len(spec["deployments"])
    served = load_deployments(PROJECT_YAML, activate_schedules=False)
    assert len(served) == len(spec["deployments"]) and {d.concurrency_limit for d in served} == {1}
    entry = {k: v for k, v in spec["deployments"][0].items() if k not in ("concurrency_limit", "work_pool")}
    (tmp_path / "unsaid.yaml").write_text(yaml.safe_dump({"deployments": [entry]}))
    (tmp_path / "lifted.yaml").write_text(yaml.safe_dump({"deployments": [{**entry, "concurrency_limit": None}]}))
    assert load_deployments(str(tmp_path / "unsaid.yaml"), False)[0].concurrency_limit == 1  # a user's own file
    assert load_deployments(str(tmp_path / "lifted.yaml"), False)[0].concurrency_limit is None
