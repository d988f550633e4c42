"""The Prefect UI, driven in headless Chromium as a user would: `xmdata serve`, open the release
deployment, start a custom run with its parameters changed (a release.yaml of the user's own, and
the shards), wait for it, find its artifacts. The server it starts asks for a password: the test
reads it where the serve line says, as a user would, and logs in through the UI's login page.

Needs Debian's chromium (`.ci/run` installs it); deselect locally with -m 'not browser'."""
import base64
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
import yaml

from support.prefect_ui import CHROMIUM, find_artifact, launch_chromium, log_in, open_deployment, start_custom_run, \
    wait_for_flow_run, wait_for_ui_state
from support.required import skip_unless_required

from xmdata.runtime.settings import REQUIRE_BROWSER

pytestmark = [pytest.mark.slow, pytest.mark.browser]
# Every deployment prefect.yaml declares: `xmdata serve` serves them all.
DEPLOYMENTS = len(yaml.safe_load(open(os.path.join(os.path.dirname(__file__), "..", "..", "prefect.yaml")))["deployments"])
BIN = os.path.dirname(sys.executable)
ARTEFACTS = os.environ.get("XMDATA_TEST_ARTEFACTS",
                           os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "test-artefacts"))


def wait_for_line(path, text, proc, timeout=240):
    deadline = time.monotonic() + timeout
    while text not in open(path, encoding="utf-8", errors="replace").read():
        assert proc.poll() is None, open(path).read()[-3000:]
        assert time.monotonic() < deadline, f"no {text!r} in {timeout} s: " + open(path).read()[-3000:]
        time.sleep(0.5)


@pytest.fixture
def served(tmp_path, tiny_models):
    if not os.path.exists(CHROMIUM):
        skip_unless_required(f"{CHROMIUM} missing (apt-get install chromium chromium-driver)", REQUIRE_BROWSER)
    from xmdata.runtime.prefect_api import free_port, stop_process_group

    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}  # serve starts its own server
    env["PREFECT_HOME"] = str(tmp_path / "prefect")  # its own database, not the session server's
    # The run's shards in its own process: this test is about the UI; where shards go is the CLI tests'
    # (a LocalCluster here cost its two workers' imports and model loads, ~25 CPU-s).
    env["XMDATA_EXECUTOR"] = "inprocess"
    log = tmp_path / "serve.log"
    # As from a terminal, where Ctrl-C reaches it: a test run started in the background (`cmd &`
    # without job control) has SIGINT ignored, and an ignored signal stays ignored across exec.
    ctrl_c = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
    proc = subprocess.Popen([sys.executable, "-c", ctrl_c, os.path.join(BIN, "xmdata"), "serve", "--port", str(port)],
                            cwd=tmp_path, env=env,
                            stdout=open(log, "w"), stderr=subprocess.STDOUT, start_new_session=True)
    password_file = None
    try:
        wait_for_line(log, f"serving {DEPLOYMENTS} deployments", proc)
        said = re.search(r"\(password: the line in (.+?)\)", open(log, encoding="utf-8").read())
        assert said, "the serve line names no password file: " + open(log).read()[-3000:]
        password_file = said.group(1)
        yield f"http://127.0.0.1:{port}", proc, log, password_file
    finally:
        stop_process_group(proc)
        if password_file:  # serve leaves its folder (the server's log) behind; not the test's to keep
            shutil.rmtree(os.path.dirname(password_file), ignore_errors=True)


def api_status(url, body=None, auth=None):
    """The HTTP status of GET `url` (POST with a JSON `body`), with basic `auth` (`user:password`) if given."""
    headers = {"Content-Type": "application/json"}
    if auth:
        headers["Authorization"] = "Basic " + base64.b64encode(auth.encode()).decode()
    request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(), headers=headers,
                                     method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as refused:
        return refused.code


# A release.yaml of the user's own, named in the run form: every kind of stage the card and the
# look-inside artifact show (captions with LID, a selection map, translations with QE, CLIPScores),
# with less work than the demo (one target, 2 beams, no Q/A; the demo runs from the CLI tests).
UI_CONFIG = """name: ui-release
version: "0.1.0"
description: A release started from the Prefect UI.
license: cc0-1.0
seed: 0
shards: 8
language_id: {{input: {captions}}}
image_selection: {{input: {images}, per_language: 2, strategy: greedy, within: spread}}
translation:
  input: {captions}
  columns: [text]
  source: en
  targets: [ar]
  translator: {{backend: m2m100, model: "tiny:m2m100", num_beams: 2, num_candidates: 2}}
  filters: {{qe_model: "tiny:cometkiwi"}}
scoring: {{input: {captions}, images: {images}, clip_model: "tiny:open_clip", include_translations: true}}
"""


