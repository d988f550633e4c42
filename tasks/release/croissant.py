"""croissant.json: the release in Croissant 1.1 (http://mlcommons.org/croissant/1.1), with the
Responsible-AI fields (http://mlcommons.org/croissant/RAI/1.0) the recipe knows: its sources, languages,
stages and what each refused. One FileObject per published Parquet file (sha256 as manifest.json
records it), one RecordSet per table with a Field per column. No dates and no release_sha256 in it
(manifest.json hashes this file): the same release gives the same bytes."""
from __future__ import annotations

import os
import re

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from xmdata.runtime.atomic import write_json_atomic

from .files import TABLES, published_stage

CROISSANT = "croissant.json"
CONFORMS_TO = ["http://mlcommons.org/croissant/1.1", "http://mlcommons.org/croissant/RAI/1.0"]
# mlcroissant 1.1.1's context for a 1.1 document (mlcroissant/_src/core/rdf.py make_context), with `rai`.
CONTEXT = {
    "@language": "en", "@vocab": "https://schema.org/", "sc": "https://schema.org/",
    "cr": "http://mlcommons.org/croissant/", "rai": "http://mlcommons.org/croissant/RAI/",
    "dct": "http://purl.org/dc/terms/", "conformsTo": "dct:conformsTo",
    "data": {"@id": "cr:data", "@type": "@json"}, "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "description": {"@container": "@language"}, "name": {"@container": "@language"},
    **{term: f"cr:{term}" for term in (
        "arrayShape", "citeAs", "column", "containedIn", "equivalentProperty", "extract", "field", "fileObject",
        "fileProperty", "fileSet", "format", "includes", "isArray", "isLiveDataset", "jsonPath", "key", "md5",
        "parentField", "path", "recordSet", "references", "regex", "repeated", "replace", "samplingRate",
        "separator", "source", "subField", "transform")},
}
PARQUET = "application/x-parquet"


def data_type(arrow: pa.DataType) -> tuple[str, bool] | None:
    """(Croissant atomic type, is an array) of an Arrow type; None for the rest (structs and maps would
    need subFields, binary a media type), which the RecordSet leaves out and names."""
    if pa.types.is_list(arrow) or pa.types.is_large_list(arrow) or pa.types.is_fixed_size_list(arrow):
        inner = data_type(arrow.value_type)
        return (inner[0], True) if inner and not inner[1] else None
    for test, name in ((pa.types.is_boolean, "sc:Boolean"), (pa.types.is_integer, "sc:Integer"),
                       (pa.types.is_floating, "sc:Float"), (pa.types.is_string, "sc:Text"),
                       (pa.types.is_large_string, "sc:Text"), (pa.types.is_timestamp, "sc:DateTime"),
                       (pa.types.is_date, "sc:Date")):
        if test(arrow):
            return name, False
    return None


def record_set(release: str, path: str, entry: dict) -> dict:
    """The RecordSet of one published Parquet file: a Field per column it can type."""
    folder, table = os.path.dirname(path), os.path.basename(path)[:-len(".parquet")]
    set_id = table if folder == "data" else f"{folder}/{table}"
    what = (TABLES[table][1] if folder == "data" and table in TABLES
            else f"rows the {table} stage refused, with the reason" if folder == "rejects" else table)
    fields, left_out = [], []
    for column in pq.read_schema(os.path.join(release, path)):
        typed = data_type(column.type)
        if typed is None:
            left_out.append(f"{column.name} ({column.type})")
            continue
        # An @id takes no whitespace (mlcroissant refuses it, even escaped); `name` keeps the column's own.
        field_id = re.sub(r"\s", "_", column.name)
        fields.append({"@type": "cr:Field", "@id": f"{set_id}/{field_id}", "name": column.name,
                       "dataType": typed[0], **({"isArray": True} if typed[1] else {}),
                       "source": {"fileObject": {"@id": path}, "extract": {"column": column.name}}})
    note = f"; left out, no Croissant 1.1 column type: {', '.join(left_out)}" if left_out else ""
    return {"@type": "cr:RecordSet", "@id": set_id, "name": set_id,
            "description": f"{what} ({entry.get('rows')} rows, {path}{note})", "field": fields}


