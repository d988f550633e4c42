"""Selection shard by shard: the files a whole-table selection would write, whatever the shard plan,
with a few rows in memory at a time (the merge's budget set to tens of rows here)."""
from __future__ import annotations

import zlib

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xmdata.runtime import parquet_shards
from xmdata.schemas.translation import CANDIDATES
from xmdata.tasks.build import sorted_merge
from xmdata.tasks.translation.outputs import write_candidates, write_run, write_selection
from xmdata.tasks.translation.params import TranslateParams
from xmdata.tasks.translation.pool import engine_runs
from xmdata.tasks.translation.select import QuartileRanks, select_translations

OUTPUTS = ["translations.parquet", "translated.parquet", "translation_rejects.parquet", "translation_report.json",
           "translation_report.md"]
PARAMS = TranslateParams(columns=["caption", "refs"], targets=["fr", "ar"], filters={"min_lid_prob": 0.5})


def _candidates(ids: int = 120, seed: int = 0) -> pa.Table:
    """Captions and 2-element reference lists, some in two segments, to two targets, three beams each;
    QE drawn from eight values so that ties straddle the quartiles' edges; wrong labels, empty texts."""
    rng = np.random.default_rng(seed)
    rows = []
    for n in range(ids):
        for column, elements in (("caption", [None]), ("refs", [0, 1])):
            for element in elements:
                segments = 2 if rng.random() < 0.2 else 1
                for target in ("fr", "ar"):
                    empty = rng.random() < 0.05
                    for segment in range(segments):
                        for rank in range(3):
                            label = target if rng.random() < 0.8 else "en"
                            rows.append(dict(
                                id=f"i{n:04d}", column=column, element=element, segment=segment,
                                source_text=f"text {n} {column}", target_language=target,
                                status="empty_text" if empty else "ok",
                                candidate=None if empty else f"{target} {n} {element} {segment} {rank}",
                                beam_rank=None if empty else rank,
                                sequence_score=None if empty else float(-0.1 * rank),
                                lid_label=None if empty else label,
                                lid_prob=None if empty else float(rng.choice([0.3, 0.7, 0.95])),
                                lid_label_raw=None if empty else label, lid_match=None if empty else label == target,
                                qe_score=None if empty or label != target else float(rng.choice(np.arange(8) / 8))))
                        if empty:
                            break
    order = rng.permutation(len(rows))  # a stage's shard need not be sorted
    return pa.Table.from_pylist([rows[i] for i in order], schema=CANDIDATES.schema)


def _run(folder, candidates: pa.Table, shards: int | None):
    """A translate run's folder: its scored shards (by a hash of the id, as ingest), candidates.parquet
    and translate.json; `shards=None`: written whole, as a run from before the shards' rows were kept."""
    folder.mkdir()
    if shards is None:
        pq.write_table(candidates, folder / "candidates.parquet")
        write_run(str(folder), PARAMS, ["refs"])
        return str(folder)
    which = np.array([zlib.crc32(i.encode()) % shards for i in candidates["id"].to_pylist()])
    paths = []
    for shard in range(shards + 1):  # the last one empty
        paths.append(str(folder / f"{shard:05d}.parquet"))
        pq.write_table(candidates.filter(pa.array(which == shard)), paths[-1])
    write_candidates([paths], str(folder), engine_runs(PARAMS))  # one engine's shards
    write_run(str(folder), PARAMS, ["refs"])
    return str(folder)


@pytest.fixture
def few_rows_in_memory(monkeypatch):
    monkeypatch.setattr(sorted_merge, "ROWS_IN_MEMORY", 40)
    monkeypatch.setattr(sorted_merge, "ROW_GROUP", 8)
    monkeypatch.setattr(parquet_shards, "TOGETHER_ROWS", 60)  # shards of ~100-400 candidates: each alone