def test_release_runs_from_the_ui_with_a_changed_parameter(served, tmp_path):
    from playwright.sync_api import sync_playwright

    from xmdata.data import sample_path

    ui, proc, log, password_file = served
    config = tmp_path / "ui-release.yaml"
    config.write_text(UI_CONFIG.format(captions=sample_path("captions.jsonl"), images=sample_path("images.csv")))
    assert stat.S_IMODE(os.stat(password_file).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(password_file)).st_mode) == 0o700
    password = open(password_file, encoding="utf-8").read().strip()
    user, _, secret = password.partition(":")
    assert user and secret, "not a user:password line"
    # Refused without the password (or with a wrong one); only the health check is open.
    assert api_status(f"{ui}/api/flows/filter", {}) == 401
    assert api_status(f"{ui}/api/flows/filter", {}, auth=f"{user}:not-{secret}") == 401
    assert api_status(f"{ui}/api/health") == 200
    assert api_status(f"{ui}/api/flows/filter", {}, auth=password) == 200
    os.makedirs(ARTEFACTS, exist_ok=True)
    with sync_playwright() as p:
        browser = launch_chromium(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            log_in(page, ui, password, screenshot=os.path.join(ARTEFACTS, "ui-login.png"))
            # Logged in, the UI's every API call carries the password: none is refused from here on.
            refused = []
            page.on("response", lambda r: refused.append(f"{r.request.method} {r.url}")
                    if r.status == 401 and "/api/" in r.url else None)
            open_deployment(page, ui, "release", "demo-release")
            run_id = start_custom_run(page, {"config": str(config), "shards": "2"})  # the config says 8
            assert "/runs/flow-run/" in page.url  # the UI went to the run's page
            # Meanwhile the page is parked: the run page redraws its log as it grows (Chromium spent
            # ~30 CPU-s on that); it is opened again once the run has ended.
            page.goto("about:blank")
            run = wait_for_flow_run(f"{ui}/api", run_id, timeout=900, auth=password)
            assert run["parameters"]["shards"] == 2 and run["parameters"]["config"] == str(config)
            page.goto(f"{ui}/runs/flow-run/{run_id}")
            wait_for_ui_state(page, "Completed")
            assert find_artifact(page, ui, run_id, "release-card")
            page.get_by_text("Caption statistics").first.wait_for(timeout=30_000)  # the card, rendered
            # The card's plots are inside it (data: images), drawn by the UI: not file:// links it cannot show.
            plot = page.locator(".markdown-renderer img[alt='selection map']").first
            plot.wait_for(timeout=30_000)
            plot.scroll_into_view_if_needed()
            assert plot.evaluate("img => img.complete && img.naturalWidth") > 100
            plot.screenshot(path=os.path.join(ARTEFACTS, "ui-release-card-plot.png"))
            # The way into the rows: the explore and explain commands, and an example per reject reason.
            assert find_artifact(page, ui, run_id, "release-look-inside")
            page.get_by_role("heading", name="Look inside").wait_for(timeout=30_000)
            page.locator(".markdown-renderer code", has_text="xmdata explain").first.wait_for(timeout=30_000)
            assert not refused, refused
        finally:
            page.screenshot(path=os.path.join(ARTEFACTS, "ui-release-run.png"), full_page=True)
            browser.close()
    release = tmp_path / "releases" / "demo"  # the deployment's `out`, relative to the serving process's directory
    manifest = json.load(open(release / "manifest.json"))["release"]
    assert manifest["config"]["overrides"] == {"shards": 2} and manifest["stages"]["language_id"]["rows_out"] > 0
    verify = subprocess.run([os.path.join(BIN, "xmdata"), "release", "verify", str(release)],
                            capture_output=True, text=True, timeout=120)
    assert verify.returncode == 0, verify.stderr

    proc.send_signal(signal.SIGINT)  # Ctrl-C: the serving process stops, then the server it started
    assert proc.wait(timeout=90) == 0, open(log).read()[-3000:]
    server_log = os.path.join(os.path.dirname(password_file), "prefect-server.log")
    assert stat.S_IMODE(os.stat(server_log).st_mode) == 0o600  # the server's log is the owner's too
    assert not os.path.exists(password_file)  # a stopped serve leaves no password behind
    with pytest.raises(urllib.error.URLError, match="Connection refused"):
        urllib.request.urlopen(f"{ui}/api/health", timeout=5)
