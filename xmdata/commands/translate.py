"""`xmdata translate`, `select-translations` and `translate-qa`: translate texts (beam candidates,
language ID, COMETKiwi, the best one), re-select from a run's candidates, translate packed Q/A."""
from __future__ import annotations

import argparse
import typing

from pydantic import ValidationError

from xmdata.cli_command import Command
from xmdata.cli_options import add_run_options
from xmdata.cli_params import ParamFlags, add_param_flags, flag_error, flag_of
from xmdata.tasks.translation.mbr_options import MBR_FIELDS, MbrOptions
from xmdata.tasks.translation.options import TranslatorOptions
from xmdata.tasks.translation.params import TranslateParams, TranslateQaParams  # pydantic only: nothing heavy

GUIDE = "how-to/translate.md"


def _translate_qa_aliases(args: argparse.Namespace, data: dict) -> None:
    """--score-candidates turns the filters on; their options without it would be silently unused."""
    if "filters" in data and not args.score_candidates:
        raise ValueError(", ".join(flag_of(k) for k in data["filters"]) + ": only with --score-candidates")
    if args.score_candidates:
        data.setdefault("filters", {})
    _translate_aliases(args, data)


TRANSLATOR_KEYS = ", ".join(TranslatorOptions.model_fields)


def _engine(text: str) -> dict:
    """--translator backend=nllb,model=PATH,num_beams=8 -> the engine's TranslatorOptions fields (the
    model validates them: an unknown key or value is refused as a config's would be)."""
    engine = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--translator: expected KEY=VALUE items separated by ',' (keys: {TRANSLATOR_KEYS}), "
                             f"got {item!r}")
        engine[key.strip()] = value.strip()
    if not engine:
        raise ValueError("--translator: an empty engine; give at least backend=…")
    return engine


def _translate_aliases(args: argparse.Namespace, data: dict) -> None:
    """Each --translator is one engine of a pool; the translator flags given beside them (--num-beams
    8) apply to every engine that does not set its own."""
    if getattr(args, "translators", None):
        shared = data.get("translator", {})
        data["translator"] = [{**shared, **_engine(engine)} for engine in args.translators]


