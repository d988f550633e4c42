"""The demo build: every stage that exists so far, on the sample data shipped in data/, offline."""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from prefect import flow

from xmdata.data import sample_path
from xmdata.models.tiny import cached_tiny_models
from xmdata.schemas.readers import read_any
from xmdata.tasks.score_input import demo_score_input

from .finish import finish_build
from .language_id import label_languages
from .select_images import select_geo_diverse
from .translate import publish_report, translate_texts
from .score import score_pairs
from .translate_qa import publish_qa_report, translate_qa_rows
from .translation_options import FilterOptions, TranslatorOptions

DEMO_IMAGES_PER_LANGUAGE = 5  # 300 sample images for 36 languages
# The tiny translator is untrained: its output is script salad that lid.176 mostly reads as Arabic,
# so the ar target shows candidates passing LID and reaching COMETKiwi, and fr/de show the language
# filter rejecting everything. Small beams keep the demo quick; the real default is 100/25.
DEMO_TARGETS = ["fr", "de", "ar"]


def demo_pairs(out: str) -> tuple[pa.Table, str]:
    """The sample captions and their kept translations (id `<caption>@<target>`), each with the
    sample image its caption names, for CLIPScore."""
    captions, image_root = demo_score_input()
    kept = pq.read_table(os.path.join(out, "translated.parquet")).to_pylist()
    ids = captions.column("id").to_pylist()
    image_of = dict(zip(ids, captions.column("image_path").to_pylist()))
    image_id_of = dict(zip(ids, captions.column("image_id").to_pylist()))
    translated = pa.table({
        "id": [f"{r['id']}@{r['target_language']}" for r in kept],
        "image_path": pa.array([image_of.get(r["id"]) for r in kept], pa.string()),
        "text": [r["text"] for r in kept], "language": [r["target_language"] for r in kept],
        "image_id": pa.array([image_id_of.get(r["id"]) for r in kept], pa.string())})
    return pa.concat_tables([captions, translated.cast(captions.schema)]), image_root


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
    # MMEB-style rows, Question/Answer packed (xVLM2Vec): the tiny MADLAD's salad has no label
    # words, so every instance is refused with its reason — the plumbing is what is shown.
    qa_reports, qa_stats, qa_report = translate_qa_rows(
        sample_path("mmeb.jsonl"), out, shards, ["fr", "de"],
        TranslatorOptions(backend="madlad", model=models["madlad"].name_or_path, num_beams=1, num_candidates=1))
    publish_qa_report(qa_report)
    pairs, image_root = demo_pairs(out)
    score_reports, score_stats = score_pairs(pairs, out, shards, image_root, models["open_clip"])
    return finish_build(out, text_reports + image_reports + translation_reports + qa_reports + score_reports,
                        {**text_stats, **image_stats, **translation_stats, **qa_stats, **score_stats},
                        "xmdata demo",
                        extra_markdown="\n### Translation\n\n" + selection["markdown"]
                        + "\n### QA translation\n\n" + qa_report["markdown"])
