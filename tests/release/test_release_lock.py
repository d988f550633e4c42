"""A release inside a writer of its own folder (a flow called by a flow, a UI run of the CLI's
process): the release takes its folders again without waiting on itself, and sweeps nothing."""
import json

import pytest

from xmdata.runtime.folder_lock import HOLDER_NAME, LOCK_NAME, one_writer
from xmdata.tasks.release.manifest import verify_release


@pytest.mark.slow  # a one-stage release build
def test_a_release_inside_a_writer_of_its_folder_reenters_its_lock_and_sweeps_nothing(prefect_server, tmp_path):
    from xmdata.flows.release import release_flow

    (tmp_path / "captions.jsonl").write_text(
        '{"id": "a", "text": "The weather is lovely today.", "language": "en", "image_id": "i1"}\n')
    (tmp_path / "release.yaml").write_text("name: x\nshards: 1\nlanguage_id: {input: captions.jsonl}\n")
    out = tmp_path / "rel"
    with one_writer(str(out)) as fresh:
        assert fresh
        mine = json.loads((out / HOLDER_NAME).read_text())
        part = out / "build" / ".tmp-another-part.part"
        part.parent.mkdir()
        part.write_bytes(b"half")  # a part of this process, still writing
        result = release_flow(config=str(tmp_path / "release.yaml"), out=str(out))
        assert part.exists()  # taken again, not fresh: no sweep
        assert json.loads((out / HOLDER_NAME).read_text()) == mine  # still the outer writer's, not let go
        assert not (out / "build" / LOCK_NAME).exists()  # the work folder inside is OUT's already
    assert not (out / LOCK_NAME).exists() and not (out / HOLDER_NAME).exists()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["release_sha256"] == result["release_sha256"]
    assert not {LOCK_NAME, HOLDER_NAME} & set(manifest["release"]["files"])  # built while the lock was there: not a release file
    assert verify_release(str(out)) == []
