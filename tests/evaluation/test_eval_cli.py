import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xmdata.cli import main
from xmdata.tasks.evaluation.params import evaluate_options
from xmdata.tasks.evaluation.runner import RUNNERS

RNG = np.random.default_rng(0)
LANGS = ["en", "de", "fr"]


def vec(rows, d=16):
    return pa.array(list(np.asarray(rows, dtype=np.float32)), pa.list_(pa.float32(), d))


def scored(n=30):
    base = RNG.normal(size=n)
    rows = [(f"{lang}-{i}", f"item{i}", lang, base[i] + RNG.normal(0, 0.3), int(RNG.integers(1, 5)),
             None if lang == "en" else float(RNG.uniform())) for lang in LANGS for i in range(n)]
    return pa.table(dict(zip(["id", "item_id", "language", "clip_score", "rating", "qe_score"], map(list, zip(*rows)))))


def embedded(n=40):
    z = RNG.normal(size=(n, 16))
    models = {"text_embedding": 0.3, "weaker": 1.0, "weakest": 3.0}  # three text encoders, one image encoder
    rows = {"id": [], "image_id": [], "language": [], **{m: [] for m in models}, "image_embedding": []}
    for lang in ("en", "de"):
        rows["id"] += [f"{lang}{i}" for i in range(n)]
        rows["image_id"] += [f"img{i}" for i in range(n)]
        rows["language"] += [lang] * n
        for m, noise in models.items():
            rows[m] += list(z + noise * RNG.normal(size=z.shape))
        rows["image_embedding"] += list(z + 0.8 * RNG.normal(size=z.shape))
    return pa.table({k: vec(v) if k in models or k == "image_embedding" else v for k, v in rows.items()})


def retrieval(noise):
    z = RNG.normal(size=(120, 16))
    return pa.table({"id": [f"q{i}" for i in range(120)], "task": ["T2I"] * 120, "language": ["it"] * 120,
                     "query_embedding": vec(z + noise * RNG.normal(size=z.shape)), "target_embedding": vec(z)})


CAPTIONS = pa.table({"id": ["c1", "c2", "c3", "c4"], "system": ["a", "a", "b", "b"], "language": ["en"] * 4,
                     "image_id": ["1", "2", "1", "2"], "text": ["a dog on grass", "a red car", "a cat", "a red car"]})
REFERENCES = pa.table({"language": ["en"] * 3, "image_id": ["1", "1", "2"],
                       "text": ["a dog running on grass", "a brown dog", "a red car parked"]})

CASES = {  # metric: (tables written as Parquet, extra arguments, PNG suffixes)
    "correlation": ({"in": scored()}, ["--item-column", "item_id", "--qe-column", "qe_score", "--rating-scale", "1", "4"],
                    ["_heatmap", "_qe_quartiles"]),
    "valse": ({"in": pa.table({"caption_score": [0.5, 0.7], "foil_score": [0.4, 0.8], "phenomenon": ["a", "b"]})}, [], []),
    "xvnli": ({"in": pa.table({"image_id": ["i", "i", "i"], "label": ["neutral", "entailment", "contradiction"],
                               "clip_score": [0.2, 0.3, 0.1]})}, [], []),
    "marvl": ({"in": pa.table({"caption_id": ["c", "c"], "label": ["true", "false"], "left_score": [0.6, 0.2],
                               "right_score": [0.4, 0.3]})}, [], []),
    "pascal50s": ({"in": pa.table({"id": ["p", "q"], "category": ["HC", "HI"], "score_a": [0.3, 0.3], "score_b": [0.2, 0.3],
                                   "votes_a": [30, 24], "votes_b": [18, 24]})}, ["--seed", "5"], []),
    "backretrieval": ({"in": embedded()}, ["--source-language", "en", "--target-language", "de", "--pair-column",
                                           "image_id", "--n", "30", "--seeds", "3", "--k", "5", "--text-column",
                                           "text_embedding", "--text-column", "weaker", "--text-column", "weakest"],
                      ["_xlr"]),
    "mmmeb": ({"in": retrieval(0.1), "against": retrieval(2.0)}, [], []),
    "caption-stats": ({"in": pa.table({"text": ["a b", "一只狗"], "image_id": ["1", "2"], "language": ["en", "zh"]})}, [], []),
    "caption-ratings": ({"in": pa.table({"item_id": ["a", "a"], "rating": ["GOOD", "BAD"], "language": ["en", "en"]})}, [], []),
    "cider": ({"in": CAPTIONS, "references": REFERENCES,
               "sxs": pa.table({"model2": ["b"], "model1": ["a"], "language": ["en"], "sxs_gain": [-2.0]})}, [], []),
    "cider-gain": ({"in": pa.table({"delta_cider": [1.0, -0.5, 2.0], "sxs_gain": [2.0, -1.0, 0.5]})}, [], []),
}


