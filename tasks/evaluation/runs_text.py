"""Runners for the caption metrics: Crossmodal-3600 Tables 1 and 2, CIDEr and ΔCIDEr against human gains."""
from __future__ import annotations

from xmdata.schemas.evaluation import numbers, require_columns

from xmdata.tasks.evaluation.caption_stats import caption_statistics, rating_shares
from xmdata.tasks.evaluation.cider import cider_scores, gain_correlation, sxs_deltas
from xmdata.tasks.evaluation.inputs import heading, metric_report, read_table, where
from xmdata.tasks.evaluation.report import Report, md_table

GAIN_COLUMNS = ["n", "pearson", "spearman", "kendall_tau_b", "matthews", "reason"]
WORDS_NOTE = ("Words are whitespace-separated runs, as Table 1 counts them: about 1 per caption in scripts "
              "written without spaces (zh, ja, th). Tokens split those scripts into characters (with their "
              "combining marks) and drop punctuation — the units CIDEr uses here. Characters are Unicode code "
              "points of the NFC text, spaces included. All over distinct captions per image.")


def run_caption_stats(o: dict) -> Report:
    table = read_table(o["input"])
    result = caption_statistics(table, o["text_column"], o["image_column"], o["language_column"], o["input"],
                                o["id_column"])
    rows = [{"language": k, **v} for k, v in result["per_language"].items()]
    md = heading("Caption statistics (Crossmodal-3600 Table 1)", [o["input"]], {}) + md_table(
        rows, ["language", "distinct_captions", "images_1", "images_2", "images_3plus", "mean_words",
               "mean_tokens", "mean_chars", "unspaced_script", "captions", "empty_captions"]) + f"\n{WORDS_NOTE}\n"
    return metric_report("caption-stats", o, result, md, rows, words_note=WORDS_NOTE)


def run_caption_ratings(o: dict) -> Report:
    table = read_table(o["input"])
    result = rating_shares(table, o["item_column"], o["rating_column"], o["language_column"], o["input"],
                           o["id_column"])
    rows = [{"language": k, **v} for k, v in result["per_language"].items()]
    md = heading("Caption quality from median ratings (Crossmodal-3600 Table 2)", [o["input"]], {}) + md_table(
        rows, ["language", "captions", "good_plus", "medium_plus", "bad", "not_enough_info"],
        percent=("good_plus", "medium_plus", "bad", "not_enough_info"))
    md += ("\nMedian of each caption's ratings without NOT-ENOUGH-INFO (lower middle one for an even count); "
           "captions rated only NOT-ENOUGH-INFO count in the denominator.\n")
    return metric_report("caption-ratings", o, result, md, rows)


def run_cider(o: dict) -> Report:
    candidates = read_table(o["input"])
    references = read_table(o["references"], "--references")
    result = cider_scores(candidates, references, o["text_column"], o["image_column"], o["system_column"],
                          o["language_column"], o["input"], o["references"], o["id_column"])
    rows = [{"system": s, "language": lang, **v} for s, langs in result["per_system"].items() for lang, v in langs.items()]
    md = heading("CIDEr-D x 100 (pycocoevalcap, script-aware tokens)", [o["input"], o["references"]], {}) + md_table(
        rows, ["system", "language", "images", "cider", "reason"])
    result = {"metric": "cider", "input": where(o["input"]), "references": where(o["references"]), **result}
    if o["sxs"]:
        sxs = read_table(o["sxs"], "--sxs")
        deltas, gains, comparisons = sxs_deltas(sxs, result["per_system"], source=o["sxs"], id_column=o["id_column"])
        result.update(comparisons=comparisons, gain_correlation=gain_correlation(deltas, gains))
        md += "\n### ΔCIDEr against side-by-side gains\n\n" + md_table(
            comparisons, ["model2", "model1", "language", "sxs_gain", "delta_cider"])
        md += "\n" + md_table([result["gain_correlation"]], GAIN_COLUMNS)
    return Report("cider", result, md, tables={"cider": rows})


def run_cider_gain(o: dict) -> Report:
    table = read_table(o["input"])
    require_columns(table, {o["delta_column"]: "numeric", o["gain_column"]: "numeric"}, o["input"])
    result = gain_correlation(numbers(table, o["delta_column"], o["input"], o["id_column"]),
                              numbers(table, o["gain_column"], o["input"], o["id_column"]))
    md = heading("ΔCIDEr against side-by-side gains (Crossmodal-3600 Table 6)", [o["input"]],
                 {"delta": o["delta_column"], "gain": o["gain_column"]}) + md_table([result], GAIN_COLUMNS)
    md += "\nMatthews: agreement of signs, positive = model 2 better (> 0).\n"
    return metric_report("cider-gain", o, result, md, [result])
