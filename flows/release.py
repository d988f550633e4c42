"""A reproducible data release: build the stages a release.yaml names, then publish the tables, their
rejects, plots, a dataset card and a manifest of checksums into OUT. Same config, same inputs ->
the same bytes (manifest.json differs in its `built_at` line only).

The config is read and checked once a run (flows/release_preflight.py): `release_flow`, the UI's form
and Python's call, checks it itself; `xmdata release` checks it before any server starts and runs
`checked_release_flow` on the Release it checked."""
from __future__ import annotations

import os
import platform

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from xmdata import __version__
from xmdata.flows.finish import finish_build
from xmdata.flows.release_build import build_release_data, recorded_source
from xmdata.flows.release_config import ModelChoice, Release
from xmdata.flows.release_refs import model_facts, named_models
from xmdata.flows.release_preflight import checked_release
from xmdata.runtime import storage
from xmdata.runtime.atomic import sha256_file, write_text_atomic
from xmdata.runtime.cluster_spec import ClusterOptions
from xmdata.runtime.folder_lock import one_writer
from xmdata.runtime.session import cluster_scope
from xmdata.schemas.column_map import column_mapping
from xmdata.tasks.build.plot_markdown import inline_images, plot_image
from xmdata.tasks.release.card import build_card
from xmdata.tasks.release.embed_images import embed_release_images, image_sources, images_fingerprint
from xmdata.tasks.release.image_options import ImageEmbedding
from xmdata.tasks.release.look_inside import look_inside_markdown
from xmdata.tasks.release.publication import publication_key, record_publication, unchanged
from xmdata.tasks.release.croissant import write_croissant
from xmdata.tasks.release.explore import write_explore
from xmdata.tasks.release.recipe_card import recipe_sections
from xmdata.tasks.release.files import copy_files, gather_rejects, gather_tables
from xmdata.tasks.release.manifest import canonical_sha256, file_entry, git_state, package_versions, \
    release_files, write_manifest
from xmdata.tasks.release.upload import release_folders, upload_release
from xmdata.tasks.stage_params import Seed, ShardCount

PUBLISHED_FOLDERS = ("data", "rejects", "plots", "reports")


# Defined first: where flows are looked up by name, "release" is the UI's release_flow below.
@flow(name="release", validate_parameters=False)
def checked_release_flow(release: Release, out: str, work: str | None = None,
                         shards: ShardCount | None = None) -> dict:
    """`xmdata release`: the build of RELEASE, which the command checked (not validated again); its
    --shards, which every command hands its flow, is in RELEASE already.

    Docs: docs/how-to/releases.md; every option: docs/reference/commands.md#release.
    """
    return publish_release(release, out, work, None)


@flow(name="release")
def release_flow(config: str = "demo", out: str = "releases/demo", shards: ShardCount | None = None,
                 seed: Seed | None = None, work: str | None = None, sample: bool = False,
                 models: ModelChoice = "config", cluster: ClusterOptions | None = None,
                 images: ImageEmbedding | None = None) -> dict:
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
        images: embed_images / image_max_side over the config's (each row's image inside the tables)

    Docs: docs/how-to/releases.md; every option: docs/reference/commands.md#release.
    """
    # Every stage's refusals (config, overrides, inputs, models, build folder) before the first stage writes.
    return publish_release(checked_release(config, shards, seed, sample, models, work, images.given() if images else None),
                           out, work, cluster)


def publish_release(release: Release, out: str, work: str | None, cluster: ClusterOptions | None) -> dict:
    """Build the checked RELEASE into OUT, resumably, and write its card and manifest."""
    target, out, work = release_folders(out, work)
    # One writer of each at a time; a folder taken now is swept of what a killed run left half-written
    # (runtime/folder_lock.py). A work folder inside OUT (the default OUT/build) is OUT's already.
    with one_writer(out), one_writer(work):
        return _build_and_publish(release, target, out, work, cluster)


def jobs_under(*folders: str) -> str | None:
    """The first local one (the build folder, else the folder the release is built in): a cluster
    manager's batch jobs log under it (cluster_scope)."""
    return next((folder for folder in folders if not storage.is_url(folder)), None)


