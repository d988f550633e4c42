"""CTranslate2 against transformers, in one run, on the same sentences, batches, beams and candidates.

Both engines run through the translator classes the stage uses (prepare -> predict -> decode ->
merge), on the stage's length-sorted token-budget batches, with the threads torch would use. Two
models: the tiny M2M100, and a random-weight M2M100 of the real 418M shape (d_model 1024, 12+12
layers, 128,112-token vocabulary: the tiny tokenizer's pieces padded with filler entries to the
real size) saved as a checkpoint, so that CTranslate2 converts it as it would the real one (cached
under XMDATA_CACHE/bench). Decoding is fixed-length (min = max new tokens in both engines): random
weights end hypotheses at arbitrary steps, and int8 numerics would then change the work done.

The agreement figure is the other half of the claim: on the tiny models, with no length forcing,
the share of sentences whose best candidate is the same text in both engines, at float32 and int8.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from xmdata.runtime.storage import cache_root

BEAMS, CANDIDATES = 8, 4
SHAPE_418M = dict(d_model=1024, encoder_layers=12, decoder_layers=12, encoder_attention_heads=16,
                  decoder_attention_heads=16, encoder_ffn_dim=4096, decoder_ffn_dim=4096)
REAL_ENCODER_SIZE = 128004  # entries of M2M100's vocab.json: + 100 languages + 8 made-up words = 128,112


def random_418m_checkpoint(tiny_dir: str) -> str:
    """A random M2M100 with the 418M shape and a real-sized vocabulary, built once into the cache."""
    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration, M2M100Tokenizer

    cache = Path(cache_root())
    out = cache / "bench" / "m2m100-418M-shape-random-seed0"
    if (out / "model.safetensors").is_file():
        return str(out)
    out.mkdir(parents=True, exist_ok=True)
    tiny = M2M100Tokenizer.from_pretrained(tiny_dir)
    vocab = json.loads((Path(tiny_dir) / "vocab.json").read_text(encoding="utf-8"))
    vocab.update({f"<filler{i}>": i for i in range(len(vocab), REAL_ENCODER_SIZE)})  # never produced by spm
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (out / "sentencepiece.bpe.model").write_bytes((Path(tiny_dir) / "sentencepiece.bpe.model").read_bytes())
    tokenizer = M2M100Tokenizer(str(out / "vocab.json"), str(out / "sentencepiece.bpe.model"), src_lang="en",
                                tgt_lang="fr", additional_special_tokens=tiny.additional_special_tokens)
    size = tokenizer.vocab_size + len(tokenizer.lang_token_to_id) + tokenizer.num_madeup_words
    config = M2M100Config(vocab_size=size, max_position_embeddings=1024, pad_token_id=1, bos_token_id=0,
                          eos_token_id=2, decoder_start_token_id=2, **SHAPE_418M)
    torch.manual_seed(0)
    M2M100ForConditionalGeneration(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return str(out)


NLLB_600M_VOCABULARY = 256206  # facebook/nllb-200-distilled-600M's config.json vocab_size; the shape is 418M's


def random_600m_nllb_checkpoint(tiny_dir: str) -> str:
    """A random NLLB-200 with the distilled-600M shape (M2M100's 418M layers, NLLB's 256,206-entry
    embedding), the tiny NLLB tokenizer beside it: CTranslate2's converter fills the vocabulary up to
    the embedding with made-up words, as it does for the real checkpoint's spare rows."""
    import shutil

    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration

    out = Path(cache_root()) / "bench" / "nllb-600M-shape-random-seed0"
    if (out / "model.safetensors").is_file():
        return str(out)
    out.mkdir(parents=True, exist_ok=True)
    for name in Path(tiny_dir).iterdir():
        if name.name not in ("model.safetensors", "config.json", "generation_config.json") and name.is_file():
            shutil.copy(name, out / name.name)
    config = M2M100Config(vocab_size=NLLB_600M_VOCABULARY, max_position_embeddings=1024, pad_token_id=1,
                          bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, **SHAPE_418M)
    torch.manual_seed(0)
    M2M100ForConditionalGeneration(config).save_pretrained(out)
    return str(out)


def fixed_length(translator) -> None:
    """Every hypothesis runs to the batch's length limit, in whichever engine this translator uses."""
    engine = translator.model
    if hasattr(engine, "translate_batch"):
        class FixedLength:
            def translate_batch(self, *args, **kwargs):
                return engine.translate_batch(*args, min_decoding_length=kwargs["max_decoding_length"], **kwargs)
        translator.model = FixedLength()
    else:
        generate = engine.generate
        engine.generate = lambda **kwargs: generate(**kwargs, min_new_tokens=kwargs["max_new_tokens"])


