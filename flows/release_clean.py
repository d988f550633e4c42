"""A release's `dedup:` and `contamination:` sections: its own images and captions checked before any
stage selects, translates or scores them (`xmdata dedup` and `xmdata contamination`'s own code).

Images first (image_selection.input): a refused image takes its captions and its Q/A instances with
it (`image_near_duplicate`, `image_contaminated`, the image named). Then the captions (language_id, translation and scoring inputs;
one check a distinct file). The stages read the kept rows: their inputs are pointed at
WORK/clean/<table>.parquet. The image table the scorer reads paths from stays as it is (its folder is
the image root); the captions it scores are the kept ones, so a refused image is never scored.
Every check's matches are published as `clean_matches`, its refusals as rejects/clean_<kind>.parquet.
"""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc

from xmdata.runtime import storage
from xmdata.runtime.atomic import write_parquet_atomic
from xmdata.runtime.process import StageReport
from xmdata.tasks.build.rejects import concat_rejects, make_rejects

from xmdata.tasks.clean.references import open_reference, reference_kinds

from .clean import clean_rows
from .finish import step_report
from .release_config import ReleaseConfig
from .release_refs import replaced

CAPTION_INPUTS = (("language_id", "input"), ("translation", "input"), ("scoring", "input"))
CASCADE = {"dedup": "image_near_duplicate", "contamination": "image_contaminated"}
MATCHES = "clean/matches.parquet"


def check_clean_sections(config: ReleaseConfig) -> None:
    """Every reference of `contamination:` exists and can be compared with some input of the release:
    refused with the release's other preflight checks, before anything is written."""
    from xmdata.schemas import ContractError

    if not config.contamination:
        return
    kinds = ({"images"} if config.image_selection else set()) | \
        ({"captions"} if any(getattr(config, s) for s, _ in CAPTION_INPUTS) else set())
    params = config.contamination
    for path in params.against:
        holds = reference_kinds(path)  # a table reference is read for this: once
        if not holds & kinds:
            raise ContractError(f"contamination.against: {path}: holds {' or '.join(sorted(holds))}, "
                                f"and the release checks {' and '.join(sorted(kinds)) or 'no images or captions'}")
        for kind in sorted(holds & kinds):  # as `xmdata contamination` opens it: model, width, layout
            ref = open_reference(path, kind, params.reference_model)
            if ref.kind == "embeddings":
                from xmdata.tasks.clean.clip_retrieval import open_embeddings_folder
                from xmdata.tasks.clean.signatures import embedding_dim, embedding_spec

                open_embeddings_folder(ref.folder, "image" if kind == "images" else "text",
                                       embedding_dim(embedding_spec(params)))


