"""What a first `xmdata demo` would otherwise build before its first rows, built by `./run setup`
into XMDATA_CACHE: the demo's tiny models (`tiny:<backend>` with the demo config's seed: ~15 CPU-s
in the command's own process, before the service starts), the geocoding tables (~5 CPU-s and
~1 GB in each worker that runs a first geocode shard; tasks/selection/geo_tables.py) and torch's
build facts that manifest.json records (importing torch: ~2.6 CPU-s in the command's process while
it publishes, with nothing else running; tasks/release/manifest.py `_torch_build`).

The files are the ones the demo would write itself, by the same functions, so a release is the same
whether they were made here or by the demo (`python -m xmdata.setup_caches`).
"""
from __future__ import annotations


def build_demo_caches() -> list[str]:
    """Builds what is missing (a no-op where it is all there); returns what it holds, one line each."""
    from xmdata.flows.release_config import load_release_config
    from xmdata.models.tiny import cached_tiny_models
    from xmdata.tasks.release.manifest import platform_record
    from xmdata.tasks.selection import geo_tables

    geo_tables.places()
    geo_tables.land_mask()
    seed = load_release_config("demo").config.seed
    tiny = cached_tiny_models(seed=seed)
    torch = platform_record()["torch"]
    return ["geocoding tables", f"tiny models (seed {seed}): {', '.join(sorted(tiny))}",
            f"torch build: {torch and torch['version']}"]


if __name__ == "__main__":
    from xmdata.runtime.storage import cache_root

    for line in build_demo_caches():
        print(f"{cache_root()}: {line}")
