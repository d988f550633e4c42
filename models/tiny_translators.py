"""Tiny M2M100, NLLB-200 and MADLAD-style T5 translators, built offline with the real classes.

Untrained (random weights, the same on every CPU: tiny_init.py): they exercise loading, language
handling, beam search and decoding, not translation quality. d_model 32 and one layer per side keep
each under 40k parameters.
"""
from __future__ import annotations

import json
from pathlib import Path

from .tiny_corpus import LANGUAGES, train_sentencepiece
from .tiny_init import portable_init

M2M100_TINY_SIZES = dict(d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                  decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64)
# The tiny M2M100's weight stream (tiny_init.py). Untrained, it writes about the same salad for every
# target; stream 2's is Arabic script to lid.176, which the demo and tests show: `ar` candidates pass
# language ID and reach COMETKiwi, `fr` and `de` are rejected (streams 0 and 1 write Latin salad).
M2M100_STREAM = "m2m100/2"


def build_tiny_m2m100(out_dir: Path, sentences: list[str], seed: int) -> Path:
    from sentencepiece import SentencePieceProcessor
    from transformers import M2M100Config, M2M100ForConditionalGeneration, M2M100Tokenizer
    from transformers.models.m2m_100.tokenization_m2m_100 import FAIRSEQ_LANGUAGE_CODES

    out_dir.mkdir(parents=True, exist_ok=True)
    # M2M100's fairseq layout: <s> 0, <pad> 1, </s> 2, <unk> 3, and vocab.json mirroring the pieces.
    spm_model = train_sentencepiece(sentences, model_type="bpe", vocab_size=400, hard_vocab_limit=False,
                                    bos_id=0, pad_id=1, eos_id=2, unk_id=3)
    (out_dir / "sentencepiece.bpe.model").write_bytes(spm_model)
    pieces = SentencePieceProcessor(model_proto=spm_model)
    vocab = {pieces.id_to_piece(i): i for i in range(pieces.get_piece_size())}
    (out_dir / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False, indent=0), encoding="utf-8")
    # Real checkpoints list their language tokens as additional special tokens (the tokenizer's own
    # loop that should add them never does): without them get_vocab() misses the 100 language ids,
    # and CTranslate2's converter refuses a vocabulary smaller than the embedding.
    languages = [f"__{code}__" for code in FAIRSEQ_LANGUAGE_CODES["m2m100"]]
    tokenizer = M2M100Tokenizer(str(out_dir / "vocab.json"), str(out_dir / "sentencepiece.bpe.model"),
                                src_lang="en", tgt_lang="fr", additional_special_tokens=languages)
    # Language tokens sit above the sentencepiece ids, so len(tokenizer) undercounts the embedding.
    vocab_size = tokenizer.vocab_size + len(tokenizer.lang_token_to_id) + tokenizer.num_madeup_words
    config = M2M100Config(vocab_size=vocab_size, max_position_embeddings=1024, pad_token_id=1,
                          bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, **M2M100_TINY_SIZES)
    model = portable_init(seed, M2M100_STREAM, lambda: M2M100ForConditionalGeneration(config))
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def build_tiny_nllb(out_dir: Path, sentences: list[str], seed: int) -> Path:
    """NLLB-200's layout: an M2M100 model whose NllbTokenizer reads a sentencepiece model with
    <unk> 0, <s> 1, </s> 2 (fairseq adds 1 to every id: <s> 0, <pad> 1, </s> 2, <unk> 3), and
    lists the 202 FLORES-200 codes (tokenization_nllb.FAIRSEQ_LANGUAGE_CODES, its default) as
    additional special tokens above the pieces, then <mask>."""
    from transformers import M2M100Config, M2M100ForConditionalGeneration, NllbTokenizer

    out_dir.mkdir(parents=True, exist_ok=True)
    spm_model = train_sentencepiece(sentences, model_type="bpe", vocab_size=400, hard_vocab_limit=False,
                                    unk_id=0, bos_id=1, eos_id=2, pad_id=-1)
    (out_dir / "sentencepiece.bpe.model").write_bytes(spm_model)
    tokenizer = NllbTokenizer(str(out_dir / "sentencepiece.bpe.model"), src_lang="eng_Latn", tgt_lang="fra_Latn")
    config = M2M100Config(vocab_size=len(tokenizer), max_position_embeddings=1024, pad_token_id=1,
                          bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, **M2M100_TINY_SIZES)
    model = portable_init(seed, "nllb", lambda: M2M100ForConditionalGeneration(config))
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def build_tiny_madlad(out_dir: Path, sentences: list[str], seed: int) -> Path:
    from transformers import T5Config, T5ForConditionalGeneration, T5Tokenizer

    out_dir.mkdir(parents=True, exist_ok=True)
    # MADLAD's layout: <pad> 0, </s> 1, <unk> 2, no <s>, and one <2xx> piece per target language.
    spm_model = train_sentencepiece(sentences, model_type="unigram", vocab_size=400, hard_vocab_limit=False,
                                    pad_id=0, eos_id=1, unk_id=2, bos_id=-1,
                                    user_defined_symbols=[f"<2{lang}>" for lang in LANGUAGES])
    (out_dir / "spiece.model").write_bytes(spm_model)
    tokenizer = T5Tokenizer(str(out_dir / "spiece.model"), extra_ids=0, legacy=False)
    config = T5Config(vocab_size=len(tokenizer), d_model=32, d_kv=16, d_ff=64, num_layers=1,
                      num_decoder_layers=1, num_heads=2, feed_forward_proj="gated-gelu",
                      tie_word_embeddings=False, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
    model = portable_init(seed, "madlad", lambda: T5ForConditionalGeneration(config))
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir
