"""Runners for the embedding metrics: BackRetrieval (with XLR and CORR) and MMMEB P@1 with McNemar."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from xmdata.schemas.contract import ContractError
from xmdata.schemas.evaluation import labels, require_columns, vectors

from xmdata.tasks.evaluation.backretrieval import Side, evaluate_backretrieval
from xmdata.tasks.evaluation.inputs import heading, read_items, where
from xmdata.tasks.evaluation.mmmeb import mmmeb_precision
from xmdata.tasks.evaluation.plots import draw_xlr_scatter
from xmdata.tasks.evaluation.report import Report, md_table


def _rows_of(table: pa.Table, language: str | None, column: str, source: str) -> pa.Table:
    if language is None:
        return table
    require_columns(table, {column: "label"}, source)
    rows = table.filter(pc.equal(pc.cast(table.column(column), pa.string()), language))
    if rows.num_rows == 0:
        raise ContractError(f"{source}: no rows with {column} = {language!r}")
    return rows


def _side(table: pa.Table, texts: list[str], image: str, source: str, id_column: str) -> Side:
    require_columns(table, {**{c: "vector" for c in texts}, image: "vector"}, source)
    return Side({c: vectors(table, c, source, id_column) for c in texts}, vectors(table, image, source, id_column))


def _pairs(src: pa.Table, tgt: pa.Table, key: str, sources: tuple[str, str], id_column: str) -> np.ndarray:
    """(source row, target row) of each key present on both sides; a key's first row in id order."""
    firsts = []
    for table, source in zip((src, tgt), sources):
        require_columns(table, {key: "label"}, source)
        keys = np.asarray([str(v) for v in labels(table, key, source, id_column)])
        order = np.argsort(np.asarray([str(v) for v in table.column(id_column).to_pylist()]), kind="stable") \
            if id_column in table.column_names else np.arange(table.num_rows)
        unique, first = np.unique(keys[order], return_index=True)
        firsts.append((unique, order[first]))
    _, a, b = np.intersect1d(firsts[0][0], firsts[1][0], assume_unique=True, return_indices=True)
    if len(a) == 0:
        raise ContractError(f"{sources[0]} and {sources[1]}: no {key} value occurs on both sides")
    return np.column_stack([firsts[0][1][a], firsts[1][1][b]])


def run_backretrieval(o: dict) -> Report:
    table = read_items(o)
    texts = o["text_column"] or ["text_embedding"]
    texts = [texts] if isinstance(texts, str) else list(texts)  # the flow may pass one name
    if o["target"] is None and not (o["source_language"] and o["target_language"]):
        raise ContractError("backretrieval needs --target FILE or both --source-language and --target-language")
    target_path = o["target"] or o["input"]
    src = _rows_of(table, o["source_language"], o["language_column"], o["input"])
    tgt = _rows_of(read_items(o, "target", "--target") if o["target"] else table, o["target_language"],
                   o["language_column"], target_path)
    source, target = (_side(t, texts, o["image_column"], p, o["id_column"]) for t, p in ((src, o["input"]), (tgt, target_path)))
    pairs = _pairs(src, tgt, o["pair_column"], (o["input"], target_path), o["id_column"]) if o["pair_column"] else None
    result = evaluate_backretrieval(source, target, pairs, o["n"], o["seeds"], o["k"], o["seed"])
    result = {"metric": "backretrieval", "input": where(o["input"]), "target": where(target_path),
              "source_language": o["source_language"], "target_language": o["target_language"], **result}
    rows = [{"model": m, "BkR": v["backretrieval"]["mean"], "BkR std": v["backretrieval"]["std"],
             "XLR": (v["xlr"] or {}).get("mean"), "CORR": v["corr"]["mean"]} for m, v in result["models"].items()]
    md = heading(f"BackRetrieval Recall@{o['k']}", [o["input"]] + ([o["target"]] if o["target"] else []),
                 {"source": o["source_language"], "target": o["target_language"], "N": result["n"],
                  "seeds": o["seeds"], "seed": o["seed"]}) + md_table(rows, ["model", "BkR", "BkR std", "XLR", "CORR"])
    md += f"\nRandom text encoder: K/N = {result['random_expectation']:.4f}."
    if result["image_recall"]:
        md += f" Perfect text encoder (the image retrieval's own recall): {result['image_recall']['mean']:.4f}."
    agreement = result["agreement_with_xlr"]
    if "reason" in agreement:
        md += f"\n\nAgreement with XLR across models: not computed ({agreement['reason']}).\n"
    else:
        md += "\n\n### Correlation with XLR across models (mean over seeds)\n\n" + md_table(
            [{"measure": k, **v} for k, v in agreement.items()], ["measure", "mean", "std", "seeds_defined"])
    figures = {"_xlr": draw_xlr_scatter(result)} if pairs is not None and len(texts) > 1 else {}
    return Report("backretrieval", result, md, figures, {"backretrieval": rows})


def run_mmmeb(o: dict) -> Report:
    if o.get("pools"):  # scored on a release's published pools (tasks/evaluation/mmmeb_pools.py)
        from xmdata.tasks.evaluation.mmmeb_pools import run_mmmeb_pools

        return run_mmmeb_pools(o)
    table = read_items(o)
    against = read_items(o, "against", "--against") if o["against"] else None
    tasks = tuple(t.strip() for t in o["all_candidates_tasks"].split(",") if t.strip())
    result = mmmeb_precision(table, o["query_column"], o["target_column"], o["task_column"], o["language_column"],
                             o["target_key_column"], tasks, o["seed"], against, o["input"], o["against"] or "",
                             o["id_column"])
    result = {"metric": "mmmeb", "input": where(o["input"]), "against": where(o["against"]) if o["against"] else None,
              **result}
    rows = [{**{k: v for k, v in g.items() if k != "mcnemar"}, **{f"mcnemar {k}": v for k, v in g.get("mcnemar", {}).items()
                                                                 if k in ("discordant", "method", "p_value")}}
            for g in result["per_group"]]
    columns = ["task", "language", "n", "pool_size", "p_at_1"] + (
        ["p_at_1_against", "mcnemar discordant", "mcnemar method", "mcnemar p_value"] if against is not None else [])
    md = heading("MMMEB P@1", [o["input"]] + ([o["against"]] if o["against"] else []), {"seed": o["seed"]})
    md += md_table(rows, columns, percent=("p_at_1", "p_at_1_against"))
    md += "\n### Mean over languages per task\n\n" + md_table(
        [{"task": k, **v} for k, v in result["per_task"].items()] + [{"task": "average", **result["average"]}],
        ["task", "languages", "p_at_1"] + (["p_at_1_against"] if against is not None else []),
        percent=("p_at_1", "p_at_1_against"))
    pooled = result["mcnemar_all_queries"]
    if pooled:
        md += (f"\nMcNemar over all queries pooled: {pooled['only_first']} right only in the first system, "
               f"{pooled['only_second']} only in the second, {pooled['method']} p = {pooled['p_value']:.3g}.\n")
    return Report("mmmeb", result, md, tables={"mmmeb": rows})
