"""Tiny instruction-style causal LMs of two families, built offline with the real classes, each with a
chat template: `llm` (LlamaForCausalLM, Llama 3's turn format: <|start_header_id|>role<|end_header_id|>,
turns ended by <|eot_id|>) and `llm_qwen2` (Qwen2ForCausalLM, ChatML: <|im_start|>role, turns ended by
<|im_end|>, a default system turn). The formats are those of Meta-Llama-3-Instruct's and
Qwen2-Instruct's published tokenizer_config.json (checked against public copies); the templates here
are written for these tiny models, not copied.

Untrained (random weights, the same on every CPU: tiny_init.py), so a reply is token salad. Left as
drawn, the end-of-turn token never wins and every reply runs to max_new_tokens; scaled, it wins at
the first step of every prompt (the generation prompt's last hidden state is about the same for all).
So its output row is set once, after the draw: scaled by EOT_SCALE, less its part along that first
hidden state, minus EOT_MARGIN of it — the turn then ends after a few tokens, as an instruction-tuned
model's does. That is the one change to the drawn weights; the direction is rounded to 4 decimals so
another CPU's last bits do not change the file. A short max_new_tokens still gives `truncated`.
"""
from __future__ import annotations

from pathlib import Path

from .tiny_decoder import llama_tokenizer
from .tiny_init import portable_init

LLAMA3_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}")
CHATML_TEMPLATE = (
    "{% if messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}"
    "{% endif %}{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
LLAMA3_SPECIAL = ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
CHATML_SPECIAL = ["<|im_start|>", "<|im_end|>"]
EOT_SCALE, EOT_MARGIN = 2.0, 0.5
SIZES = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=1024, tie_word_embeddings=False)


def _end_turns(model, tokenizer, token_id: int) -> None:
    import torch

    ids = tokenizer.apply_chat_template([{"role": "user", "content": "x"}], add_generation_prompt=True,
                                        return_tensors="pt")
    with torch.no_grad():
        first = model(input_ids=ids, output_hidden_states=True).hidden_states[-1][0, -1].double()
        u = torch.round(first / first.norm(), decimals=4)
        u = u / u.norm()
        row = model.lm_head.weight[token_id].double()
        model.lm_head.weight[token_id] = (EOT_SCALE * (row - (row @ u) * u) - EOT_MARGIN * u).float()


def build_tiny_llm(out_dir: Path, sentences: list[str], seed: int) -> Path:
    """A Llama 3-style chat model: a sentencepiece BPE tokenizer (LlamaTokenizerFast) with the turn tokens."""
    from transformers import LlamaConfig, LlamaForCausalLM

    fast = llama_tokenizer(out_dir, sentences, pad_with_unk=False)
    fast.add_special_tokens({"additional_special_tokens": LLAMA3_SPECIAL})
    fast.chat_template = LLAMA3_TEMPLATE
    fast.save_pretrained(out_dir)
    eot = fast.convert_tokens_to_ids("<|eot_id|>")
    config = LlamaConfig(vocab_size=len(fast), bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id, **SIZES)
    model = portable_init(seed, "llm", lambda: LlamaForCausalLM(config))
    _end_turns(model, fast, eot)
    model.generation_config.eos_token_id = [eot, fast.eos_token_id]  # as Llama 3 Instruct's generation_config
    model.save_pretrained(out_dir, safe_serialization=True)
    return out_dir


def build_tiny_qwen2(out_dir: Path, sentences: list[str], seed: int) -> Path:
    """A Qwen2-style chat model: a byte-level BPE tokenizer (Qwen2TokenizerFast) with ChatML's tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import Qwen2Config, Qwen2ForCausalLM, Qwen2TokenizerFast

    out_dir.mkdir(parents=True, exist_ok=True)
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(sentences, trainers.BpeTrainer(
        vocab_size=800, special_tokens=["<|endoftext|>", *CHATML_SPECIAL], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = Qwen2TokenizerFast(tokenizer_object=bpe, unk_token=None, bos_token=None,
                                   eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   additional_special_tokens=CHATML_SPECIAL)
    tokenizer.chat_template = CHATML_TEMPLATE
    tokenizer.save_pretrained(out_dir)
    eot = tokenizer.convert_tokens_to_ids("<|im_end|>")
    config = Qwen2Config(vocab_size=len(tokenizer), eos_token_id=eot, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=None, **SIZES)
    model = portable_init(seed, "llm_qwen2", lambda: Qwen2ForCausalLM(config))
    _end_turns(model, tokenizer, eot)
    model.save_pretrained(out_dir, safe_serialization=True)
    return out_dir
