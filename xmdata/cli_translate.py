"""`xmdata translate` and `xmdata select-translations` arguments (light: no heavy imports)."""
from __future__ import annotations

import argparse

from xmdata.models.ct2_convert import COMPUTE_TYPES, ENGINES  # constants only: nothing heavy


def add_engine_options(p: argparse.ArgumentParser) -> None:
    """--engine and --compute-type; defaults (None) are TranslatorOptions', declared there once."""
    p.add_argument("--engine", choices=ENGINES, default=None,
                   help="beam search in transformers (default) or CTranslate2 (converted once, cached beside the model)")
    p.add_argument("--compute-type", choices=COMPUTE_TYPES, default=None,
                   help="CTranslate2 compute type (default auto: int8 on CPU, --dtype or bfloat16 on a GPU)")


def add_qe_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--qe-precision", choices=["float32", "bfloat16", "float16"], default=None,
                   help="COMETKiwi weights and forward (default float32; half types halve GPU memory, float16 GPU only)")
    p.add_argument("--qe-batch-tokens", type=int, default=None,
                   help="padded tokens per COMETKiwi forward, pairs sorted by length (default 16384)")


def engine_arguments(args) -> dict:
    return {k: getattr(args, k) for k in ("engine", "compute_type") if getattr(args, k, None) is not None}


def qe_arguments(args) -> dict:
    return {k: getattr(args, k) for k in ("qe_precision", "qe_batch_tokens") if getattr(args, k, None) is not None}


def comma_list(text: str) -> list[str]:
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list")
    if repeated := sorted({item for item in items if items.count(item) > 1}):
        raise argparse.ArgumentTypeError(f"{', '.join(repeated)} given more than once")
    return items


def probability(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {value}")
    return value


def add_translation_commands(sub, add_run_options, positive_int) -> None:
    tr = sub.add_parser("translate", help="beam candidates -> language ID -> COMETKiwi -> best translation")
    tr.add_argument("input", help="Parquet/CSV/JSONL with an id column and the text columns")
    tr.add_argument("--columns", type=comma_list, required=True,
                    help="text columns, plain or list of strings (e.g. caption,refs)")
    tr.add_argument("--source", default="en", help="source language (default en)")
    tr.add_argument("--targets", type=comma_list, required=True, help="target languages in the backend's codes")
    tr.add_argument("--backend", choices=["m2m100", "madlad"], default="m2m100")
    tr.add_argument("--model", default=None, help="hub id or local path (default facebook/m2m100_1.2B or "
                                                  "google/madlad400-3b-mt)")
    tr.add_argument("--revision", default=None, help="hub revision of --model")
    tr.add_argument("--num-beams", type=positive_int, default=100)
    tr.add_argument("--num-candidates", type=positive_int, default=25)
    tr.add_argument("--batch-tokens", type=positive_int, default=65536,
                    help="padded input tokens × beams per generate() call (default 65536)")
    tr.add_argument("--max-new-tokens-ratio", type=float, default=2.0)
    tr.add_argument("--max-new-tokens-extra", type=int, default=10)
    tr.add_argument("--split-sentences", action="store_true",
                    help="split texts longer than the model takes by sentence (default: reject as too_long)")
    tr.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1 … (translator and QE)")
    tr.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32")
    add_engine_options(tr)
    tr.add_argument("--lid-model", default="lid.176", help="'lid.176' (bundled) or a fastText model path")
    tr.add_argument("--min-lid-prob", type=probability, default=0.5)
    tr.add_argument("--lid-accept", default=None, help="extra LID labels per target: 'no=no,nn;tl=tl'")
    tr.add_argument("--qe-model", default="Unbabel/wmt22-cometkiwi-da", help="COMETKiwi hub id or local path")
    tr.add_argument("--qe-revision", default=None)
    tr.add_argument("--qe-batch-size", type=positive_int, default=32)
    add_qe_options(tr)
    tr.add_argument("--min-qe", type=float, default=None, help="reject chosen translations below this QE")
    tr.add_argument("--out", required=True)
    add_run_options(tr)

    sel = sub.add_parser("select-translations",
                         help="re-select translations from a run's candidates with new thresholds (no model)")
    sel.add_argument("run_dir", help="the --out folder of a `xmdata translate` run")
    sel.add_argument("--min-lid-prob", type=probability, default=None, help="default: the run's")
    sel.add_argument("--min-qe", type=float, default=None, help="default: the run's")
    sel.add_argument("--out", default=None, help="where to write (default: the run folder)")

    qa = sub.add_parser("translate-qa", help="Question/Answer packed translation of MMEB-style instances (xVLM2Vec)")
    qa.add_argument("input", help="JSONL/Parquet/CSV: id, task, query, positive[, negative, image] "
                                  "(MMEB's qry/pos_text/neg_text/subset accepted)")
    qa.add_argument("--targets", type=comma_list, required=True, help="target languages in the backend's codes")
    qa.add_argument("--source", default="en", help="source language (default en)")
    qa.add_argument("--backend", choices=["m2m100", "madlad"], default="madlad")
    qa.add_argument("--model", default=None, help="hub id or local path (default google/madlad400-3b-mt)")
    qa.add_argument("--revision", default=None)
    qa.add_argument("--exclude-tasks", type=lambda t: [x.strip() for x in t.split(",") if x.strip()],
                    default=None, help="tasks left out (default: ChartQA,DocVQA,HatefulMemes,InfographicsVQA,"
                                       "ScienceQA,VisDial; '' keeps every task)")
    qa.add_argument("--per-task", type=positive_int, default=10000, help="first N instances per task (default 10000)")
    qa.add_argument("--num-beams", type=positive_int, default=1, help="default 1: plain generation, as the method")
    qa.add_argument("--num-candidates", type=positive_int, default=1)
    qa.add_argument("--batch-tokens", type=positive_int, default=65536)
    qa.add_argument("--max-new-tokens-ratio", type=float, default=2.0)
    qa.add_argument("--max-new-tokens-extra", type=int, default=10)
    qa.add_argument("--device", default="cpu")
    qa.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32")
    add_engine_options(qa)
    qa.add_argument("--score-candidates", action="store_true",
                    help="label every extracted candidate with LID and COMETKiwi; keep the best passing one")
    qa.add_argument("--lid-model", default="lid.176")
    qa.add_argument("--min-lid-prob", type=probability, default=0.5)
    qa.add_argument("--lid-accept", default=None, help="extra LID labels per target: 'no=no,nn'")
    qa.add_argument("--qe-model", default="Unbabel/wmt22-cometkiwi-da")
    add_qe_options(qa)
    qa.add_argument("--min-qe", type=float, default=None)
    qa.add_argument("--out", required=True)
    add_run_options(qa)


def add_convert_command(models_sub) -> None:
    cv = models_sub.add_parser("convert", help="convert an M2M100 or MADLAD checkpoint for --engine ctranslate2 "
                               "(cached beside it, keyed by its sha256 and the compute type)")
    cv.add_argument("model", help="hub id or local path of the Hugging Face checkpoint")
    cv.add_argument("--backend", choices=["m2m100", "madlad"], default="m2m100")
    cv.add_argument("--revision", default=None)
    cv.add_argument("--device", default="cpu", help="where it will run: picks the auto compute type")
    cv.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32")
    cv.add_argument("--compute-type", choices=COMPUTE_TYPES, default=None)
