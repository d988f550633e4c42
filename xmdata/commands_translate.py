"""What `xmdata translate` and `xmdata select-translations` do; imported after argument parsing."""
from __future__ import annotations

import os

from xmdata.cli_translate import engine_arguments, qe_arguments
from xmdata.runtime import storage
from xmdata.schemas import ContractError


def translate(args) -> int:
    from pydantic import ValidationError

    from xmdata.commands import _run_flow
    from xmdata.flows.translate import preflight, translate_flow
    from xmdata.flows.translation_options import FilterOptions, TranslatorOptions
    from xmdata.tasks.translation_languages import parse_lid_accept

    try:
        translator = TranslatorOptions(
            backend=args.backend, model=args.model, revision=args.revision, device=args.device, dtype=args.dtype,
            num_beams=args.num_beams, num_candidates=args.num_candidates, batch_tokens=args.batch_tokens,
            max_new_tokens_ratio=args.max_new_tokens_ratio, max_new_tokens_extra=args.max_new_tokens_extra,
            split_sentences=args.split_sentences, **engine_arguments(args))
        filters = FilterOptions(lid_model=args.lid_model, min_lid_prob=args.min_lid_prob,
                                lid_accept=parse_lid_accept(args.lid_accept), qe_model=args.qe_model,
                                qe_revision=args.qe_revision, qe_device=args.device,
                                qe_batch_size=args.qe_batch_size, min_qe=args.min_qe, **qe_arguments(args))
    except ValidationError as exc:
        raise ContractError("; ".join(e["msg"] for e in exc.errors())) from exc
    # Fail in seconds, before a server starts: bad input, missing model paths, unsupported languages.
    preflight(args.input, args.columns, args.source, args.targets, translator, filters)
    _run_flow(translate_flow, args, input_path=storage.absolute(args.input), columns=args.columns,
              targets=args.targets, source=args.source, translator=translator, filters=filters)
    print(open(os.path.join(args.out, "translation_report.md"), encoding="utf-8").read())
    return 0


def select_translations(args) -> int:
    from xmdata.tasks.translation_outputs import write_selection

    report = write_selection(args.run_dir, args.out, args.min_lid_prob, args.min_qe)
    print(f"thresholds: min_lid_prob={report['thresholds']['min_lid_prob']}, "
          f"min_qe={report['thresholds']['min_qe']}")
    print(report["markdown"])
    print(f"-> {os.path.abspath(args.out or args.run_dir)}")
    return 0


def translate_qa(args) -> int:
    from pydantic import ValidationError

    from xmdata.commands import _run_flow
    from xmdata.flows.translate_qa import preflight_qa, translate_qa_flow
    from xmdata.flows.translation_options import FilterOptions, TranslatorOptions
    from xmdata.tasks.qa_input import DEFAULT_EXCLUDED_TASKS
    from xmdata.tasks.translation_languages import parse_lid_accept

    try:
        translator = TranslatorOptions(
            backend=args.backend, model=args.model, revision=args.revision, device=args.device, dtype=args.dtype,
            num_beams=args.num_beams, num_candidates=args.num_candidates, batch_tokens=args.batch_tokens,
            max_new_tokens_ratio=args.max_new_tokens_ratio, max_new_tokens_extra=args.max_new_tokens_extra,
            **engine_arguments(args))
        filters = FilterOptions(lid_model=args.lid_model, min_lid_prob=args.min_lid_prob,
                                lid_accept=parse_lid_accept(args.lid_accept), qe_model=args.qe_model,
                                qe_device=args.device, min_qe=args.min_qe,
                                **qe_arguments(args)) if args.score_candidates else None
    except ValidationError as exc:
        raise ContractError("; ".join(e["msg"] for e in exc.errors())) from exc
    excluded = list(DEFAULT_EXCLUDED_TASKS) if args.exclude_tasks is None else args.exclude_tasks
    preflight_qa(args.input, args.source, args.targets, translator, filters)  # fail before a server starts
    _run_flow(translate_qa_flow, args, input_path=storage.absolute(args.input), targets=args.targets,
              translator=translator, filters=filters, exclude_tasks=excluded, per_task=args.per_task,
              source=args.source)
    print(open(os.path.join(args.out, "qa_report.md"), encoding="utf-8").read())
    return 0


def convert_model(args) -> int:
    """`xmdata models convert`: the conversion a ctranslate2 run would make on first use, made now."""
    from xmdata.flows.translation_options import TranslatorOptions
    from xmdata.models.ct2_convert import ensure_converted

    spec = TranslatorOptions(backend=args.backend, model=args.model, revision=args.revision, device=args.device,
                             dtype=args.dtype, engine="ctranslate2",
                             **({"compute_type": args.compute_type} if args.compute_type else {})).spec()
    print(ensure_converted(spec, spec.option("compute_type")))
    return 0
