"""MBR's cost, as ratios in one run (issue 66):

- utility pairs and CPU-s per unit at N = 4, 8, 16 candidates, for chrF (sacrebleu), the tiny reference
  COMET and a randomly initialised COMET of wmt22-comet-da's shape (XLM-R large encoder: 24 layers, 1024
  wide, a 250,002-token embedding; feed-forward [3072, 1024]; BENCH_MBR_SHAPE=base for XLM-R base's
  12 × 768 where that does not fit), each beside the QE stage on the same candidates: the tiny COMETKiwi
  beside chrF and the tiny COMET, a random COMETKiwi of the same encoder beside the wmt22-shape COMET;
- `select-translations --select mbr` (no model) ÷ the `translate --select mbr` build it re-selects;
- the COMET utilities with the memo off, on (first build) and served from it: byte-identical.

The stage function runs as a shard runs it (tasks/translation/mbr_utilities.py); CPU-s are this
process's and its children's (bench/cpu_meter.py), every thread counted, torch on one thread (so
that no idle thread's spinning is counted). The QE stage fills each forward to a fixed shape
(tasks/translation/candidate_scores.py, models/token_batches.py): at the few units here its CPU-s a
unit are inflated by those copies (most at the large shape, 2 units), so MBR ÷ QE there is low.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import pyarrow as pa

SIZES = (4, 8, 16)
UNITS = {"chrf": 16, "tiny COMET": 16, "wmt22-shape COMET": 2}
SHAPES = {"large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
          "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)}


def candidates(units: int, n: int) -> pa.Table:
    """UNITS units of N distinct candidates each, all passing LID: words of one sentence reordered."""
    from bench.translation import sentences
    from xmdata.schemas.translation import CANDIDATES

    rows = []
    for u, text in enumerate(sentences(units)):
        words = text.split()
        for rank in range(n):
            shift = rank % len(words)
            cand = " ".join(words[shift:] + words[:shift]) + ("" if rank < len(words) else f" {rank}")
            rows.append(dict(id=f"u{u}", column="caption", element=None, segment=0, source_text=text,
                             target_language="fr", status="ok", candidate=cand, beam_rank=rank, sequence_score=-0.1,
                             lid_label="fr", lid_prob=0.9, lid_label_raw="fr", lid_match=True, qe_score=None))
    return pa.Table.from_pylist(rows, schema=CANDIDATES.schema)


def random_models(shape: str, tiny_xlmr: str, folder: str) -> tuple:
    """(MBR spec, QE spec) of a random RegressionMetric and a random COMETKiwi-shaped UnifiedMetric, both on
    an XLM-R encoder of SHAPE (the tiny tokenizer: ids only), held in the registry under specs of their
    own, so the stages' get_model finds them loaded."""
    import shutil

    import torch
    from transformers import XLMRobertaConfig

    from xmdata.models.cometkiwi import CometKiwiEstimator
    from xmdata.models.comet_ref import CometReferenceScorer
    from xmdata.models.registry import MODELS
    from xmdata.models.tiny_comet_ref import regression_hparams
    from xmdata.tasks.translation.mbr_utilities import mbr_spec
    from xmdata.tasks.translation.options import FilterOptions

    encoder = os.path.join(folder, f"xlm-roberta-{shape}")
    shutil.copytree(tiny_xlmr, encoder)
    XLMRobertaConfig(vocab_size=250002, max_position_embeddings=514, type_vocab_size=1, pad_token_id=1,
                     bos_token_id=0, eos_token_id=2, **SHAPES[shape]).save_pretrained(encoder)
    from comet.models import RegressionMetric, UnifiedMetric

    torch.manual_seed(0)
    filters = FilterOptions(select="mbr", mbr_metric=f"/bench/random-wmt22-comet-{shape}",
                            qe_model=f"/bench/random-wmt22-cometkiwi-{shape}")
    scorer = CometReferenceScorer(mbr_spec(filters))
    scorer.model = RegressionMetric(**regression_hparams(encoder, [3072, 1024])).eval()
    MODELS.get("reference_scorer", scorer.spec, lambda: scorer)
    kiwi = {**regression_hparams(encoder, [3072, 1024]), "sent_layer": "mix", "word_layer": 24, "layer_norm": True,
            "input_segments": ["mt", "src"], "word_level_training": False}  # wmt22-cometkiwi-da's inputs
    for key in ("pool", "layer"):
        kiwi.pop(key)
    estimator = CometKiwiEstimator(filters.qe_spec())
    estimator.model = UnifiedMetric(**kiwi).eval()
    estimator.trainer = estimator.build_trainer()
    MODELS.get("quality_estimator", estimator.spec, lambda: estimator)
    return scorer.spec, estimator.spec


