"""A reproducible data release: build the stages a release.yaml names, then publish the tables, their
rejects, plots, a dataset card and a manifest of checksums into OUT. Same config, same inputs ->
the same bytes (manifest.json differs in its `built_at` line only)."""
from __future__ import annotations

import os

from prefect import flow
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact

from xmdata.flows.finish import finish_build
from xmdata.flows.release_build import build_release_data
from xmdata.flows.release_facts import release_facts
from xmdata.flows.release_preflight import checked_release
from xmdata.runtime import storage
from xmdata.flows.release_recipe import ModelChoice
from xmdata.runtime.atomic import remove_stray_temp_files, write_text_atomic
from xmdata.runtime.cluster_spec import ClusterOptions
from xmdata.runtime.session import cluster_scope
from xmdata.schemas.column_map import column_mapping
from xmdata.tasks.release.card import build_card
from xmdata.tasks.release.recipe_card import recipe_sections
from xmdata.tasks.release.files import copy_files, gather_rejects, gather_tables
from xmdata.tasks.release.manifest import release_files, write_manifest
from xmdata.tasks.release.upload import check_work, release_folders, upload_release
from xmdata.tasks.stage_params import Seed, ShardCount

PUBLISHED_FOLDERS = ("data", "rejects", "plots", "reports")


@flow(name="release")
def release_flow(config: str = "demo", out: str = "releases/demo", shards: ShardCount | None = None,
                 seed: Seed | None = None, work: str | None = None, sample: bool = False,
                 models: ModelChoice = "config", cluster: ClusterOptions | None = None) -> dict:
    """Build the release a config describes into OUT, resumably, and write its card and manifest.

    Args:
        config: path to a release.yaml, or a packaged one by name (demo)
        out: release folder, or an s3:// gs:// az:// URL (built in a local staging folder, then
            uploaded with manifest.json last); a relative path is relative to the serving process's directory
        shards: override the config's shard count (recorded in the manifest)
        seed: override the config's seed (recorded in the manifest)
        work: local build folder with shards and completion records (default OUT/build)
        sample: build on the config's shipped sample inputs (its `sample:` section), offline
        models: config (the models the config names) or tiny (the offline tiny models instead)
        cluster: a distributed cluster class (SLURM, Kubernetes…) for the big stages, over the config's
    """
    # Every stage's refusals (config, overrides, inputs, models) before the first stage writes.
    parsed, resolved, text, text_sha, overrides = checked_release(config, shards, seed, sample, models)
    overrides |= ({"sample": True} if sample else {}) | ({"models": models} if models != "config" else {})
    check_work(parsed, work)  # for runs from the UI: the CLI checked it already
    target, out, work = release_folders(out, work)
    remove_stray_temp_files(out)  # what a killed run left half-written, build folder included
    with column_mapping(parsed.columns), cluster_scope(cluster or parsed.cluster):
        build = build_release_data(resolved, work)  # `columns:` applied as --map on the commands
    summary = finish_build(work, build.reports, build.distributions, f"Build of release {parsed.name}",
                           extra_markdown="".join(build.markdown))
    tables = gather_tables(work, out)
    written = [f"data/{t}.parquet" for t in tables]
    written += [f"rejects/{s}.parquet" for s in gather_rejects(work, out, [r.stage for r in build.reports])]
    written += copy_files(work, out)
    inside = ".." if storage.is_url(work) else os.path.relpath(work, out)  # a store's build is never inside
    skip = set() if inside.startswith("..") else {inside}
    _remove_stale(out, set(written), skip)
    facts = release_facts(config, parsed, resolved, text, text_sha, overrides, summary, work,
                          None if skip == set() else inside)
    card = build_card(out, parsed, tables, summary) + recipe_sections(out, parsed, facts, work)
    write_text_atomic(card, os.path.join(out, "README.md"))
    manifest = write_manifest(out, facts, skip)
    _publish(out, manifest, card)
    if target:
        upload_release(out, target, manifest)
    return {"release": target or out, "release_sha256": manifest["release_sha256"], "run": summary["run"],
            "files": len(manifest["release"]["files"])}


def _remove_stale(out: str, written: set[str], skip: set[str]) -> None:
    """A file an earlier build of OUT published and this one did not (a stage since removed)."""
    for name in release_files(out, skip):
        if name.split(os.sep)[0] in PUBLISHED_FOLDERS and name not in written:
            os.unlink(os.path.join(out, name))


def _publish(out: str, manifest: dict, card: str) -> None:
    files = manifest["release"]["files"]
    create_markdown_artifact(card.split("---\n", 2)[-1], key="release-card",
                             description=f"Dataset card of {out}")
    create_table_artifact([{"file": name, "rows": e.get("rows"), "bytes": e["bytes"], "sha256": e["sha256"]}
                           for name, e in files.items()], key="release-files",
                          description=f"Files of {out}; release_sha256 {manifest['release_sha256']}")
    for name in files:
        if name.endswith(".png"):
            create_link_artifact(f"file://{os.path.join(out, name)}", link_text=name,
                                 key="release-" + os.path.basename(name)[:-4].replace("_", "-"),
                                 description=f"Plot of {out}")
