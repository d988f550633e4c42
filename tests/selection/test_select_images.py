"""Image selection (greedy as published, optimal exact), geocoding rejects and language-area validation."""
from __future__ import annotations

import itertools
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xmdata.tasks.selection.language_areas import LEVELS, LanguageAreas, load_language_areas
from xmdata.tasks.selection.select_images import select_greedy, select_optimal, selection_summary

# Hand-made areas: Hindi's region is all of India, as in the paper's story.
AREAS = LanguageAreas.from_dict({"languages": {
    "bn": {"regions": ["BD", "IN/West Bengal"], "countries": ["BD", "IN"], "continents": ["AS"]},
    "te": {"regions": ["IN/Telangana", "IN/Andhra Pradesh"], "countries": ["IN"], "continents": ["AS"]},
    "hi": {"regions": ["IN"], "countries": ["IN"], "continents": ["AS"]},
    "fa": {"regions": ["IR"], "countries": ["IR", "AF"], "continents": ["AS"]},
    "ja": {"regions": ["JP"], "countries": ["JP"], "continents": ["AS"]},
    "fr": {"regions": ["FR"], "countries": ["FR", "BE"], "continents": ["EU"]},
}})
PLACES = [("IN", "West Bengal", "AS"), ("IN", "Telangana", "AS"), ("IN", "Goa", "AS"), ("BD", "Dhaka", "AS"),
          ("IR", "Tehran", "AS"), ("JP", "Tokyo", "AS"), ("MN", "Ulaanbaatar", "AS"), ("FR", "Brittany", "EU"),
          ("BE", "Wallonia", "EU"), ("BR", "Sao Paulo", "SA")]


def candidates(places: list[int], flagged: list[bool] | None = None) -> pa.Table:
    rows = [PLACES[p] for p in places]
    flags = flagged or [False] * len(places)
    return pa.table({"id": [f"img{i:03d}" for i in range(len(places))],
                     "latitude": [float(i % 90) for i in range(len(places))],
                     "longitude": [float(p) for p in places],
                     "country": [r[0] for r in rows], "admin1": [r[1] for r in rows], "continent": [r[2] for r in rows],
                     "geo_flag": ["at_sea" if f else None for f in flags]})


def subset(codes: list[str]) -> LanguageAreas:
    return LanguageAreas({c: AREAS.languages[c] for c in codes}, AREAS.country_continent)


def levels_by_language(selection: pa.Table) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for lang, level in zip(selection.column("language").to_pylist(), selection.column("level").to_pylist()):
        out.setdefault(lang, {}).setdefault(level, 0)
        out[lang][level] += 1
    return out


def test_smallest_pool_goes_first_and_backs_off_to_its_continent_for_exactly_the_missing_count():
    # Persian: 86 images in Iran, none in Afghanistan; Japanese has 150 in Japan; 20 in Mongolia.
    table = candidates([4] * 86 + [5] * 150 + [6] * 20)
    chosen = select_greedy(table, subset(["fa", "ja"]), per_language=100, seed=3)
    assert levels_by_language(chosen) == {"fa": {"region": 86, "continent": 14}, "ja": {"region": 100}}
    fa_continent = chosen.filter(pa.compute.equal(chosen.column("level"), "continent"))
    # The back-off prefers Mongolia, which no later language could use at a better level than Japan.
    assert set(fa_continent.column("country").to_pylist()) == {"MN"}


def test_language_whose_region_went_to_smaller_pools_ends_at_global_level():
    # West Bengal 6 + Bangladesh 4 (Bengali pool 10), Telangana 10: Hindi's all-India pool is 16.
    table = candidates([0] * 6 + [3] * 4 + [1] * 10 + [7] * 40)
    chosen = select_greedy(table, subset(["bn", "te", "hi", "fr"]), per_language=10, seed=0)
    levels = levels_by_language(chosen)
    assert levels["bn"] == {"region": 10} and levels["te"] == {"region": 10}
    assert levels["hi"] == {"global": 10}
    summary = selection_summary(chosen, subset(["bn", "te", "hi", "fr"]), per_language=10).to_pydict()
    assert summary["global"][summary["language"].index("hi")] == 10


def test_shortfall_completes_what_it_can_and_reports_the_rest():
    chosen = select_optimal(candidates([4] * 3 + [7] * 2), subset(["fa", "fr"]), per_language=4)
    summary = selection_summary(chosen, subset(["fa", "fr"]), per_language=4).to_pydict()
    assert summary["selected"] == [3, 2] and summary["shortfall"] == [1, 2]


