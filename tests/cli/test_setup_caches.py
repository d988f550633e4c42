"""`./run setup` builds what a first demo would build before its first rows (xmdata/setup_caches.py):
the tiny models the demo resolves and the geocoding tables its workers read, in XMDATA_CACHE."""
import os

import numpy as np
import pytest


def test_setup_caches_are_the_ones_the_demo_reads(tiny_models, monkeypatch):
    from xmdata.flows.release_config import load_release_config
    from xmdata.models.tiny import cached_tiny_models
    from xmdata.runtime.storage import cache_root
    from xmdata.setup_caches import build_demo_caches
    from xmdata.tasks.selection import geo_tables

    lines = build_demo_caches()
    assert any(line.startswith("tiny models (seed 0)") for line in lines)
    names = sorted(os.listdir(os.path.join(cache_root(), "geo")))
    assert any(n.startswith("places-") for n in names) and any(n.startswith("land-") and n.endswith(".npy") for n in names)
    # The demo's preflight finds these models (its own seed, the same folder), not a build of its own.
    assert cached_tiny_models(seed=load_release_config("demo").config.seed) == tiny_models
    # And a worker's geocoder loads the tables from the cache: the land mask mapped, not decompressed again.
    geo_tables.land_mask.cache_clear()
    assert isinstance(geo_tables.land_mask().ocean_bits, np.memmap)
    # torch's build facts are kept where the manifest reads them: publishing imports no torch for them.
    from xmdata.tasks.release import manifest

    assert any(line.startswith("torch build: ") for line in lines)
    imported = manifest._torch_build_imported()
    monkeypatch.setattr(manifest, "_torch_build_imported",
                        lambda: pytest.fail("the manifest imported torch for facts setup kept"))
    assert manifest.platform_record()["torch"] == imported
