"""Run one adapter, check what it made against the contracts, and only then write: the tables as
Parquet, the refused rows as rejects.parquet, and import_report.json/.md (rows read, written, refused
by reason, and which layout was read)."""
from __future__ import annotations

import json
import os
from collections import Counter

import pyarrow as pa

from xmdata.runtime import storage
from xmdata.runtime.atomic import write_json_atomic, write_parquet_atomic, write_text_atomic
from xmdata.schemas.contract import ContractError
from xmdata.schemas.languages import LANGUAGE_COLUMNS, is_normalised
from xmdata.schemas.validate import conform

from xmdata.tasks.build.rejects import concat_rejects
from xmdata.tasks.build.rows import reject_bad_ids
from .base import count_check
from .formats import FORMATS, adapter
from .options import ImportOptions


def import_dataset(fmt: str, source: str, out: str, options: ImportOptions | None = None) -> dict:
    """Import SOURCE in layout FMT into OUT; returns the report. ContractError before any write."""
    if fmt not in FORMATS:
        raise ContractError(f"unknown import format {fmt!r}; known: {', '.join(FORMATS)}")
    if not os.path.exists(source):
        raise ContractError(f"{fmt}: {source}: no such file or folder")
    options = options or ImportOptions()
    try:
        imported = adapter(fmt)(source, options)
    except ContractError as exc:  # name the source when the adapter could not
        if source in str(exc) or fmt in str(exc):
            raise
        raise ContractError(f"{fmt}: {source}: {exc}") from exc
    # Every adapter's reads, named here once (text_lines() names the file where an adapter uses it).
    except UnicodeDecodeError as exc:
        raise ContractError(f"{fmt}: {source}: a file is not UTF-8 text ({exc.reason})") from exc
    except json.JSONDecodeError as exc:
        raise ContractError(f"{fmt}: {source}: a JSON file does not parse ({exc.msg}, line {exc.lineno})") from exc
    images = options.images or imported.image_folder
    root = image_root(images, out)
    tables, id_rejects = {}, []
    for name, (table, contract) in imported.tables.items():
        check_language_codes(table, f"{fmt} {name}")
        if contract is not None:
            table = conform(rebase_paths(table, images, root), contract, source=f"{fmt} {name}")
            if contract.id_column in table.column_names:  # an empty or repeated id would clash downstream
                table, refused = reject_bad_ids(table, f"import_{fmt.replace('-', '_')}", contract.id_column)
                id_rejects.append(refused)
        tables[name] = table
    rejects = concat_rejects([imported.all_rejects(), *id_rejects])
    for name, table in tables.items():
        write_parquet_atomic(table, storage.join(out, f"{name}.parquet"))
    write_parquet_atomic(rejects, storage.join(out, "rejects.parquet"))
    report = {
        "format": fmt, "source": os.path.basename(os.path.abspath(source)), "layout": imported.layout,
        "rows_read": imported.rows_read,
        "written": {name: table.num_rows for name, table in tables.items()},
        "refused": dict(sorted(Counter(rejects.column("reason").to_pylist()).items())),
        "options": {k: v for k, v in options.model_dump().items() if v not in (None, False)},
        "image_root": None if root is None else root if storage.is_url(out) else os.path.relpath(root, out),
        **imported.notes,
    }
    if (counts := count_check(imported)) is not None:
        report["publisher_counts"] = counts
    write_json_atomic(report, storage.join(out, "import_report.json"))
    write_text_atomic(report_markdown(report), storage.join(out, "import_report.md"))
    return report


def check_language_codes(table, where: str) -> None:
    """Every language column in the project's one code system (adapters normalise each code where they
    read it, naming file and line; this stops an adapter that did not)."""
    for column in LANGUAGE_COLUMNS:
        if column in table.column_names:
            odd = [c for c in table.column(column).unique().to_pylist() if c is not None and not is_normalised(c)]
            if odd:
                raise ContractError(f"{where}: column {column!r} holds {odd[0]!r}, not a normalised language code")


def report_markdown(report: dict) -> str:
    lines = [f"## Import of `{report['source']}` ({report['format']})", "",
             f"Layout read: {report['layout']}.", "", f"Rows read: {report['rows_read']}.", ""]
    lines += [f"- written `{name}.parquet`: {rows} row(s)" for name, rows in report["written"].items()]
    refused = report["refused"]
    lines += [f"- refused: {sum(refused.values())}" + (" (" + ", ".join(f"{k}: {v}" for k, v in refused.items())
                                                    + ")" if refused else "")]
    extra = {k: v for k, v in report.items() if k not in ("format", "source", "layout", "rows_read", "written",
                                                           "refused", "options", "publisher_counts")}
    lines += [f"- {k}: {json.dumps(v, sort_keys=True)}" for k, v in extra.items()]
    if counts := report.get("publisher_counts"):
        lines += ["", f"Publisher's counts ({counts['source']}):", "", "| count | publisher | read |", "|---|---:|---:|"]
        lines += [f"| {key} | {expected:,} | {'—' if counts['read'][key] is None else format(counts['read'][key], ',')} |"
                  for key, expected in counts["publisher"].items()]
        lines += ["", "All counts match the publisher's." if not counts["differences"] else
                  f"{len(counts['differences'])} count(s) differ from the publisher's:"]
        lines += [f"- {d}" for d in counts["differences"]]
    return "\n".join(lines) + "\n"


def image_root(images: str | None, out: str) -> str | None:
    """Where image paths are relative to: OUT when the images folder lies inside it (then `score`
    and a release's scoring find them with no option), else the images folder itself."""
    if not images:
        return None
    if storage.is_url(out):  # local images, outputs in a store: paths stay relative to the images
        return os.path.abspath(images)
    inside = not os.path.relpath(os.path.abspath(images), os.path.abspath(out)).startswith("..")
    return os.path.abspath(out if inside else images)


def rebase_paths(table: pa.Table, images: str | None, root: str | None) -> pa.Table:
    """Image paths (relative to --images as adapters write them) made relative to the image root."""
    if not images or root == os.path.abspath(images):
        return table
    prefix = os.path.relpath(os.path.abspath(images), root)
    for column in ("path", "image_path"):
        if column in table.column_names:
            values = [None if p is None else os.path.join(prefix, p) for p in table.column(column).to_pylist()]
            table = table.set_column(table.column_names.index(column), column, pa.array(values, pa.string()))
    return table
