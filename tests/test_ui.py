"""The Prefect UI, driven in headless Chromium as a user would: `xmdata serve`, open the release
deployment, start a custom run with one parameter changed, wait for it, find its artifact.

Needs Debian's chromium (`.ci/run` installs it); deselect locally with -m 'not browser'."""
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from ui_driver import CHROMIUM, find_artifact, launch_chromium, open_deployment, start_custom_run, \
    wait_for_flow_run, wait_for_ui_state

pytestmark = [pytest.mark.slow, pytest.mark.browser]
BIN = os.path.dirname(sys.executable)
ARTEFACTS = os.environ.get("XMDATA_TEST_ARTEFACTS",
                           os.path.join(os.path.dirname(os.path.dirname(__file__)), "test-artefacts"))


def wait_for_line(path, text, proc, timeout=240):
    deadline = time.monotonic() + timeout
    while text not in open(path, encoding="utf-8", errors="replace").read():
        assert proc.poll() is None, open(path).read()[-3000:]
        assert time.monotonic() < deadline, f"no {text!r} in {timeout} s: " + open(path).read()[-3000:]
        time.sleep(0.5)


@pytest.fixture
def served(tmp_path, tiny_models):
    if not os.path.exists(CHROMIUM):
        if os.environ.get("XMDATA_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{CHROMIUM} missing: apt-get install chromium chromium-driver")
        pytest.skip(f"{CHROMIUM} missing (apt-get install chromium chromium-driver)")
    from xmdata.runtime.prefect_api import free_port, stop_process_group

    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}  # serve starts its own server
    env["PREFECT_HOME"] = str(tmp_path / "prefect")  # its own database, not the session server's
    log = tmp_path / "serve.log"
    # As from a terminal, where Ctrl-C reaches it: a test run started in the background (`cmd &`
    # without job control) has SIGINT ignored, and an ignored signal stays ignored across exec.
    ctrl_c = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
    proc = subprocess.Popen([sys.executable, "-c", ctrl_c, os.path.join(BIN, "xmdata"), "serve", "--port", str(port)],
                            cwd=tmp_path, env=env,
                            stdout=open(log, "w"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_line(log, "serving 7 deployments", proc)
        yield f"http://127.0.0.1:{port}", proc, log
    finally:
        stop_process_group(proc)


def test_release_runs_from_the_ui_with_a_changed_parameter(served, tmp_path):
    from playwright.sync_api import sync_playwright

    ui, proc, log = served
    os.makedirs(ARTEFACTS, exist_ok=True)
    with sync_playwright() as p:
        browser = launch_chromium(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            open_deployment(page, ui, "release", "demo-release")
            run_id = start_custom_run(page, {"shards": "2"})  # the config says 8
            run = wait_for_flow_run(f"{ui}/api", run_id, timeout=900)
            assert run["parameters"]["shards"] == 2 and run["parameters"]["config"] == "demo"
            wait_for_ui_state(page, "Completed")
            assert find_artifact(page, ui, run_id, "release-card")
            assert page.get_by_text("Caption statistics").first.is_visible()
        finally:
            page.screenshot(path=os.path.join(ARTEFACTS, "ui-release-run.png"), full_page=True)
            browser.close()
    release = tmp_path / "releases" / "demo"  # relative to the serving process's directory
    manifest = json.load(open(release / "manifest.json"))["release"]
    assert manifest["config"]["overrides"] == {"shards": 2} and manifest["stages"]["language_id"]["shards"] == 2
    verify = subprocess.run([os.path.join(BIN, "xmdata"), "release", "verify", str(release)],
                            capture_output=True, text=True, timeout=120)
    assert verify.returncode == 0, verify.stderr

    proc.send_signal(signal.SIGINT)  # Ctrl-C: the serving process stops, then the server it started
    assert proc.wait(timeout=90) == 0, open(log).read()[-3000:]
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{ui}/api/health", timeout=5)
