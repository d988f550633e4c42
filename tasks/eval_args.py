"""`xmdata evaluate <metric>` arguments. Only argparse here: the CLI builds this before any heavy import.
The flow reuses it, so a metric's options and defaults are declared once."""
from __future__ import annotations

import argparse

LANGUAGE_HELP = "language column (default: 'language' when the table has one)"


def _common(p: argparse.ArgumentParser, input_help: str) -> None:
    p.add_argument("input", help=input_help)
    p.add_argument("--out", required=True, help="folder for <metric>.json, <metric>.md and PNGs")
    p.add_argument("--id-column", default="id", help="row id column, named in error messages (default id)")


def _seed(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=seed_int, default=0, help="seed for every random choice (default 0)")


def seed_int(text: str) -> int:
    """Seeds are non-negative integers: numpy's generators refuse the rest, mid-run."""
    if int(text) < 0:
        raise argparse.ArgumentTypeError(f"a seed is a non-negative integer, got {text}")
    return int(text)


def _pos(text: str) -> int:
    if int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return int(text)


def add_evaluate_parser(sub) -> argparse.ArgumentParser:
    evaluate = sub.add_parser("evaluate", help="metrics over scored Parquet tables (JSON, Markdown, PNG)")
    metrics = evaluate.add_subparsers(dest="metric", required=True)

    p = metrics.add_parser("correlation", help="Kendall τ-b/τ-c, Spearman, Pearson of a score with human ratings")
    _common(p, "table with a score and a human rating per row")
    p.add_argument("--score-column", default="clip_score")
    p.add_argument("--rating-column", default="rating")
    p.add_argument("--language-column", default=None, help=LANGUAGE_HELP)
    p.add_argument("--rating-scale", type=float, nargs=2, metavar=("MIN", "MAX"), default=None,
                   help="declared rating scale; a rating outside it is an error")
    p.add_argument("--item-column", default=None, help="item id shared by the translations of one item: "
                   "adds the cross-language Pearson matrix")
    p.add_argument("--qe-column", default=None, help="translation QE (e.g. qe_score): adds bottom/top quartiles")

    p = metrics.add_parser("valse", help="VALSE: caption scored above its foil, per phenomenon")
    _common(p, "one row per (image, caption, foil)")
    p.add_argument("--caption-score-column", default="caption_score")
    p.add_argument("--foil-score-column", default="foil_score")
    p.add_argument("--phenomenon-column", default=None, help="default: 'phenomenon' when present")
    p.add_argument("--language-column", default=None, help=LANGUAGE_HELP)

    p = metrics.add_parser("xvnli", help="XVNLI tasks 1-3: contradiction < neutral < entailment per image")
    _common(p, "one row per (image, hypothesis) with its score and label")
    p.add_argument("--score-column", default="clip_score")
    p.add_argument("--label-column", default="label", help="contradiction, neutral or entailment")
    p.add_argument("--image-column", default="image_id")
    p.add_argument("--language-column", default=None, help=LANGUAGE_HELP)

    p = metrics.add_parser("marvl", help="MaRVL tasks 1-2: true image pairs above false ones per caption")
    _common(p, "one row per instance (caption + two images) with a score per image")
    p.add_argument("--score-columns", default="left_score,right_score", help="comma-separated, one per image")
    p.add_argument("--label-column", default="label", help="true/false")
    p.add_argument("--caption-column", default="caption_id")
    p.add_argument("--language-column", default=None, help=LANGUAGE_HELP)

    p = metrics.add_parser("pascal50s", help="Pascal-50S accuracy per HC/HI/HM/MM")
    _common(p, "one row per caption pair: two scores, two vote counts, a category")
    for name in ("score-a", "score-b", "votes-a", "votes-b"):
        p.add_argument(f"--{name}-column", default=name.replace("-", "_"))
    p.add_argument("--category-column", default="category")
    _seed(p)

    p = metrics.add_parser("backretrieval", help="BackRetrieval, XLR and CORR (Fain et al.) over embeddings")
    _common(p, "source table (or both languages, split by --source/--target-language)")
    p.add_argument("--target", default=None, help="target table (default: INPUT's rows in --target-language)")
    p.add_argument("--source-language", default=None)
    p.add_argument("--target-language", default=None)
    p.add_argument("--language-column", default="language")
    p.add_argument("--text-column", action="append", default=None,
                   help="text embedding of one model; repeat for several models (default text_embedding)")
    p.add_argument("--image-column", default="image_embedding")
    p.add_argument("--pair-column", default=None, help="key of parallel items (e.g. image_id): adds XLR")
    p.add_argument("--n", type=_pos, default=10_000, help="items sampled per side and seed (default 10,000)")
    p.add_argument("--seeds", type=_pos, default=25, help="number of samples averaged (default 25)")
    p.add_argument("--k", type=_pos, default=10, help="Recall@K (default 10)")
    _seed(p)

    p = metrics.add_parser("mmmeb", help="MMMEB P@1 per task x language; McNemar against a second system")
    _common(p, "one row per query with its query and gold-target embeddings")
    p.add_argument("--against", default=None, help="second system's table (same ids): adds McNemar's test")
    p.add_argument("--query-column", default="query_embedding")
    p.add_argument("--target-column", default="target_embedding")
    p.add_argument("--task-column", default="task")
    p.add_argument("--language-column", default="language")
    p.add_argument("--target-key-column", default=None, help="rows with the same key share one candidate")
    p.add_argument("--all-candidates-tasks", default="C,classification",
                   help="tasks ranked against every candidate (default C,classification)")
    p.add_argument("--pools", default=None, help="an MMMEB release's data/mmmeb_queries.parquet: score on its "
                   "published pools; INPUT is then one system's query embeddings (id, embedding)")
    p.add_argument("--candidates", default=None, help="with --pools: that system's candidate embeddings (id, embedding)")
    p.add_argument("--against-candidates", default=None, help="with --pools and --against: the second system's")
    _seed(p)

    p = metrics.add_parser("caption-stats", help="Crossmodal-3600 Table 1: captions, replication, words, characters")
    _common(p, "one row per caption")
    p.add_argument("--text-column", default="text")
    p.add_argument("--image-column", default="image_id")
    p.add_argument("--language-column", default="language")

    p = metrics.add_parser("caption-ratings", help="Crossmodal-3600 Table 2: %% Good+, %% Med+, %% Bad of median ratings")
    _common(p, "one row per rating: EXCELLENT, GOOD, MEDIUM, BAD or NOT-ENOUGH-INFO")
    p.add_argument("--item-column", default="item_id")
    p.add_argument("--rating-column", default="rating")
    p.add_argument("--language-column", default="language")

    p = metrics.add_parser("cider", help="CIDEr per system and language; ΔCIDEr vs side-by-side gains")
    _common(p, "candidate captions: one row per system, language and image")
    p.add_argument("--references", default=None, help="reference captions (language, image, text); required")
    p.add_argument("--text-column", default="text")
    p.add_argument("--image-column", default="image_id")
    p.add_argument("--system-column", default="system")
    p.add_argument("--language-column", default="language")
    p.add_argument("--sxs", default=None, help="side-by-side table: model2, model1, language, sxs_gain")

    p = metrics.add_parser("cider-gain", help="correlation of ΔCIDEr with side-by-side gains (Table 5 -> 6)")
    _common(p, "one row per model comparison with its ΔCIDEr and human gain")
    p.add_argument("--delta-column", default="delta_cider")
    p.add_argument("--gain-column", default="sxs_gain")
    return evaluate


def evaluate_options(metric: str, input_path: str, out: str, overrides: dict | None = None) -> dict:
    """A metric's options with their CLI defaults, then `overrides` (keys as the CLI's dests)."""
    parser = argparse.ArgumentParser(prog="xmdata")
    add_evaluate_parser(parser.add_subparsers(dest="command"))
    options = vars(parser.parse_args(["evaluate", metric, input_path, "--out", out]))
    unknown = set(overrides or {}) - set(options)
    if unknown:
        raise ValueError(f"unknown option(s) for {metric}: {', '.join(sorted(unknown))}")
    return {**options, **(overrides or {})}
