"""NLLB-200 (`backend: nllb`): its FLORES-200 codes in data/language_areas.json against the real
NllbTokenizer's own list, the macrolanguage choices named with their notes, and the tiny real-class
model through the translator registry (the engines' agreement: tests/translation/test_translate_engines.py)."""
from __future__ import annotations

import json

import pytest

from xmdata.data import DATA_DIR
from xmdata.tasks.selection.language_areas import load_language_areas

MACROLANGUAGES = {"ar": "arb_Arab", "fa": "pes_Arab", "no": "nob_Latn", "fil": "tgl_Latn", "zh": "zho_Hans",
                  "qu": "quy_Latn"}


def test_every_nllb_code_is_one_the_real_tokenizer_lists():
    from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES

    codes = {code: area.codes["nllb"] for code, area in load_language_areas().languages.items()}
    assert len(codes) == 36 and all(codes.values())  # FLORES-200 has a code for each of XM3600's 36
    assert not set(codes.values()) - set(FAIRSEQ_LANGUAGE_CODES)
    assert len(set(codes.values())) == 36  # no two of our languages share one code


def test_macrolanguage_choices_are_named_rows_with_notes():
    about = json.loads(open(f"{DATA_DIR}/language_areas.json").read())
    areas = load_language_areas().languages
    for code, nllb in MACROLANGUAGES.items():
        assert areas[code].codes["nllb"] == nllb
        assert about["code_notes"]["nllb"][code]
    assert "Cusco" in about["code_notes"]["nllb"]["qu"] and "Ayacucho" in about["code_notes"]["nllb"]["qu"]


def test_the_generator_writes_the_shipped_table():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_language_areas", f"{DATA_DIR}/make_language_areas.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.build() == json.loads(open(f"{DATA_DIR}/language_areas.json").read())


def test_nllb_codes_map_to_the_language_id_labels():
    from xmdata.tasks.translation.languages import lid_labels_for

    assert lid_labels_for(["fra_Latn", "arb_Arab", "tgl_Latn"], "nllb") == {
        "fra_Latn": ["fr"], "arb_Arab": ["ar"], "tgl_Latn": ["tl"]}


def test_tiny_nllb_is_the_real_classes_and_translates(tiny_models):
    from transformers import M2M100ForConditionalGeneration, NllbTokenizer
    from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES

    from xmdata.models.registry import get_model, translator_languages

    spec = tiny_models["nllb"]
    translator = get_model("translator", spec)
    assert type(translator.model) is M2M100ForConditionalGeneration and type(translator.tokenizer) is NllbTokenizer
    assert translator_languages(spec) == sorted(FAIRSEQ_LANGUAGE_CODES)
    batch = translator.prepare(["the dog runs"], "eng_Latn", "fra_Latn")
    ids = batch.inputs["input_ids"][0].tolist()
    assert ids[0] == translator.languages["eng_Latn"] and ids[-1] == translator.tokenizer.eos_token_id
    assert batch.generate_kwargs == {"forced_bos_token_id": translator.languages["fra_Latn"]}
    (candidates,) = translator.predict(batch, 4, 2, 12)
    assert 1 <= len(candidates) <= 2 and all(c.text and "fra_Latn" not in c.text for c in candidates)
    # NLLB's embedding has spare rows beyond its tokenizer (256,206 vs 256,204): an id there is dropped,
    # not converted (NllbTokenizer's sentencepiece refuses it).
    spare = len(translator.tokenizer) + 1
    assert translator.decode_ids([[translator.languages["fra_Latn"], 40, spare, 2]]) == translator.decode_ids(
        [[translator.languages["fra_Latn"], 40, 2]])
    with pytest.raises(ValueError, match="target language 'fr' is not supported"):
        translator.prepare(["the dog runs"], "eng_Latn", "fr")


def test_the_coverage_page_is_the_table_and_each_tokenizer_has_its_codes():
    """docs/reference/translator-coverage.md is generated from data/language_areas.json; the M2M100 and
    NLLB columns are codes their tokenizers list (MADLAD's real vocabulary cannot be fetched here)."""
    from transformers.models.m2m_100.tokenization_m2m_100 import FAIRSEQ_LANGUAGE_CODES as M2M100_CODES
    from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES as NLLB_CODES

    from xmdata.docs_coverage import covering_pools, translator_coverage_page
    from xmdata.docs_reference import DOCS

    areas = load_language_areas().languages
    listed = {"m2m100": set(M2M100_CODES["m2m100"]), "nllb": set(NLLB_CODES)}
    for system, codes in listed.items():
        assert {a.codes[system] for a in areas.values() if a.codes.get(system)} <= codes, system
    assert sorted(c for c, a in areas.items() if not a.codes.get("m2m100")) == ["mi", "qu", "te"]
    assert covering_pools({c: a.codes for c, a in areas.items()}) == [("nllb",), ("madlad",)]
    page = translator_coverage_page()
    assert open(f"{DOCS}/reference/translator-coverage.md", encoding="utf-8").read() == page
    assert "| te | – | `tel_Telu` | `te` |" in page and "M2M100 + NLLB-200" in page
