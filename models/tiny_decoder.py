"""A tiny decoder-only embedding model: a Llama (the real transformers class, built offline) whose
last token's final hidden state is the embedding, as VLM2Vec embeds with Phi-3.5-vision. Text only:
the stand-in has no image tower (Phi-3.5-vision's CLIP ViT and projector), so images are not its to
embed. What `xmdata train distill` starts from at tiny scale, and what the `last_token` embedder loads."""
from __future__ import annotations

from pathlib import Path

from .tiny_corpus import train_sentencepiece
from .tiny_init import portable_init


def llama_tokenizer(out_dir: Path, sentences: list[str], pad_with_unk: bool):
    """A Llama tokenizer (sentencepiece BPE, byte fallback) saved slow and fast in OUT_DIR; the fast one."""
    from transformers import LlamaTokenizer, LlamaTokenizerFast

    out_dir.mkdir(parents=True, exist_ok=True)
    spm_model = train_sentencepiece(sentences, model_type="bpe", vocab_size=1000, hard_vocab_limit=False,
                                    byte_fallback=True)
    (out_dir / "tokenizer.model").write_bytes(spm_model)
    slow = LlamaTokenizer(str(out_dir / "tokenizer.model"), legacy=False, add_bos_token=True, add_eos_token=False)
    if pad_with_unk:
        slow.pad_token = slow.unk_token  # Llama has no padding token; the embedder pools by index, never pads into it
    slow.save_pretrained(out_dir)
    return LlamaTokenizerFast.from_pretrained(out_dir)  # tokenizer.json saved: no conversion at load time


def build_tiny_decoder(out_dir: Path, sentences: list[str], seed: int) -> Path:
    from transformers import LlamaConfig, LlamaModel

    fast = llama_tokenizer(out_dir, sentences, pad_with_unk=True)
    fast.save_pretrained(out_dir)
    config = LlamaConfig(vocab_size=len(fast), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id,
                         pad_token_id=fast.pad_token_id, tie_word_embeddings=False)
    portable_init(seed, "decoder", lambda: LlamaModel(config)).save_pretrained(out_dir, safe_serialization=True)
    return out_dir
