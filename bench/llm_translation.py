"""`backend: llm` (issue 65), its figures in one run, as ratios of runs made side by side (each side warmed
once, then the two alternating, the least of each kept: side_by_side):

1. the translate stage (prompts, one-length batches, replies screened) ÷ a bare generate() loop over the
   same prompts, batches and generation arguments;
2. CTranslate2's Generator ÷ transformers, beam search, float32 on both (the same numerics);
3. per-unit sampling (Gumbel noise from one generator a sample, models/llm_sampling.py) ÷ transformers'
   stock sampling (do_sample=True, num_return_sequences);
each on the tiny Llama chat model and on random weights at Qwen2.5-0.5B-Instruct's shape (hidden 896,
24 layers, 14 heads, 2 KV heads, intermediate 4864, vocabulary 151,936; the tiny Qwen2 tokenizer, whose
ids the embedding's other rows never map to: they decode to nothing). Random weights almost never end
a turn, so their replies run to max_new_tokens on both sides;
4. sampled candidates of a whole build (translate, LID, COMETKiwi, selection) under two shard plans and
   two batch sizes, and the memo on vs off: candidates.parquet and translations.parquet compared byte for
   byte (tiny Llama).
CPU-s are this process's (every run here is in-process). `./run bench llm_translation`; `BENCH_LLM_SHAPE=tiny`
skips the 0.5B shape.
"""
from __future__ import annotations

import os
import resource
import tempfile
import time
from pathlib import Path

from xmdata.runtime.storage import cache_root

QWEN25_05B = dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                  num_key_value_heads=2, vocab_size=151936, max_position_embeddings=32768, tie_word_embeddings=True)
TEXTS = ["the dog runs", "a cat sees the tree", "the red house", "the child and the book", "water", "a small dog",
         "the cat runs", "the tree sees"]


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


ROUNDS = 1  # main() sets 3 for the tiny model: the two sides alternate, the least of each is kept


def once(fn):
    start, wall = cpu(), time.perf_counter()
    fn()
    return time.perf_counter() - wall, cpu() - start


def side_by_side(a, b) -> tuple[tuple[float, float], tuple[float, float]]:
    """(wall, CPU-s) of A and of B: each warmed once, then A, B, A, B… ROUNDS times, the least of each
    kept, so a load that comes and goes on a shared machine falls on both sides."""
    a(), b()
    runs = [(once(a), once(b)) for _ in range(ROUNDS)]
    return tuple(tuple(min(r[side][k] for r in runs) for k in (0, 1)) for side in (0, 1))


def random_05b_checkpoint(tiny_dir: str) -> str:
    import shutil

    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    out = Path(cache_root()) / "bench" / "qwen2.5-0.5B-shape-random-seed0"
    if (out / "model.safetensors").is_file():
        return str(out)
    out.mkdir(parents=True, exist_ok=True)
    for name in Path(tiny_dir).iterdir():
        if name.is_file() and name.name not in ("model.safetensors", "config.json", "generation_config.json"):
            shutil.copy(name, out / name.name)
    tokenizer = AutoTokenizer.from_pretrained(tiny_dir)
    eot = tokenizer.convert_tokens_to_ids("<|im_end|>")
    torch.manual_seed(0)
    Qwen2ForCausalLM(Qwen2Config(eos_token_id=eot, pad_token_id=tokenizer.pad_token_id, **QWEN25_05B)).save_pretrained(out)
    return str(out)


