"""A tiny release with QA translations, built in a fixture: word-for-word parallel sentences (the demo's
tiny translators recover no Question/Answer parts, so the demo release's qa_parallel is empty)."""
from __future__ import annotations

import pyarrow as pa
import pytest

LANGUAGES = ("fr", "de")


def qa_rows(instances: int, seed: int = 0) -> list[dict]:
    """`instances` MMEB-style instances, each a query and a positive, translated word for word into fr and de."""
    from xmdata.models.tiny_corpus import parallel_sentences

    sentences = iter(parallel_sentences(2 * instances, LANGUAGES, seed))
    rows = []
    for n in range(instances):
        for part in ("query", "positive"):
            sentence = next(sentences)
            rows += [{"id": f"inst{n:03d}", "task": "MSCOCO_t2i" if n % 2 else "VOC2007", "part": part,
                      "source_language": "en", "target_language": language, "source_text": sentence["en"],
                      "target_text": sentence[language]} for language in LANGUAGES]
    return rows


def write_release(folder, rows: list[dict] | None, name: str = "tiny-qa"):
    """A release folder: data/qa_parallel.parquet (unless rows is None) and its manifest.json."""
    from xmdata.runtime.atomic import write_parquet_atomic
    from xmdata.tasks.release.manifest import write_manifest

    (folder / "data").mkdir(parents=True, exist_ok=True)
    if rows is not None:
        write_parquet_atomic(pa.Table.from_pylist(rows), str(folder / "data" / "qa_parallel.parquet"))
    write_manifest(str(folder), {"name": name})
    return folder


@pytest.fixture(scope="session")
def qa_release(tmp_path_factory):
    """A release of 40 instances (query and positive, fr and de): 160 pairs."""
    return write_release(tmp_path_factory.mktemp("qa-release"), qa_rows(40))


@pytest.fixture(scope="session")
def tiny_decoder(tmp_path_factory):
    """The tiny Llama decoder `xmdata models build-tiny` builds, alone (the other tiny models are not needed)."""
    from xmdata.models.tiny_corpus import generate_sentences
    from xmdata.models.tiny_decoder import build_tiny_decoder

    return build_tiny_decoder(tmp_path_factory.mktemp("decoder"), generate_sentences(seed=0), seed=0)
