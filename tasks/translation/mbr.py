"""MBR selection from stored utilities and QE scores: no model, so `select-translations` re-selects
between qe, mbr and qe_mbr, other k and other thresholds as often as wanted.

A candidate's expected utility is the mean of its utilities against the unit's other eligible
candidates (its pseudo-references): for `mbr` every candidate that passes LID (the `passed` rule of
select.py), for `qe_mbr` the first k of them in QE reranking's order (`qe_best_first`: within
DECISION_TOLERANCE of the best a tie, which the engine listed first, then the beam rank, decide), which are then both hypotheses and pseudo-references, as comet-mbr's --rerank_top_k. The
highest wins under select.py's rule (`best_first`: within DECISION_TOLERANCE a tie, which the engine
listed first, then the beam rank, decide). A unit with a single passing candidate takes it with a
null expected utility, and is counted. The QE floor (`min_qe`) then applies to the winner's QE score.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Iterator

import polars as pl
import pyarrow as pa

from xmdata.runtime import storage
from xmdata.runtime.parquet_shards import TOGETHER_ROWS, read_parquet_shards
from xmdata.schemas import ContractError
from xmdata.schemas.mbr import MBR_DECISIONS

from .select import UNIT, best_first

UTILITIES_FILE, DECISIONS_FILE = "mbr_utilities.parquet", "mbr_decisions.parquet"
STORED_KEY = "mbr_utilities"  # translate.json's word on the utilities the build stored: their metric
_KEY = ["id", "column", "_element", "_segment", "target_language"]  # UNIT with nulls that join


def _keyed(frame: pl.DataFrame) -> pl.DataFrame:
    """FRAME with join keys that match where its nulls do (a plain column's element, a run before engines)."""
    engines = {f"_{c}": pl.col(c).fill_null("") for c in ("engine", "ref_engine") if c in frame.columns}
    return frame.with_columns(_element=pl.col("element").fill_null(-1), _segment=pl.col("segment").fill_null(-1),
                              **engines)


def stored_metric(run: dict) -> str | None:
    """The metric of the utilities a build stored (its translate.json, read whole), or None."""
    return (run.get(STORED_KEY) or {}).get("metric")


def refuse_unless_stored(run_dir: str, run: dict, filters) -> None:
    """A selection that needs utilities the run did not store stops in one line, before writing."""
    if not filters.uses_mbr:
        return
    stored = stored_metric(run)
    if stored != filters.mbr_metric or not storage.exists(storage.join(run_dir, UTILITIES_FILE)):
        held = f"it holds {stored} utilities" if stored else "it holds none (built with select qe)"
        raise ContractError(f"{run_dir}: select {filters.select} needs {filters.mbr_metric} MBR utilities; {held}: "
                            f"translate again with --select {filters.select} --mbr-metric {filters.mbr_metric} "
                            "(finished shards are kept)")


@dataclass
class MbrSelection:
    """What a shard's selection needs of MBR: the options, that shard's utilities; it collects each
    unit's decision (winner, runner-up, QE's choice) for mbr_decisions.parquet and the report."""
    select: str
    top_k: int | None
    utilities: pl.DataFrame | None = None
    decisions: list[pl.DataFrame] = field(default_factory=list)

    def with_expected_utility(self, ranked: pl.DataFrame) -> pl.DataFrame:
        """RANKED (select.py's candidates with `passed`, `engine_rank`) with `expected_utility`,
        `pseudo_references` and `mbr_eligible` (in the hypothesis set and with a pseudo-reference)."""
        members = ranked.filter(pl.col("passed"))
        if self.select == "qe_mbr":
            members = qe_best_first(members).filter(pl.int_range(pl.len()).over(UNIT) < self.top_k)
        members = _keyed(members.select(*UNIT, "engine", "beam_rank")).select(*_KEY, "_engine", "beam_rank")
        refs = members.rename({"_engine": "_ref_engine", "beam_rank": "ref_beam_rank"})
        expected = (_keyed(self.utilities)
                    .join(members, on=[*_KEY, "_engine", "beam_rank"])
                    .join(refs, on=[*_KEY, "_ref_engine", "ref_beam_rank"])
                    .group_by(*_KEY, "_engine", "beam_rank")
                    .agg(expected_utility=pl.col("utility").cast(pl.Float64).mean(),
                         pseudo_references=pl.len().cast(pl.Int32)))
        joined = _keyed(ranked).join(expected, on=[*_KEY, "_engine", "beam_rank"], how="left", maintain_order="left")
        return joined.drop("_element", "_segment", "_engine").with_columns(
            mbr_eligible=pl.col("passed") & pl.col("expected_utility").is_not_null())

    def decide(self, ranked: pl.DataFrame) -> None:
        """RANKED sorted best first (select.py): each unit's winner, runner-up and QE's own choice."""
        passed = ranked.filter(pl.col("passed"))
        winners = passed.group_by(UNIT, maintain_order=True).agg(
            pl.col("source_text", "engine", "beam_rank", "expected_utility").first(),
            pl.col("pseudo_references").first().fill_null(0))
        runner_up = ranked.filter(pl.col("mbr_eligible")).group_by(UNIT, maintain_order=True).agg(
            runner_up_engine=pl.col("engine").get(1, null_on_oob=True),
            runner_up_beam_rank=pl.col("beam_rank").get(1, null_on_oob=True),
            runner_up_utility=pl.col("expected_utility").get(1, null_on_oob=True))
        qe_first = qe_best_first(passed).group_by(UNIT, maintain_order=True).agg(
            qe_engine=pl.col("engine").first(), qe_beam_rank=pl.col("beam_rank").first())
        keyed = lambda frame: _keyed(frame).drop("element", "segment")  # noqa: E731
        decided = _keyed(winners).join(keyed(runner_up), on=_KEY, how="left", maintain_order="left") \
            .join(keyed(qe_first), on=_KEY, how="left", maintain_order="left")
        self.decisions.append(decided.select(MBR_DECISIONS.schema.names))


def qe_best_first(passed: pl.DataFrame) -> pl.DataFrame:
    """PASSED (a unit's candidates that pass LID) in QE reranking's order, select.py's rule: QE best
    first, a score within DECISION_TOLERANCE of the unit's best a tie, which the engine listed first,
    then the beam rank, decide. QE's own choice is the first; qe_mbr's hypotheses the first k."""
    qe_key, _ = best_first(pl.col("qe_score"), UNIT, pl.lit(True))
    return passed.with_columns(qe_key=qe_key).sort(
        [*UNIT, "qe_key", "engine_rank", "beam_rank"], descending=[False] * 5 + [True, False, False],
        nulls_last=True).drop("qe_key")


def selection_shards(run_dir: str, candidates_file: str, mbr: bool) -> Iterator[tuple[pa.Table, pl.DataFrame | None]]:
    """The candidates' shards, consecutive small ones together (parquet_shards.together's rule), and
    with MBR each group's utilities (the same shards of mbr_utilities.parquet)."""
    candidates = read_parquet_shards(storage.join(run_dir, candidates_file))
    if not mbr:
        utilities: Iterator = iter(lambda: None, 0)  # endless Nones
    else:
        utilities = read_parquet_shards(storage.join(run_dir, UTILITIES_FILE))
    pending, held = [], 0
    for shard in candidates:
        found = next(utilities, False)
        if found is False:
            raise ContractError(f"{run_dir}/{UTILITIES_FILE}: fewer shards than {candidates_file}: written by another "
                                "build; translate again")
        if pending and held + shard.num_rows > TOGETHER_ROWS:
            yield _joined(pending)
            pending, held = [], 0
        pending.append((shard, found))
        held += shard.num_rows
    if pending:
        yield _joined(pending)


def _joined(pending: list) -> tuple[pa.Table, pl.DataFrame | None]:
    candidates = pa.concat_tables([c for c, _ in pending])
    if pending[0][1] is None:
        return candidates, None
    return candidates, pl.from_arrow(pa.concat_tables([u for _, u in pending]))


def decision_stats(decisions: pl.DataFrame) -> dict[str, dict]:
    """Per target: units MBR decided (two or more eligible candidates), units with one passing
    candidate (taken, null utility), and the decided units where MBR and QE chose differently."""
    stats = decisions.group_by("target_language").agg(
        decided=(pl.col("pseudo_references") > 0).sum(),
        single_candidate=(pl.col("pseudo_references") == 0).sum(),
        disagree=((pl.col("pseudo_references") > 0) & ((pl.col("engine") != pl.col("qe_engine")) |
                                                       (pl.col("beam_rank") != pl.col("qe_beam_rank")))).sum(),
    ).sort("target_language")
    return {t: {"units_decided": d, "single_candidate": s, "disagree_with_qe": n} for t, d, s, n in stats.iter_rows()}


def stats_markdown(section: dict) -> str:
    """The report's lines on MBR: per target, what it decided and how often QE would have chosen otherwise."""
    stats = section["targets"]
    k = f", top {section['top_k']} by QE" if section["top_k"] else ""
    lines = [f"Selection: {section['select']} ({section['metric']} utilities{k})", "",
             "| target | units MBR decided | one candidate (taken) | MBR ≠ QE | share |", "| --- | ---: | ---: | ---: | ---: |"]
    for target, s in stats.items():
        share = "–" if s["disagreement"] is None else f"{s['disagreement']:.3f}"
        lines.append(f"| {target} | {s['units_decided']} | {s['single_candidate']} | {s['disagree_with_qe']} | {share} |")
    return "\n".join(lines) + "\n"


def read_run_file(run_dir: str, settings_file: str) -> dict:
    return json.loads(storage.read_text(storage.join(run_dir, settings_file)))


class MbrOutputs:
    """A selection's MBR side, shard by shard: each shard's MbrSelection, its decisions streamed into
    OUT/mbr_decisions.parquet and counted per target. A qe selection removes a decisions file an earlier
    MBR selection left in OUT, so that explain never reads another selection's."""

    def __init__(self, run_dir: str, out: str, filters):
        self.filters, self.path = filters, storage.join(out, DECISIONS_FILE)
        self.stats: dict[str, dict] = {}
        self.stream = None
        if filters.uses_mbr:
            from xmdata.runtime.atomic import ParquetStream

            refuse_unless_stored(run_dir, read_run_file(run_dir, "translate.json"), filters)
            self.stream = ParquetStream(self.path, MBR_DECISIONS.schema)

    def __enter__(self):
        if self.stream is not None:
            self.stream.__enter__()
        elif storage.exists(self.path):
            storage.remove(self.path)
        return self

    def __exit__(self, *exc):
        if self.stream is not None:
            self.stream.__exit__(*exc)

    def shard(self, utilities: pl.DataFrame | None) -> MbrSelection | None:
        if utilities is None:
            return None
        return MbrSelection(self.filters.select, self.filters.mbr_top_k, utilities)

    def add(self, mbr: MbrSelection | None) -> None:
        if mbr is None:
            return
        decisions = pl.concat(mbr.decisions) if mbr.decisions else pl.DataFrame(schema=pl.from_arrow(
            MBR_DECISIONS.schema.empty_table()).schema)
        self.stream.write(decisions.to_arrow().cast(MBR_DECISIONS.schema))
        for target, counts in decision_stats(decisions).items():
            total = self.stats.setdefault(target, {"units_decided": 0, "single_candidate": 0, "disagree_with_qe": 0})
            for key in total:
                total[key] += counts[key]

    def report(self) -> dict | None:
        """The report's `mbr` section: per target the counts and MBR ≠ QE's share of decided units."""
        if not self.filters.uses_mbr:
            return None
        targets = {t: {**s, "disagreement": round(s["disagree_with_qe"] / s["units_decided"], 6)
                       if s["units_decided"] else None} for t, s in sorted(self.stats.items())}
        return {"select": self.filters.select, "metric": self.filters.mbr_metric,
                "top_k": self.filters.mbr_top_k, "targets": targets}
