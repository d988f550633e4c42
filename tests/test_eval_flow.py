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
    result = evaluate_flow("valse", str(path), str(tmp_path / "out"), {"id_column": "id"})
    assert result["overall"]["accuracy"] == pytest.approx(1 / 3)
    assert json.loads((tmp_path / "out" / "valse.json").read_text()) == result

    async def artifact_keys():
        async with get_client() as client:
            return {a.key for a in await client.read_artifacts()}

    import asyncio

    keys = asyncio.run(artifact_keys())
    assert {"evaluate-valse", "evaluate-valse-table", "evaluate-valse-json"} <= keys
