"""The parts of a release card a paper recipe adds: how it was built (sample inputs and tiny models, or
the paper's), the models with their revisions, what each import read and refused, the MMMEB pools and
scores, and how to cite the paper it reproduces. From the manifest facts and the build's own files."""
from __future__ import annotations

import json
import os

import polars as pl

from xmdata.runtime import storage
from xmdata.tasks.release.card import _table


def build_note(overrides: dict) -> str:
    if not (overrides.get("sample") or overrides.get("models") == "tiny"):
        return ""
    parts = (["the shipped sample inputs (`--sample`: a few rows in each public layout)"] if overrides.get("sample")
             else []) + (["tiny untrained models (`--models tiny`) in place of the models named below"]
                         if overrides.get("models") == "tiny" else [])
    return ("## How this copy was built\n\nFrom " + " and ".join(parts) + ". Every stage ran for real, but the "
            "numbers are not the paper's: build without these options on the downloads to reproduce it.\n")


def models_section(paper: dict[str, tuple[str, str | None]], facts: dict) -> str:
    """PAPER: {role: (model, revision or pretrained tag)} as the config names them, before `--models tiny`."""
    if not facts["models"]:
        return "## Models and revisions\n\nNone: this recipe runs no model.\n"
    rows = [{"role": m["role"], "model (config)": paper.get(m["role"], (m["ref"], None))[0],
             "revision / pretrained": paper.get(m["role"], (None, m.get("revision")))[1] or "not pinned",
             "built with": m["ref"], "files": f"{m['files']} files, sha256 {m['sha256'][:16]}…" if m.get("sha256")
             else "hub (by revision)"} for m in facts["models"]]
    return ("## Models and revisions\n\nThe models the recipe names (the paper's), and what this copy was built "
            "with; a local model is identified by the sha256 of its files.\n\n" + _table(rows))


def selection_section(work: str) -> str:
    path = storage.join(work, "summary.json")
    if not storage.exists(path):
        return ""
    picks = json.loads(storage.read_text(path)).get("distributions", {}).get("in_region_picks")
    if not picks:
        return ""
    return ("## Greedy and optimal selection\n\nImages picked inside a language's own region, over all languages, on the "
            "same candidates: " + ", ".join(f"{k} {v}" for k, v in picks.items()) + ". `images` is the strategy the "
            "config names (the paper's greedy), `images_optimal` the exact assignment beside it; "
            "`images_per_language*` count picks per back-off level.\n")


def qa_selection_section(release: str) -> str:
    path = os.path.join(release, "reports", "qa_report.json")
    if not os.path.exists(path):
        return ""
    selection = json.load(open(path, encoding="utf-8")).get("input_selection", {})
    return ("## Question/Answer translation: task selection\n\nInstances per MMEB task: rows read, left out by the "
            "task exclusions, beyond the per-task cap, and translated.\n\n"
            + _table([{"task": t, **v} for t, v in sorted(selection.items())]))


def imports_section(work: str, facts: dict) -> str:
    rows = []
    for name, entry in facts.get("imports", {}).items():
        path = os.path.join(work, "imports", name, "import_report.json")
        report = json.load(open(path, encoding="utf-8")) if os.path.exists(path) else {}
        rows.append({"import": name, "format": entry["format"], "source": entry["source"],
                     "layout read": report.get("layout"), "rows read": report.get("rows_read"),
                     "written": ", ".join(f"{k}: {v}" for k, v in report.get("written", {}).items()),
                     "refused": ", ".join(f"{k}: {v}" for k, v in report.get("refused", {}).items()) or "0"})
    if not rows:
        return ""
    return ("## Imported sources\n\nEach public dataset converted from its published layout as part of the "
            "build (`xmdata import`); refused rows are in `rejects/import_<name>.parquet`.\n\n" + _table(rows))


def mmmeb_section(release: str, work: str) -> str:
    path = os.path.join(release, "data", "mmmeb_tasks.parquet")
    if not os.path.exists(path):
        return ""
    groups = pl.read_parquet(path).to_dicts()
    text = ("## MMMEB: tasks and pools\n\nOne row per task x dataset x language of the paper's Table 1. Each query's "
            "pool (`mmmeb_queries.pool`, gold at `gold_position`) is drawn once, seeded, and is the same for every "
            "system. Pool size = min(rule, candidates in the group): the rule is 1 gold + 999 distractors when the "
            "group has at least 1,000 queries, 1 + 99 below that, every class for classification; a group with "
            "fewer candidates gets all of them, and `note` says so. Groups the sources could not give are listed "
            "with status `missing` and the reason.\n\n" + _table(groups))
    report = os.path.join(work, "mmmeb_report.md")
    if os.path.exists(report):
        text += ("\n### P@1 per group and per task\n\nOn the pools above, per system (`mmmeb_results`), McNemar against "
                 "the first; a task a system cannot take (an image and a text in one query) shows as — and its "
                 "refusals are in `rejects/mmmeb_embed_<system>.parquet`.\n\n" + open(report, encoding="utf-8").read())
    return text


def benchmarks_section(work: str, config) -> str:
    if not config.benchmarks:
        return ""
    parts = ["## Evaluation per benchmark set\n\nEach set's pairs scored in every language it has (translations: "
             "the kept ones only), then its metric, as `xmdata evaluate` writes it; all numbers are in "
             "`benchmark_results`.\n"]
    for name, entry in config.benchmarks.sets.items():
        path = os.path.join(work, "benchmarks", name, "eval", f"{entry.metric}.md")
        if os.path.exists(path):
            parts.append(f"### {name} ({entry.metric})\n\n" + open(path, encoding="utf-8").read().split("\n", 1)[-1])
    return "\n".join(parts)


def recipe_sections(release: str, config, paper_models: dict, facts: dict, work: str) -> str:
    parts = [build_note(facts["config"]["overrides"]), models_section(paper_models, facts),
             imports_section(work, facts),
             selection_section(work), qa_selection_section(release), benchmarks_section(work, config),
             mmmeb_section(release, work)]
    if config.citation:
        parts.append("## How to cite\n\nThis release reproduces the paper below; cite it, and the datasets it "
                     "was built from.\n\n```bibtex\n" + config.citation.strip() + "\n```\n")
    return "\n" + "\n".join(p for p in parts if p)
