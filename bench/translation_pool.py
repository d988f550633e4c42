"""A pool of translators (tasks/translation/pool.py), in one run, on the tiny models, in this process
(executor inprocess: every CPU-second is this process's, measured by bench/cpu_meter.py):

- a pooled build of M2M100 + NLLB-200 ÷ the two one-engine builds (the pool should cost their sum:
  each engine's beam search, plus the same scoring of the same candidates);
- adding MADLAD-400 to a built pool (memo on): CPU-s ÷ a from-scratch pool of the three, and ÷ a
  MADLAD build alone (only its work should run);
- memo on vs off: the incrementally built pool's files against the from-scratch pool's, byte for byte.

Models are loaded by a warm-up build first, so no figure counts a load.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pyarrow as pa

TARGETS = ["fr", "de"]
LID_ACCEPT = "fr=fr,as,ru,new,en;de=de,as,ru,new,en"  # the tiny models' salad: scored by COMETKiwi as text would be
FILES = ["candidates.parquet", "translations.parquet", "translated.parquet", "translation_rejects.parquet",
         "translation_report.json"]


def params(models, *backends):
    from xmdata.tasks.translation.params import TranslateParams

    return TranslateParams(targets=TARGETS, translator=[
        {"backend": b, "model": models[b].name_or_path, "num_beams": 8, "num_candidates": 4,
         "max_new_tokens_ratio": 1.0, "max_new_tokens_extra": 4} for b in backends],
        filters={"qe_model": models["cometkiwi"].name_or_path, "lid_accept": LID_ACCEPT, "min_lid_prob": 0.0})


def build(texts, p, out: Path, memo_location: str | None = None) -> float:
    from bench.cpu_meter import CpuMeter
    from xmdata.flows.translate import translate_texts
    from xmdata.runtime import memo
    from xmdata.runtime.session import execution_session

    table = pa.table({"id": [f"t{i}" for i in range(len(texts))], "text": texts})
    with CpuMeter() as meter, execution_session("inprocess"), memo.using(memo.MemoOptions(memo_location)):
        translate_texts(table, str(out), 4, p)
    return meter.cpu_s


def sequence_score_gap(a: Path, b: Path) -> float | None:
    """The largest sequence_score difference between two candidates tables equal in every other column
    (None when another column differs)."""
    import polars as pl

    x, y = (pl.read_parquet(p / "candidates.parquet") for p in (a, b))
    if not x.drop("sequence_score").equals(y.drop("sequence_score")):
        return None
    return float((x["sequence_score"] - y["sequence_score"]).abs().max())


def main() -> list[dict]:
    from bench.translation import sentences
    from xmdata.models.tiny import cached_tiny_models

    models = cached_tiny_models(seed=0)
    texts = sentences(96)
    root = Path(tempfile.mkdtemp(prefix="bench-pool-"))
    try:
        build(texts[:4], params(models, "m2m100", "nllb", "madlad"), root / "warm-up")  # every model loaded
        cpu = {name: build(texts, params(models, *backends), root / name) for name, backends in (
            ("m2m100", ("m2m100",)), ("nllb", ("nllb",)), ("madlad", ("madlad",)),
            ("m2m100+nllb", ("m2m100", "nllb")))}
        ratio = cpu["m2m100+nllb"] / (cpu["m2m100"] + cpu["nllb"])
        print(f"pool M2M100 + NLLB-200: {cpu['m2m100+nllb']:.1f} CPU-s; one-engine builds {cpu['m2m100']:.1f} + "
              f"{cpu['nllb']:.1f} CPU-s; pooled ÷ their sum {ratio:.2f}x ({len(texts)} texts, {len(TARGETS)} "
              "targets, 8 beams, 4 candidates, tiny models)", flush=True)
        memo_location = str(root / "memo")
        build(texts, params(models, "m2m100", "nllb"), root / "pair-memo", memo_location)
        pair_same = [f for f in FILES if (root / "pair-memo" / f).read_bytes() != (root / "m2m100+nllb" / f).read_bytes()]
        print(f"memo on vs off, pool M2M100 + NLLB-200: {'byte-identical' if not pair_same else 'DIFFERENT: ' + ', '.join(pair_same)}"
              f" ({', '.join(FILES)})", flush=True)
        shutil.copytree(root / "pair-memo", root / "grown")
        added = build(texts, params(models, "m2m100", "nllb", "madlad"), root / "grown", memo_location)
        scratch = build(texts, params(models, "m2m100", "nllb", "madlad"), root / "scratch")
        differ = [f for f in FILES if (root / "grown" / f).read_bytes() != (root / "scratch" / f).read_bytes()]
        gap = sequence_score_gap(root / "grown", root / "scratch") if differ else 0.0
        print(f"adding MADLAD-400 to the built pool: {added:.1f} CPU-s; from-scratch pool of three {scratch:.1f} "
              f"CPU-s ({added / scratch:.2f}x); a MADLAD build alone {cpu['madlad']:.1f} CPU-s "
              f"({added / cpu['madlad']:.2f}x)", flush=True)
        print(f"grown pool (memo on) vs from scratch (memo off): {'byte-identical' if not differ else 'differ: ' + ', '.join(differ)}"
              + (f"; candidates equal but for sequence_score, by at most {gap:.1e}" if differ else ""), flush=True)
        return [{"pool_over_sum": round(ratio, 2), "add_madlad_over_scratch": round(added / scratch, 2),
                 "add_madlad_over_alone": round(added / cpu["madlad"], 2), "memo_byte_identical": not pair_same,
                 "grown_differs": differ}]
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
