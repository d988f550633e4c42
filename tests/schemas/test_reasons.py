"""The registry of reject reasons is the only door: a stage cannot write a reason it does not list, every
reason literal in the code is registered, and every registered reason is written somewhere."""
from __future__ import annotations

import ast
import os
import re

import pytest

from xmdata.schemas.reasons import REASONS, UnregisteredReason
from xmdata.tasks.build.rejects import make_rejects, split_by_mask

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CODE = ("tasks", "flows", "runtime", "models", "xmdata", "schemas")
# call -> position of its reason argument
REASON_ARGUMENT = {"make_rejects": 1, "reject": 1, "split_by_mask": 3, "PackError": 0}


def _modules():
    for folder in CODE:
        for base, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                if name.endswith(".py") and name != "reasons.py":
                    path = os.path.join(base, name)
                    yield os.path.relpath(path, ROOT), ast.parse(open(path, encoding="utf-8").read())


def _reason_literals(tree: ast.Module, path: str = "") -> set[str]:
    constants = {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 for t in node.targets if isinstance(t, ast.Name)
                 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}
    found = set()

    def value(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name) and node.id in constants:
            return constants[node.id]
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", getattr(node.func, "attr", None))
            args = []
            if name in REASON_ARGUMENT and len(node.args) > REASON_ARGUMENT[name]:
                args.append(node.args[REASON_ARGUMENT[name]])
            args += [k.value for k in node.keywords if k.arg == "reason" and name == "Decoded"]
            found |= {v for v in map(value, args) if v}
        if isinstance(node, ast.Dict) and path.startswith(("tasks/translation", "tasks/qa")):
            # {"status": "too_long"}: the translation stages' refused rows
            found |= {value(v) for k, v in zip(node.keys, node.values)
                      if k is not None and value(k) == "status" and value(v) not in (None, "ok")}
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "REASONS" for t in node.targets):
            found |= {e.value for e in getattr(node.value, "elts", []) if isinstance(e, ast.Constant)}
    return found


def test_every_reason_literal_in_the_code_is_registered():
    unregistered = {f"{path}: {r}" for path, tree in _modules() for r in _reason_literals(tree, path) if r not in REASONS}
    assert not unregistered, "register these in schemas/reasons.py:\n" + "\n".join(sorted(unregistered))


def test_the_scan_sees_the_stages_reasons():
    seen = set().union(*(_reason_literals(tree, path) for path, tree in _modules()))
    assert {"empty_id", "duplicate_id", "no_letters", "too_long", "label_leak", "image_file_missing"} <= seen


def test_every_registered_reason_is_written_by_some_code():
    text = "\n".join(ast.unparse(tree) for _, tree in _modules())
    stale = [name for name in REASONS if not re.search(rf"['\"]{name}\b", text)]
    assert not stale, f"registered but written nowhere: {stale}"


def test_every_reason_says_its_stages_meaning_and_what_to_do():
    for reason in REASONS.values():
        assert reason.stages and reason.meaning.strip() and reason.action.strip(), reason.name


def test_a_stage_cannot_write_an_unregistered_reason():
    import pyarrow as pa

    with pytest.raises(UnregisteredReason, match="not_a_reason"):
        make_rejects("language_id", "not_a_reason", ["a"])
    table = pa.table({"id": ["a", "b"], "text": ["x", ""]})
    with pytest.raises(UnregisteredReason, match="blank"):
        split_by_mask(table, pa.array([False, True]), "language_id", "blank", "text")
    kept, rejects = split_by_mask(table, pa.array([False, True]), "language_id", "empty_text", "text")
    assert kept.num_rows == 1 and rejects.column("reason").to_pylist() == ["empty_text"]
