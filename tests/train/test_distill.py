"""`xmdata train distill` at tiny scale: the loss as the paper writes it, the student and its card, the
student in the evaluation suite's embedding path, and releases it must refuse."""
from __future__ import annotations

import json

import pytest

from support.cli_in_process import run_xmdata
from xmdata.schemas.contract import ContractError

from support.qa_release import qa_release, qa_rows, tiny_decoder, write_release  # noqa: F401  (fixtures)


def _params(model, **loop):
    from xmdata.tasks.train.loop import LoopParams
    from xmdata.tasks.train.params import DistillParams

    defaults = {"batch_size": 8, "accumulation": 2, "checkpoint_every": 2, "max_steps": 6}
    return DistillParams(model=str(model), learning_rate=1e-3, loop=LoopParams(**{**defaults, **loop}))


@pytest.fixture(scope="module")
def distilled(qa_release, tiny_decoder, tmp_path_factory):
    from xmdata.tasks.train.distill import train_distill

    out = tmp_path_factory.mktemp("distill") / "run"
    return train_distill(str(qa_release), _params(tiny_decoder), str(out)), out


def test_the_first_loss_is_half_the_translation_mse_to_the_teacher(qa_release, tiny_decoder, tmp_path):
    """Student = teacher at the start: MSE(S(en), T(en)) is 0, the loss is MSE(S(translation), T(en)) / 2."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from xmdata.models.embedders import last_token_states
    from xmdata.tasks.train.distill import check_distill, train_distill

    params = _params(tiny_decoder, batch_size=1000, accumulation=1, max_steps=1)
    train = check_distill(str(qa_release), params).train
    result = train_distill(str(qa_release), params, str(tmp_path / "run"))
    model, tokenizer = AutoModel.from_pretrained(tiny_decoder).eval(), AutoTokenizer.from_pretrained(tiny_decoder)
    with torch.no_grad():
        english = last_token_states(model, tokenizer, train["source_text"].to_pylist(), params.max_length)
        translated = last_token_states(model, tokenizer, train["target_text"].to_pylist(), params.max_length)
    expected = ((translated - english) ** 2).mean().item() / 2
    logged = json.loads((tmp_path / "run/artifacts/losses.jsonl").read_text().splitlines()[0])["loss"]
    assert result["steps"] == 1 and logged == pytest.approx(expected, rel=1e-4) and expected > 0


def test_distillation_writes_a_student_with_a_card_naming_its_release(distilled, qa_release, tiny_decoder):
    from safetensors.torch import load_file

    result, out = distilled
    manifest = json.loads((qa_release / "manifest.json").read_text())
    card = json.loads((out / "model/model_card.json").read_text())
    assert card["release"]["release_sha256"] == manifest["release_sha256"] and card["release"]["name"] == "tiny-qa"
    assert manifest["release_sha256"] in (out / "model/README.md").read_text()
    assert "image tower" in card["leaves_out"] and card["params"]["learning_rate"] == 1e-3
    losses = [json.loads(line)["loss"] for line in (out / "artifacts/losses.jsonl").read_text().splitlines()]
    assert len(losses) == result["steps"] == 6 and losses[-1] < losses[0]
    assert (out / "artifacts/loss_curve.png").read_bytes()[:4] == b"\x89PNG"
    before, after = load_file(tiny_decoder / "model.safetensors"), load_file(out / "model/model.safetensors")
    assert before.keys() == after.keys() and any(not (before[k] == after[k]).all() for k in before)
    assert card["figures"]["held_out_pairs"] > 0 and card["figures"]["held_out_p_at_1_after"] is not None


def test_the_student_loads_as_an_embedder_of_the_evaluation_suite(distilled):
    from PIL import Image

    from xmdata.models.base import ModelError, ModelSpec
    from xmdata.models.registry import get_model
    from xmdata.tasks.mmmeb.embed import embed_rows

    _, out = distilled
    embedder = get_model("embedder", ModelSpec("last_token", str(out / "model")))
    vectors = embedder.embed_texts(["the dog runs", "le chien court", "der Hund läuft"])
    assert vectors.shape == (3, 32) and abs(float((vectors ** 2).sum(axis=1).max()) - 1) < 1e-5
    alone = embedder.embed_texts(["the dog runs"])  # right padding: a text's embedding is its own
    assert abs(alone - vectors[:1]).max() < 1e-5
    with pytest.raises(ModelError, match="texts, not images"):
        embedder.embed_images([Image.new("RGB", (8, 8))])
    rows = [{"id": "q1", "task": "T2I", "text": "a red house", "image": None},
            {"id": "c1", "task": "T2I", "text": None, "image": "xm3600/a.jpg"}]
    ids, embedded, rejects = embed_rows(embedder, rows, {}, "mmmeb_embed_student", {})
    assert ids == ["q1"] and embedded.shape == (1, 32) and rejects.column("reason").to_pylist() == ["text_only_model"]


def test_evaluate_mmmeb_compares_the_student_with_the_start_model(distilled, tmp_path):
    _, out = distilled
    done = run_xmdata(["evaluate", "mmmeb", out / "eval/after.parquet", "--against", out / "eval/before.parquet",
                       "--out", tmp_path / "mmmeb"], env={})
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "mmmeb/mmmeb.json").read_text())
    assert {g["language"] for g in result["per_group"]} == {"fr", "de"}
    assert result["average"]["p_at_1_against"] is not None  # the start model, McNemar against it


def test_a_release_without_qa_translations_is_refused_naming_the_table(tmp_path, tiny_decoder):
    from xmdata.tasks.train.distill import check_distill

    with pytest.raises(ContractError, match="no qa_parallel table") as info:
        check_distill(str(write_release(tmp_path / "bare", None)), _params(tiny_decoder))
    assert "\n" not in str(info.value)
    with pytest.raises(ContractError, match="no qa_parallel pair left to train on"):  # the demo's: 0 rows
        check_distill(str(write_release(tmp_path / "empty", qa_rows(0) or [{"id": "x", "task": "t", "part": "query",
                      "source_language": "en", "target_language": "fr", "source_text": None, "target_text": None}])),
                      _params(tiny_decoder))


def test_the_cli_refuses_before_writing(tmp_path, tiny_decoder):
    write_release(tmp_path / "bare", None)
    done = run_xmdata(["train", "distill", tmp_path / "bare", "--model", tiny_decoder, "--out", tmp_path / "out"], env={})
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "qa_parallel" in done.stderr
    assert not (tmp_path / "out").exists()
    done = run_xmdata(["train", "distill", tmp_path / "bare", "--model", tiny_decoder, "--learning-rate", "nan",
                       "--out", tmp_path / "out"], env={})
    assert done.returncode == 2 and "--learning-rate" in done.stderr and not (tmp_path / "out").exists()


def test_the_flow_checks_the_release_once_and_the_training_takes_what_it_read(qa_release, tiny_decoder, tmp_path,
                                                                               monkeypatch, prefect_server):
    """Before, a run checked its release three times: the command line, the flow, the training. Now the
    flow's check hands its tables to the training; after the command line's (`checked`), the flow makes
    none and the training reads the release where it runs."""
    import xmdata.flows.train_distill as flow_module
    import xmdata.tasks.train.distill as task_module

    calls = []
    real = task_module.check_distill

    def counted(*args):
        calls.append(args[0])
        return real(*args)

    monkeypatch.setattr(flow_module, "check_distill", counted)
    monkeypatch.setattr(task_module, "check_distill", counted)
    params = _params(tiny_decoder, batch_size=1000, accumulation=1, max_steps=1)
    flow_module.train_distill_flow(str(qa_release), str(tmp_path / "a"), params)
    assert len(calls) == 1
    flow_module.train_distill_flow(str(qa_release), str(tmp_path / "b"), params, checked=True)
    assert len(calls) == 2  # the training's own read