def time_engines(name: str, checkpoint: str, texts: list[str], compute_type: str, backend: str = "m2m100",
                 languages: tuple[str, str] = ("en", "fr")) -> dict:
    from xmdata.models.base import ModelSpec
    from xmdata.models.registry import get_model
    from xmdata.models.token_batches import length_sorted_batches, max_new_tokens

    started = time.perf_counter()
    ct2 = get_model("translator", ModelSpec(backend, checkpoint, options={"engine": "ctranslate2",
                                                                       "compute_type": compute_type}))
    setup_s = time.perf_counter() - started  # conversion (first run only) and load
    hf = get_model("translator", ModelSpec(backend, checkpoint))
    lengths = hf.token_lengths(texts, *languages)
    batches = [sorted(b) for b in length_sorted_batches(lengths, BEAMS * 16 * 32, BEAMS)]
    timings = {}
    for label, translator in (("transformers float32", hf), (f"ctranslate2 {compute_type}", ct2)):
        fixed_length(translator)
        translator.predict(translator.prepare(texts[:2], *languages), BEAMS, CANDIDATES, 4)  # warm-up
        started = time.perf_counter()
        for batch in batches:
            limit = max_new_tokens(max(lengths[i] for i in batch), 1.0, 4, 1024)
            translator.predict(translator.prepare([texts[i] for i in batch], *languages), BEAMS, CANDIDATES, limit)
        timings[label] = time.perf_counter() - started
    (hf_label, hf_s), (ct_label, ct_s) = timings.items()
    slots = len(texts) * CANDIDATES  # candidates asked for: the same in both engines
    print(f"{name}: {len(texts)} sentences, beams {BEAMS}, candidates {CANDIDATES}, {len(batches)} batches, "
          f"fixed-length decoding; CTranslate2 model ready in {setup_s:.1f} s (conversion included if not cached)")
    print(f"  {hf_label:24s} {hf_s:8.2f} s  {slots / hf_s:9.1f} candidates/s")
    print(f"  {ct_label:24s} {ct_s:8.2f} s  {slots / ct_s:9.1f} candidates/s   ratio {hf_s / ct_s:.2f}x", flush=True)
    return {"model": name, "transformers_cps": round(slots / hf_s, 1), "ctranslate2_cps": round(slots / ct_s, 1),
            "ratio": round(hf_s / ct_s, 2), "compute_type": compute_type}


LANGUAGES = {"m2m100": ("en", "fr"), "madlad": ("en", "fr"), "nllb": ("eng_Latn", "fra_Latn")}


def agreement(spec, texts: list[str], compute_type: str) -> tuple[float, int]:
    """(share of sentences whose best candidate is the same text in both engines, distinct best texts)."""
    from xmdata.models.base import ModelSpec
    from xmdata.models.registry import get_model

    hf = get_model("translator", spec)
    ct2 = get_model("translator", ModelSpec(spec.backend, spec.name_or_path,
                                            options={"engine": "ctranslate2", "compute_type": compute_type}))
    best = [[c[0].text if c else None for c in t.predict(t.prepare(texts, *LANGUAGES[spec.backend]), BEAMS,
                                                          CANDIDATES, 16)]
            for t in (hf, ct2)]
    return sum(a == b for a, b in zip(*best)) / len(texts), len(set(best[0]))


def main() -> list[dict]:
    from bench.translation import sentences
    from xmdata.models.tiny import cached_tiny_models

    models = cached_tiny_models(seed=0)
    texts = sentences(192)
    for backend in ("m2m100", "madlad", "nllb"):
        for compute_type in ("float32", "int8"):
            share, distinct = agreement(models[backend], texts, compute_type)
            print(f"agreement, tiny {backend}, ctranslate2 {compute_type} vs transformers float32: best candidate "
                  f"equal on {share:.1%} of {len(texts)} sentences ({distinct} distinct best texts)", flush=True)
    figures = [time_engines("tiny M2M100", models["m2m100"].name_or_path, texts, "int8")]
    figures.append(time_engines("tiny NLLB-200", models["nllb"].name_or_path, texts, "int8", "nllb",
                                LANGUAGES["nllb"]))
    figures.append(time_engines("NLLB-200 600M shape (random)", random_600m_nllb_checkpoint(models["nllb"].name_or_path),
                                sentences(4), "int8", "nllb", LANGUAGES["nllb"]))  # 4: 16 ran past 9 min here
    checkpoint = random_418m_checkpoint(models["m2m100"].name_or_path)
    figures.append(time_engines("M2M100 418M shape (random)", checkpoint, sentences(16), "int8"))
    return figures


if __name__ == "__main__":
    main()
