"""`xmdata publish` against a STAND-IN of the Hugging Face Hub's HTTP API on 127.0.0.1
(tests/support/hub_standin.py), not the Hub: nothing here reaches huggingface.co. The real client
(huggingface_hub 0.36.2) sends the requests; the tests check them — the files, LFS pointers,
parent_commit, one commit then none, a resumed upload sending nothing twice, the token in no output and
no file — and download the tree back through huggingface_hub to verify it against the manifest. Xet is
off (HF_HUB_DISABLE_XET, huggingface_hub's own setting) and the stand-in answers `basic` transfer only.

The command runs as a process of its own, with HF_ENDPOINT (huggingface_hub's setting, read once when it
is imported) pointing at the stand-in; each run costs ~2 s of imports."""
from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.hub_standin import HubStandIn

from xmdata.tasks.release.manifest import write_manifest
from xmdata.tasks.release.publish import check_limits
from xmdata.tasks.release.publish_plan import LocalFile
from xmdata.tasks.release.publish_retries import Retries
from xmdata.schemas.contract import ContractError

XMDATA = os.path.join(os.path.dirname(sys.executable), "xmdata")
TOKEN = "hf_standin_secret_6b1d0c"


def make_release(folder, rows=3, extra: dict | None = None, readme="# tiny\n"):
    """A small release folder with its manifest (data/, rejects/, a card, a report)."""
    (folder / "data").mkdir(parents=True, exist_ok=True)
    (folder / "rejects").mkdir(exist_ok=True)
    (folder / "reports").mkdir(exist_ok=True)
    pq.write_table(pa.table({"id": [f"r{i}" for i in range(rows)], "x": list(range(rows))}), folder / "data" / "t.parquet")
    pq.write_table(pa.table({"stage": ["s"], "reason": ["r"]}), folder / "rejects" / "s.parquet")
    (folder / "README.md").write_text("---\nlicense: cc0-1.0\n---\n" + readme)
    (folder / "reports" / "summary.json").write_text(json.dumps({"rows": rows}))
    for name, data in (extra or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return write_manifest(str(folder), {"name": "tiny", "version": "0.1.0"})


@pytest.fixture
def hub():
    stand_in = HubStandIn(TOKEN)
    yield stand_in
    stand_in.stop()


def env(hub, tmp_path, token=TOKEN):
    base = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    base |= {"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_DISABLE_XET": "1",
             "HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
    return base | ({"HF_TOKEN": token} if token else {})


def publish(hub, tmp_path, release, *args, token=TOKEN, **kw):
    return subprocess.run([XMDATA, "publish", str(release), "me/tiny", *args], env=env(hub, tmp_path, token),
                          capture_output=True, text=True, timeout=300, **kw)


def commit_lines(request) -> list[dict]:
    return [json.loads(line) for line in request.body.decode().splitlines()]


def no_token_anywhere(tmp_path, *outputs):
    for text in outputs:
        assert TOKEN not in text
    for folder, _, names in os.walk(tmp_path):
        for name in names:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path):
                assert TOKEN.encode() not in open(path, "rb").read(), path


def test_one_commit_then_none_and_the_tree_downloads_back_as_the_manifest_says(hub, tmp_path):
    release = tmp_path / "release"
    manifest = make_release(release)
    sha = manifest["release_sha256"]

    dry = publish(hub, tmp_path, release, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "add data/t.parquet (" in dry.stdout and "no such repo yet" in dry.stdout
    assert not hub.repos and not hub.calls("POST", "/commit/") and not hub.calls("PUT", "")  # nothing sent

    first = publish(hub, tmp_path, release, "--tag", "v0.1.0")
    assert first.returncode == 0, first.stderr
    initial = hub.repos["me/tiny"].messages
    commits = hub.calls("POST", r"^/api/datasets/me/tiny/commit/main$")
    assert len(commits) == 1
    lines = commit_lines(commits[0])
    header = lines[0]["value"]
    created = next(oid for oid, h in initial.items() if h["summary"] == "initial commit")
    assert header["parentCommit"] == created  # the head it read
    assert sha in header["summary"] and "xmdata" in header["description"]
    by_path = {line["value"]["path"]: line for line in lines[1:]}
    files = manifest["release"]["files"]
    assert set(by_path) == set(files) | {"manifest.json"}
    for name in ("data/t.parquet", "rejects/s.parquet"):  # LFS pointers: the manifest's sha256 and size
        assert by_path[name]["key"] == "lfsFile"
        assert by_path[name]["value"]["oid"] == files[name]["sha256"]
        assert by_path[name]["value"]["size"] == files[name]["bytes"]
        assert hub.lfs[files[name]["sha256"]] == (release / name).read_bytes()
    readme = by_path["README.md"]
    assert readme["key"] == "file" and base64.b64decode(readme["value"]["content"]) == (release / "README.md").read_bytes()
    batches = hub.calls("POST", r"\.git/info/lfs/objects/batch$")
    assert batches and all("xet" not in json.loads(b.body)["transfers"] for b in batches)  # no Xet offered
    assert hub.repos["me/tiny"].tags["v0.1.0"][1].find(sha) >= 0  # the tag message names it
    assert all(r.authorized for r in hub.requests if not r.path.startswith("/lfs-upload/"))

    puts = len(hub.calls("PUT", ""))
    again = publish(hub, tmp_path, release, "--tag", "v0.1.0")
    assert again.returncode == 0, again.stderr
    assert "no commit made" in again.stdout
    assert len(hub.calls("POST", "/commit/")) == 1 and len(hub.calls("PUT", "")) == puts

    download = subprocess.run(
        [sys.executable, "-c", "import sys; from huggingface_hub import snapshot_download; "
         "print(snapshot_download('me/tiny', repo_type='dataset', revision='v0.1.0'))"],
        env=env(hub, tmp_path), capture_output=True, text=True, timeout=120)
    assert download.returncode == 0, download.stderr
    from xmdata.tasks.release.manifest import verify_release

    problems = verify_release(download.stdout.strip().splitlines()[-1])
    assert problems == [".gitattributes: not in the manifest"]  # the repo's own file, the rest as released
    no_token_anywhere(tmp_path, dry.stdout, dry.stderr, first.stdout, first.stderr, again.stdout, again.stderr)


def test_a_new_release_deletes_its_stale_data_files_and_leaves_other_paths(hub, tmp_path):
    release = tmp_path / "release"
    make_release(release, extra={"data/old.parquet": b"PAR1old"})
    assert publish(hub, tmp_path, release).returncode == 0
    hub.commit_outside("me/tiny", {"notes.md": b"kept by the repo's owner\n"})
    os.unlink(release / "data" / "old.parquet")
    make_release(release, rows=5, readme="# tiny, again\n")
    dry = publish(hub, tmp_path, release, "--dry-run")
    assert "delete data/old.parquet" in dry.stdout and "change data/t.parquet" in dry.stdout
    second = publish(hub, tmp_path, release)
    assert second.returncode == 0, second.stderr
    tree = hub.tree("me/tiny")
    assert "data/old.parquet" not in tree and {"notes.md", ".gitattributes", "data/t.parquet"} <= set(tree)
    last = commit_lines(hub.calls("POST", "/commit/")[-1])
    assert {"key": "deletedFile", "value": {"path": "data/old.parquet"}} in last
    assert not any(line["value"].get("path") == "notes.md" for line in last[1:])


def test_a_killed_publish_resumes_without_sending_a_stored_file_again(hub, tmp_path):
    release = tmp_path / "release"
    blobs = {f"data/part{i}.parquet": os.urandom(200_000) for i in range(3)}
    make_release(release, extra=blobs)
    hub.hang_put_after = 2  # two large uploads pass, the next ones hang: the process is killed there
    process = subprocess.Popen([XMDATA, "publish", str(release), "me/tiny"], env=env(hub, tmp_path),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert hub.hanging.wait(120)
    for _ in range(200):  # the two that passed finish arriving
        if len(hub.lfs) == 2:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    stored = dict(hub.lfs)
    hub.hang_put_after = None
    assert len(stored) == 2 and not hub.calls("POST", "/commit/")
    before = len(hub.calls("PUT", "^/lfs-upload/"))
    resumed = publish(hub, tmp_path, release)
    assert resumed.returncode == 0, resumed.stderr
    again = [r.path.split("?")[0].rsplit("/", 1)[-1] for r in hub.calls("PUT", "^/lfs-upload/")[before:]]
    assert not set(again) & set(stored)  # a stored file is not sent twice: 0 bytes of them again
    assert len(again) == 5 - len(stored) and len(set(hub.lfs)) == 5
    assert len(hub.calls("POST", "/commit/")) == 1


def test_a_moved_head_is_built_on_unless_it_changed_the_releases_paths(hub, tmp_path):
    release = tmp_path / "release"
    make_release(release)
    hub.create("me/tiny", private=False)
    hub.before_commit = lambda: hub.commit_outside("me/tiny", {"notes.md": b"meanwhile\n"})
    ok = publish(hub, tmp_path, release)
    assert ok.returncode == 0, ok.stderr
    assert "head moved" in ok.stdout and len(hub.calls("POST", "/commit/")) == 2
    assert "notes.md" in hub.tree("me/tiny") and "manifest.json" in hub.tree("me/tiny")

    make_release(release, rows=7)
    hub.before_commit = lambda: hub.commit_outside("me/tiny", {"README.md": b"someone else's card\n"})
    refused = publish(hub, tmp_path, release)
    assert refused.returncode == 1 and "README.md" in refused.stderr and "refused" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


def test_a_commit_whose_answer_was_lost_is_a_success_and_a_vanished_branch_one_line(hub, tmp_path):
    release = tmp_path / "release"
    manifest = make_release(release)
    hub.create("me/tiny", private=False)
    hub.drop_commit_answer = True  # committed; the client sees a dropped connection, retries, gets 412
    ok = publish(hub, tmp_path, release)
    assert ok.returncode == 0, ok.stderr
    assert len(hub.calls("POST", "/commit/")) == 2 and "answer was lost" in ok.stdout
    head = hub.head("me/tiny")
    assert manifest["release_sha256"] in hub.repos["me/tiny"].messages[head]["summary"]
    assert len(hub.repos["me/tiny"].commits) == 2  # the initial one and ours: nothing committed twice

    make_release(release, rows=5)
    hub.before_commit = lambda: hub.commit_outside("me/tiny", {"notes.md": b"meanwhile\n"})
    hub.after_412 = lambda: hub.repos["me/tiny"].branches.pop("main")
    gone = publish(hub, tmp_path, release)
    assert gone.returncode == 1 and "branch was deleted" in gone.stderr, gone.stderr
    assert len(gone.stderr.strip().splitlines()) == 1 and "Traceback" not in gone.stderr


def test_transient_answers_are_retried_and_a_tag_on_other_content_refused_before_any_upload(hub, tmp_path):
    release = tmp_path / "release"
    make_release(release)
    hub.faults += [("POST", "/preupload/", 503), ("POST", "/preupload/", 429)]
    ok = publish(hub, tmp_path, release, "--tag", "v1")
    assert ok.returncode == 0, ok.stderr
    assert len(hub.calls("POST", "/preupload/")) >= 3  # two refusals, then the one that passed

    make_release(release, rows=9)
    puts = len(hub.calls("PUT", ""))
    tagged = publish(hub, tmp_path, release, "--tag", "v1")
    assert tagged.returncode == 2 and "tag v1" in tagged.stderr and len(tagged.stderr.strip().splitlines()) == 1
    assert len(hub.calls("PUT", "")) == puts and len(hub.calls("POST", "/commit/")) == 1


def test_a_private_repo_is_created_private_and_read_only_with_the_token(hub, tmp_path):
    release = tmp_path / "release"
    make_release(release)
    assert publish(hub, tmp_path, release, "--private").returncode == 0
    assert hub.repos["me/tiny"].private
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{hub.url}/datasets/me/tiny/resolve/main/manifest.json")
    assert refused.value.code == 401


def test_a_revision_is_a_branch_made_from_main_and_main_is_left_alone(hub, tmp_path):
    release = tmp_path / "release"
    make_release(release)
    result = publish(hub, tmp_path, release, "--revision", "v1-branch")
    assert result.returncode == 0, result.stderr
    repo = hub.repos["me/tiny"]
    assert set(hub.tree("me/tiny", "main")) == {".gitattributes"} and "manifest.json" in hub.tree("me/tiny", "v1-branch")
    assert commit_lines(hub.calls("POST", "/commit/v1-branch$")[0])[0]["value"]["parentCommit"] == repo.branches["main"]


def test_a_dry_run_to_a_missing_branch_plans_against_mains_head_and_sends_nothing(hub, tmp_path):
    release = tmp_path / "release"
    make_release(release)
    assert publish(hub, tmp_path, release).returncode == 0
    make_release(release, rows=5)  # data/t.parquet changes; the rest is on main already
    requests_before = len(hub.requests)
    dry = publish(hub, tmp_path, release, "--dry-run", "--revision", "next", "--tag", "v2")
    assert dry.returncode == 0, dry.stderr
    assert "change data/t.parquet (" in dry.stdout and "add data/t.parquet" not in dry.stdout
    assert "add README.md" not in dry.stdout and "new branch from main" in dry.stdout
    sent = hub.requests[requests_before:]
    assert all(r.method in ("GET", "HEAD") or "/paths-info/" in r.path for r in sent), [r.path for r in sent]
    assert set(hub.repos["me/tiny"].branches) == {"main"} and not hub.repos["me/tiny"].tags


def test_a_token_the_hub_refuses_is_one_line_exit_2(hub, tmp_path):
    release = tmp_path / "release"
    make_release(release)
    result = publish(hub, tmp_path, release, token="hf_wrong")
    assert result.returncode == 2 and "refused the token (HTTP 401)" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "hf_wrong" not in result.stderr
    assert not hub.repos and not hub.calls("PUT", "")


@pytest.mark.parametrize("case", ["repo id", "not verified", "no token"])
def test_bad_input_is_one_line_exit_2_before_any_request(hub, tmp_path, case):
    release = tmp_path / "release"
    make_release(release)
    if case == "not verified":
        (release / "data" / "t.parquet").write_bytes(b"changed")
    result = subprocess.run([XMDATA, "publish", str(release), "not-a-repo-id" if case == "repo id" else "me/tiny"],
                            env=env(hub, tmp_path, token=None if case == "no token" else TOKEN),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert {"repo id": "owner/name", "not verified": "does not verify", "no token": "HF_TOKEN"}[case] in result.stderr
    assert not hub.requests


@pytest.mark.parametrize("flag", [["--revision", "bad..name"], ["--tag", "v 1"], ["--revision", "x.lock"]])
def test_a_revision_or_tag_that_is_no_git_ref_name_is_one_line_exit_2_before_any_request(hub, tmp_path, flag):
    release = tmp_path / "release"
    make_release(release)
    result = publish(hub, tmp_path, release, *flag)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert flag[0] in result.stderr and "git branch or tag name" in result.stderr
    assert not hub.requests


def test_the_hub_refusing_the_request_is_exit_2_and_its_failing_is_exit_1(hub, tmp_path):
    release = tmp_path / "release"
    make_release(release)
    hub.faults += [("POST", "/commit/", 422)]  # a commit the Hub will not take: the same command would fail again
    refused = publish(hub, tmp_path, release)
    assert refused.returncode == 2 and "HTTP 422" in refused.stderr and "refused the request" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and len(hub.calls("POST", "/commit/")) == 1  # no retry
    hub.faults += [("GET", r"^/api/datasets/me/tiny/revision/", 409)]
    assert publish(hub, tmp_path, release).returncode == 2


def test_the_hubs_per_file_and_per_folder_limits_are_refused():
    with pytest.raises(ContractError, match="per-file limit of 50 GB"):
        check_limits({"data/big.parquet": LocalFile("x", 50 * 1000**3 + 1, "0")})
    with pytest.raises(ContractError, match="10,000 per folder"):
        check_limits({f"data/t-{i:05d}.parquet": LocalFile("x", 1, "0") for i in range(10_001)})
    check_limits({f"data/t-{i:05d}.parquet": LocalFile("x", 1, "0") for i in range(10_000)})


def test_retries_stop_at_their_budget_and_never_retry_a_refusal(monkeypatch):
    import requests

    import xmdata.tasks.release.publish_retries as publish_module

    monkeypatch.setattr(publish_module.time, "sleep", lambda s: None)
    calls = []

    def failing(status):
        def call():
            calls.append(status)
            response = requests.Response()
            response.status_code = status
            raise requests.HTTPError(response=response)
        return call

    with pytest.raises(requests.HTTPError):
        Retries().run("x", failing(502))
    assert len(calls) == 6  # the call and 5 retries
    calls.clear()
    with pytest.raises(requests.HTTPError):
        Retries().run("x", failing(403))
    assert len(calls) == 1
    budget = Retries()
    with pytest.raises(requests.HTTPError):
        budget.run("x", failing(503))
    assert budget.waited <= publish_module.RETRY_SECONDS


def test_the_retry_budget_counts_the_time_failing_calls_take_on_the_monotonic_clock(monkeypatch):
    import requests

    import xmdata.tasks.release.publish_retries as publish_module

    clock = [0.0]
    monkeypatch.setattr(publish_module.time, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    monkeypatch.setattr(publish_module.time, "monotonic", lambda: clock[0])
    calls = []

    def hanging():  # each attempt times out after 50 s, then fails as a lost connection
        calls.append(1)
        clock[0] += 50.0
        raise requests.ConnectionError("timed out")

    budget = Retries()
    with pytest.raises(requests.ConnectionError):
        budget.run("x", hanging)
    # 50 + 1 + 50 + 2 = 103 s when the third call starts; after it (153 s) no wait fits: 3 calls, not 6
    assert len(calls) == 3 and budget.waited - 50 <= publish_module.RETRY_SECONDS


def test_a_hub_that_keeps_failing_is_one_line_exit_1_saying_a_rerun_resumes(hub, tmp_path, monkeypatch):
    """In this process (huggingface_hub's ENDPOINT constant pointed at the stand-in), the backoff's sleeps
    skipped: the answers 503 until the retries are spent."""
    from huggingface_hub import constants
    from support.cli_in_process import run_xmdata

    import xmdata.tasks.release.publish_retries as publish_module

    release = tmp_path / "release"
    make_release(release)
    monkeypatch.setattr(constants, "ENDPOINT", hub.url)
    monkeypatch.setattr(publish_module.time, "sleep", lambda seconds: None)
    hub.faults += [("POST", "/preupload/", 503)] * 10
    result = run_xmdata(["publish", str(release), "me/tiny"], env(hub, tmp_path))
    assert result.returncode == 1, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "the same command resumes" in result.stderr
    assert "HTTP 503" in result.stderr and len(hub.calls("POST", "/preupload/")) == 6  # the call and 5 retries
    assert not hub.calls("POST", "/commit/") and TOKEN not in result.stdout + result.stderr


@pytest.mark.slow  # a flow run on the session's Prefect server
def test_the_publish_flow_publishes_with_the_workers_own_token(hub, tmp_path, prefect_server):
    """In a process of its own (HF_ENDPOINT is read when huggingface_hub is imported), as a worker runs it:
    the token in the worker's environment, never among the flow's parameters."""
    release = tmp_path / "release"
    manifest = make_release(release)
    code = ("import json, sys; from xmdata.flows.publish import publish_flow; "
            "from xmdata.tasks.release.publish_options import PublishOptions; "
            "print(json.dumps([publish_flow(release=sys.argv[1], repo_id='me/tiny', options=PublishOptions(tag='v1')), "
            "publish_flow(release=sys.argv[1], repo_id='me/tiny')]))")
    worker = {k: v for k, v in os.environ.items() if k.startswith(("PREFECT_", "XMDATA_"))} | env(hub, tmp_path)
    run = subprocess.run([sys.executable, "-c", code, str(release)], env=worker, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    first, second = json.loads(run.stdout.strip().splitlines()[-1])
    assert first["commit"] == hub.head("me/tiny") and first["release_sha256"] == manifest["release_sha256"]
    assert hub.repos["me/tiny"].tags["v1"][0] == first["commit"] and second["commit"] is None  # already there
    assert TOKEN not in run.stdout + run.stderr


def test_no_test_takes_the_xet_path():
    """hf_xet is installed; the tests turn it off with huggingface_hub's own setting (tests/conftest.py)."""
    from importlib import metadata

    from huggingface_hub import constants

    assert metadata.version("hf_xet")  # installed: the real Hub would take Xet, which these tests do not cover
    assert constants.HF_HUB_DISABLE_XET