def per_unit(fn, table, units: int) -> float:
    from bench.cpu_meter import CpuMeter

    with CpuMeter() as meter:
        fn(table)
    return meter.cpu_s / units


def utilities_figures(tiny) -> list[dict]:
    from xmdata.models.registry import get_model
    from xmdata.tasks.translation.candidate_scores import CandidateQeShard, estimate_candidate_quality
    from xmdata.tasks.translation.mbr_utilities import MbrUtilitiesShard, mbr_spec, mbr_utilities
    from xmdata.tasks.translation.options import FilterOptions

    tiny_qe = FilterOptions(qe_model=tiny["cometkiwi"].name_or_path).qe_spec()
    specs = {"chrf": (mbr_spec(FilterOptions(select="mbr")), tiny_qe),
             "tiny COMET": (mbr_spec(FilterOptions(select="mbr", mbr_metric=tiny["comet_ref"].name_or_path)), tiny_qe)}
    shape = os.environ.get("BENCH_MBR_SHAPE", "large")
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        specs["wmt22-shape COMET"] = random_models(shape, os.path.join(os.path.dirname(tiny["comet_ref"].name_or_path),
                                                                       "xlm-roberta"), folder)
        print(f"random COMET and COMETKiwi, XLM-R {shape} shape, built in {time.perf_counter() - started:.1f} s",
              flush=True)
        get_model("quality_estimator", tiny_qe)
        get_model("reference_scorer", specs["tiny COMET"][0])  # loads apart from the work
        figures = []
        for name, (spec, qe) in specs.items():
            repeats = 1 if name.startswith("wmt22") else 3  # the least of 3: a shared machine's noise
            for n in SIZES:
                units = UNITS[name]
                table = candidates(units, n)
                shard = MbrUtilitiesShard(metric=spec, engine="bench")
                mbr_utilities(table.slice(0, n), shard)  # warm-up: one unit
                estimate_candidate_quality(table.slice(0, n), CandidateQeShard(model=qe))
                mbr_s = min(per_unit(lambda t: mbr_utilities(t, shard), table, units) for _ in range(repeats))
                qe_s = min(per_unit(lambda t: estimate_candidate_quality(t, CandidateQeShard(model=qe)), table, units)
                           for _ in range(repeats))
                pairs = n * (n - 1)
                print(f"{name:>18} N={n:>2}: {pairs:>3} utility pairs a unit, {mbr_s * 1000:9.2f} CPU-ms a unit "
                      f"({mbr_s / pairs * 1e6:8.1f} CPU-µs a pair); QE stage (N pairs, COMETKiwi of the same "
                      f"size) {qe_s * 1000:8.2f} CPU-ms a unit; MBR ÷ QE {mbr_s / qe_s:6.2f}", flush=True)
                figures.append({"metric": name, "n": n, "pairs_per_unit": pairs, "mbr_cpu_s_per_unit": round(mbr_s, 5),
                                "qe_cpu_s_per_unit": round(qe_s, 5), "mbr_over_qe": round(mbr_s / qe_s, 3)})
    return figures