def _quartiles_over_the_whole_table(translations: pl.DataFrame) -> list:
    """The rank over every kept unit of a target at once (ties by row order), as polars computes it."""
    ok = pl.col("status") == "ok"
    rank = pl.col("qe_score").rank("ordinal").over("target_language", "ok_row")
    return translations.with_columns(ok_row=ok).select(
        pl.when(ok).then((rank - 1) * 4 // pl.len().over("target_language", "ok_row") + 1))[:, 0].to_list()


def _report_over_the_whole_table(candidates: pa.Table, translations: pl.DataFrame) -> dict:
    cands = pl.from_arrow(candidates).filter(pl.col("status") == "ok")
    report = {}
    for target in sorted(translations["target_language"].unique()):
        mine = translations.filter(pl.col("target_language") == target)
        ok = mine.filter(pl.col("status") == "ok")
        qe = ok["qe_score"].cast(pl.Float64)
        rejected = mine.filter(pl.col("status") != "ok").group_by("reason").len().sort("reason")
        r = lambda v: None if v is None else round(float(v), 6)  # noqa: E731
        report[target] = {
            "rows_in": mine.height, "rows_out": ok.height, "acceptance_rate": r(ok.height / mine.height),
            "rejected": dict(rejected.iter_rows()),
            "candidates": cands.filter(pl.col("target_language") == target).height,
            "candidates_lid_rejected": cands.filter((pl.col("target_language") == target)
                                                    & ~pl.col("lid_match")).height,
            "qe": {"mean": r(qe.mean()), "min": r(qe.min()), "max": r(qe.max()),
                   "p25": r(qe.quantile(0.25, "nearest")), "median": r(qe.quantile(0.5, "nearest")),
                   "p75": r(qe.quantile(0.75, "nearest")),
                   "bottom_quartile_mean": r(ok.filter(pl.col("qe_quartile") == 1)["qe_score"].mean()),
                   "top_quartile_mean": r(ok.filter(pl.col("qe_quartile") == 4)["qe_score"].mean())}}
    return report


def test_shard_by_shard_writes_what_the_whole_table_gives_whatever_the_plan(tmp_path, few_rows_in_memory):
    candidates = _candidates()
    runs = {plan: _run(tmp_path / f"plan-{plan}", candidates, plan) for plan in (1, 5, 13, None)}
    reports = {plan: write_selection(run, PARAMS, ["refs"]) for plan, run in runs.items()}

    chosen = pl.read_parquet(f"{runs[5]}/translations.parquet")
    whole = pl.from_arrow(select_translations(candidates, 0.5))
    assert chosen.equals(whole)
    assert chosen["qe_quartile"].to_list() == _quartiles_over_the_whole_table(chosen)
    kept = chosen.filter(pl.col("status") == "ok")
    tied = kept.group_by("target_language", "qe_score").agg(pl.col("qe_quartile").n_unique())
    assert tied["qe_quartile"].max() > 1  # a tie split by a quarter's edge was ranked, so this checked it
    assert reports[5]["targets"] == _report_over_the_whole_table(candidates, chosen)
    rejected = pl.read_parquet(f"{runs[5]}/translation_rejects.parquet")
    assert rejected.height == chosen.filter(pl.col("status") != "ok").height > 0
    for plan in (1, 13, None):
        for name in OUTPUTS:
            assert open(f"{runs[plan]}/{name}", "rb").read() == open(f"{runs[5]}/{name}", "rb").read(), (plan, name)


@pytest.mark.parametrize("arrivals", [1, 7, 1000])
def test_quartiles_chunk_by_chunk_are_the_whole_tables_rank_with_nan_and_signed_zero_ties(arrivals):
    rng = np.random.default_rng(5)
    scores = rng.choice(np.array([np.nan, -0.0, 0.0, 0.25, 0.5], np.float32), 203)
    units = pl.DataFrame({"target_language": rng.choice(["ar", "fr"], 203), "status": rng.choice(["ok", "rejected"],
                          203, p=[0.8, 0.2]), "qe_score": pl.Series(scores, dtype=pl.Float32)})
    kept = units.filter(pl.col("status") == "ok")
    ranks = QuartileRanks({t: [g["qe_score"].to_numpy()] for (t,), g in kept.group_by("target_language")})
    chunked = pl.concat([ranks.assign(units.slice(start, arrivals)) for start in range(0, 203, arrivals)])
    assert chunked["qe_quartile"].to_list() == _quartiles_over_the_whole_table(units)


def test_merge_gives_every_group_whole_in_order_within_the_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(sorted_merge, "ROW_GROUP", 16)
    rng = np.random.default_rng(1)
    keys = pl.DataFrame({"g": rng.integers(0, 30, 2000).astype(str), "n": rng.permutation(2000)})
    keys = keys.vstack(pl.DataFrame({"g": ["15"] * 300, "n": np.arange(2000, 2300)}))  # a group over batches
    paths = []
    for part in range(4):  # a group's rows in several files
        paths.append(str(tmp_path / f"{part}.parquet"))
        pq.write_table(keys.filter(pl.col("n") % 4 == part).sort("g", "n").to_arrow(), paths[-1], row_group_size=16)
    chunks = list(sorted_merge.merge_sorted(paths, ["g", "n"], ["g"], rows_in_memory=64))
    assert pl.concat(chunks).equals(keys.sort("g", "n"))
    groups = [set(chunk["g"]) for chunk in chunks]
    assert all(not (a & b) for i, a in enumerate(groups) for b in groups[i + 1:])  # no group in two chunks
    # Each file holds its 16-row share, more only while one of its groups has not ended.
    largest = keys.group_by("g").len()["len"].max()
    assert len(chunks) > 10 and max(c.height for c in chunks) <= 4 * 16 + largest < keys.height / 4
