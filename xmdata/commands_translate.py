"""What `xmdata translate` and `xmdata select-translations` do; imported after argument parsing."""
from __future__ import annotations

from xmdata.flow_run import run_flow
from xmdata.runtime import storage


def translate(args) -> int:
    from xmdata.flows.translate import preflight, translate_flow

    p = args.params  # TranslateParams, validated by the CLI
    # Fail in seconds, before a server starts: bad input, missing model paths, unsupported languages.
    # The flow then reads the input to build, and does not check the models again.
    preflight(args.input, p)
    run_flow(translate_flow, args, input_path=storage.absolute(args.input), params=p, models_checked=True)
    print(storage.read_text(storage.join(args.out, "translation_report.md")))
    return 0


def select_translations(args) -> int:
    from xmdata.runtime.folder_lock import one_writer
    from xmdata.runtime.storage_check import check_location
    from xmdata.tasks.translation.outputs import read_run, write_selection

    check_location(args.run_dir, "RUN_DIR")  # a store that cannot be read stops here, in one line
    run = read_run(args.run_dir)
    with one_writer(args.out or args.run_dir):  # not beside a translate run or another selection
        report = write_selection(args.run_dir, *run, args.out, args.min_lid_prob, args.min_qe)
    print(f"thresholds: min_lid_prob={report['thresholds']['min_lid_prob']}, "
          f"min_qe={report['thresholds']['min_qe']}")
    print(report["markdown"])
    print(f"-> {storage.absolute(args.out or args.run_dir)}")
    return 0


def translate_qa(args) -> int:
    from xmdata.flows.translate_qa import preflight_qa, translate_qa_flow

    p = args.params  # TranslateQaParams, validated by the CLI
    preflight_qa(args.input, p)  # fail before a server starts; the flow does not check the models again
    run_flow(translate_qa_flow, args, input_path=storage.absolute(args.input), params=p, models_checked=True)
    print(storage.read_text(storage.join(args.out, "qa_report.md")))
    return 0


def convert_model(args) -> int:
    """`xmdata models convert`: the conversion a ctranslate2 run would make on first use, made now."""
    from xmdata.tasks.translation.options import TranslatorOptions
    from xmdata.models.ct2_convert import ensure_converted

    spec = TranslatorOptions.model_validate({**args.params.model_dump(exclude_unset=True), "model": args.model,
                                             "engine": "ctranslate2"}).spec()
    print(ensure_converted(spec, spec.option("compute_type")))
    return 0