def clean_release_inputs(config: ReleaseConfig, work: str, shards: int
                         ) -> tuple[ReleaseConfig, list[StageReport], dict, str]:
    """(config reading the kept rows, reports, distributions, the card's markdown)."""
    checks = [(mode, section) for mode, section in (("dedup", config.dedup), ("contamination", config.contamination))
              if section is not None]
    if not checks:
        return config, [], {}, ""
    reports, stats, lines, matches = [], {}, [], []
    # Which kinds each reference can be compared with, read once (a table reference is read whole for it).
    holds = {a: reference_kinds(a) for a in (config.contamination.against if config.contamination else [])}
    refused_images: dict[str, str] = {}
    if config.image_selection and os.path.isfile(config.image_selection.input):
        path = config.image_selection.input
        kept, refused, found, facts = _check(path, "images", checks, work, shards, holds)
        refused_images = dict(zip(refused.column("row_id").to_pylist(), refused.column("reason").to_pylist()))
        reports.append(step_report("clean_images", facts["rows"], kept.num_rows, refused, work))
        matches.append(found)
        lines += facts["lines"]
        kept_path = os.path.join(work, "clean", "images.parquet")
        write_parquet_atomic(kept, kept_path)
        config = replaced(config, ("image_selection",), {"input": kept_path})
        if refused_images and config.qa_translation and os.path.isfile(config.qa_translation.input):
            config, report = _qa_without_refused_images(config, path, refused_images, work)
            reports.append(report)
    sources = sorted({getattr(getattr(config, s), f) for s, f in CAPTION_INPUTS if getattr(config, s)})
    for n, path in enumerate(sources):
        name = "captions" if len(sources) == 1 else f"captions_{n}"
        cascaded, cascade_rejects, rows_in = _without_refused_images(path, refused_images, name, work)
        kept, refused, found, facts = _check(cascaded, "captions", checks, work, shards, holds, name)
        refused = concat_rejects([cascade_rejects, refused])
        reports.append(step_report(f"clean_{name}", rows_in, kept.num_rows, refused, work))
        matches.append(found)
        lines += facts["lines"]
        kept_path = os.path.join(work, "clean", f"{name}.parquet")
        write_parquet_atomic(kept, kept_path)
        for section, field in CAPTION_INPUTS:
            if getattr(config, section) and getattr(getattr(config, section), field) == path:
                config = replaced(config, (section,), {field: kept_path})
    write_parquet_atomic(pa.concat_tables(matches, promote_options="default").sort_by(
        [("check", "ascending"), ("table", "ascending"), ("id", "ascending"), ("method", "ascending"),
         ("match_source", "ascending"), ("match_id", "ascending")]), os.path.join(work, MATCHES))
    stats["clean_matches"] = {m: int(n) for m, n in _count_methods(matches).items()}
    return config, reports, stats, "\n".join(lines) + "\n"


def _check(path: str, kind: str, checks: list, work: str, shards: int, holds: dict[str, set[str]],
           name: str | None = None):
    """Each configured check in turn on the rows the one before kept: (kept, rejects, matches, facts)."""
    from .clean import check_clean

    name = name or kind
    kept_ids, refused, found, lines, rows, out = None, [], [], [], 0, None
    for mode, params in checks:
        against = [a for a in getattr(params, "against", None) or [] if kind in holds[a]]
        if mode == "contamination" and not against:
            continue  # no reference of this kind: nothing to compare with
        table_kind, table, references = check_clean(path, against, params, mode)
        for ref, shown in zip(references, display_names(against)):  # no path of the build machine in a release
            ref.source = shown
        rows = rows or table.num_rows
        if kept_ids is not None:  # the table as read (paths resolved from its own folder), less what went before
            table = table.filter(pc.is_in(table.column("id"), kept_ids))
        out = os.path.join(work, "clean", mode, name)
        _, _, report = clean_rows(mode, path, against, out, shards, params, checked=(table_kind, table, references))
        rejects = storage.read_parquet(os.path.join(out, "rejects.parquet"))
        if kept_ids is not None:  # the input's bad ids were refused by the first check already
            rejects = rejects.filter(pc.not_equal(rejects.column("stage"), table_kind))
        refused.append(rejects)
        found.append(_labelled(storage.read_parquet(os.path.join(out, "matches.parquet")), mode, name))
        kept_ids = storage.read_parquet(os.path.join(out, "kept.parquet")).column("id")
        what = "inside the set" if mode == "dedup" else "against " + ", ".join(f"`{os.path.basename(a)}`" for a in against)
        counts = ", ".join(f"{m} {v['matches']} match(es) (threshold {v['threshold']} {v['unit']})"
                           for m, v in report["methods"].items()) or "no method"
        lines.append(f"- **{name}**, {mode} {what}: {report['rows']} rows, {report['kept']} kept; "
                     f"refused {report['rejected'] or 'none'}; {counts}.")
    if out is None:  # nothing to check this table against
        from xmdata.schemas.clean import MATCHES_SCHEMA
        from xmdata.tasks.clean.inputs import RESOLVED, read_clean_input

        _, table = read_clean_input(path)
        return (table.drop_columns([c for c in (RESOLVED,) if c in table.column_names]), concat_rejects([]),
                _labelled(MATCHES_SCHEMA.empty_table(), "none", name), {"rows": table.num_rows, "lines": []})
    kept = storage.read_parquet(os.path.join(out, "kept.parquet"))
    return kept, concat_rejects(refused), pa.concat_tables(found), {"rows": rows, "lines": lines}