instances = st.tuples(
    st.lists(st.integers(0, len(PLACES) - 1), max_size=6),
    st.lists(st.booleans(), min_size=6, max_size=6),
    st.lists(st.sampled_from(list(AREAS.languages)), min_size=1, max_size=3, unique=True),
    st.integers(1, 3), st.sampled_from(["random", "spread"]), st.integers(0, 2**16))


def score(levels: list[int]) -> tuple[int, ...]:
    return (len(levels), *(sum(1 for v in levels if v == k) for k in range(3)))


def brute_force_best(table: pa.Table, areas: LanguageAreas, k: int) -> tuple[int, ...]:
    """Every assignment of each image to nothing or one language, at most k per language."""
    level = [{c: 3 if r["geo_flag"] else a.level(r["country"], r["admin1"], r["continent"])
              for c, a in areas.languages.items()} for r in table.to_pylist()]
    best = (0, 0, 0, 0)
    for choice in itertools.product([None, *areas.languages], repeat=len(level)):
        if any(choice.count(code) > k for code in areas.languages):
            continue
        best = max(best, score([lv[c] for lv, c in zip(level, choice) if c is not None]))
    return best


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances)
def test_selection_properties(instance):
    places, flags, codes, k, within, seed = instance
    table, areas = candidates(places, flags[:len(places)]), subset(codes)
    by_id = {r["id"]: r for r in table.to_pylist()}
    results = {}
    for select in (select_greedy, select_optimal):
        chosen = select(table, areas, per_language=k, within=within, seed=seed)
        assert chosen.equals(select(table, areas, per_language=k, within=within, seed=seed))
        ids = chosen.column("image_id").to_pylist()
        assert len(ids) == len(set(ids)) == min(len(places), k * len(codes))
        rows = chosen.to_pylist()
        for code in codes:
            assert sum(r["language"] == code for r in rows) <= k
        for r in rows:
            image = by_id[r["image_id"]]
            expected = 3 if image["geo_flag"] else areas.languages[r["language"]].level(
                image["country"], image["admin1"], image["continent"])
            assert r["level"] == LEVELS[expected]
        results[select.__name__] = score([LEVELS.index(r["level"]) for r in rows])
    assert results["select_optimal"][1] >= results["select_greedy"][1]
    assert results["select_optimal"] >= results["select_greedy"]
    assert results["select_optimal"] == brute_force_best(table, areas, k)


def test_shipped_language_areas_cover_the_36_languages_and_their_codes():
    areas = load_language_areas()
    assert len(areas.codes) == 36
    assert areas.languages["fil"].codes["lid176"] == "tl" and areas.languages["he"].codes["cldr"] == "he"
    assert "iw" not in areas.languages  # XM3600's code, keyed by the one system
    assert areas.languages["qu"].codes["m2m100"] is None
    assert areas.languages["bn"].level("IN", "West Bengal", "AS") == 0
    assert areas.languages["hi"].level("IN", "West Bengal", "AS") == 1


@pytest.mark.parametrize("bad, message", [("IN/Bengal", "'IN/Bengal'"), ("XX", "'XX'")])
def test_area_validation_names_the_language_and_the_bad_entry(tmp_path, bad, message):
    path = tmp_path / "areas.json"
    path.write_text(json.dumps({"languages": {"bn": {"regions": ["BD", bad], "countries": ["BD"],
                                                     "continents": ["AS"]}}}))
    with pytest.raises(ValueError, match=f"language 'bn'.*{message}"):
        load_language_areas(path)


def test_geocode_rejects_rows_without_valid_coordinates(monkeypatch):
    from xmdata.tasks.selection import geocode as stage

    # The real geocoder costs seconds to load (the land mask alone is ~1 GB): stub it here.
    def fake(lat, lon):
        n = len(lat)
        return {"country": ["FR"] * n, "admin1": [None] * n, "continent": ["EU"] * n,
                "geo_place_km": np.zeros(n), "geo_flag": [None] * n}

    monkeypatch.setattr(stage, "reverse_geocode", fake)
    table = pa.table({"id": ["ok", "no-lat", "no-lon", "inf", "lon-200"], "latitude": [1.0, None, 2.0, np.inf, 3.0],
                      "longitude": [1.0, 2.0, None, 1.0, -200.0]})
    kept, rejects = stage.geocode(table, {})
    assert kept.column("id").to_pylist() == ["ok"] and kept.column("country").to_pylist() == ["FR"]
    assert rejects.column("reason").to_pylist() == ["no_gps", "no_gps", "invalid_coordinates",
                                                    "invalid_coordinates"]
    assert rejects.column("value").to_pylist()[-1] == "3.0,-200.0"


