"""`xmdata translate` and `xmdata select-translations` arguments (light: no heavy imports)."""
from __future__ import annotations

import argparse

from xmdata.cli_params import ParamFlags, add_param_flags, flag_of
from xmdata.tasks.translation.options import TranslatorOptions
from xmdata.tasks.translation.params import TranslateParams, TranslateQaParams  # pydantic only: nothing heavy


def _qe_follows_device(data: dict, create: bool) -> None:
    """The command line's --device places the translator and COMETKiwi alike."""
    device = data.get("translator", {}).get("device")
    if device and (create or "filters" in data):
        data.setdefault("filters", {}).setdefault("qe_device", device)


def _translate_aliases(args: argparse.Namespace, data: dict) -> None:
    _qe_follows_device(data, create=True)


def _translate_qa_aliases(args: argparse.Namespace, data: dict) -> None:
    """--score-candidates turns the filters on; their options without it would be silently unused."""
    if "filters" in data and not args.score_candidates:
        raise ValueError(", ".join(flag_of(k) for k in data["filters"]) + ": only with --score-candidates")
    if args.score_candidates:
        data.setdefault("filters", {})
    _qe_follows_device(data, create=False)


def probability(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {value}")
    return value


def add_translation_commands(sub, add_run_options) -> None:
    tr = sub.add_parser("translate", help="beam candidates -> language ID -> COMETKiwi -> best translation")
    tr.add_argument("input", help="Parquet/CSV/JSONL with an id column and the text columns")
    add_param_flags(tr, ParamFlags(TranslateParams, skip=("qe_device",), aliases=_translate_aliases))
    tr.add_argument("--out", required=True)
    tr.add_argument("--dry-run", action="store_true",
                    help="say how many beam searches the build would run and how many the memo holds; "
                         "load no model, write nothing")
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
    add_param_flags(qa, ParamFlags(TranslateQaParams, skip=("qe_device", "split_sentences"),
                                   aliases=_translate_qa_aliases))
    qa.add_argument("--score-candidates", action="store_true",
                    help="label every extracted candidate with LID and COMETKiwi; keep the best passing one")
    qa.add_argument("--out", required=True)
    add_run_options(qa)


def add_convert_command(models_sub) -> None:
    cv = models_sub.add_parser("convert", help="convert an M2M100 or MADLAD checkpoint for --engine ctranslate2 "
                               "(cached beside it, keyed by its sha256 and the compute type)")
    cv.add_argument("model", help="hub id or local path of the Hugging Face checkpoint")
    # The translator's own options that decide the conversion; the engine is ctranslate2 by definition.
    decisive = ("backend", "revision", "device", "dtype", "compute_type")
    add_param_flags(cv, ParamFlags(TranslatorOptions, skip=tuple(set(TranslatorOptions.model_fields) - set(decisive))))
