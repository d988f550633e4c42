"""A finished release run again is kept as it is (nothing gathered, drawn or written), with the same
release_sha256; a published file edited or removed is published again, byte for byte as before."""
from __future__ import annotations

import json
import os
import shutil

from support.cli_in_process import run_xmdata
from support.demo_release import SHARDS



def _demo(out, env):
    result = run_xmdata(["demo", "--out", str(out), "--shards", SHARDS], env)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _mtimes(out):
    return {os.path.relpath(os.path.join(d, n), out): os.stat(os.path.join(d, n)).st_mtime_ns
            for d, _, names in os.walk(out) if "build" not in os.path.relpath(d, out).split(os.sep) for n in names}


def test_an_unchanged_release_is_kept_and_an_edited_one_published_again(demo_release, cli_env, tmp_path):
    out = tmp_path / "demo"
    shutil.copytree(demo_release, out)  # copy2: sizes and mtimes as published
    manifest = json.loads((out / "manifest.json").read_text())
    _demo(out, cli_env)  # published again if anything of the session's release differs from its record
    before = _mtimes(out)
    again = _demo(out, cli_env)
    assert "unchanged since it was published" in again.stdout + again.stderr
    assert _mtimes(out) == before  # not one file written
    assert json.loads((out / "manifest.json").read_text()) == manifest

    card = (out / "README.md").read_bytes()
    (out / "README.md").write_bytes(card + b"\nedited by hand\n")
    (out / "data" / "translations.parquet").unlink()
    edited = _demo(out, cli_env)
    assert "unchanged since it was published" not in edited.stdout + edited.stderr
    assert (out / "README.md").read_bytes() == card and (out / "data" / "translations.parquet").is_file()
    republished = json.loads((out / "manifest.json").read_text())
    assert republished["release_sha256"] == manifest["release_sha256"]
    assert "unchanged since it was published" in _demo(out, cli_env).stdout