def probability(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {value}")
    return value


def add_pool_argument(parser: argparse.ArgumentParser) -> None:
    """--translator, repeatable: the engines of a pool (translate and translate-qa alike)."""
    parser.add_argument("--translator", dest="translators", action="append", metavar="KEY=VALUE,…",
                        help="one engine of a pool (repeat for each; --targets are then the project's codes): "
                             f"backend=nllb,model=PATH,… with keys {TRANSLATOR_KEYS}; the translator flags above "
                             "apply to every engine that does not set its own")


def add_translate_arguments(tr: argparse.ArgumentParser) -> None:
    tr.add_argument("input", help="Parquet/CSV/JSONL with an id column and the text columns")
    add_param_flags(tr, ParamFlags(TranslateParams, skip=("qe_device",), aliases=_translate_aliases))
    add_pool_argument(tr)
    tr.add_argument("--out", required=True)
    tr.add_argument("--dry-run", action="store_true",
                    help="say how many beam searches the build would run and how many the memo holds; "
                         "load no model, write nothing")
    add_run_options(tr)


def translate(args: argparse.Namespace) -> int:
    from xmdata.flow_run import run_flow
    from xmdata.flows.translate import preflight, translate_flow
    from xmdata.runtime import storage

    p = args.params  # TranslateParams, validated by the CLI
    if args.dry_run:
        from xmdata.runtime import memo
        from xmdata.tasks.translation.memo_plan import memo_plan, plan_text

        print(plan_text(memo_plan(args.input, p, memo.MemoOptions(memo.resolve_location(args.memo)))))
        return 0
    # Fail in seconds, before a server starts: bad input, missing model paths, unsupported languages.
    # The flow then reads the input to build, and does not check the models again.
    preflight(args.input, p)
    run_flow(translate_flow, args, input_path=storage.absolute(args.input), params=p, models_checked=True)
    print(storage.read_text(storage.join(args.out, "translation_report.md")))
    return 0


def add_select_arguments(sel: argparse.ArgumentParser) -> None:
    sel.add_argument("run_dir", help="the --out folder of a `xmdata translate` run")
    sel.add_argument("--min-lid-prob", type=probability, default=None, help="default: the run's")
    sel.add_argument("--min-qe", type=float, default=None, help="default: the run's")
    for name in ("select", "mbr_top_k"):  # declared once, on the params (mbr_options.py); validated by them
        field = MbrOptions.model_fields[name]
        choices = {"choices": typing.get_args(field.annotation)} if name == "select" else {"type": int}
        sel.add_argument(flag_of(name), default=None, help=f"{field.description} (default: the run's)", **choices)
    sel.add_argument("--out", default=None, help="where to write (default: the run folder)")


def reselected(params: TranslateParams, select: str | None, top_k: int | None) -> TranslateParams:
    """The run's params with another selection, refused by the params models as a build's would be."""
    if select is None and top_k is None:
        return params
    filters = params.filters.model_dump()
    if select is not None:
        filters["select"] = select
        if select != "qe_mbr" and top_k is None:
            filters.pop("mbr_top_k", None)  # the run's k, kept only for qe_mbr
    if top_k is not None:
        filters["mbr_top_k"] = top_k
    try:
        return TranslateParams.model_validate({**params.model_dump(), "filters": filters})
    except ValidationError as exc:
        leaves = set(MbrOptions.model_fields)
        raise ValueError("; ".join(flag_error(e, leaves) for e in exc.errors())) from None


def select_translations(args: argparse.Namespace) -> int:
    from xmdata.runtime import storage
    from xmdata.runtime.storage_check import check_location
    from xmdata.tasks.translation.outputs import read_run, write_selection

    check_location(args.run_dir, "RUN_DIR")  # a store that cannot be read stops here, in one line
    from xmdata.runtime.folder_lock import one_writer

    from xmdata.schemas import ContractError

    params, list_columns = read_run(args.run_dir)
    try:
        params = reselected(params, args.select, args.mbr_top_k)
    except ValueError as exc:
        raise ContractError(str(exc)) from None
    with one_writer(args.out or args.run_dir):  # not beside a translate run or another selection
        report = write_selection(args.run_dir, params, list_columns, args.out, args.min_lid_prob, args.min_qe)
    print(f"thresholds: min_lid_prob={report['thresholds']['min_lid_prob']}, "
          f"min_qe={report['thresholds']['min_qe']}")
    if params.filters.uses_mbr:
        print(f"select: {params.filters.select} ({params.filters.mbr_metric} utilities, read from the run)")
    print(report["markdown"])
    print(f"-> {storage.absolute(args.out or args.run_dir)}")
    return 0


def add_qa_arguments(qa: argparse.ArgumentParser) -> None:
    qa.add_argument("input", help="JSONL/Parquet/CSV: id, task, query, positive[, negative, image] "
                                  "(MMEB's qry/pos_text/neg_text/subset accepted)")
    add_param_flags(qa, ParamFlags(TranslateQaParams, skip=("qe_device", "split_sentences", *MBR_FIELDS),  # QE only
                                   aliases=_translate_qa_aliases))
    add_pool_argument(qa)
    qa.add_argument("--score-candidates", action="store_true",
                    help="label every extracted candidate with LID and COMETKiwi; keep the best passing one")
    qa.add_argument("--out", required=True)
    add_run_options(qa)


def translate_qa(args: argparse.Namespace) -> int:
    from xmdata.flow_run import run_flow
    from xmdata.flows.translate_qa import preflight_qa, translate_qa_flow
    from xmdata.runtime import storage

    p = args.params  # TranslateQaParams, validated by the CLI
    preflight_qa(args.input, p)  # fail before a server starts; the flow does not check the models again
    run_flow(translate_qa_flow, args, input_path=storage.absolute(args.input), params=p, models_checked=True)
    print(storage.read_text(storage.join(args.out, "qa_report.md")))
    return 0


TRANSLATE = Command("translate", "beam candidates -> language ID -> COMETKiwi -> best translation",
                    add_translate_arguments, translate, reads_tables=True, guide=GUIDE)
SELECT_TRANSLATIONS = Command("select-translations", "re-select translations from a run's candidates with new "
                              "thresholds, or by MBR from its stored utilities (no model)", add_select_arguments,
                              select_translations, reads_tables=True,
                              guide=GUIDE)
TRANSLATE_QA = Command("translate-qa", "Question/Answer packed translation of MMEB-style instances (xVLM2Vec)",
                       add_qa_arguments, translate_qa, reads_tables=True, guide="how-to/translate-qa.md")
