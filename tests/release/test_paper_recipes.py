"""Each paper recipe of data/releases/ builds offline on its shipped samples with the tiny models
(`--sample --models tiny`), and its release says what it is: tables, models, refusals, citation."""
import json
import os

import polars as pl
import pytest
from support.language_columns import language_code_problems
from support.recipe_releases import build_recipe

from xmdata.data import DATA_DIR
from xmdata.tasks.release.manifest import verify_release


def recipe_release(name: str):
    """A session fixture: the recipe built once per test run, (folder, result with manifest and card)."""
    @pytest.fixture(scope="session")
    def built(tmp_path_factory, prefect_server, tiny_models):
        out = tmp_path_factory.mktemp(name)
        return out, build_recipe(name, out)
    return built


xm3600_release = recipe_release("xm3600-selection")
xvlm2vec_release = recipe_release("xvlm2vec-train")
mclipscore_release = recipe_release("mclipscore-eval")
mclipscore_train_release = recipe_release("mclipscore-train")
mmmeb_release = recipe_release("mmmeb")
# The (task, dataset, language) groups of MMMEB's Table 1 (xVLM2Vec paper, shared/papers/xvlm2vec-mmmeb.txt):
# Crossmodal-3600 and XTD-10 for T2I and I2T in all five languages (en fr de it es), MaXM's VQA and
# Flickr30k Entities' VG in en and fr, ImageNet-1k's C in all five; its "58 possible combinations" are
# these 29 in its two formats.
MMMEB_TABLE_1_GROUPS = 2 * 2 * 5 + 2 * 2 + 5


def common_card_checks(result, *paper_models):
    card, manifest = result["card"], result["manifest"]
    assert not language_code_problems(result["release"]), language_code_problems(result["release"])
    assert manifest["release"]["config"]["overrides"] == {"sample": True, "models": "tiny"}
    assert "## How this copy was built" in card and "## How to cite" in card and "```bibtex" in card
    for model in paper_models:  # the paper's model is named even though a tiny one was built with
        assert model in card
    assert all(entry["sha256"] for entry in manifest["release"]["imports"].values())


def test_xm3600_selection_recipe_greedy_and_optimal_from_imported_open_images(xm3600_release):
    out, result = xm3600_release
    common_card_checks(result)
    greedy, optimal = (pl.read_parquet(out / "data" / f"{t}.parquet") for t in ("images", "images_optimal"))
    assert greedy["strategy"].unique().to_list() == ["greedy"] and optimal["strategy"].unique().to_list() == ["optimal"]
    assert greedy.group_by("language").len()["len"].max() == 2 and greedy["language"].n_unique() == 36
    # the sample's train rows are filtered by subset, the impossible latitude refused with its reason
    rejects = pl.read_parquet(out / "rejects" / "import_openimages.parquet")
    assert rejects["reason"].to_list() == ["bad_coordinates"]
    assert os.path.exists(out / "plots" / "selection_map.png") and "region" in result["card"]
    assert verify_release(str(out)) == []


def test_xvlm2vec_train_recipe_leaves_out_the_six_tasks_and_translates_four_languages(xvlm2vec_release):
    out, result = xvlm2vec_release
    common_card_checks(result, "google/madlad400-3b-mt")
    counts = pl.read_parquet(out / "data" / "qa_counts.parquet")
    assert sorted(counts["target_language"].unique()) == ["de", "es", "fr", "it"]
    assert "ChartQA" not in counts["task"].to_list() and "A-OKVQA" in counts["task"].to_list()
    assert "| ChartQA | 1 | 0 | 1 | 0 |" in result["card"]  # excluded, counted in the card


def test_mclipscore_recipe_translates_scores_and_evaluates_each_set(mclipscore_release):
    out, result = mclipscore_release
    common_card_checks(result, "facebook/m2m100_1.2B", "Unbabel/wmt23-cometkiwi-da-xxl", "xlm-roberta-large-ViT-H-14")
    scored = pl.read_parquet(out / "data" / "benchmark_pairs_scored.parquet")
    assert {"flickr8k_expert", "valse", "xvnli", "vicr"} == {i.split("/")[0] for i in scored["id"]}
    rated = pl.read_parquet(out / "data" / "rated_pairs.parquet")  # VICR imported with split: test only
    assert set(rated["split"]) == {"test"} and rated.height == scored.filter(
        pl.col("id").str.starts_with("vicr/")).height
    assert set(scored.filter(pl.col("id").str.starts_with("flickr8k_expert/"))["language"]) == {"en", "ar"}
    results = pl.read_parquet(out / "data" / "benchmark_results.parquet")
    assert results.filter(pl.col("benchmark") == "flickr8k_expert")["measure"].str.contains("ar").any()
    assert set(results["metric"]) == {"correlation", "valse", "xvnli"}
    refused = pl.read_parquet(out / "rejects" / "benchmarks" / "flickr8k_expert" / "translation_selection.parquet")
    assert set(refused["reason"]) == {"no_candidate_in_target_language"}  # fr: LID refuses the tiny output
    assert "### xvnli (xvnli)" in result["card"]


