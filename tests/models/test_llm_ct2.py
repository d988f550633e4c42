"""An llm translator's beam search on CTranslate2's Generator (models/ct2_generator.py) gives the
transformers path's replies, on both tiny chat families converted at float32: the same texts, the same
`truncated` at a short limit, scores within 1e-5 (two engines' kernels)."""
from __future__ import annotations

import pytest

from xmdata.models.translators import llm_translator
from xmdata.tasks.translation.options import TranslatorOptions

TEXTS = ["the dog runs", "a cat sees the tree"]


@pytest.mark.parametrize("family", ["llm", "llm_qwen2"])
def test_ctranslate2_generator_replies_are_the_transformers_ones(tiny_models, family):
    path = tiny_models[family].name_or_path
    ct2 = llm_translator(TranslatorOptions(backend="llm", model=path, engine="ctranslate2", compute_type="float32").spec())
    hf = llm_translator(TranslatorOptions(backend="llm", model=path).spec())
    ct2.load(), hf.load()
    assert type(ct2).__name__ == "LlmCT2Generator" and ct2.stop_ids == hf.stop_ids
    for limit in (1, 2, 30):
        for text in TEXTS:
            a, b = (m.predict(m.prepare([text], "en", "fr"), 4, 2, limit)[0] for m in (ct2, hf))
            assert [(r.text, r.truncated) for r in a] == [(r.text, r.truncated) for r in b], (limit, a, b)
            assert max(abs(x.sequence_score - y.sequence_score) for x, y in zip(a, b)) < 1e-5
    with pytest.raises(Exception, match="sampling on CTranslate2 is refused"):
        ct2.sample(None, {}, 1, 1)
