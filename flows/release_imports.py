"""The imports of a release build: each public dataset of `imports:` converted in the build's process
(`xmdata import`'s own code) into WORK/imports/<name>/, then stages' `import:<name>/<file>` inputs
pointed there. An import whose source files, format and options are unchanged is not redone."""
from __future__ import annotations

import json
import os

import pyarrow.parquet as pq
from prefect.logging import get_logger

from xmdata.runtime.atomic import write_json_atomic
from xmdata.tasks.importers.run import import_dataset
from xmdata.tasks.release.manifest import model_fingerprint

from .release_steps import step_report
from .release_config import INPUT_FIELDS, ReleaseConfig
from .release_recipe import IMPORTED

RECORD = "_source.json"


def source_fingerprint(path: str) -> dict:
    """Files under an import source, their count and one sha256 over relative names and contents
    (as a local model is fingerprinted: the same download gives the same value on any machine)."""
    entry = model_fingerprint("import", path, path, "import", None)
    return {"files": entry["files"], "sha256": entry["sha256"]}


def recorded_source(work: str, name: str) -> dict:
    """The source fingerprint this build's import NAME recorded (a big download is hashed once a build)."""
    with open(os.path.join(work, "imports", name, RECORD), encoding="utf-8") as f:
        return json.load(f)["record"]["source"]


def run_imports(config: ReleaseConfig, work: str) -> tuple[list, dict[str, str], dict[str, str]]:
    """(stage reports, {name: output folder}, {name: image root}) of every configured import."""
    reports, folders, roots = [], {}, {}
    for name, entry in config.imports.items():
        out = os.path.join(work, "imports", name)
        record = {"format": entry.format, "options": entry.options.model_dump(),
                  "source": source_fingerprint(entry.source)}
        record_path = os.path.join(out, RECORD)
        if not (os.path.exists(record_path) and json.load(open(record_path))["record"] == record):
            import_dataset(entry.format, entry.source, out, entry.options)
            write_json_atomic({"record": record}, record_path)
        report = json.load(open(os.path.join(out, "import_report.json"), encoding="utf-8"))
        if differences := (report.get("publisher_counts") or {}).get("differences"):
            get_logger("xmdata.imports").warning("import %s (%s): %d count(s) differ from the publisher's: %s", name,
                                     entry.format, len(differences), "; ".join(differences))
        rejects = pq.read_table(os.path.join(out, "rejects.parquet"))
        written = sum(report["written"].values())
        reports.append(step_report(f"import_{name}", written + rejects.num_rows, written, rejects, work))
        folders[name] = out
        roots[name] = os.path.normpath(os.path.join(out, report["image_root"])) if report.get("image_root") else out
    return reports, folders, roots


def resolve_imported(config: ReleaseConfig, folders: dict[str, str]) -> ReleaseConfig:
    """Stage inputs written `import:<name>/<file>` as paths into the import's output folder."""
    data = config.model_dump()
    for section, keys in INPUT_FIELDS.items():
        for key in keys:
            value = (data.get(section) or {}).get(key)
            if value and value.startswith(IMPORTED):
                name, _, file = value[len(IMPORTED):].partition("/")
                data[section][key] = os.path.join(folders[name], file)
    return ReleaseConfig.model_validate(data)