def display_names(paths: list[str]) -> list[str]:
    """How a release names its references in matches and rejects: the file or folder name (with `#N`
    where two share one), never the build machine's path; manifest.json maps each to its path and hash."""
    names = [os.path.basename(os.path.normpath(p)) for p in paths]
    return [n if names.count(n) == 1 else f"{n}#{i}" for i, n in enumerate(names)]


def _labelled(matches: pa.Table, mode: str, name: str) -> pa.Table:
    n = matches.num_rows
    return matches.append_column("check", pa.array([mode] * n, pa.string())).append_column(
        "table", pa.array([name] * n, pa.string()))


def _without_refused_images(path: str, refused_images: dict[str, str], name: str, work: str
                            ) -> tuple[str, pa.Table, int]:
    """The captions with those of refused images taken out (rejects that name the image), written to
    WORK/clean/cascade/ when some were; (path to check, rejects, rows read)."""
    from xmdata.tasks.clean.inputs import read_clean_input

    _, table = read_clean_input(path)
    if not refused_images or "image_id" not in table.column_names:
        return path, concat_rejects([]), table.num_rows
    image_ids = table.column("image_id").to_pylist()
    gone = [i in refused_images for i in image_ids]
    if not any(gone):
        return path, concat_rejects([]), table.num_rows
    rejects = concat_rejects([make_rejects(f"clean_{name}", CASCADE[_mode(refused_images[i])], [r], [i])
                              for r, i, g in zip(table.column("id").to_pylist(), image_ids, gone) if g])
    kept_path = os.path.join(work, "clean", "cascade", f"{name}.parquet")
    write_parquet_atomic(table.filter(pc.invert(pa.array(gone, pa.bool_()))), kept_path)
    return kept_path, rejects, table.num_rows


def _qa_without_refused_images(config: ReleaseConfig, images_path: str, refused_images: dict[str, str], work: str
                               ) -> tuple[ReleaseConfig, StageReport]:
    """Q/A instances whose image is a refused image's file (paths resolved from each table's folder,
    links followed) refused with it; the QA translation reads the rest from WORK/clean/qa.parquet."""
    from xmdata.tasks.clean.inputs import RESOLVED, read_clean_input
    from xmdata.tasks.qa.input import read_qa_input

    _, images = read_clean_input(images_path)
    files = {os.path.realpath(f): i for i, f in zip(images.column("id").to_pylist(), images.column(RESOLVED).to_pylist())
             if i in refused_images and f}
    path = config.qa_translation.input
    table, base = read_qa_input(path), os.path.dirname(os.path.abspath(path))
    image_ids = [None if p is None else files.get(os.path.realpath(os.path.join(base, p)))
                 for p in table.column("image").to_pylist()]
    gone = [i is not None for i in image_ids]
    rejects = concat_rejects([make_rejects("clean_qa", CASCADE[_mode(refused_images[i])], [r], [i])
                              for r, i in zip(table.column("id").to_pylist(), image_ids) if i is not None])
    report = step_report("clean_qa", table.num_rows, table.num_rows - sum(gone), rejects, work)
    if not any(gone):
        return config, report
    kept_path = os.path.join(work, "clean", "qa.parquet")
    write_parquet_atomic(table.filter(pc.invert(pa.array(gone, pa.bool_()))), kept_path)
    return replaced(config, ("qa_translation",), {"input": kept_path}), report


def _mode(reason: str) -> str:
    return "dedup" if reason == "near_duplicate" else "contamination"


def _count_methods(matches: list[pa.Table]) -> dict:
    from collections import Counter

    return Counter(m for t in matches for m in t.column("method").to_pylist())