def stage_vs_bare(model_dir: str, options: dict) -> dict:
    """The stage's shard function ÷ generate() alone on the stage's own batches (prompt tensors built beforehand)."""
    import pyarrow as pa
    import torch

    from xmdata.models.registry import get_model
    from xmdata.models.token_batches import batch_capacity, length_sorted_batches, max_new_tokens
    from xmdata.tasks.translation.params import TranslateParams
    from xmdata.tasks.translation.translate import translate_stage

    params = TranslateParams(targets=["fr"], translator={"backend": "llm", "model": model_dir, **options})
    stage = translate_stage(params, params.translator.spec())
    model = get_model("translator", stage.params.translator)
    table = pa.table({"id": [f"r{i}" for i in range(len(TEXTS))], "text": TEXTS})
    o = params.translator
    lengths = model.token_lengths(TEXTS, "en", "fr")
    calls = []
    for batch in length_sorted_batches(lengths, o.batch_tokens, o.candidate_width(), o.batch_size):
        texts = [TEXTS[i] for i in sorted(batch)]
        size = batch_capacity(lengths[batch[0]], o.batch_tokens, o.candidate_width(), o.batch_size)
        texts += [texts[-1]] * (size - len(texts))
        limit = max_new_tokens(lengths[batch[0]], o.max_new_tokens_ratio, o.max_new_tokens_extra, model.max_input_tokens)
        calls.append((model.prepare(texts, "en", "fr").inputs, limit))

    def bare():
        with torch.inference_mode():
            for inputs, limit in calls:
                model.model.generate(**inputs, max_new_tokens=limit, eos_token_id=model.stop_ids, pad_token_id=model.pad_id,
                                     do_sample=False, num_beams=o.num_beams, num_return_sequences=o.num_candidates,
                                     output_scores=True, return_dict_in_generate=True)

    staged, plain = side_by_side(lambda: stage.fn(table, stage.params), bare)
    return {"stage_s": round(staged[0], 3), "bare_generate_s": round(plain[0], 3),
            "stage_over_bare": round(staged[0] / plain[0], 3), "stage_over_bare_cpu": round(staged[1] / plain[1], 3)}


def ct2_vs_transformers(model_dir: str, beams: int, candidates: int, limit: int) -> dict:
    from xmdata.models.translators import llm_translator
    from xmdata.tasks.translation.options import TranslatorOptions

    ct2 = llm_translator(TranslatorOptions(backend="llm", model=model_dir, engine="ctranslate2",
                                           compute_type="float32").spec())
    hf = llm_translator(TranslatorOptions(backend="llm", model=model_dir).spec())
    ct2.load(), hf.load()
    lengths = hf.token_lengths(TEXTS, "en", "fr")
    groups = {}
    for text, n in zip(TEXTS, lengths):
        groups.setdefault(n, []).append(text)
    batches = {m: [m.prepare(g, "en", "fr") for g in groups.values()] for m in (ct2, hf)}
    run = {m: (lambda m=m: [m.predict(b, beams, candidates, limit) for b in batches[m]]) for m in (ct2, hf)}
    same = sum(a[0].text == b[0].text for x, y in zip(run[ct2](), run[hf]()) for a, b in zip(x, y))
    c, h = side_by_side(run[ct2], run[hf])
    return {"ct2_s": round(c[0], 3), "transformers_s": round(h[0], 3), "ct2_over_transformers": round(c[0] / h[0], 3),
            "ct2_over_transformers_cpu": round(c[1] / h[1], 3), "same_best_text": f"{same} of {len(TEXTS)}"}


def per_unit_vs_stock_sampling(model_dir: str, samples: int, limit: int) -> dict:
    import torch

    from xmdata.models.llm import LlmTranslator
    from xmdata.models.base import ModelSpec

    model = LlmTranslator(ModelSpec("llm", model_dir))
    model.load()
    lengths = model.token_lengths(TEXTS, "en", "fr")
    groups = {}
    for i, (text, n) in enumerate(zip(TEXTS, lengths)):
        groups.setdefault(n, []).append((text, str(i)))
    batches = [model.prepare([t for t, _ in g], "en", "fr", keys=[k for _, k in g]) for g in groups.values()]
    sampler = {"sampling": "temperature", "value": 1.0}

    def ours():
        for b in batches:
            model.sample(b, sampler, samples, limit)

    def stock():
        torch.manual_seed(0)
        with torch.inference_mode():
            for b in batches:
                model.model.generate(**b.inputs, do_sample=True, temperature=1.0, top_k=0, top_p=None,
                                     num_return_sequences=samples, max_new_tokens=limit, eos_token_id=model.stop_ids,
                                     pad_token_id=model.pad_id, output_logits=True, return_dict_in_generate=True)

    o, s = side_by_side(ours, stock)
    return {"per_unit_s": round(o[0], 3), "stock_s": round(s[0], 3), "per_unit_over_stock": round(o[0] / s[0], 3),
            "per_unit_over_stock_cpu": round(o[1] / s[1], 3)}


