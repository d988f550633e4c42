"""A stage's CLI flags, generated from its params model: one flag per field (nested models
flattened), the field's description as help, a Literal's values as choices, the default shown.
The values are then validated by the model itself, so the CLI refuses exactly what the release
config and the Prefect UI's form refuse, in one line, before anything heavy is imported."""
from __future__ import annotations

import argparse
import types
import typing
from dataclasses import dataclass
from typing import Callable, Iterator, Literal

from pydantic import BaseModel, TypeAdapter, ValidationError


@dataclass(frozen=True)
class ParamFlags:
    """model: the params; skip: fields with no flag of their own; aliases(args, data): the CLI's
    own spellings (`--embeddings` + `--embedding-dtype`), turned into fields before validation."""

    model: type[BaseModel]
    skip: tuple[str, ...] = ()
    aliases: Callable[[argparse.Namespace, dict], None] | None = None


def _plain(annotation):
    """`X | None` -> X; `X | list[X]` (a translator or a pool of them) -> X, whose fields are the flags
    (the list has its own flag: xmdata/commands/translate.py's --translator)."""
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _nested(annotation) -> type[BaseModel] | None:
    plain = _plain(annotation)
    return plain if isinstance(plain, type) and issubclass(plain, BaseModel) else None


def leaf_fields(model: type[BaseModel], default: BaseModel | None = None, skip=(), path=()) -> Iterator[tuple]:
    """(path, field, default) of every field with a flag; nested models give their own fields."""
    for name, field in model.model_fields.items():
        value = getattr(default, name) if default is not None else field.get_default(call_default_factory=True)
        if name in skip:
            continue
        if inner := _nested(field.annotation):
            yield from leaf_fields(inner, value if isinstance(value, BaseModel) else None, skip, (*path, name))
        else:
            yield (*path, name), field, value


def flag_of(name: str) -> str:
    return "--" + name.replace("_", "-")


def port_number(text: str) -> int:
    """A TCP port for --port (0: a free one), refused in one line rather than by the server later."""
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0-65535)")
    return int(text)


def _split_commas(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def add_param_flags(parser: argparse.ArgumentParser, flags: ParamFlags) -> None:
    for path, field, default in leaf_fields(flags.model, skip=flags.skip):
        plain, options = _plain(field.annotation), {"dest": path[-1], "default": argparse.SUPPRESS}
        hidden = default is None or default is False or default in ("", [], {}) or field.is_required()
        shown = "" if hidden else f" (default {','.join(default) if isinstance(default, list) else default})"
        options["help"] = (field.description or "") + shown
        if plain is bool:
            options["action"] = argparse.BooleanOptionalAction if default else "store_true"
        elif typing.get_origin(plain) is Literal:
            options["choices"] = typing.get_args(plain)
        elif typing.get_origin(plain) is list:
            # --targets fr,de or --targets fr --targets de
            options.update(type=_split_commas, metavar="A,B,…", action="extend")
        elif typing.get_origin(plain) is tuple:
            options["nargs"] = len(typing.get_args(plain))
        options["required"] = field.is_required()
        parser.add_argument(flag_of(path[-1]), **options)
    parser.set_defaults(param_flags=flags)


def annotated_flag(annotation, default) -> dict:
    """add_argument's options for a flag declared as an Annotated type beside the params (ShardCount):
    the value is validated by that declaration, so the flag refuses what the flow's form refuses."""
    adapter = TypeAdapter(annotation)

    def value(text: str):
        try:
            return adapter.validate_python(text)
        except ValidationError as exc:
            raise argparse.ArgumentTypeError(f"{exc.errors()[0]['msg']}, got {text}") from None

    description = next((m.description for m in typing.get_args(annotation)[1:] if getattr(m, "description", None)), "")
    return {"type": value, "default": default, "help": f"{description} (default {default})"}


def params_from_args(args: argparse.Namespace) -> BaseModel | None:
    """The command's params from its flags (None for a command without params); a ValueError in one
    line, naming the flag, for a value the model refuses."""
    flags: ParamFlags | None = getattr(args, "param_flags", None)
    if flags is None:
        return None
    data: dict = {}
    for path, _, _ in leaf_fields(flags.model, skip=flags.skip):
        if path[-1] in vars(args):
            node = data
            for key in path[:-1]:
                node = node.setdefault(key, {})  # the model fills in its own defaults around the flags
            node[path[-1]] = getattr(args, path[-1])
    if flags.aliases:
        flags.aliases(args, data)
    try:
        return flags.model.model_validate(data)
    except ValidationError as exc:
        leaves = {path[-1] for path, _, _ in leaf_fields(flags.model)}
        raise ValueError("; ".join(flag_error(e, leaves) for e in exc.errors())) from None


def flag_error(error: dict, leaves: set[str]) -> str:
    """Named by its flag; a rule across fields (num_candidates <= num_beams) names them itself."""
    names = [part for part in error["loc"] if isinstance(part, str)]
    message = error["msg"].removeprefix("Value error, ")
    return f"{flag_of(names[-1])}: {message}" if names and names[-1] in leaves else message
