"""Every door refuses the same numbers. Each params model found in the source refuses NaN and ±inf in
every numeric field, and a negative or zero value wherever the field's own declaration does: the test
reads each field's bounds from its metadata, and a numeric field with no lower bound must be named
below with its reason. Each flow's shard count and seed refuse what the CLI's flags refuse, as Prefect
validates a form, a deployment's or a Python caller's parameters."""
from __future__ import annotations

import ast
import importlib
import inspect
import math
import pathlib
import types
import typing

import annotated_types
import pytest
from pydantic import BaseModel, ValidationError

from xmdata.cli import main
from xmdata.data import sample_path

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCE = ("flows", "tasks", "runtime", "models", "schemas", "data", "xmdata")  # xmdata.X.Y is X/Y.py

# Numeric fields with no lower bound, each a decision (Model.field; a subclass inherits its parent's).
UNBOUNDED = {"CorrelationParams.rating_scale": "a rating scale's ends are any finite numbers (e.g. -1 to 1)",
             "FilterOptions.min_qe": "a COMETKiwi score threshold: any finite number"}
# What a shard runs with is built from the checked params above (one declaration of each bound):
# these models bound nothing of their own, and still refuse NaN and ±inf.
BUILT_FROM_CHECKED_PARAMS = {"CometKiwiOptions", "CometRefOptions"}  # both filled from FilterOptions
# Models every discovery must find: the doors (flags, forms, config sections, import options).
DOORS = {"LanguageIdParams", "SelectImagesParams", "ScoringParams", "TranslateParams", "TranslateQaParams",
         "TranslatorOptions", "FilterOptions", "ReleaseConfig", "MmmebConfig", "BenchmarksConfig", "BenchmarkSet",
         "ImportOptions", "ClusterOptions", "CorrelationParams", "BackRetrievalParams", "Pascal50sParams",
         "ClipscoreParams", "DownloadImagesParams"}
TRIED = (math.nan, math.inf, -math.inf, -1, 0)


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    return ".".join(parts if parts[0] == "xmdata" else ("xmdata", *parts))


def _model_modules() -> set[str]:
    """Modules declaring a class whose base is BaseModel or, by name and transitively, such a class."""
    declared: list[tuple[str, str, set[str]]] = []
    for folder in SOURCE:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef):
                    bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
                    declared.append((_module_name(path), node.name, bases))
    models, grown = {"BaseModel"}, True
    while grown:
        before = len(models)
        models |= {name for _, name, bases in declared if bases & models}
        grown = len(models) > before
    return {module for module, name, _ in declared if name in models}


def _models() -> list[type[BaseModel]]:
    found = []
    for module_name in sorted(_model_modules()):
        module = importlib.import_module(module_name)
        found += [cls for cls in vars(module).values() if inspect.isclass(cls) and issubclass(cls, BaseModel)
                  and cls.__module__ == module_name]
    return sorted(found, key=lambda cls: (cls.__module__, cls.__name__))


MODELS = _models()


def _numeric(annotation):
    """(shape, constraints) of a numeric annotation: shape builds a value from a number (a tuple of two
    floats takes it twice); None for anything else (strings, nested models, Any)."""
    constraints = []
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation, *metadata = typing.get_args(annotation)
            constraints += [m for item in metadata for m in getattr(item, "metadata", [item])]
        elif origin in (typing.Union, types.UnionType):
            inner = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(inner) != 1:
                return None
            annotation = inner[0]
        else:
            break
    if annotation in (int, float):
        return (lambda v: v), constraints
    if typing.get_origin(annotation) is tuple and set(typing.get_args(annotation)) <= {int, float}:
        return (lambda v: (v,) * len(typing.get_args(annotation))), constraints
    if typing.get_origin(annotation) is list and typing.get_args(annotation)[0] in (int, float):
        return (lambda v: [v]), constraints
    return None


def _allowed(value: float, constraints: list) -> bool:
    if not math.isfinite(value):
        return False
    bounds = [b for c in constraints for b in (c if isinstance(c, annotated_types.GroupedMetadata) else [c])]
    return all(not (isinstance(b, annotated_types.Gt) and b.gt is not None and not value > b.gt
                    or isinstance(b, annotated_types.Ge) and b.ge is not None and not value >= b.ge
                    or isinstance(b, annotated_types.Lt) and b.lt is not None and not value < b.lt
                    or isinstance(b, annotated_types.Le) and b.le is not None and not value <= b.le) for b in bounds)


