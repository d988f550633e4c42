"""xVLM2Vec's self-knowledge distillation (its §3) on a release's QA translations.

Teacher and student start as copies of one embedding model; the teacher is frozen. For an English
text x and its translation y the loss is ( MSE(S(x), T(x)) + MSE(S(y), T(x)) ) / 2, each embedding
the final hidden state of the text's last token, MSE the mean over its d dimensions (and the rows).
The pairs are the release's `qa_parallel` rows: each instance's query and positive target, each as an
independent (English source_text, target_text) pair, as the paper keeps them. Instances whose id
hashes below `held_out` are kept out of training and evaluated before and after, as MMMEB-style
retrieval: each held-out translation must find its English original among the group's.
"""
from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from xmdata.schemas.contract import ContractError
from xmdata.tasks.train.params import DistillParams

QA_TABLE = "qa_parallel"
QA_FILE = f"data/{QA_TABLE}.parquet"
PAIR_COLUMNS = ("id", "task", "part", "source_language", "target_language", "source_text", "target_text")
RECIPE = "xvlm2vec-self-distillation"
LEAVES_OUT = ("The tiny stand-in is a text-only Llama decoder built offline (`xmdata models build-tiny`): it has "
              "none of Phi-3.5-vision's image tower (CLIP ViT encoder and projector), so no image enters training "
              "and image queries are not its to embed; the paper's VLM2Vec-LoRA start checkpoint, its FSDP "
              "sharding over four GPUs and its instruction formatting are not reproduced either.")


@dataclass(frozen=True)
class DistillData:
    train: pa.Table      # PAIR_COLUMNS, in a total order of (id, part, target_language)
    held_out: pa.Table


def check_distill(release: str, params: DistillParams) -> DistillData:
    """Everything refusable before a file is written: the release, its QA translations, the model folder."""
    from xmdata.models.base import ModelError
    from xmdata.tasks.train.card import release_identity, release_table

    release_identity(release)  # no readable manifest.json: one line
    path = os.path.join(release, QA_FILE)
    table = release_table(release, QA_TABLE, "the QA translations", "train distill", PAIR_COLUMNS,
                          hint="; build it with a `qa_translation:` section")
    table = table.select(list(PAIR_COLUMNS)).filter(
        pc.and_(pc.is_valid(table["source_text"]), pc.is_valid(table["target_text"])))
    table = table.sort_by([("id", "ascending"), ("part", "ascending"), ("target_language", "ascending")])
    held = pa.array([_held_out(i, params.held_out) for i in table["id"].to_pylist()], pa.bool_())
    data = DistillData(table.filter(pc.invert(held)), table.filter(held))
    if data.train.num_rows == 0:
        raise ContractError(f"{path}: no {QA_TABLE} pair left to train on (rows {table.num_rows}, "
                            f"held out {data.held_out.num_rows}: lower --held-out)")
    if not os.path.isfile(os.path.join(os.path.expanduser(params.model), "config.json")):
        raise ModelError(f"--model {params.model}: not a transformers model folder (no config.json); "
                         "`xmdata models build-tiny DIR` builds one under DIR/decoder")
    return data


def _held_out(instance_id: str, fraction: float) -> bool:
    """By the instance's id: its query and positive, in every language, fall on the same side."""
    return int.from_bytes(hashlib.sha256(instance_id.encode()).digest()[:8], "big") < fraction * 2**64