def test_mclipscore_train_recipe_publishes_captions_and_translated_rated_pairs(mclipscore_train_release):
    out, result = mclipscore_train_release
    common_card_checks(result, "facebook/m2m100_1.2B", "xlm-roberta-large-ViT-H-14")
    captions = pl.read_parquet(out / "data" / "clip_scores.parquet")  # XM3600's own captions, imported images
    assert captions.height == 44 and set(captions["status"]) == {"ok"} and captions["language"].n_unique() == 6
    rated = pl.read_parquet(out / "data" / "rated_pairs.parquet")
    english = rated.filter(pl.col("language") == "en")
    assert english.group_by("split").len().sort("split").rows() == [("test", 4), ("train", 10), ("val", 2)]
    translated = rated.filter(pl.col("language") == "ar")  # fr: refused by LID, as in the eval recipe
    assert translated.height > 0 and set(rated["language"]) == {"en", "ar"}
    source = {r["id"]: r for r in english.iter_rows(named=True)}
    for row in translated.iter_rows(named=True):  # a translation keeps its pair's rating, split and image
        original = source[row["id"].rsplit("@", 1)[0]]
        assert (row["rating"], row["split"], row["image_path"]) == (original["rating"], original["split"],
                                                                    original["image_path"])
    assert {p.split("/")[0] for p in rated["image_path"]} == {"val2014", "Flicker8k_Dataset"}
    roots = json.loads((out / "build" / "image_roots.json").read_text())  # the build's, not the release's bytes
    assert roots == {"clip_scores": os.path.join(DATA_DIR, "sample", "xm3600", "images"),
                     "rated_pairs": os.path.join(DATA_DIR, "sample", "vicr", "images")}
    assert verify_release(str(out)) == []


def test_train_clipscore_on_the_mclipscore_train_release_finds_its_images(mclipscore_train_release, tiny_models,
                                                                         tmp_path):
    """The recipe's consumer on the recipe's own output: no --image-root, no hand-made table."""
    from xmdata.cli import main

    out, result = mclipscore_train_release
    assert main(["train", "clipscore", str(out), "--out", str(tmp_path / "mlf"), "--clip-model",
                 tiny_models["open_clip"].name_or_path, "--batch-size", "8", "--executor", "inprocess", "-q"]) == 0
    card = json.loads((tmp_path / "mlf" / "model" / "model_card.json").read_text())
    assert card["release"]["release_sha256"] == result["release_sha256"]
    figures = card["figures"]
    assert figures["caption_rows"] == 44 and figures["rows_without_image"] == 0
    rated = pl.read_parquet(out / "data" / "rated_pairs.parquet")
    assert figures["rated_training_pairs"] == rated.filter(pl.col("split") == "train").height
    assert figures["held_out_pairs"] == rated.filter(pl.col("split") == "test").height


def test_mmmeb_recipe_assembles_tasks_pools_embeddings_and_scores(mmmeb_release):
    out, result = mmmeb_release
    common_card_checks(result, "google/siglip-base-patch16-256-multilingual")
    tasks = pl.read_parquet(out / "data" / "mmmeb_tasks.parquet")
    missing = tasks.filter(pl.col("status") == "missing")
    assert missing.select("task", "dataset", "language").rows() == [("VG", "flickr30k_entities", "fr")]
    built = tasks.filter(pl.col("status") == "built")
    assert built.select((pl.col("pool_size") == pl.min_horizontal("pool_rule", "candidates")).all()).item()
    queries = pl.read_parquet(out / "data" / "mmmeb_queries.parquet")
    assert {"C", "I2T", "T2I", "VG", "VQA"} == set(queries["task"])
    assert queries.filter((pl.col("task") == "T2I") & (pl.col("language") == "fr"))["prompt"][0].startswith(
        "Trouvez-moi une image")
    results = pl.read_parquet(out / "data" / "mmmeb_results.parquet")
    first, second = (results.filter(pl.col("system") == s).sort("task", "dataset", "language")
                     for s in ("siglip-base-multilingual", "mlaion-vit-h-14"))
    assert first["pool_size"].to_list() == second["pool_size"].to_list()  # one set of pools for every system
    embed = pl.read_parquet(out / "rejects" / "mmmeb_embed_mlaion-vit-h-14.parquet")
    assert set(embed["reason"]) == {"needs_image_and_text"}  # VQA and VG queries: not a CLIP model's input
    assert verify_release(str(out)) == []
    again = build_recipe("mmmeb", out)  # resumed: nothing embedded again, the same bytes
    assert again["release_sha256"] == result["release_sha256"]
    assert again["run"]["mmmeb_embed_mlaion-vit-h-14"]["shards_skipped"] == 1


def test_evaluate_mmmeb_on_the_published_pools_gives_the_releases_scores(mmmeb_release, tmp_path):
    from xmdata.tasks.evaluation.params import evaluate_options
    from xmdata.tasks.evaluation.runner import run_metric

    out, _ = mmmeb_release
    embedded = out / "build" / "mmmeb_embeddings"
    options = {"pools": str(out / "data" / "mmmeb_queries.parquet"),
               "candidates": str(embedded / "siglip-base-multilingual" / "candidates.parquet"),
               "against": str(embedded / "mlaion-vit-h-14" / "queries.parquet"),
               "against_candidates": str(embedded / "mlaion-vit-h-14" / "candidates.parquet")}
    report = run_metric("mmmeb", evaluate_options(
        "mmmeb", str(embedded / "siglip-base-multilingual" / "queries.parquet"), str(tmp_path), options))
    published = pl.read_parquet(out / "data" / "mmmeb_results.parquet")
    missing = pl.read_parquet(out / "data" / "mmmeb_tasks.parquet").filter(pl.col("status") == "missing").height
    assert missing == 1 and len(report.result["per_group"]) == MMMEB_TABLE_1_GROUPS - missing  # every other group
    for group in report.result["per_group"]:
        key = (pl.col("task") == group["task"]) & (pl.col("dataset") == group["dataset"]) & (
            pl.col("language") == group["language"])
        mine = published.filter(key & (pl.col("system") == "siglip-base-multilingual"))["p_at_1"].item()
        theirs = published.filter(key & (pl.col("system") == "mlaion-vit-h-14"))["p_at_1"].item()
        assert (group["input"], group["against"]) == (mine, theirs)