def write_inputs(tmp_path, metric):
    tables, extra, _ = CASES[metric]
    paths = {}
    for name, table in tables.items():
        paths[name] = str(tmp_path / f"{metric}-{name}.parquet")
        pq.write_table(table, paths[name])
    args = [paths.pop("in")] + [a for name, p in paths.items() for a in (f"--{name}", p)]
    return args + extra


def test_every_metric_has_a_case():
    assert set(CASES) == set(RUNNERS)


@pytest.mark.parametrize("metric", sorted(CASES))
def test_cli_writes_deterministic_json_markdown_and_figures(tmp_path, metric, capsys):
    args = write_inputs(tmp_path, metric)
    for out in ("a", "b"):
        assert main(["evaluate", metric, *args, "--out", str(tmp_path / out)]) == 0
    first = (tmp_path / "a" / f"{metric}.json").read_bytes()
    assert first == (tmp_path / "b" / f"{metric}.json").read_bytes()
    assert json.loads(first)["metric"] == metric
    assert (tmp_path / "a" / f"{metric}.md").read_text().startswith("## ")
    for suffix in CASES[metric][2]:
        assert (tmp_path / "a" / f"{metric}{suffix}.png").read_bytes()[:4] == b"\x89PNG"
    assert f"{metric}.json" in capsys.readouterr().out


@pytest.mark.parametrize("metric, table, extra, message", [
    ("correlation", pa.table({"id": ["a", "b"], "clip_score": [0.1, None], "rating": [1, 2]}), [], "id='b'"),
    ("correlation", pa.table({"id": ["a", "b"], "clip_score": [0.1, 0.2], "rating": [1, 7]}), ["--rating-scale", "1", "5"],
     "outside the declared scale"),
    ("backretrieval", embedded(), ["--source-language", "en", "--target-language", "xx"], "no rows with language = 'xx'"),
    ("cider", CAPTIONS, [], "--references is required"),
])
def test_bad_input_exits_2_with_a_message_and_writes_nothing(tmp_path, capsys, metric, table, extra, message):
    path = tmp_path / "in.parquet"
    pq.write_table(table, path)
    out = tmp_path / "out"
    assert main(["evaluate", metric, str(path), *extra, "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_mismatched_ids_between_systems_exit_2(tmp_path, capsys):
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pq.write_table(retrieval(0.1), a)
    pq.write_table(retrieval(0.1).slice(0, 100), b)
    assert main(["evaluate", "mmmeb", str(a), "--against", str(b), "--out", str(tmp_path / "out")]) == 2
    assert "20 key(s)" in capsys.readouterr().err


def test_flow_options_take_cli_defaults():
    options = evaluate_options("backretrieval", "in.parquet", "out", {"n": 100})
    assert (options["n"], options["seeds"], options["k"], options["text_column"]) == (100, 25, 10, None)
    with pytest.raises(ValueError, match="bogus"):
        evaluate_options("valse", "in.parquet", "out", {"bogus": 1})


def test_float16_embeddings_as_the_scoring_stage_writes_them(tmp_path):
    table = retrieval(0.1)
    for name in ("query_embedding", "target_embedding"):
        table = table.set_column(table.schema.get_field_index(name), name,
                                 table.column(name).cast(pa.list_(pa.float16(), 16)))
    pq.write_table(table, tmp_path / "in.parquet")
    assert main(["evaluate", "mmmeb", str(tmp_path / "in.parquet"), "--out", str(tmp_path / "out")]) == 0
    assert json.loads((tmp_path / "out" / "mmmeb.json").read_text())["per_group"][0]["p_at_1"] > 0.9
