"""The demo build: every stage that exists so far, on the sample data shipped in data/, offline."""
from __future__ import annotations

from prefect import flow

from xmdata.data import sample_path

from .finish import finish_build
from .language_id import label_languages
from .select_images import select_geo_diverse

DEMO_IMAGES_PER_LANGUAGE = 5  # 300 sample images for 36 languages


@flow(name="xmdata-demo")
def demo_flow(out: str, shards: int = 8) -> dict:
    """Build the demo release in OUT from data/sample with the bundled fastText model."""
    text_reports, text_stats = label_languages(sample_path("captions.jsonl"), out, shards, "lid.176")
    image_reports, image_stats, _ = select_geo_diverse(
        sample_path("images.csv"), out, shards, languages=None, per_language=DEMO_IMAGES_PER_LANGUAGE,
        strategy="greedy", within="spread", seed=0)
    return finish_build(out, text_reports + image_reports, {**text_stats, **image_stats}, "xmdata demo")