def whole_builds(tiny: dict) -> dict:
    """Sampled candidates under two shard plans and two batch sizes, and the memo on vs off: the bytes of
    the build's candidates and translations."""
    import pyarrow as pa

    from xmdata.flows.translate import translate_texts
    from xmdata.runtime import memo
    from xmdata.runtime.session import execution_session
    from xmdata.tasks.translation.params import TranslateParams

    table = pa.table({"id": [f"r{i}" for i in range(len(TEXTS))], "text": TEXTS})
    root = Path(tempfile.mkdtemp(prefix="bench-llm-"))

    def build(name, shards, batch_size, location=None):
        """(the candidates, sorted: candidates.parquet holds the shards one after another; translations.parquet's bytes)"""
        params = TranslateParams(targets=["fr", "ar"], translator={
            "backend": "llm", "model": tiny["llm"].name_or_path, "sampling": "epsilon", "epsilon": 0.001,
            "num_candidates": 4, "batch_size": batch_size, "max_new_tokens_ratio": 0.1},
            filters={"qe_model": tiny["cometkiwi"].name_or_path, "min_lid_prob": 0.0})
        with execution_session("inprocess"), memo.using(memo.MemoOptions(location)):
            translate_texts(table, str(root / name), shards, params)
        import pyarrow.parquet as pq

        candidates = pq.read_table(root / name / "candidates.parquet")
        keys = [(c, "ascending") for c in ("id", "column", "target_language", "engine", "beam_rank")]
        return candidates.sort_by(keys).to_pylist(), (root / name / "translations.parquet").read_bytes()

    one = build("shards1-batch8", 1, 8)
    off = build("shards2-off", 2, 8)
    memo_dir = str(root / "memo")
    return {"sampled, 1 shard vs 3 shards": build("shards3-batch8", 3, 8) == one,
            "sampled, batch_size 8 vs 2": build("shards1-batch2", 1, 2) == one,
            "memo on (first build) vs off, 2 shards: candidates.parquet bytes": build("memo-first", 2, 8, memo_dir)[1] == off[1]
            and (root / "memo-first" / "candidates.parquet").read_bytes() == (root / "shards2-off" / "candidates.parquet").read_bytes(),
            "memo on (served) vs off, 2 shards: candidates.parquet bytes": build("memo-served", 2, 8, memo_dir)[1] == off[1]
            and (root / "memo-served" / "candidates.parquet").read_bytes() == (root / "shards2-off" / "candidates.parquet").read_bytes(),
            "candidates sampled": sum(r["status"] == "ok" for r in one[0])}


def main() -> None:
    import torch

    from xmdata.models.tiny import cached_tiny_models

    torch.set_num_threads(len(os.sched_getaffinity(0)))
    tiny = cached_tiny_models(seed=0)
    shapes = {"tiny llama": tiny["llm"].name_or_path}
    if os.environ.get("BENCH_LLM_SHAPE") != "tiny":
        shapes["qwen2.5-0.5B shape, random"] = random_05b_checkpoint(tiny["llm_qwen2"].name_or_path)
    global TEXTS, ROUNDS
    every = TEXTS
    for name, path in shapes.items():
        small = name.startswith("tiny")
        limit = 24 if small else 8
        TEXTS = every if small else every[:2]  # 0.5B on 2 shared cores: two prompts, calls of 2
        ROUNDS = 3 if small else 1
        options = dict(num_beams=2, num_candidates=2, max_new_tokens_ratio=0.001, max_new_tokens_extra=limit - 1,
                       batch_size=8 if small else 2)
        print(name, "stage / bare generate:", stage_vs_bare(path, options), flush=True)
        print(name, "CTranslate2 / transformers, beams 2:", ct2_vs_transformers(path, 2, 2, limit), flush=True)
        print(name, "per-unit / stock sampling, 4 samples:", per_unit_vs_stock_sampling(path, 4, limit), flush=True)
    TEXTS = every
    print("byte-identical:", whole_builds(tiny), flush=True)


if __name__ == "__main__":
    main()
