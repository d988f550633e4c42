"""Write data/language_areas.json: where each Crossmodal-3600 language is spoken, at three levels.

    .venv/bin/python data/make_language_areas.py

regions (the language's core area) are written by hand below: CLDR has no sub-country data, and
its shares count second-language speakers (English 90 % in NL), so a share rule would put English's
core in Europe. countries = CLDR territories where the language has an official status and at least
MIN_SHARE % of speakers (babel.languages, offline), plus the regions' countries, plus EXTRA_COUNTRIES.
continents = the continents of the region countries (data/continents.json) plus EXTRA_CONTINENTS,
so French's continent level is Europe and North America, not every continent with a French overseas
territory. The loader, xmdata.tasks.selection.language_areas, validates every entry.
"""
from __future__ import annotations

import json
from pathlib import Path

from babel.core import get_global

HERE = Path(__file__).parent
MIN_SHARE = 5.0
OFFICIAL = {"official", "de_facto_official", "official_regional"}

HINDI_BELT = ["Uttar Pradesh", "Bihar", "Madhya Pradesh", "Rajasthan", "Haryana", "Himachal Pradesh",
              "Uttarakhand", "Jharkhand", "Chhattisgarh", "NCT", "Chandigarh"]
SWISS_FRENCH = ["Geneva", "Vaud", "Neuchatel", "Jura", "Fribourg", "Valais"]
SWISS_GERMAN = ["Aargau", "Appenzell Ausserrhoden", "Appenzell Innerrhoden", "Basel-City", "Basel-Landschaft",
                "Bern", "Glarus", "Grisons", "Lucerne", "Nidwalden", "Obwalden", "Saint Gallen", "Schaffhausen",
                "Schwyz", "Solothurn", "Thurgau", "Uri", "Zug", "Zurich"]
CANADA_ENGLISH = ["Alberta", "British Columbia", "Manitoba", "New Brunswick", "Newfoundland and Labrador",
                  "Northwest Territories", "Nova Scotia", "Nunavut", "Ontario", "Prince Edward Island",
                  "Saskatchewan", "Yukon"]
NORTH_ISLAND = ["Northland", "Auckland", "Waikato", "Bay of Plenty", "Gisborne", "Hawke's Bay", "Taranaki",
                "Manawatu-Wanganui", "Wellington"]
QUECHUA_SOUTH = ["PE/Cusco", "PE/Apurimac", "PE/Puno", "PE/Ayacucho", "PE/Huancavelica",
                 "BO/Cochabamba", "BO/Potosi", "BO/Chuquisaca", "BO/Oruro"]


def sub(cc: str, names: list[str]) -> list[str]:
    return [f"{cc}/{n}" for n in names]


