"""Running the demo through the CLI as a user would, and reading a release folder by content."""
from __future__ import annotations

import json
import os
import sys

from support.cli_in_process import run_xmdata

BIN = os.path.dirname(sys.executable)
SHARDS = "16"
VOLATILE = {"run.json", "prefect-server.log", "publication.json"}  # how a run went (publication.json: files' mtimes), not what it made
VOLATILE_FOLDERS = {"_memo"}  # <stage>/_memo/<shard>.json: what a shard took from the memo of model work
# Another machine's CPU, as issue 31 measured it: clip_score moved by up to 3.9e-7, sequence_score
# 1.4e-6, qe_score 1.3e-7 — under release compare's tolerance.
OTHER_KERNELS = {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41",
                 "MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "OPENBLAS_CORETYPE": "Nehalem"}


def run_demo(out, env, *extra):
    """The demo command in this process (its shards run wherever env and extra send them)."""
    result = run_xmdata(["demo", "--out", str(out), "--shards", SHARDS, *extra], env)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.load(open(os.path.join(out, "build", "run.json")))


def release_files(root):
    """Every file of a release folder and its build folder, by content; manifest.json without the
    one line that may differ (built_at)."""
    files = {}
    for folder, _, names in os.walk(root):
        for name in names:
            rel = os.path.relpath(os.path.join(folder, name), root)
            if name not in VOLATILE and os.path.basename(folder) not in VOLATILE_FOLDERS:
                files[rel] = open(os.path.join(folder, name), "rb").read()
    manifest = json.loads(files.pop("manifest.json"))
    assert manifest.pop("built_at")
    files["manifest.json"] = manifest
    return files


def sample_inputs(folder, config: str, captions: int = 3):
    """FOLDER with the first CAPTIONS sample captions, the sample images table and its images, and
    CONFIG as release.yaml: a small release project of the shipped sample."""
    import shutil

    from xmdata.data import sample_path

    folder.mkdir(parents=True)
    lines = open(sample_path("captions.jsonl"), encoding="utf-8").read().splitlines()[:captions]
    (folder / "captions.jsonl").write_text("\n".join(lines) + "\n")
    shutil.copy(sample_path("images.csv"), folder / "images.csv")
    shutil.copytree(os.path.join(os.path.dirname(sample_path("images.csv")), "images"), folder / "images")
    (folder / "release.yaml").write_text(config)
    return folder