def _numeric_fields():
    for model in MODELS:
        for name, field in model.model_fields.items():
            if numeric := _numeric(field.annotation):
                shape, constraints = numeric
                yield pytest.param(model, name, shape, [*field.metadata, *constraints], id=f"{model.__name__}.{name}")


NUMERIC_FIELDS = list(_numeric_fields())


def _declared_in(model: type[BaseModel], names) -> bool:
    return any(cls.__name__ in names for cls in model.__mro__)


def test_the_discovery_finds_every_door_and_every_numeric_field():
    names = {model.__name__ for model in MODELS}
    assert DOORS <= names, f"not found: {DOORS - names}"
    fields = {p.id for p in NUMERIC_FIELDS}
    assert {"ScoringParams.weight", "ReleaseConfig.shards", "ReleaseConfig.seed", "FilterOptions.min_lid_prob",
            "CorrelationParams.rating_scale", "BackRetrievalParams.k", "MmmebConfig.pool_size"} <= fields
    for key in UNBOUNDED:
        model, field = key.split(".")
        assert any(m.__name__ == model and field in m.model_fields for m in MODELS), f"UNBOUNDED: no {key}"


@pytest.mark.parametrize("model, name, shape, constraints", NUMERIC_FIELDS)
def test_every_numeric_field_refuses_what_its_declaration_refuses(model, name, shape, constraints):
    lower = [c for c in constraints if isinstance(c, (annotated_types.Ge, annotated_types.Gt, annotated_types.Interval))]
    if not lower and not _declared_in(model, BUILT_FROM_CHECKED_PARAMS):
        assert any(f"{cls.__name__}.{name}" in UNBOUNDED for cls in model.__mro__), \
            f"{model.__name__}.{name}: a number with no lower bound (declare one, or name it in UNBOUNDED)"
    for number in TRIED:
        # Only this field's errors count: the model's other required fields are missing on purpose.
        try:
            model.model_validate({name: shape(number)})
            refused = False
        except ValidationError as exc:
            refused = any(error["loc"][:1] == (name,) for error in exc.errors())
        expected = not _allowed(number, constraints)
        assert refused == expected, f"{model.__name__}.{name} = {shape(number)!r}: " + \
            ("accepted" if expected else "refused, yet its declaration allows it")


def _flows():
    from prefect import Flow

    found = {}
    for path in sorted((ROOT / "flows").glob("*.py")):
        module = importlib.import_module(_module_name(path))
        found |= {value.name: value for value in vars(module).values() if isinstance(value, Flow)}
    return found


# The least each flow needs besides the parameter under test.
MINIMAL = {"identify-language": {"input_path": "in.jsonl", "out": "out"},
           "select-images": {"input_path": "in.csv", "out": "out"},
           "score": {"input_path": "in.jsonl", "out": "out", "params": {"clip_model": "ViT-B-32"}},
           "translate": {"input_path": "in.jsonl", "out": "out", "params": {"targets": ["fr"]}},
           "translate-qa": {"input_path": "in.jsonl", "out": "out", "params": {"targets": ["fr"]}},
           "download-images": {"input_path": "in.parquet", "out": "out"},
           "dedup": {"input_path": "in.jsonl", "out": "out"},
           "contamination": {"input_path": "in.jsonl", "against": ["train.jsonl"], "out": "out"},
           "release": {}}


def test_every_flow_refuses_zero_shards_and_a_negative_seed_as_prefect_validates_parameters():
    from prefect.exceptions import ParameterTypeError
    from prefect.utilities.callables import parameter_schema

    from xmdata.tasks.stage_params import Seed, ShardCount

    flows = _flows()
    with_counts = {name for name, flow in flows.items()
                   if {"shards", "seed"} & set(inspect.signature(flow.fn).parameters)}
    assert with_counts == set(MINIMAL), "a flow with shards or seed missing from MINIMAL, or one too many"
    for name in sorted(with_counts):
        flow, hints = flows[name], typing.get_type_hints(flows[name].fn, include_extras=True)
        for parameter, declared, bad, good in (("shards", ShardCount, 0, 1), ("seed", Seed, -1, 0)):
            if parameter not in hints:
                continue
            assert declared in (hints[parameter], *typing.get_args(hints[parameter])), \
                f"{name}: {parameter} is not the one declaration ({declared})"
            assert flow.validate_parameters({**MINIMAL[name], parameter: good})[parameter] == good
            with pytest.raises(ParameterTypeError, match=parameter):
                flow.validate_parameters({**MINIMAL[name], parameter: bad})
            schema = parameter_schema(flow).model_dump_for_openapi()["properties"][parameter]
            number = schema.get("anyOf", [schema])[0]  # `ShardCount | None` (release's override) is a choice
            assert number["minimum"] == good, schema  # the UI's form shows the bound too


