"""Multilingual CLIPScore fine-tuning (Gomes, Zerva and Martins, 2025, §3) on a release.

Two tasks, never mixed in one batch: captions and their translations (the release's Crossmodal-3600-
style table) train the CLIP contrastive loss; rated pairs (its VICR-style table, split `train`) train the
contrastive loss plus the Pearson-correlation loss 1 - r between the batch's CLIPScores and its human
ratings. Micro-batches alternate caption, rated, caption, rated…; the loop accumulates two (one of each)
per optimizer step. As the paper does, a rated pair's contrastive loss pairs its image with its reference
caption (`refs`, the original COCO/Flickr8k caption) where the table has one, else with the rated caption.
The Pearson term uses the cosine the CLIPScore is made of: r is the same for w * cos, and the clamp at 0
is left out so that negative cosines still have a gradient. The `eval_split` pairs (VICR's test) are
held out: scored before and after with `xmdata score`'s own stage function and model loading, then
correlated with their ratings by `xmdata evaluate correlation`'s runner.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from functools import partial

from xmdata.schemas.contract import ContractError
from xmdata.tasks.train.clipscore_data import ClipscoreData, check_clipscore
from xmdata.tasks.train.clipscore_params import ClipscoreParams

RECIPE = "multilingual-clipscore-finetuning"
LEAVES_OUT = ("At tiny scale the model is the project's width-32 open_clip ViT with a tiny XLM-R text tower "
              "(`xmdata models build-tiny`), not the paper's laion ViT-H-14 with XLM-R large; batch size, learning "
              "rate and epochs are this recipe's choices, not the paper's (it gives none).")


def alternating_batches(n_captions: int, n_rated: int, batch_size: int):
    """(epoch, rng) -> micro-batches ("captions", rows), ("rated", rows), … alternating: each task's rows
    shuffled by the epoch's generator, the shorter task's order drawn again until the longer is done."""
    def cut(order):
        return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]

    def batches(epoch, rng):
        captions, rated = cut(rng.permutation(n_captions).tolist()), cut(rng.permutation(n_rated).tolist())
        steps = max(len(captions), len(rated))
        while len(captions) < steps:
            captions += cut(rng.permutation(n_captions).tolist())
        while len(rated) < steps:
            rated += cut(rng.permutation(n_rated).tolist())
        out = []
        for c, r in zip(captions[:steps], rated[:steps]):
            out += [("captions", c), ("rated", r)]
        return out
    return batches


def contrastive_loss(image, text, scale):
    """CLIP's symmetric cross-entropy over the batch's image-text similarities (normalised embeddings)."""
    import torch
    from torch.nn.functional import cross_entropy

    logits = scale * image @ text.T
    labels = torch.arange(len(image), device=image.device)
    return (cross_entropy(logits, labels) + cross_entropy(logits.T, labels)) / 2


def pearson_loss(scores, ratings):
    """1 - Pearson r; a batch whose ratings (or scores) are all equal has r = 0 and no gradient."""
    x, y = scores - scores.mean(), ratings - ratings.mean()
    return 1 - (x * y).sum() / (x.norm() * y.norm() + 1e-8)


def load_model(clip_model: str, pretrained: str | None, device: str):
    """The open_clip model as `xmdata score` loads it (ScoringParams.spec -> OpenClipScorer.load)."""
    from xmdata.models.open_clip_scorer import OpenClipScorer
    from xmdata.tasks.stage_params import ScoringParams

    scorer = OpenClipScorer(ScoringParams(clip_model=clip_model, pretrained=pretrained, device=device).spec())
    scorer.load()
    return scorer


def train_clipscore(release: str, params: ClipscoreParams, out: str, data: ClipscoreData | None = None) -> dict:
    """Train (or resume) under OUT, write OUT/model (loads with `xmdata score --clip-model`) with its card,
    evaluate the held-out pairs before and after; a summary."""
    import torch

    from xmdata.runtime.atomic import hash_params, write_parquet_atomic
    from xmdata.runtime.owner_only import private_folder
    from xmdata.tasks.build.batch_loader import worker_loader
    from xmdata.tasks.build.image_decode import ImageRef, decode_image, decoder_died
    from xmdata.tasks.stage_params import DEFAULT_MAX_PIXELS
    from xmdata.tasks.train.card import release_identity, write_model_card
    from xmdata.tasks.train.loop import TrainJob, run_training

    data = data if data is not None else check_clipscore(release, params)  # the flow's, when it checked
    identity = release_identity(release)
    private_folder(out)
    write_parquet_atomic(data.rejects, os.path.join(out, "rejects.parquet"))
    torch.manual_seed(params.loop.seed)
    scorer = load_model(params.clip_model, params.pretrained, params.device)
    model, device = scorer.model, scorer.device
    rows = {"captions": data.captions.to_pydict(), "rated": data.train.to_pydict()}
    ratings = torch.tensor(rows["rated"]["rating"], dtype=torch.float32)

    recipe = scorer.decode_recipe()

    def pixels(paths, root):
        """The batch's images, decoded side by side in this process's decoder processes (the loader of every
        image reader) by the model's own recipe; ÷255 and normalised on the device (the same bits as its
        transform)."""
        load = partial(decode_image, root=root, max_pixels=DEFAULT_MAX_PIXELS, preprocess=recipe)
        decoded = [d for batch in worker_loader([ImageRef(path=p) for p in paths], len(paths), load,
                                                                  died=decoder_died) for d in batch]
        bad = next((p for p, d in zip(paths, decoded) if d.pixels is None), None)
        if bad is not None:
            raise ContractError(f"train clipscore: {bad}: {next(d.message for d in decoded if d.pixels is None)}")
        return scorer.pixels_from_uint8([d.pixels for d in decoded]).to(device)

    def embed(task, paths, texts):
        image = model.encode_image(pixels(paths, data.roots[task]), normalize=True)
        text = model.encode_text(scorer.tokenizer(list(texts)).to(device), normalize=True)
        return image, text

    def loss(batch):
        task, index = batch
        table = rows[task]
        paths = [table["image_path"][i] for i in index]
        scale = model.logit_scale.exp()
        if task == "captions":
            image, text = embed(task, paths, [table["text"][i] for i in index])
            return contrastive_loss(image, text, scale)
        image, text = embed(task, paths, [table["contrastive_text"][i] for i in index])
        total = contrastive_loss(image, text, scale)
        if params.pearson_weight:
            rated_text = model.encode_text(scorer.tokenizer([table["text"][i] for i in index]).to(device),
                                           normalize=True)
            cosine = (image * rated_text).sum(dim=1)
            total = total + params.pearson_weight * pearson_loss(cosine, ratings[index].to(device))
        return total

    def describe(batch):
        task, index = batch
        ids = rows[task]["id"] if task == "rated" else rows[task]["image_path"]
        return f"{task} rows " + ", ".join(str(ids[i]) for i in index[:3]) + (" …" if len(index) > 3 else "")

    job = TrainJob(
        model=model,
        optimizer=torch.optim.AdamW(model.parameters(), lr=params.learning_rate, weight_decay=params.weight_decay),
        loss=loss, batches=alternating_batches(data.captions.num_rows, data.train.num_rows, params.loop.batch_size),
        params_hash=hash_params({"params": params.model_dump(), "release_sha256": identity["release_sha256"]}),
        describe=describe)
    started = time.perf_counter()
    result = run_training(job, params.loop, out)
    seconds = time.perf_counter() - started
    model_dir = save_model(model, params, os.path.join(out, "model"))
    evaluation = evaluate_held_out(data, params, out, model_dir)
    trained = result.steps - result.resumed_from
    figures = {"optimizer_steps": result.steps, "caption_rows": data.captions.num_rows,
               "rated_training_pairs": data.train.num_rows, "held_out_pairs": data.held_out.num_rows,
               "rows_without_image": data.rejects.num_rows, "final_loss": result.losses[-1]["loss"],
               "steps_per_second": round(trained / seconds, 3) if trained else None, "device": params.device,
               **evaluation}
    write_model_card(model_dir, recipe=RECIPE, release=identity, params=params.model_dump(), figures=figures,
                     description="An open_clip model fine-tuned as multilingual CLIPScore's §3: contrastive loss on "
                                 "the release's captions, contrastive + Pearson loss against human ratings on its "
                                 "rated pairs, alternating batches, two accumulated per step.",
                     leaves_out=LEAVES_OUT)
    return {"steps": result.steps, "resumed_from": result.resumed_from, "model": model_dir,
            "artifacts": result.artifacts, "figures": figures}


def save_model(model, params: ClipscoreParams, model_dir: str) -> str:
    """MODEL_DIR as `xmdata score --clip-model` loads a local folder: the start model's config JSON (its
    local text tower copied in beside it, the config pointing there) and open_clip_model.safetensors;
    written in a temp folder beside it, then each file moved in whole (runtime/atomic.py)."""
    import open_clip
    from safetensors.torch import save_file

    from xmdata.models.base import looks_like_path
    from xmdata.models.open_clip_scorer import WEIGHT_FILES, local_model_config
    from xmdata.runtime.atomic import local_temp_folder, move_files_atomic
    from xmdata.runtime.owner_only import private_folder
    from pathlib import Path

    private_folder(model_dir)
    start = os.path.abspath(os.path.expanduser(params.clip_model))
    if looks_like_path(params.clip_model) and os.path.isdir(start):
        name, _ = local_model_config(Path(start))
        config = json.loads((Path(start) / f"{name}.json").read_text(encoding="utf-8"))
    else:
        name, config = params.clip_model, open_clip.get_model_config(params.clip_model)
    with local_temp_folder(os.path.dirname(os.path.abspath(model_dir))) as staging:
        text_cfg = config.get("text_cfg", {})
        for key in ("hf_model_name", "hf_tokenizer_name"):
            if text_cfg.get(key) and os.path.isdir(text_cfg[key]):
                tower = os.path.join(staging, "text_tower")
                if not os.path.isdir(tower):
                    shutil.copytree(text_cfg[key], tower)
                text_cfg[key] = os.path.abspath(os.path.join(model_dir, "text_tower"))
        with open(os.path.join(staging, f"{name}.json"), "w", encoding="utf-8") as handle:
            json.dump(config, handle, indent=2)
        state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
        save_file(state, os.path.join(staging, WEIGHT_FILES[0]))
        move_files_atomic(staging, model_dir, private=True)
    return model_dir


def evaluate_held_out(data: ClipscoreData, params: ClipscoreParams, out: str, model_dir: str) -> dict:
    """eval/held_out.parquet (the pairs), eval/before/ and eval/after/: the pairs scored by score's stage
    function with the start model and the trained one, and `evaluate correlation`'s report of each."""
    from xmdata.runtime.atomic import write_parquet_atomic
    from xmdata.runtime.owner_only import private_folder
    from xmdata.tasks.evaluation.params import evaluate_options
    from xmdata.tasks.evaluation.report import write_report
    from xmdata.tasks.evaluation.runner import run_metric
    from xmdata.tasks.scoring.score import ScoreShard, score_table
    from xmdata.tasks.stage_params import ScoringParams

    folder = private_folder(os.path.join(out, "eval"))
    keep = [c for c in ("id", "image_path", "text", "language", "image_id", "rating") if c in data.held_out.column_names]
    pairs = data.held_out.select(keep)
    write_parquet_atomic(pairs, os.path.join(folder, "held_out.parquet"))
    figures = {}
    for name, (model, pretrained) in (("before", (params.clip_model, params.pretrained)), ("after", (model_dir, None))):
        scoring = ScoringParams(clip_model=model, pretrained=pretrained, weight=params.weight, device=params.device)
        if name == "after":  # this process may hold an earlier run's weights under the same folder's name
            from xmdata.models.open_clip_scorer import OpenClipScorer
            from xmdata.models.registry import MODELS

            fresh = OpenClipScorer(scoring.spec())
            fresh.load()
            MODELS.put("clip_scorer", scoring.spec(), fresh)
        scored, _ = score_table(pairs, ScoreShard(params=scoring, model=scoring.spec(), image_root=data.roots["rated"],
                                                  references_column=None))
        path = os.path.join(folder, name, "scores.parquet")
        private_folder(os.path.dirname(path))
        write_parquet_atomic(scored, path)
        report = run_metric("correlation", evaluate_options("correlation", path, os.path.dirname(path)))
        write_report(report, os.path.dirname(path))
        overall = report.result["overall"]
        figures[f"held_out_pearson_{name}"] = overall.get("pearson")
        figures[f"held_out_kendall_tau_c_{name}"] = overall.get("kendall_tau_c")
    return figures
