"""One declaration per stage: the CLI's flags, the flow's parameter (the UI's form) and the release
config's section are the same params model, and each refuses a misspelt or ill-typed option."""
import argparse
import typing

import pytest

from xmdata.cli import main
from xmdata.cli_parser import build_parser
from xmdata.cli_params import ParamFlags, add_param_flags, flag_of, leaf_fields
from xmdata.data import sample_path
from xmdata.flows.release_config import ReleaseConfig

# command: (flow module.function, release-config section or None)
STAGES = {"identify-language": ("language_id.identify_language_flow", "language_id"),
          "select-images": ("select_images.select_images_flow", "image_selection"),
          "translate": ("translate.translate_flow", "translation"),
          "translate-qa": ("translate_qa.translate_qa_flow", "qa_translation"),
          "score": ("score.score_flow", "scoring"),
          "download-images": ("download_images.download_images_flow", "image_download")}
# What a section adds to its params: the inputs it reads, and how a release combines stages.
SECTION_INPUTS = {"input", "images", "only_source_language", "include_translations"}
# Fields spelt otherwise on the command line (ParamFlags.aliases): named here so a new one is a decision.
CLI_SPELLINGS = {"embeddings": "--embeddings --embedding-dtype", "qe_device": "--device",
                 "split_sentences": "(QA translates a packed instance whole)", "metric": "the sub-command",
                 **dict.fromkeys(("select", "mbr_metric", "mbr_top_k"), "(QA chooses by QE only)")}
# --dry-run: the command line's look at the memo before a build; a flow run is a build.
CLI_ONLY = {"-h", "--help", "--out", "--map", "--embeddings", "--embedding-dtype", "--score-candidates", "--dry-run",
            "--translator"}  # --translator: the `translator` field as a list (a pool), one engine a flag


def _run_options() -> set[str]:
    from xmdata.cli_command import CommandParser
    from xmdata.cli_options import add_run_options

    parser = CommandParser()
    add_run_options(parser)
    return {s for a in parser.options for s in a.option_strings}


def _commands(parser=None) -> dict[str, argparse.ArgumentParser]:
    """Every leaf sub-command by its path: 'translate', 'evaluate valse', …"""
    found = {}
    for name, (sub, _) in (parser or build_parser()).commands.items():
        found[name] = sub
        found.update({f"{name} {k}": v for k, v in _commands(sub).items()})
    return found


def _flow(path: str):
    import importlib

    module, name = path.rsplit(".", 1)
    return getattr(importlib.import_module(f"xmdata.flows.{module}"), name)


def _check_flags_match(command: argparse.ArgumentParser, flags: ParamFlags) -> None:
    options = {s for a in command.options for s in a.option_strings}
    leaves = [path[-1] for path, _, _ in leaf_fields(flags.model)]
    assert set(flags.skip) <= set(CLI_SPELLINGS), f"{flags.model.__name__}: a field with no flag: {flags.skip}"
    missing = [flag_of(name) for name in leaves if name not in flags.skip and flag_of(name) not in options]
    assert not missing, f"{flags.model.__name__}: no CLI flag for {missing}"


@pytest.mark.parametrize("command", sorted(STAGES))
def test_cli_flags_flow_parameter_and_release_section_are_one_declaration(command):
    flow_path, section = STAGES[command]
    flow, parser = _flow(flow_path), _commands()[command]
    flags: ParamFlags = parser.get_default("param_flags")
    assert typing.get_type_hints(flow.fn)["params"] is flags.model  # the UI's form is the CLI's flags
    _check_flags_match(parser, flags)
    options = {s for a in parser.options for s in a.option_strings}
    flow_flags = {flag_of(name) for name in typing.get_type_hints(flow.fn) if name not in ("params", "return")}
    # --models-checked, --checked: how the command line tells the flow it made the run's checks before any
    # server started, so that they run once.
    assert flow_flags - {"--input-path", "--models-checked", "--checked"} <= options, f"{command}: flow parameters with no flag"
    # …and a flag that is neither a param, a flow parameter nor a run option is a declaration of its own.
    params_flags = {flag_of(path[-1]) for path, _, _ in leaf_fields(flags.model)}
    params_flags |= {"--no-" + f[2:] for f in params_flags}  # a boolean that defaults to true: BooleanOptionalAction
    assert options - params_flags - flow_flags - _run_options() - CLI_ONLY == set()
    declared = typing.get_args(ReleaseConfig.model_fields[section].annotation)[0]
    assert issubclass(declared, flags.model), f"{section}: not {flags.model.__name__}"
    assert set(declared.model_fields) - set(flags.model.model_fields) <= SECTION_INPUTS