@pytest.mark.slow
def test_geocode_rejects_and_flags():
    from xmdata.tasks.selection.geocode import geocode

    table = pa.table({"id": ["kolkata", "none", "nan", "north", "atlantic"],
                      "latitude": [22.57, None, float("nan"), 95.0, 0.0],
                      "longitude": [88.36, 1.0, 2.0, 3.0, -30.0]})
    kept, rejects = geocode(table, {})
    assert dict(zip(rejects.column("row_id").to_pylist(), rejects.column("reason").to_pylist())) == {
        "none": "no_gps", "nan": "invalid_coordinates", "north": "invalid_coordinates"}
    rows = {r["id"]: r for r in kept.to_pylist()}
    assert (rows["kolkata"]["country"], rows["kolkata"]["admin1"], rows["kolkata"]["continent"]) == (
        "IN", "West Bengal", "AS")
    assert rows["kolkata"]["geo_flag"] is None and rows["atlantic"]["geo_flag"] == "at_sea"


def test_read_exif_gps(tmp_path):
    from PIL import Image

    from xmdata.tasks.selection.geocode import read_exif_gps

    exif = Image.Exif()
    exif[0x8825] = {1: "S", 2: (33.0, 52.0, 12.0), 3: "E", 4: (151.0, 12.0, 36.0)}
    Image.new("RGB", (4, 4)).save(tmp_path / "sydney.jpg", exif=exif)
    Image.new("RGB", (4, 4)).save(tmp_path / "plain.jpg")
    (tmp_path / "broken.jpg").write_bytes(b"not an image")
    lat, lon, reason = read_exif_gps(tmp_path / "sydney.jpg")
    assert reason is None and lat == pytest.approx(-33.87) and lon == pytest.approx(151.21)
    assert read_exif_gps(tmp_path / "plain.jpg") == (None, None, "no_gps")
    assert read_exif_gps(tmp_path / "broken.jpg")[2].startswith("unreadable_exif")


def test_image_folder_reads_exif_gps_and_rejects_photos_without_it(tmp_path):
    from PIL import Image

    from xmdata.tasks.selection.image_folder import images_from_folder

    exif = Image.Exif()
    exif.get_ifd(0x8825).update({1: "S", 2: (12.0, 30.0, 0.0), 3: "W", 4: (77.0, 1.0, 48.0)})
    Image.new("RGB", (8, 8)).save(tmp_path / "lima.jpg", exif=exif)
    Image.new("RGB", (8, 8)).save(tmp_path / "nogps.jpg")
    (tmp_path / "broken.jpg").write_bytes(b"not an image")
    (tmp_path / "notes.txt").write_text("ignored")
    table, rejects = images_from_folder(str(tmp_path))
    assert table.column("id").to_pylist() == ["lima.jpg"]
    assert table.column("latitude")[0].as_py() == pytest.approx(-12.5)
    assert table.column("longitude")[0].as_py() == pytest.approx(-(77 + 1 / 60 + 48 / 3600))
    assert sorted(zip(rejects.column("row_id").to_pylist(), rejects.column("reason").to_pylist())) == [
        ("broken.jpg", "unreadable_exif"), ("nogps.jpg", "no_gps")]


def test_the_selection_does_not_depend_on_how_many_shards_geocoding_ran_in(tmp_path):
    from xmdata.data import sample_path
    from xmdata.flows.select_images import select_geo_diverse
    from xmdata.runtime.session import execution_session
    from xmdata.tasks.stage_params import SelectImagesParams

    params = SelectImagesParams(per_language=3, within="spread")
    with execution_session("inprocess"):
        picks = [select_geo_diverse(sample_path("images.csv"), str(tmp_path / str(n)), n, params, 7)[2]
                 for n in (1, 5)]
    selections = [pq.read_table(tmp_path / str(n) / "selection.parquet") for n in (1, 5)]
    assert selections[0].num_rows > 0 and selections[0].equals(selections[1])
    assert picks[0].equals(picks[1])