@pytest.mark.slow  # a flow run through Prefect: refused before its body runs, nothing written
def test_a_python_caller_passing_zero_shards_is_refused_before_anything_is_written(tmp_path, prefect_server):
    from prefect.exceptions import ParameterTypeError

    from xmdata.flows.language_id import identify_language_flow

    with pytest.raises(ParameterTypeError, match="shards"):
        identify_language_flow(sample_path("captions.jsonl"), str(tmp_path / "out"), shards=0)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("weight, message", [("nan", "--weight: Input should be a finite number"),
                                             ("inf", "--weight: Input should be a finite number"),
                                             ("-1", "--weight: Input should be greater than 0"),
                                             ("0", "--weight: Input should be greater than 0")])
def test_a_weight_that_is_not_a_positive_number_exits_2_in_one_line(weight, message, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["score", sample_path("captions.jsonl"), "--clip-model", "x", "--weight", weight, "--out", str(out)]
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [f"xmdata: error: {message}"], lines
    assert not out.exists()


def test_a_nan_threshold_in_a_release_config_is_refused(tmp_path):
    from xmdata.flows.release_config import load_release_config
    from xmdata.schemas import ContractError

    (tmp_path / "captions.jsonl").write_text(open(sample_path("captions.jsonl")).read())
    for section, error in [("translation: {input: captions.jsonl, targets: [fr], filters: {min_qe: .nan}}",
                            "translation.filters.min_qe: Input should be a finite number"),
                           ("translation: {input: captions.jsonl, targets: [fr], translator: "
                            "{max_new_tokens_ratio: .inf}}",
                            "translation.translator.max_new_tokens_ratio: Input should be a finite number"),
                           ("scoring: {input: captions.jsonl, images: captions.jsonl, clip_model: x, weight: .nan}",
                            "scoring.weight: Input should be a finite number")]:
        (tmp_path / "release.yaml").write_text(f"name: x\n{section}\n")
        with pytest.raises(ContractError, match=error):
            load_release_config(str(tmp_path / "release.yaml"))


def test_the_release_preflight_checks_the_qa_sections_own_source_language(tmp_path, tiny_models):
    """The QA build translates from the section's `source`; the preflight checks that language, not English."""
    from xmdata.flows.release_preflight import checked_release
    from xmdata.schemas import ContractError

    (tmp_path / "qa.jsonl").write_text(open(sample_path("mmeb.jsonl")).read())
    qa = "qa_translation: {input: qa.jsonl, source: %s, targets: [fr], translator: {backend: m2m100, " \
         "model: tiny:m2m100}}\n"
    (tmp_path / "release.yaml").write_text("name: x\n" + qa % "zz")
    with pytest.raises(ContractError, match="does not support zz"):
        checked_release(str(tmp_path / "release.yaml"), None, None)
    (tmp_path / "release.yaml").write_text("name: x\n" + qa % "en")
    assert checked_release(str(tmp_path / "release.yaml"), None, None)[0].qa_translation.source == "en"


def test_the_cli_shards_flag_is_the_flows_declaration(capsys):
    from xmdata.cli_parser import build_parser

    parser = build_parser()
    assert parser.parse_args(["identify-language", "IN", "--out", "o", "--shards", "3"]).shards == 3
    with pytest.raises(SystemExit, match="^2$") as exit_info:
        parser.parse_args(["identify-language", "IN", "--out", "o", "--shards", "0"])
    assert exit_info.value.code == 2
    assert "argument --shards: Input should be greater than or equal to 1, got 0" in capsys.readouterr().err
