"""Every evaluation metric by name: the CLI and the Prefect flow run the same function and write the same
files. A broken input raises ContractError before anything is written."""
from __future__ import annotations

from xmdata.tasks.evaluation.inputs import LEFT_OUT, where
from xmdata.tasks.evaluation.report import Report
from xmdata.tasks.evaluation.runs_embeddings import run_backretrieval, run_mmmeb
from xmdata.tasks.evaluation.runs_scores import run_correlation, run_marvl, run_pascal50s, run_valse, run_xvnli
from xmdata.tasks.evaluation.runs_text import run_caption_ratings, run_caption_stats, run_cider, run_cider_gain

RUNNERS = {
    "correlation": run_correlation, "valse": run_valse, "xvnli": run_xvnli, "marvl": run_marvl,
    "pascal50s": run_pascal50s, "backretrieval": run_backretrieval, "mmmeb": run_mmmeb,
    "caption-stats": run_caption_stats, "caption-ratings": run_caption_ratings, "cider": run_cider,
    "cider-gain": run_cider_gain,
}

PATH_OPTIONS = {"input", "target", "against", "references", "sxs"}


def run_metric(metric: str, options: dict) -> Report:
    """Compute one metric from its options (the CLI's dests: input, out, *_column, seed, ...)."""
    if metric not in RUNNERS:
        raise ValueError(f"unknown metric {metric!r}; known: {', '.join(sorted(RUNNERS))}")
    token = LEFT_OUT.set({})
    try:
        report = RUNNERS[metric](options)
        left_out = LEFT_OUT.get()
    finally:
        LEFT_OUT.reset(token)
    if left_out:  # rows of a score run that the score stage refused: out of the metric, never silently
        report.result["left_out"] = left_out
        report.markdown += "\nLeft out (refused by the score stage): " + "; ".join(
            f"`{name}`: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items())
            for name, counts in left_out.items()) + "\n"
    # Every option in the result, files by name only: the same data elsewhere gives the same bytes.
    report.result["options"] = {k: where(v) if k in PATH_OPTIONS and v else v for k, v in sorted(options.items())
                                if k not in ("out", "metric")}
    return report
