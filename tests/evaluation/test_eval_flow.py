import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest


@pytest.mark.slow
def test_evaluate_flow_writes_the_cli_files_and_publishes_artifacts(tmp_path, prefect_server):
    from prefect.client.orchestration import get_client

    from xmdata.flows.evaluate import evaluate_flow

    path = tmp_path / "valse.parquet"
    pq.write_table(pa.table({"id": ["a", "b", "c"], "caption_score": [0.9, 0.2, 0.5], "foil_score": [0.1, 0.4, 0.5],
                             "phenomenon": ["counting", "counting", "plurals"], "language": ["de"] * 3}), path)
    # As the UI's form sends it: a dict, validated into ValseParams by the flow's signature.
    result = evaluate_flow({"metric": "valse", "id_column": "id"}, str(path), str(tmp_path / "out"))
    assert result["overall"]["accuracy"] == pytest.approx(1 / 3)
    assert json.loads((tmp_path / "out" / "valse.json").read_text()) == result

    expected = {"evaluate-valse", "evaluate-valse-table"}

    async def artifacts():  # by key: the session's server holds every test's artifacts, past one page
        from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

        async with get_client() as client:
            found = await client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=list(expected))))
            return {a.key: a for a in found}

    import asyncio

    found = asyncio.run(artifacts())
    assert expected <= set(found)
    markdown = found["evaluate-valse"].data  # the files by path, not as file:// links the UI cannot follow
    assert str(tmp_path / "out" / "valse.json") in markdown and "file://" not in markdown