def test_every_metric_is_an_evaluate_command_and_a_case_of_the_flows_form():
    from prefect.utilities.callables import parameter_schema

    from xmdata.flows.evaluate import evaluate_flow
    from xmdata.tasks.evaluation.params import METRICS, EvaluationParams

    commands = _commands()
    assert typing.get_type_hints(evaluate_flow.fn, include_extras=True)["params"] == EvaluationParams
    for metric, params in METRICS.items():
        _check_flags_match(commands[f"evaluate {metric}"], commands[f"evaluate {metric}"].get_default("param_flags"))
    schema = parameter_schema(evaluate_flow).model_dump_for_openapi()
    assert set(schema["properties"]["params"]["discriminator"]["mapping"]) == set(METRICS)
    pascal = schema["definitions"]["Pascal50sParams"]
    assert pascal["additionalProperties"] is False and pascal["properties"]["seed"]["minimum"] == 0


def test_the_helper_takes_help_choices_and_defaults_from_the_model():
    from xmdata.tasks.stage_params import SelectImagesParams

    parser = argparse.ArgumentParser()
    add_param_flags(parser, ParamFlags(SelectImagesParams))
    text = " ".join(parser.format_help().split())
    assert "{greedy,optimal}" in text and "K images per language (default 100)" in text
    with pytest.raises(SystemExit, match="^2$"):  # argparse: a usage error
        parser.parse_args(["--strategy", "best"])