def _build_and_publish(release: Release, target: str | None, out: str, work: str,
                       cluster: ClusterOptions | None) -> dict:
    config = release.config
    with column_mapping(config.columns), cluster_scope(cluster or config.cluster, jobs_under(work, out)):
        build = build_release_data(release.resolved, work)  # `columns:` applied as --map on the commands
    summary = finish_build(work, build.reports, build.distributions, f"Build of release {config.name}",
                           extra_markdown="".join(build.markdown))
    inside = ".." if storage.is_url(work) else os.path.relpath(work, out)  # a store's build is never inside
    skip = set() if inside.startswith("..") else {inside}
    sources = image_sources(config, work) if config.embed_images else None
    facts = release_facts(release, summary, work, None if skip == set() else inside)
    if sources:  # the images' sha256 (cached by stat): in the manifest, and so in the publication key
        facts["images"] = images_fingerprint(sources)
    key = None if target or storage.is_url(work) else publication_key(facts, work)
    if key and (published := unchanged(out, work, skip, key)):  # nothing changed since it was published
        print(f"release {out}: unchanged since it was published; kept as it is", flush=True)
        _publish(out, published, storage.read_text(os.path.join(out, "README.md")))
        return {"release": out, "release_sha256": published["release_sha256"], "run": summary["run"],
                "files": len(published["release"]["files"])}
    tables = gather_tables(work, out)
    embedded = embed_release_images(out, list(tables), sources, config.image_max_side) if sources else {}
    for name, e in embedded.items():  # said here and in the card's Images section
        if e["missing"] or e["bad"]:
            print(f"release {out}: {name}: {e['missing']} missing image(s), {e['bad']} bad image(s) (null; the "
                  f"card's Images section names them)", flush=True)
    written = [f for t in tables for f in (embedded[t]["files"] if t in embedded else [f"data/{t}.parquet"])]
    written += [f"rejects/{s}.parquet" for s in gather_rejects(work, out, [r.stage for r in build.reports])]
    written += copy_files(work, out)
    _remove_stale(out, set(written), skip)
    card = build_card(out, config, tables, summary, embedded) + recipe_sections(
        out, config, named_models(release.as_written), facts, work)
    write_text_atomic(card, os.path.join(out, "README.md"))
    write_explore(out, config.name)  # the browsable page (explore/), hashed by the manifest like the rest
    # Before the manifest, which hashes it: croissant.json holds the tables' sha256, never release_sha256.
    tables_files = {f: file_entry(os.path.join(out, f)) for f in written if f.endswith(".parquet")}
    write_croissant(out, config, facts, tables_files)
    manifest = write_manifest(out, facts, skip, hashed=tables_files)
    _publish(out, manifest, card)
    if key:
        record_publication(out, work, skip, key)
    if target:
        upload_release(out, target, manifest)
    return {"release": target or out, "release_sha256": manifest["release_sha256"], "run": summary["run"],
            "files": len(manifest["release"]["files"])}


def release_facts(release: Release, summary: dict, work: str, work_folder: str | None) -> dict:
    """What manifest.json records beside the checksums: config, inputs, models, packages, code. Paths
    as the config writes them, never absolute, so the manifest does not depend on where it was built."""
    config, base = release.config, os.path.dirname(release.path)
    return {
        "name": config.name, "version": config.version, "license": config.license,
        "config": {"file": os.path.basename(release.path), "sha256": release.sha256, "text": release.text,
                   "overrides": release.overrides,
                   "effective_sha256": canonical_sha256({"text": release.text, "overrides": release.overrides})},
        "inputs": _input_facts(config.inputs(), base) | reference_facts(config, base),
        "imports": {name: {"format": entry.format, "source": os.path.relpath(entry.source, base),
                           **recorded_source(work, name)} for name, entry in config.imports.items()},
        "models": model_facts(config, release.resolved),
        "packages": package_versions(),
        "python": platform.python_version(),
        "xmdata": {"version": __version__, **git_state()},
        "stages": summary["stages"],
        "work_folder": work_folder,
    }


def reference_facts(config, base: str) -> dict:
    """contamination.against: each reference's files, their count and one sha256 (a folder's hashes kept
    by size, mtime, inode and ctime in XMDATA_CACHE, so re-checking a large reference reads none of it again)."""
    from xmdata.tasks.clean.fingerprint import reference_fingerprint

    if not config.contamination:
        return {}
    return {f"contamination.against[{n}]": {"path": os.path.relpath(path, base), **reference_fingerprint(path)}
            for n, path in enumerate(config.contamination.against)}


def _input_facts(inputs: list[tuple[str, str]], base: str) -> dict:
    facts = {}
    for where, path in inputs:
        if storage.is_url(path):  # recorded as written: no machine-specific part
            facts[where] = {"path": path, "sha256": sha256_file(path), "bytes": storage.filesystem(path)[0].size(path)}
        elif os.path.isfile(path):
            facts[where] = {"path": os.path.relpath(path, base), "sha256": sha256_file(path),
                            "bytes": os.path.getsize(path)}
    return facts


def _remove_stale(out: str, written: set[str], skip: set[str]) -> None:
    """A file an earlier build of OUT published and this one did not (a stage since removed)."""
    for name in release_files(out, skip):
        if name.split(os.sep)[0] in PUBLISHED_FOLDERS and name not in written:
            os.unlink(os.path.join(out, name))


def _publish(out: str, manifest: dict, card: str) -> None:
    files = manifest["release"]["files"]
    # The card's plots inside the artifact: the UI (an http page) shows no file:// image.
    create_markdown_artifact(inline_images(card.split("---\n", 2)[-1], out), key="release-card",
                             description=f"Dataset card of {out}")
    create_table_artifact([{"file": name, "rows": e.get("rows"), "bytes": e["bytes"], "sha256": e["sha256"]}
                           for name, e in files.items()], key="release-files",
                          description=f"Files of {out}; release_sha256 {manifest['release_sha256']}")
    create_markdown_artifact(look_inside_markdown(out), key="release-look-inside",
                             description=f"Browse {out} and explain its rows")
    for name in files:
        if name.endswith(".png"):
            create_markdown_artifact(plot_image(os.path.join(out, name), name),
                                     key="release-" + os.path.basename(name)[:-4].replace("_", "-"),
                                     description=f"Plot of {out}: {name}")