def languages(release: str) -> list[str]:
    """The languages the card declares in its YAML header (README.md, written before this file)."""
    try:
        header = open(os.path.join(release, "README.md"), encoding="utf-8").read().split("---\n")[1]
        return list(yaml.safe_load(header).get("language") or [])
    except (OSError, IndexError, AttributeError, yaml.YAMLError):
        return []


def responsible_ai(config, facts: dict, files: dict[str, dict]) -> dict:
    """rai: fields from what the manifest records: sources, models, and every stage's counts."""
    sources = [f"{where}: {i['path']} (sha256 {i['sha256']}, {i['bytes']} bytes)"
               for where, i in sorted(facts["inputs"].items())]
    sources += [f"import {name}: {i['format']} from {i['source']}"
                + (f" (sha256 {i['sha256']})" if i.get("sha256") else "")
                for name, i in sorted(facts["imports"].items())]
    rejects = {name: f"rejects/{published_stage(name)}.parquet" for name in facts["stages"]}  # a pool's: one a stage
    stages = [f"{name}: {s['rows_in']} rows in, {s['rows_out']} out; refused "
              + (", ".join(f"{reason} {n}" for reason, n in sorted(s["rejected"].items())) or "none")
              + (f" ({rejects[name]})" if rejects[name] in files else "")
              for name, s in sorted(facts["stages"].items())]
    stages += [f"{path[len('rejects/'):-len('.parquet')]}: refused {entry.get('rows')} rows ({path})"
               for path, entry in sorted(files.items()) if path.startswith("rejects/")
               and path not in rejects.values()]  # selection, QA extraction
    models = [f"{m['role']}: {m['ref']} ({m['backend']}, "
              + (f"sha256 {m['sha256']})" if m.get("sha256") else f"revision {m.get('revision') or 'not pinned'})")
              for m in facts["models"]]
    return {
        "rai:dataCollection": f"Built by xmdata {facts['xmdata']['version']} from the release config "
                              f"{facts['config']['file']} (sha256 {facts['config']['sha256']}), which names its "
                              "inputs and public imports and the stages run over them: "
                              + ", ".join(sorted(facts["stages"])) + ". manifest.json records every input, model and "
                              "package version.",
        "rai:dataCollectionType": ["Secondary Data analysis"] + (["Web Scraping"] if config.image_download else []),
        "rai:dataCollectionRawData": "; ".join(sources) or "none recorded",
        "rai:dataPreprocessingProtocol": stages,
        "rai:machineAnnotationTools": models,
    }


def croissant(release: str, config, facts: dict, files: dict[str, dict]) -> dict:
    """The Croissant JSON-LD of RELEASE: FILES are manifest entries ({path: sha256, bytes, rows})."""
    parquet = sorted(p for p in files if p.endswith(".parquet"))
    return {
        "@context": CONTEXT, "@type": "sc:Dataset", "conformsTo": CONFORMS_TO,
        "name": config.name, "version": config.version, "license": config.license,
        "description": config.description or f"{config.name}, built by xmdata",
        **({"citeAs": config.citation.strip()} if config.citation.strip() else {}),
        "inLanguage": languages(release),
        "distribution": [{"@type": "cr:FileObject", "@id": p, "name": p, "contentUrl": p, "encodingFormat": PARQUET,
                          "sha256": files[p]["sha256"], "contentSize": f"{files[p]['bytes']} B"} for p in parquet],
        "recordSet": [record_set(release, p, files[p]) for p in parquet],
        **responsible_ai(config, facts, files),
    }


def write_croissant(release: str, config, facts: dict, files: dict[str, dict]) -> None:
    write_json_atomic(croissant(release, config, facts, files), os.path.join(release, CROISSANT))


def lasting(document: dict) -> dict:
    """Without the files' checksums and sizes, which `release compare` leaves to the files themselves."""
    if not (isinstance(document, dict) and isinstance(document.get("distribution"), list)):
        return document
    return dict(document, distribution=[{k: v for k, v in d.items() if k not in ("sha256", "contentSize")}
                                        if isinstance(d, dict) else d for d in document["distribution"]])