def memo_identical(tiny) -> dict:
    import pyarrow.parquet as pq

    from xmdata.runtime import memo
    from xmdata.tasks.translation.mbr_utilities import mbr_spec, mbr_utilities_stage
    from xmdata.tasks.translation.options import FilterOptions

    stage = mbr_utilities_stage(mbr_spec(FilterOptions(select="mbr", mbr_metric=tiny["comet_ref"].name_or_path)),
                                "bench")
    table = candidates(8, 8)

    def run(location):
        with memo.shard_scope(memo.MemoOptions(location), stage.code_version, stage.memo_params) as scope:
            kept, _ = stage.fn(table, stage.params)
        sink = pa.BufferOutputStream()
        pq.write_table(kept, sink)
        return sink.getvalue().to_pybytes(), {k: c.as_dict() for k, c in scope.counts.items()}

    with tempfile.TemporaryDirectory() as folder:
        off, _ = run(None)
        on, first = run(folder)
        served, second = run(folder)
    same = off == on == served
    print(f"memo off / on / served: byte-identical {same}; first build {first.get('comet_mbr')}, "
          f"rebuild {second.get('comet_mbr')}", flush=True)
    return {"byte_identical": same, "first": first.get("comet_mbr"), "rebuild": second.get("comet_mbr")}


def reselection_figures(tiny) -> dict:
    """`translate --select mbr` (chrF) of 24 captions with the tiny models, then `select-translations
    --select qe_mbr --mbr-top-k 3` of it: CPU-s of each command, over every process (the command, and the
    service's command process and servers where it ran there: bench/cpu_meter.py)."""
    from bench.cpu_meter import CpuMeter
    from bench.translation import sentences

    xmdata = os.path.join(os.path.dirname(sys.executable), "xmdata")
    env = {**os.environ, "XMDATA_EXECUTOR": "inprocess"}

    def command(args) -> float:
        with CpuMeter() as meter:
            done = subprocess.run([xmdata, *args], env=env, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(done.stderr[-2000:])
        return meter.cpu_s

    with tempfile.TemporaryDirectory() as folder:
        source = os.path.join(folder, "in.jsonl")
        with open(source, "w", encoding="utf-8") as handle:
            handle.writelines(json.dumps({"id": f"r{i}", "caption": s}) + "\n" for i, s in enumerate(sentences(24)))
        run = os.path.join(folder, "run")
        build = command(["translate", source, "--columns", "caption", "--targets", "fr", "--model",
                         tiny["m2m100"].name_or_path, "--qe-model", tiny["cometkiwi"].name_or_path, "--num-beams", "8",
                         "--num-candidates", "8", "--lid-accept", "fr=fr,ar,as,ru", "--select", "mbr", "--shards", "2",
                         "--memo", "off", "--out", run])
        reselect = command(["select-translations", run, "--select", "qe_mbr", "--mbr-top-k", "3", "--out",
                            os.path.join(folder, "again")])
        with open(os.path.join(run, "run.json"), encoding="utf-8") as handle:
            stages = json.load(handle)
    mbr_s, qe_s = stages["mbr_utilities"]["work_s"], stages["candidate_qe"]["work_s"]  # model loads apart
    print(f"in the build, 24 captions × 8 candidates: mbr_utilities (chrF) {mbr_s:.2f} s ÷ candidate_qe (tiny "
          f"COMETKiwi) {qe_s:.2f} s = {mbr_s / qe_s:.2f}", flush=True)
    print(f"re-selection without a model {reselect:.1f} CPU-s ÷ the build {build:.1f} CPU-s = {reselect / build:.3f}",
          flush=True)
    return {"build_cpu_s": round(build, 2), "reselect_cpu_s": round(reselect, 2), "ratio": round(reselect / build, 4),
            "mbr_stage_s": mbr_s, "qe_stage_s": qe_s}


def main() -> dict:
    import torch

    from xmdata.models.tiny import cached_tiny_models

    torch.set_num_threads(1)  # CPU-s without idle threads spinning: comparable between the rows

    tiny = cached_tiny_models(seed=0)
    return {"utilities": utilities_figures(tiny), "memo": memo_identical(tiny), "reselection": reselection_figures(tiny)}


if __name__ == "__main__":
    main()