# the project's code (schemas/languages.py; XM3600's own where they agree): (cldr, lid176, m2m100, madlad,
# regions). None: the system has no such language.
LANGUAGES = {
    "ar": ("ar", "ar", "ar", "ar", "SA AE EG JO KW PS TN QA BH LB MR OM SY DZ LY YE IQ MA SD".split()),
    "bn": ("bn", "bn", "bn", "bn", ["BD", *sub("IN", ["West Bengal", "Tripura"])]),
    "cs": ("cs", "cs", "cs", "cs", ["CZ"]),
    "da": ("da", "da", "da", "da", ["DK"]),
    "de": ("de", "de", "de", "de", ["DE", "AT", "LI", *sub("CH", SWISS_GERMAN)]),
    "el": ("el", "el", "el", "el", ["GR", "CY"]),
    "en": ("en", "en", "en", "en", ["US", "GB", "IE", "AU", "NZ", *sub("CA", CANADA_ENGLISH)]),
    "es": ("es", "es", "es", "es", "ES MX CO AR PE VE CL EC GT CU BO DO HN PY SV NI CR PA UY PR".split()),
    "fa": ("fa", "fa", "fa", "fa", ["IR", "AF"]),
    "fi": ("fi", "fi", "fi", "fi", ["FI"]),
    "fil": ("fil", "tl", "tl", "fil", ["PH"]),
    "fr": ("fr", "fr", "fr", "fr", ["FR", "MC", "LU", *sub("BE", ["Wallonia", "Brussels Capital"]),
                                    *sub("CH", SWISS_FRENCH), "CA/Quebec"]),
    "hi": ("hi", "hi", "hi", "hi", sub("IN", HINDI_BELT)),
    "hr": ("hr", "hr", "hr", "hr", ["HR"]),
    "hu": ("hu", "hu", "hu", "hu", ["HU"]),
    "id": ("id", "id", "id", "id", ["ID"]),
    "it": ("it", "it", "it", "it", ["IT", "SM", "VA", "CH/Ticino"]),
    "he": ("he", "he", "he", "he", ["IL"]),  # XM3600 writes iw: keyed by the project's one code, as the loader checks
    "ja": ("ja", "ja", "ja", "ja", ["JP"]),
    "ko": ("ko", "ko", "ko", "ko", ["KR"]),
    "mi": ("mi", None, None, "mi", sub("NZ", NORTH_ISLAND)),
    "nl": ("nl", "nl", "nl", "nl", ["NL", "BE/Flanders", "SR", "AW"]),
    "no": ("nb", "no", "no", "no", ["NO"]),
    "pl": ("pl", "pl", "pl", "pl", ["PL"]),
    "pt": ("pt", "pt", "pt", "pt", ["PT", "BR"]),
    "qu": ("qu", "qu", None, "qu", QUECHUA_SOUTH),
    "ro": ("ro", "ro", "ro", "ro", ["RO", "MD"]),
    "ru": ("ru", "ru", "ru", "ru", ["RU", "BY"]),
    "sv": ("sv", "sv", "sv", "sv", ["SE", "AX"]),
    "sw": ("sw", "sw", "sw", "sw", ["TZ", "KE"]),
    "te": ("te", "te", None, "te", sub("IN", ["Andhra Pradesh", "Telangana"])),
    "th": ("th", "th", "th", "th", ["TH"]),
    "tr": ("tr", "tr", "tr", "tr", ["TR"]),
    "uk": ("uk", "uk", "uk", "uk", ["UA"]),
    "vi": ("vi", "vi", "vi", "vi", ["VN"]),
    "zh": ("zh", "zh", "zh", "zh", ["CN"]),
}
# Where CLDR's official-status rule misses a country the language is plainly spoken in.
EXTRA_COUNTRIES = {"da": ["FO", "GL"], "hi": ["FJ"], "zh": ["TW", "HK", "MO", "SG"], "sv": ["FI"],
                   "fa": ["TJ"], "ko": ["KP"], "sw": ["UG", "CD"], "el": ["CY"], "tr": ["CY"]}
# Countries that straddle two continents, which continents.json gives only one of.
EXTRA_CONTINENTS = {"ru": ["AS"], "tr": ["EU"]}


def cldr_countries(cldr_code: str) -> set[str]:
    territories = get_global("territory_languages")
    return {cc for cc, langs in territories.items()
            if (info := langs.get(cldr_code)) and info.get("official_status") in OFFICIAL
            and (info.get("population_percent") or 0) >= MIN_SHARE}


def build() -> dict:
    continent_of = json.loads((HERE / "continents.json").read_text())["country_continent"]
    languages = {}
    for code, (cldr, lid176, m2m100, madlad, regions) in LANGUAGES.items():
        region_countries = {r.split("/")[0] for r in regions}
        known = set(continent_of)  # CLDR has pseudo-territories (EA, IC, DG) that no photo lies in
        countries = (cldr_countries(cldr) & known) | region_countries | set(EXTRA_COUNTRIES.get(code, []))
        continents = {continent_of[cc] for cc in region_countries} | set(EXTRA_CONTINENTS.get(code, []))
        languages[code] = {"regions": regions, "countries": sorted(countries), "continents": sorted(continents),
                           "codes": {"cldr": cldr, "lid176": lid176, "m2m100": m2m100, "madlad": madlad}}
    return {"_about": __doc__.strip().splitlines()[0] + " Generated by data/make_language_areas.py.",
            "min_cldr_share_percent": MIN_SHARE, "languages": languages}


if __name__ == "__main__":
    (HERE / "language_areas.json").write_text(json.dumps(build(), indent=1, ensure_ascii=False) + "\n")
