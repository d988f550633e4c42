"""The CTranslate2 engine against the transformers one, on the tiny models: same answers, conversion
cached by checkpoint hash and compute type, and clear refusals before any shard runs."""
from __future__ import annotations

import shutil
import sys

import pytest
from support.engines import AGREEMENT, agreement

from xmdata.models.base import ModelError, ModelSpec
from xmdata.models.ct2_convert import converted_path, ensure_converted, import_ctranslate2
from xmdata.models.registry import get_model
from xmdata.tasks.translation.params import TranslateParams
from xmdata.tasks.translation.translate import translate_stage

BEAMS, CANDIDATES, MAX_NEW = 6, 4, 12
WORDS = "the a dog cat house red small runs sees water tree and child book".split()
# 120 sentences of 3-10 words, in a fixed order: the agreement figure's sample.
SENTENCES = [" ".join(WORDS[(i * 7 + j * 3 + i // 14) % len(WORDS)] for j in range(3 + i % 8)) for i in range(120)]


def engines(spec: ModelSpec, compute_type: str = "float32"):
    ct2 = ModelSpec(spec.backend, spec.name_or_path, options={"engine": "ctranslate2", "compute_type": compute_type})
    return get_model("translator", spec), get_model("translator", ct2)


LANGUAGES = {"m2m100": ("en", "fr"), "madlad": ("en", "fr"), "nllb": ("eng_Latn", "fra_Latn")}


@pytest.mark.parametrize("backend", ["m2m100", "madlad", "nllb"])
def test_engines_agree_on_the_best_candidate_at_float32(tiny_models, backend):
    transformers, ctranslate2 = engines(tiny_models[backend])
    assert ctranslate2.supported_languages() == transformers.supported_languages()
    results = [engine.predict(engine.prepare(SENTENCES, *LANGUAGES[backend]), BEAMS, CANDIDATES, MAX_NEW)
               for engine in (transformers, ctranslate2)]
    for per_engine in results:
        assert len(per_engine) == len(SENTENCES)
        assert all(1 <= len(candidates) <= CANDIDATES for candidates in per_engine)
    best = [[candidates[0] for candidates in per_engine] for per_engine in results]
    same = agreement([c.text for c in best[0]], [c.text for c in best[1]])
    lists = agreement(*[[[c.text for c in candidates] for candidates in per_engine] for per_engine in results])
    print(f"{backend}: best candidate agrees on {same:.1%} of {len(SENTENCES)} sentences "
          f"({len({c.text for c in best[0]})} distinct best outputs), whole candidate list on {lists:.1%}")
    assert same >= AGREEMENT and lists >= 0.9
    # The engine's own sequence score, on the transformers path's scale (length-normalised log-prob).
    same = [(a.sequence_score, b.sequence_score) for a, b in zip(*best) if a.text == b.text]
    assert [b for _, b in same] == pytest.approx([a for a, _ in same], abs=1e-3)


def test_translate_stage_on_ctranslate2_gives_the_same_rows(tiny_models):
    import pyarrow as pa

    table = pa.table({"id": ["a", "b", "c"], "text": ["the dog runs", "", "a red cat sees the water"]})
    params = TranslateParams(columns=["text"], targets=["fr", "de"], translator=dict(
        num_beams=BEAMS, num_candidates=CANDIDATES, batch_tokens=4096, max_new_tokens_ratio=1.0, max_new_tokens_extra=4))
    spec = tiny_models["m2m100"]
    rows = {}
    for name, options in (("transformers", {}), ("ctranslate2", {"engine": "ctranslate2", "compute_type": "float32"})):
        stage = translate_stage(params, ModelSpec(spec.backend, spec.name_or_path, options=options))
        candidates, rejects = stage.fn(table, stage.params)
        rows[name] = candidates.select(["id", "target_language", "status", "candidate", "beam_rank"]).to_pylist()
        assert rejects.column("reason").to_pylist() == ["empty_text"]
    # Whatever the engine, one best candidate (beam rank 0) per (id, target); its status and text agree
    # as the engines do (AGREEMENT), not necessarily exactly: a tie may break the other way elsewhere.
    firsts = {name: sorted((r["id"], r["target_language"], r["status"], r["candidate"]) for r in got if r["beam_rank"] == 0)
              for name, got in rows.items()}
    for got in firsts.values():
        assert [r[:2] for r in got] == [("a", "de"), ("a", "fr"), ("c", "de"), ("c", "fr")]
    assert agreement(firsts["ctranslate2"], firsts["transformers"]) >= AGREEMENT


def test_conversion_is_made_once_per_checkpoint_hash_and_compute_type(tiny_models, tmp_path):
    checkpoint = tmp_path / "m2m100"
    shutil.copytree(tiny_models["m2m100"].name_or_path, checkpoint)
    spec = ModelSpec("m2m100", str(checkpoint))
    first = ensure_converted(spec, "int8")
    assert first.startswith(str(checkpoint) + ".ct2/") and first.endswith("-int8")
    marker = tmp_path / "m2m100.ct2"
    mtime = (marker / first.rsplit("/", 1)[1] / "model.bin").stat().st_mtime_ns
    assert ensure_converted(spec, "int8") == first  # found, not converted again
    assert "model.safetensors" in (marker / "file-digests.json").read_text()  # not hashed again either
    assert (marker / first.rsplit("/", 1)[1] / "model.bin").stat().st_mtime_ns == mtime
    assert ensure_converted(spec, "float32") != first
    (checkpoint / "generation_config.json").write_text('{"max_length": 10}')  # an edited checkpoint
    assert converted_path(spec, "int8")[1].name != first.rsplit("/", 1)[1]


def test_a_model_ctranslate2_cannot_convert_is_refused_before_any_shard(tiny_models, tmp_path, capsys):
    from transformers import M2M100Tokenizer

    from xmdata.cli import main

    # Today's tiny M2M100 before the fix: a tokenizer without its language tokens (408 vs 508 ids).
    broken = tmp_path / "m2m100-broken"
    shutil.copytree(tiny_models["m2m100"].name_or_path, broken)
    for name in ("added_tokens.json", "special_tokens_map.json", "tokenizer_config.json"):
        (broken / name).unlink(missing_ok=True)
    M2M100Tokenizer(str(broken / "vocab.json"), str(broken / "sentencepiece.bpe.model")).save_pretrained(broken)
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "a", "caption": "A dog."}\n', encoding="utf-8")
    out = tmp_path / "out"
    assert main(["translate", str(source), "--columns", "caption", "--targets", "fr", "--out", str(out),
                 "--model", str(broken), "--engine", "ctranslate2",
                 "--qe-model", tiny_models["cometkiwi"].name_or_path]) == 2
    err = capsys.readouterr().err
    assert "CTranslate2 cannot convert" in err and "vocabulary" in err and str(broken) in err
    assert not out.exists()


def test_missing_ctranslate2_package_stops_the_run_before_any_shard(tiny_models, tmp_path, monkeypatch, capsys):
    from xmdata.cli import main

    monkeypatch.setitem(sys.modules, "ctranslate2", None)  # what `import ctranslate2` sees when not installed
    with pytest.raises(ModelError, match="needs the ctranslate2 package"):
        import_ctranslate2()
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "a", "caption": "A dog."}\n', encoding="utf-8")
    assert main(["translate", str(source), "--columns", "caption", "--targets", "fr", "--out", str(tmp_path / "out"),
                 "--model", tiny_models["m2m100"].name_or_path, "--engine", "ctranslate2",
                 "--qe-model", tiny_models["cometkiwi"].name_or_path]) == 2
    assert "needs the ctranslate2 package" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_models_convert_command_prints_the_cached_folder(tiny_models, tmp_path, capsys):
    from xmdata.cli import main

    checkpoint = tmp_path / "madlad"
    shutil.copytree(tiny_models["madlad"].name_or_path, checkpoint)
    assert main(["models", "convert", str(checkpoint), "--backend", "madlad"]) == 0
    folder = capsys.readouterr().out.strip()
    assert folder.startswith(str(checkpoint) + ".ct2/") and folder.endswith("-int8")  # auto on CPU
    assert (tmp_path / folder / "model.bin").is_file()


def test_release_configs_take_the_engine_and_refuse_a_bad_one(tmp_path):
    from xmdata.flows.release_config import load_release_config
    from xmdata.schemas import ContractError

    (tmp_path / "in.jsonl").write_text('{"id": "a", "text": "A dog."}\n', encoding="utf-8")
    config = tmp_path / "release.yaml"
    body = ("name: t\ntranslation:\n  input: in.jsonl\n  targets: [fr]\n"
            "  translator: {{backend: madlad, model: \"tiny:madlad\", engine: {engine}}}\n")
    config.write_text(body.format(engine="ctranslate2"), encoding="utf-8")
    spec = load_release_config(str(config))[0].translation.translator.spec()
    assert spec.option("engine") == "ctranslate2" and spec.option("compute_type") == "int8"  # auto on CPU
    config.write_text(body.format(engine="vllm"), encoding="utf-8")
    with pytest.raises(ContractError, match="transformers.*ctranslate2"):
        load_release_config(str(config))