def train_distill(release: str, params: DistillParams, out: str, data=None) -> dict:
    """Train (or resume) under OUT, write OUT/model with its card, evaluate before and after; a summary.
    `data`: check_distill's, when the flow made the check (it is not made twice)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from xmdata.models.embedders import last_token_states
    from xmdata.runtime.atomic import hash_params, local_temp_folder, move_files_atomic
    from xmdata.runtime.owner_only import private_folder
    from xmdata.tasks.train.card import release_identity, write_model_card
    from xmdata.tasks.train.loop import TrainJob, run_training, shuffled_batches

    data = data if data is not None else check_distill(release, params)
    identity = release_identity(release)
    device = torch.device(params.device)
    tokenizer = AutoTokenizer.from_pretrained(params.model)
    if tokenizer.pad_token is None:  # pooled by index: the padding token's value never matters
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    teacher = AutoModel.from_pretrained(params.model).to(device).eval().requires_grad_(False)
    student = AutoModel.from_pretrained(params.model).to(device)
    english, translated = data.train["source_text"].to_pylist(), data.train["target_text"].to_pylist()
    ids = [f"{i}/{p}/{t}" for i, p, t in zip(*(data.train[c].to_pylist() for c in ("id", "part", "target_language")))]

    def embed(model, texts):
        return last_token_states(model, tokenizer, texts, params.max_length)

    def loss(batch):
        with torch.no_grad():
            target = embed(teacher, [english[i] for i in batch])
        mse = torch.nn.functional.mse_loss
        return (mse(embed(student, [english[i] for i in batch]), target)
                + mse(embed(student, [translated[i] for i in batch]), target)) / 2

    job = TrainJob(
        model=student,
        optimizer=torch.optim.AdamW(student.parameters(), lr=params.learning_rate, weight_decay=params.weight_decay),
        loss=loss, batches=shuffled_batches(data.train.num_rows, params.loop.batch_size),
        params_hash=hash_params({"params": params.model_dump(), "release_sha256": identity["release_sha256"]}),
        describe=lambda batch: "pairs " + ", ".join(ids[i] for i in batch[:3]) + (" …" if len(batch) > 3 else ""))
    private_folder(out)
    started = time.perf_counter()
    result = run_training(job, params.loop, out)
    seconds = time.perf_counter() - started
    model_dir = private_folder(os.path.join(out, "model"))
    with local_temp_folder(out) as staging:  # saved there, then each file moved in whole
        student.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
        move_files_atomic(staging, model_dir, private=True)
    evaluation = evaluate_held_out(data.held_out, params, out, model_dir)
    trained = result.steps - result.resumed_from
    figures = {"optimizer_steps": result.steps, "training_pairs": data.train.num_rows,
               "held_out_pairs": data.held_out.num_rows, "final_loss": result.losses[-1]["loss"],
               "steps_per_second": round(trained / seconds, 3) if trained else None,
               "device": params.device, **evaluation}
    write_model_card(model_dir, recipe=RECIPE, release=identity, params=params.model_dump(), figures=figures,
                     description="A student embedding model distilled from a frozen copy of itself on the release's "
                                 "QA translations (xVLM2Vec, self-knowledge distillation); last-token embeddings.",
                     leaves_out=LEAVES_OUT)
    return {"steps": result.steps, "resumed_from": result.resumed_from, "model": model_dir,
            "artifacts": result.artifacts, "figures": figures}


def evaluate_held_out(held_out: pa.Table, params: DistillParams, out: str, model_dir: str) -> dict:
    """eval/before.parquet (the start model) and eval/after.parquet (the student): one row per held-out
    pair, the translation's embedding as the query and its English original's as the target, grouped by
    part and language; then `xmdata evaluate mmmeb after --against before`'s P@1 and McNemar."""
    if held_out.num_rows == 0:
        return {"evaluation": "no held-out pairs (--held-out 0)"}
    from xmdata.models.base import ModelSpec
    from xmdata.models.registry import backend_class
    from xmdata.runtime.atomic import write_parquet_atomic
    from xmdata.tasks.evaluation.params import MmmebParams
    from xmdata.tasks.evaluation.report import write_report
    from xmdata.tasks.evaluation.runner import run_metric
    from xmdata.runtime.owner_only import private_folder

    folder = private_folder(os.path.join(out, "eval"))
    paths = {}
    for name, model in (("before", params.model), ("after", model_dir)):
        spec = ModelSpec("last_token", os.path.abspath(os.path.expanduser(model)), device=params.device,
                         options={"max_length": params.max_length})
        embedder = backend_class("embedder", "last_token")(spec)  # what MMMEB's embed step loads
        embedder.load()
        queries = embedder.embed_texts(held_out["target_text"].to_pylist())
        targets = embedder.embed_texts(held_out["source_text"].to_pylist())
        table = pa.table({
            "id": [f"{i}/{p}/{t}" for i, p, t in zip(*(held_out[c].to_pylist() for c in ("id", "part", "target_language")))],
            "task": [f"qa_{p}_to_english" for p in held_out["part"].to_pylist()],
            "language": held_out["target_language"],
            "query_embedding": pa.array(queries.tolist(), pa.list_(pa.float32(), queries.shape[1])),
            "target_embedding": pa.array(targets.tolist(), pa.list_(pa.float32(), targets.shape[1]))})
        paths[name] = os.path.join(folder, f"{name}.parquet")
        write_parquet_atomic(table, paths[name])
    metric = MmmebParams(against=paths["before"])
    report = run_metric("mmmeb", metric.runner_options(paths["after"], os.path.join(folder, "mmmeb")))
    write_report(report, os.path.join(folder, "mmmeb"))
    average = report.result["average"]
    return {"held_out_p_at_1_before": average.get("p_at_1_against"), "held_out_p_at_1_after": average.get("p_at_1")}
