"""A translator's languages are recorded once, keyed by its tokenizer's content: a run's preflight
reads the record without importing transformers, and still refuses a language the model lacks."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

from xmdata.models.base import ModelSpec
from xmdata.models.languages import RECORD_FOLDER, language_key
from xmdata.runtime.cache_records import cache_record_path
from xmdata.models.registry import translator_languages

CHECK = textwrap.dedent("""
    import json, sys
    from xmdata.flows.translate import check_before_loading
    from xmdata.models.base import ModelSpec
    from xmdata.schemas import ContractError
    spec = ModelSpec(**json.loads(sys.argv[1]))
    check_before_loading(spec, "en", ["fr"])
    try:
        check_before_loading(spec, "en", ["fr", "zu-not-a-language"])
        refused = None
    except ContractError as exc:
        refused = str(exc)
    print(json.dumps({"refused": refused, "transformers": "transformers" in sys.modules,
                      "tokenizers": "tokenizers" in sys.modules}))
""")


def _check_in_a_fresh_process(spec: ModelSpec) -> dict:
    out = subprocess.run([sys.executable, "-c", CHECK, json.dumps(spec.to_dict())], capture_output=True,
                         text=True, check=True, env=os.environ.copy())
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_preflight_reads_the_record_and_imports_no_transformers(tiny_models):
    for backend in ("m2m100", "madlad"):
        spec = tiny_models[backend]
        assert "fr" in translator_languages(spec)  # recorded when built (or now)
        result = _check_in_a_fresh_process(spec)
        assert result["refused"] and "zu-not-a-language" in result["refused"], result
        assert not result["transformers"] and not result["tokenizers"], result


def test_an_edited_tokenizer_is_a_new_key_and_read_again(tiny_models, tmp_path):
    spec = tiny_models["m2m100"]
    copy = tmp_path / "m2m100"
    shutil.copytree(spec.name_or_path, copy)
    edited = ModelSpec("m2m100", str(copy))
    assert language_key(edited, "M2M100Tokenizer") == language_key(spec, "M2M100Tokenizer")  # content, not path
    config_file = copy / "tokenizer_config.json"
    config = json.loads(config_file.read_text())
    config["model_max_length"] = 77
    config_file.write_text(json.dumps(config))
    assert language_key(edited, "M2M100Tokenizer") != language_key(spec, "M2M100Tokenizer")
    assert translator_languages(edited) == translator_languages(spec)


def test_a_damaged_record_is_computed_again_not_trusted(tiny_models):
    spec = tiny_models["madlad"]
    expected = translator_languages(spec)
    record = cache_record_path(RECORD_FOLDER, language_key(spec, "T5Tokenizer"))
    with open(record, "w", encoding="utf-8") as f:
        f.write('{"key": "something else", "languages": ["xx"]}')
    assert translator_languages(spec) == expected
    assert oct(os.stat(record).st_mode & 0o777) == "0o600"
    assert json.loads(open(record, encoding="utf-8").read())["languages"] == sorted(expected)
