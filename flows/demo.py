"""The demo build: every stage that exists so far, on the sample data shipped in data/, offline."""
from __future__ import annotations

import pyarrow.compute as pc
from prefect import flow

from xmdata.data import sample_path
from xmdata.models.tiny import cached_tiny_models
from xmdata.schemas.readers import read_any

from .finish import finish_build
from .language_id import label_languages
from .select_images import select_geo_diverse
from .translate import publish_report, translate_texts
from .translation_options import FilterOptions, TranslatorOptions

DEMO_IMAGES_PER_LANGUAGE = 5  # 300 sample images for 36 languages
# The tiny translator is untrained: its output is script salad that lid.176 mostly reads as Arabic,
# so the ar target shows candidates passing LID and reaching COMETKiwi, and fr/de show the language
# filter rejecting everything. Small beams keep the demo quick; the real default is 100/25.
DEMO_TARGETS = ["fr", "de", "ar"]


@flow(name="xmdata-demo")
def demo_flow(out: str, shards: int = 8) -> dict:
    """Build the demo release in OUT from data/sample with tiny local models and the real lid.176."""
    text_reports, text_stats = label_languages(sample_path("captions.jsonl"), out, shards, "lid.176")
    image_reports, image_stats, _ = select_geo_diverse(
        sample_path("images.csv"), out, shards, languages=None, per_language=DEMO_IMAGES_PER_LANGUAGE,
        strategy="greedy", within="spread", seed=0)
    models = cached_tiny_models(seed=0)
    captions = read_any(sample_path("captions.jsonl"))
    english = captions.filter(pc.equal(captions.column("language"), "en"))
    translation_reports, translation_stats, selection = translate_texts(
        english, out, shards, ["text"], "en", DEMO_TARGETS,
        TranslatorOptions(backend="m2m100", model=models["m2m100"].name_or_path, num_beams=8, num_candidates=4),
        FilterOptions(qe_model=models["cometkiwi"].name_or_path))
    publish_report(selection)
    return finish_build(out, text_reports + image_reports + translation_reports,
                        {**text_stats, **image_stats, **translation_stats}, "xmdata demo",
                        extra_markdown="\n### Translation\n\n" + selection["markdown"])
