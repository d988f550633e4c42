"""Runners for the score metrics: read the input, compute, and lay out JSON, Markdown and figures."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from xmdata.schemas.contract import ContractError

from xmdata.tasks.evaluation.accuracy import pascal50s_accuracy, valse_accuracy
from xmdata.tasks.evaluation.correlation import STATISTICS, rating_correlations
from xmdata.tasks.evaluation.crosslingual import cross_language_pearson
from xmdata.tasks.evaluation.inference import marvl_accuracy, xvnli_accuracy
from xmdata.tasks.evaluation.inputs import auto_column, heading, metric_report, read_items
from xmdata.tasks.evaluation.plots import draw_cross_language, draw_quartile_breakdown
from xmdata.tasks.evaluation.report import Report, md_table

CORRELATION_COLUMNS = ["group", "n", *STATISTICS, "reason"]
ACCURACY_COLUMNS = ["group", "n", "correct", "accuracy", "ties", "reason"]


def one_row_per_judgement(table: pa.Table, rating: str) -> tuple[pa.Table, dict]:
    """A list rating column (Flickr8K-Expert's three expert ratings) as one row per judgement, as
    CLIPScore correlates them; ({} when the ratings are plain numbers)."""
    kind = table.schema.field(rating).type if rating in table.column_names else None
    if kind is None or not (pa.types.is_list(kind) or pa.types.is_large_list(kind)):
        return table, {}
    ratings = table.column(rating).combine_chunks()
    exploded = table.take(pc.list_parent_indices(ratings)).set_column(
        table.column_names.index(rating), rating, pc.list_flatten(ratings))
    return exploded, {"judgements": exploded.num_rows, "items": table.num_rows}


def run_correlation(o: dict) -> Report:
    items = read_items(o)
    table, judgements = one_row_per_judgement(items, o["rating_column"])
    lang = auto_column(table, o["language_column"], "language")
    scale = tuple(o["rating_scale"]) if o["rating_scale"] else None
    result = rating_correlations(table, o["score_column"], o["rating_column"], lang, scale, o["qe_column"],
                                 o["input"], o["id_column"])
    result.update(judgements)
    rows = [{"group": "all", **result["overall"]}] + [{"group": k, **v} for k, v in result.get("per_language", {}).items()]
    md = heading("Correlation with human ratings", [o["input"]], {"score": o["score_column"], "rating": o["rating_column"],
                 "language": lang, **({"judgements": f"{judgements['judgements']} over {judgements['items']} items"}
                                      if judgements else {})}) + md_table(rows, CORRELATION_COLUMNS)
    figures = {}
    if "by_qe_quartile" in result:
        quartile_rows = [{"group": f"{k} {q}", **v[q]} for k, v in result["by_qe_quartile"].items()
                         for q in ("bottom", "top") if q in v]
        md += f"\n### By {o['qe_column']} quartile (bottom: <= 25th percentile, top: >= 75th)\n\n" + md_table(
            quartile_rows, CORRELATION_COLUMNS)
        if lang:
            figures["_qe_quartiles"] = draw_quartile_breakdown(result)
    if o["item_column"]:
        if not lang:
            raise ContractError(f"{o['input']}: --item-column needs a language column (--language-column)")
        matrix = cross_language_pearson(items, o["score_column"], lang, o["item_column"], o["qe_column"],
                                        o["input"], o["id_column"])
        result["cross_language"] = matrix
        figures["_heatmap"] = draw_cross_language(matrix)
        for subset in [s for s in ("all", "bottom_quartile", "top_quartile") if s in matrix]:
            grid = [{"": a, **dict(zip(matrix["languages"], matrix[subset]["pearson"][i]))}
                    for i, a in enumerate(matrix["languages"])]
            md += f"\n### Pearson between languages: {subset.replace('_', ' ')}\n\n" + md_table(
                grid, [""] + matrix["languages"])
    return metric_report("correlation", o, result, md, rows, figures)


def _accuracy_rows(per_group: dict, tasks: tuple[str, ...]) -> list[dict]:
    return [{"group": f"{g} {t}".strip(), **v[t]} for g, v in per_group.items() for t in tasks]


def run_valse(o: dict) -> Report:
    table = read_items(o)
    # per piece, as the VALSE paper reports (its 11 pieces; `phenomenon` merges the counting and action pieces)
    phenomenon = auto_column(table, o["phenomenon_column"], "piece") or auto_column(table, None, "phenomenon")
    lang = auto_column(table, o["language_column"], "language")
    result = valse_accuracy(table, o["caption_score_column"], o["foil_score_column"], phenomenon, lang,
                            o["input"], o["id_column"])
    rows = [{"group": f"{code} {p}", **b} for code, v in result["per_language"].items()
            for p, b in {**v["per_phenomenon"], "(all)": v}.items()]
    md = heading("VALSE: caption scored above its foil", [o["input"]], {"caption": o["caption_score_column"],
                 "foil": o["foil_score_column"]}) + md_table(rows, ACCURACY_COLUMNS, percent=("accuracy",))
    md += "\nPhenomenon average (macro) per language: " + ", ".join(
        f"{k} {100 * v['phenomenon_average']:.1f}" for k, v in result["per_language"].items()) + "\n"
    return metric_report("valse", o, result, md, rows)


def run_xvnli(o: dict) -> Report:
    table = read_items(o)
    result = xvnli_accuracy(table, o["score_column"], o["label_column"], o["image_column"],
                            auto_column(table, o["language_column"], "language"), o["input"], o["id_column"])
    rows = _accuracy_rows({**result["per_language"], "all": result["overall"]}, ("task1", "task2", "task3"))
    md = heading("XVNLI: contradiction < neutral < entailment within an image", [o["input"]],
                 {"score": o["score_column"]}) + md_table(rows, ACCURACY_COLUMNS, percent=("accuracy",))
    return metric_report("xvnli", o, result, md, rows)


def run_marvl(o: dict) -> Report:
    table = read_items(o)
    scores = [c.strip() for c in o["score_columns"].split(",") if c.strip()]
    result = marvl_accuracy(table, scores, o["label_column"], o["caption_column"],
                            auto_column(table, o["language_column"], "language"), o["input"], o["id_column"])
    rows = _accuracy_rows({**result["per_language"], "all": result["overall"]}, ("task1", "task2"))
    md = heading("MaRVL: true image pairs scored above false ones", [o["input"]], {"scores": ", ".join(scores)})
    md += md_table(rows, ACCURACY_COLUMNS, percent=("accuracy",))
    md += "\nCaptions skipped by task 2 (not two true and two false instances): " + ", ".join(
        f"{k} {v['skipped_captions']}" for k, v in result["per_language"].items()) + "\n"
    return metric_report("marvl", o, result, md, rows)


def run_pascal50s(o: dict) -> Report:
    table = read_items(o)
    result = pascal50s_accuracy(table, o["score_a_column"], o["score_b_column"], o["votes_a_column"],
                                o["votes_b_column"], o["category_column"], o["seed"], o["input"], o["id_column"])
    rows = [{"group": k, **v} for k, v in result["per_category"].items()] + [{"group": "all", **result["overall"]}]
    md = heading("Pascal-50S: agreement with the annotators' majority", [o["input"]], {"seed": o["seed"]})
    md += md_table(rows, ["group", "n", "correct", "accuracy", "human_ties", "metric_ties"], percent=("accuracy",))
    if result["category_average"] is not None:
        md += f"\nMean over categories: {100 * result['category_average']:.1f}\n"
    return metric_report("pascal50s", o, result, md, rows)
