"""The human form of an explanation: a line per stage (outcome, reason, values added), then its
params, model and shard record; a selection step lists every candidate with its verdict."""
from __future__ import annotations

from .explain import Explanation
from .trace import Step, Trace

WIDTH = 30  # the stage column


def short(value, limit: int = 60) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, str):
        flat = value.replace("\n", "\\n")
        return repr(flat if len(flat) <= limit else flat[:limit - 1] + "…")
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {short(v, 40)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(short(v, 40) for v in value) + "]"
    return str(value)


def pairs(values: dict) -> str:
    return " ".join(f"{k}={short(v)}" for k, v in values.items() if v is not None)


def model_line(model: dict) -> str:
    name = model.get("ref") or model.get("name_or_path") or model.get("name")
    digest = f" sha256 {model['sha256'][:12]}" if model.get("sha256") else ""
    return f"{model.get('backend')} {name}{digest}"


def step_lines(step: Step) -> list[str]:
    head = f"  {step.stage:<{WIDTH}} {step.outcome:<8}"
    if step.reason:
        head += f" {step.reason}"
    if step.values:
        head += ("; " if step.reason else " ") + pairs(step.values)
    lines, pad = [head.rstrip()], " " * (WIDTH + 3)
    if step.params:
        lines.append(f"{pad}params: {pairs(step.params)}")
    for model in step.model or []:
        lines.append(f"{pad}model: {model_line(model)}")
    records = {"": step.record} if step.record and "shard" in step.record else step.record or {}  # a pool: each engine's
    for engine, record in records.items():
        lines.append(f"{pad}record{f' ({engine})' if engine else ''}: {record['shard']} params_hash "
                     f"{str(record['params_hash'])[:12]} {record['code_version']}")
    for c in step.candidates:
        scores = " ".join(f"{k}={short(c[k])}" for k in ("lid_label", "lid_prob", "qe_score")
                          if c.get(k) is not None)
        where = f"{c['part']} " if "part" in c else (f"seg {c['segment']} " if c.get("segment") else "")
        text = c.get("candidate") or c.get("output")
        lines.append(f"{pad}  {where}#{c['beam_rank']}{' ' + scores if scores else ''}: {c['verdict']}"
                     + (f"  {short(text, 30)}" if text else ""))
    return lines


def trace_lines(trace: Trace) -> list[str]:
    lines = [f"{trace.id}: {trace.kind}"]
    if trace.input:
        lines.append(f"  input: {pairs({k: v for k, v in trace.input.items() if v is not None})}")
    for step in trace.steps:
        lines += step_lines(step)
    return lines


def explanation_text(explanation: Explanation) -> str:
    lines = [f"{explanation.folder}" + (f" (build {explanation.build})" if explanation.build and
                                        explanation.build != explanation.folder else "")]
    lines += [f"note: {n}" for n in explanation.notes]
    for trace in explanation.traces:
        lines += trace_lines(trace)
    return "\n".join(lines)