@pytest.mark.parametrize("argv, expected", [
    (["translate", "IN", "--targets", "fr", "--num-beams", "many"], "--num-beams: Input should be a valid integer"),
    (["translate-qa", "IN", "--targets", "fr", "--min-lid-prob", "0.4"], "--min-lid-prob: only with --score-candidates"),
    (["score", "IN", "--clip-model", "x", "--batch-size", "0"], "--batch-size: Input should be greater than or equal to 1"),
    (["evaluate", "backretrieval", "IN", "--k", "0"], "--k: Input should be greater than or equal to 1"),
    (["score", "IN", "--clip-model", "x", "--embedding-dtype", "float32"], "--embedding-dtype: only with --embeddings"),
])
def test_an_ill_typed_option_is_refused_by_the_cli_in_one_line(argv, expected, tmp_path, capsys):
    out = tmp_path / "out"
    assert main([a.replace("IN", sample_path("captions.jsonl")) for a in argv] + ["--out", str(out)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"xmdata: error: {expected}"), lines
    assert not out.exists()


def test_a_misspelt_option_is_refused_by_the_config_loader(tmp_path):
    from xmdata.flows.release_config import load_release_config
    from xmdata.schemas import ContractError

    (tmp_path / "captions.jsonl").write_text(open(sample_path("captions.jsonl")).read())
    for section, error in [("translation: {input: captions.jsonl, targets: [fr], translator: {num_beam: 8}}",
                            "translation.translator.num_beam: Extra inputs are not permitted"),
                           ("scoring: {input: captions.jsonl, images: captions.jsonl, clip_model: x, weight: w}",
                            "scoring.weight: Input should be a valid number")]:
        (tmp_path / "release.yaml").write_text(f"name: x\n{section}\n")
        with pytest.raises(ContractError, match=error):
            load_release_config(str(tmp_path / "release.yaml"))


def test_a_partial_qa_translator_means_the_same_from_the_cli_and_a_config(tmp_path):
    """Set of the QA translator goes over the method's translator (MADLAD, one beam) wherever it is
    set; split_sentences, which a packed instance cannot take, is refused rather than ignored."""
    from xmdata.cli_params import params_from_args
    from xmdata.flows.release_config import load_release_config
    from xmdata.schemas import ContractError

    from_cli = params_from_args(build_parser().parse_args(["translate-qa", "IN", "--targets", "fr", "--num-beams", "4",
                                                           "--out", "o"]))
    (tmp_path / "qa.jsonl").write_text(open(sample_path("mmeb.jsonl")).read())
    (tmp_path / "release.yaml").write_text("name: x\nqa_translation: {input: qa.jsonl, targets: [fr], "
                                           "translator: {num_beams: 4}}\n")
    from_config = load_release_config(str(tmp_path / "release.yaml"))[0].qa_translation
    for params in (from_cli, from_config):
        assert (params.translator.backend, params.translator.num_beams, params.translator.num_candidates) == \
            ("madlad", 4, 1)
    (tmp_path / "release.yaml").write_text("name: x\nqa_translation: {input: qa.jsonl, targets: [fr], "
                                           "translator: {split_sentences: true}}\n")
    with pytest.raises(ContractError, match="a packed instance is translated whole"):
        load_release_config(str(tmp_path / "release.yaml"))


def test_a_misspelt_option_is_refused_by_the_flows_form_before_the_run():
    from prefect.exceptions import ParameterTypeError

    from xmdata.flows.evaluate import evaluate_flow
    from xmdata.flows.translate import translate_flow

    with pytest.raises(ParameterTypeError, match="params.translator.num_beam"):
        translate_flow.validate_parameters({"input_path": "x", "out": "o",
                                            "params": {"targets": ["fr"], "translator": {"num_beam": 3}}})
    with pytest.raises(ParameterTypeError, match="score_colum"):
        evaluate_flow.validate_parameters({"input_path": "x", "out": "o",
                                           "params": {"metric": "correlation", "score_colum": "s"}})


def test_shard_params_hash_as_the_dicts_before_them_so_finished_shards_stay_finished():
    """A completion record written before the params were models must still match (no shard redone)."""
    from xmdata.models.base import ModelSpec
    from xmdata.runtime.atomic import hash_params
    from xmdata.tasks.translation.candidate_scores import candidate_lid_stage, candidate_qe_stage
    from xmdata.tasks.translation.language_id import language_id_stage
    from xmdata.tasks.qa.translate import translate_qa_stage
    from xmdata.tasks.scoring.score import clip_score_stage
    from xmdata.tasks.stage_params import ScoringParams
    from xmdata.tasks.translation.params import TranslateParams, TranslateQaParams
    from xmdata.tasks.translation.translate import translate_stage

    spec = ModelSpec("m2m100", "/m", options={"b": 1, "a": 2})
    generation = {"num_beams": 4, "num_candidates": 2, "batch_tokens": 64, "max_new_tokens_ratio": 2.0,
                  "max_new_tokens_extra": 10, "batch_size": 8}  # batch_size: since translate's version 2
    texts = TranslateParams(columns=["text"], targets=["fr"], translator=generation)
    qa = TranslateQaParams(targets=["fr"], translator=generation)
    labels = {"fr": {"question": ["Question"], "answer": ["Réponse"], "source": "data"}}
    before = [(language_id_stage(spec), {"model": spec.to_dict(), "text_column": "text"}),
              (candidate_lid_stage(spec, {"fr": ["fr"]}), {"model": spec.to_dict(), "accepted_labels": {"fr": ["fr"]}}),
              (candidate_qe_stage(spec), {"model": spec.to_dict()}),
              (translate_stage(texts, spec),
               {"translator": spec.to_dict(), "columns": ["text"], "source_language": "en",
                "target_languages": ["fr"], "split_sentences": False, **generation}),
              (translate_qa_stage(qa, spec, labels),
               {"translator": spec.to_dict(), "source_language": "en", "target_languages": ["fr"],
                "labels": {"fr": {"question": ["Question"], "answer": ["Réponse"]}}, **generation}),
              (clip_score_stage(ScoringParams(clip_model="/m"), spec, "/img"),
               {"model": spec.to_dict(), "image_root": "/img", "references_column": None, "embeddings": None,
                "batch_size": None, "weight": 2.5, "prefix": "", "max_pixels": 64_000_000})]
    for stage, params in before:
        assert stage.params_hash == hash_params(params), stage.name
        assert stage.params.model_dump()  # a model on the worker, not a dict to rebuild a ModelSpec from
    assert translate_stage(texts, spec).params.params is texts  # the typed params reach the shard whole
    with pytest.raises(ValueError, match="num_beam"):  # a misspelt generation option stops the params
        TranslateParams(columns=["text"], targets=["fr"], translator={"num_beam": 4})
