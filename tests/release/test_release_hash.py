"""release_sha256 depends on the config, the inputs and the models' content only: not on where the
tiny models are cached, which Prefect home ran the build, or the working directory."""
import json
import os
import subprocess
import sys

import pytest
from support.cli_in_process import run_xmdata
from support.demo_release import sample_inputs

from xmdata.tasks.release.manifest import model_fingerprint

BIN = os.path.dirname(sys.executable)
CONFIG = """name: hash-check
shards: 2
translation:
  input: captions.jsonl
  targets: [ar]
  translator: {backend: m2m100, model: "tiny:m2m100", num_beams: 2, num_candidates: 2}
  filters: {qe_model: "tiny:cometkiwi"}
scoring: {input: captions.jsonl, images: images.csv, clip_model: "tiny:open_clip"}
"""


@pytest.mark.slow  # builds the tiny models once more (~7 s)
def test_model_fingerprint_ignores_the_folder_the_models_were_built_in(tmp_path):
    from xmdata.models.tiny import build_tiny_models

    first, second = build_tiny_models(tmp_path / "a"), build_tiny_models(tmp_path / "somewhere" / "else")
    for backend in ("cometkiwi", "open_clip"):  # the two whose files name their sibling folder
        a, b = (model_fingerprint("r", "x", s[backend].name_or_path, backend, None) for s in (first, second))
        assert a == b
    tampered = tmp_path / "a" / "cometkiwi" / "hparams.yaml"
    tampered.write_text(tampered.read_text().replace("dropout: 0.1", "dropout: 0.2"))
    assert model_fingerprint("r", "x", first["cometkiwi"].name_or_path, "cometkiwi", None) != \
        model_fingerprint("r", "x", second["cometkiwi"].name_or_path, "cometkiwi", None)


def _inputs(folder):
    return sample_inputs(folder, CONFIG)


@pytest.mark.slow
def test_release_sha256_is_the_same_with_other_caches_prefect_homes_and_folders(tmp_path, prefect_server,
                                                                                monkeypatch):
    """Two "machines" build side by side, each with its own cache (the tiny models built there) and
    folder: one in a process of its own with its own Prefect home, the other in this test's process
    (the session's Prefect home; the imports of torch, transformers, COMET and open_clip already
    paid, ~17 CPU-s). Both use the session's Prefect API, so neither waits for a server to start."""
    def environment(root):
        env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
        env.update(XMDATA_CACHE=str(root / "cache"), PREFECT_HOME=str(root / "prefect"),
                   PREFECT_API_URL=prefect_server, XMDATA_SERVICE="off", XMDATA_EXECUTOR="inprocess")
        return env

    def release(root):
        return ["release", "--config", "release.yaml", "--out", str(root / "out"), "--quiet"]

    one, two = tmp_path / "one", tmp_path / "two-with-a-longer-name"
    own = subprocess.Popen([os.path.join(BIN, "xmdata"), *release(one)],
                           cwd=_inputs(one / "project"), env=environment(one),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        monkeypatch.chdir(_inputs(two / "project"))
        here = run_xmdata(release(two), environment(two))
    finally:
        _, stderr = own.communicate(timeout=900)
    assert own.returncode == 0, stderr[-3000:]
    assert here.returncode == 0, here.stderr[-3000:]
    hashes = []
    for root in (one, two):
        manifest = json.load(open(root / "out" / "manifest.json"))
        assert str(root) not in json.dumps(manifest["release"])  # no path of this machine in the facts
        hashes.append(manifest["release_sha256"])
    assert hashes[0] == hashes[1]
