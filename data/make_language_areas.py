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
# NLLB-200's FLORES-200 code of each language: ISO 639-3 and ISO 15924 script, as
# transformers' tokenization_nllb.FAIRSEQ_LANGUAGE_CODES lists them (tests/models/test_nllb.py checks
# every entry against it). For most languages the code is the ISO 639-3 code of the language and the
# script it is written in; where our code names a macrolanguage, FLORES-200 has only one of its members,
# and the choice is a named row below with its reason. None: FLORES-200 has no such language.
NLLB = {
    "bn": "ben_Beng", "cs": "ces_Latn", "da": "dan_Latn", "de": "deu_Latn", "el": "ell_Grek",
    "en": "eng_Latn", "es": "spa_Latn", "fi": "fin_Latn", "fr": "fra_Latn", "hi": "hin_Deva",
    "hr": "hrv_Latn", "hu": "hun_Latn", "id": "ind_Latn", "it": "ita_Latn", "he": "heb_Hebr",
    "ja": "jpn_Jpan", "ko": "kor_Hang", "mi": "mri_Latn", "nl": "nld_Latn", "pl": "pol_Latn",
    "pt": "por_Latn", "ro": "ron_Latn", "ru": "rus_Cyrl", "sv": "swe_Latn", "te": "tel_Telu",
    "th": "tha_Thai", "tr": "tur_Latn", "uk": "ukr_Cyrl", "vi": "vie_Latn",
}
# Macrolanguages: (the member FLORES-200 has, why it is the one). These notes are printed in the
# coverage table (docs/reference/translator-coverage.md).
NLLB_MACROLANGUAGE_CHOICES = {
    "ar": ("arb_Arab", "Arabic: Modern Standard Arabic (arb), the written standard XM3600's captions are in; "
                       "FLORES-200's dialects (arz, apc, ary …) are spoken varieties"),
    "fa": ("pes_Arab", "Persian: Western (Iranian) Persian (pes); Dari (prs_Arab) is the Afghan variety"),
    "no": ("nob_Latn", "Norwegian: Bokmål (nob), as lid.176's `no` and M2M100's `no` mostly are; Nynorsk is nno_Latn"),
    "fil": ("tgl_Latn", "Filipino: FLORES-200 has Tagalog (tgl), the language Filipino is standardised from"),
    "zh": ("zho_Hans", "Chinese: Simplified script (Hans), Mandarin; Traditional (zho_Hant) is out of scope: "
                       "the project's codes carry no script"),
    "qu": ("quy_Latn", "Quechua: FLORES-200 has Ayacucho Quechua (quy) only, while XM3600's Quechua is Cusco "
                       "Quechua (quz): close Southern Quechua varieties, not the same one"),
    "sw": ("swh_Latn", "Swahili: (individual) Swahili (swh), the Swahili of Tanzania and Kenya"),
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


def nllb_code(code: str) -> str | None:
    return NLLB_MACROLANGUAGE_CHOICES[code][0] if code in NLLB_MACROLANGUAGE_CHOICES else NLLB.get(code)


def build() -> dict:
    continent_of = json.loads((HERE / "continents.json").read_text())["country_continent"]
    languages = {}
    for code, (cldr, lid176, m2m100, madlad, regions) in LANGUAGES.items():
        region_countries = {r.split("/")[0] for r in regions}
        known = set(continent_of)  # CLDR has pseudo-territories (EA, IC, DG) that no photo lies in
        countries = (cldr_countries(cldr) & known) | region_countries | set(EXTRA_COUNTRIES.get(code, []))
        continents = {continent_of[cc] for cc in region_countries} | set(EXTRA_CONTINENTS.get(code, []))
        languages[code] = {"regions": regions, "countries": sorted(countries), "continents": sorted(continents),
                           "codes": {"cldr": cldr, "lid176": lid176, "m2m100": m2m100, "madlad": madlad,
                                     "nllb": nllb_code(code)}}
    return {"_about": __doc__.strip().splitlines()[0] + " Generated by data/make_language_areas.py.",
            "min_cldr_share_percent": MIN_SHARE, "languages": languages,
            "code_notes": {"nllb": {code: note for code, (_, note) in NLLB_MACROLANGUAGE_CHOICES.items()}}}


if __name__ == "__main__":
    (HERE / "language_areas.json").write_text(json.dumps(build(), indent=1, ensure_ascii=False) + "\n")
