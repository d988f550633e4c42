"""The demo build: every stage that exists so far, on the sample data shipped in data/, offline."""
from __future__ import annotations

from prefect import flow

from xmdata.data import sample_path

from .language_id import build_language_id


@flow(name="xmdata-demo")
def demo_flow(out: str, shards: int = 8) -> dict:
    """Build the demo release in OUT from data/sample with the bundled fastText model."""
    return build_language_id(sample_path("captions.jsonl"), out, shards, lid_model="lid.176")
