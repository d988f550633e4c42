"""An adversarial corpus: bad inputs to every command and to release configs. Each must end in a
clear refusal — exit 2, one line naming the problem, no traceback, nothing written to --out —
before any model loads or any flow starts. Rejections of single rows (counted, with reasons) are
in the tests after the table."""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

from support.bad_inputs import (MCLIPSCORE, MMMEB, all_of, config, demo_config, embeddings, folder, jsonl, parquet,
                                random_bytes, ratings, text)
from xmdata.cli import main
from xmdata.data import sample_path

CAPTIONS, IMAGES = sample_path("captions.jsonl"), sample_path("images.csv")
V2 = [[1.0, 0.0], [0.0, 1.0]]

# (case, files, arguments with {d} = the case's folder, what the one error line must say).
# --out {d}/out is added to every command that takes it; it must not exist afterwards.
REFUSED = [
    # identify-language: files, encodings, layouts, types
    ("lid/header-only-csv", text("in.csv", "id,text\n"), "identify-language {d}/in.csv", "no rows"),
    ("lid/empty-csv", text("in.csv", ""), "identify-language {d}/in.csv", "in.csv"),
    ("lid/empty-jsonl", text("in.jsonl", ""), "identify-language {d}/in.jsonl", "in.jsonl"),
    ("lid/whitespace-jsonl", text("in.jsonl", "\n\n  \n"), "identify-language {d}/in.jsonl", "in.jsonl"),
    ("lid/truncated-jsonl", text("in.jsonl", '{"id": "a", "text": "hi"}\n{"id": "b", "te'),
     "identify-language {d}/in.jsonl", "line 2 is not valid JSON"),
    ("lid/nan-in-jsonl", text("in.jsonl", '{"id": "a", "text": "hi"}\n{"id": "b", "text": "x", "p": NaN}\n'),
     "identify-language {d}/in.jsonl", "in.jsonl:2: NaN is not JSON"),
    ("validate/infinity-in-json", text("in.json", '[{"id": "a", "text": "hi", "p": Infinity}]'), "validate {d}/in.json",
     "in.json:1: Infinity is not JSON"),
    ("lid/jsonl-of-arrays", text("in.jsonl", '["a", "hi"]\n'), "identify-language {d}/in.jsonl", "in.jsonl"),
    ("lid/json-scalar", text("in.json", "42"), "identify-language {d}/in.json", "in.json"),
    ("lid/integer-texts", jsonl("in.jsonl", [{"id": "a", "text": 5}, {"id": "b", "text": 6}]),
     "identify-language {d}/in.jsonl", "expected text"),
    ("lid/boolean-texts", jsonl("in.jsonl", [{"id": "a", "text": True}]), "identify-language {d}/in.jsonl",
     "expected text"),
    ("lid/list-texts", jsonl("in.jsonl", [{"id": "a", "text": ["hi", "there"]}]),
     "identify-language {d}/in.jsonl", "'text'"),
    ("lid/float-texts-parquet", parquet("in.parquet", {"id": ["a"], "text": [1.5]}),
     "identify-language {d}/in.parquet", "expected text"),
    ("lid/struct-ids", jsonl("in.jsonl", [{"id": {"k": 1}, "text": "hi"}]), "identify-language {d}/in.jsonl", "'id'"),
    ("lid/missing-text-column", text("in.csv", "id,caption\na,hello\n"), "identify-language {d}/in.csv",
     "required column is missing"),
    ("lid/latin1-csv", text("in.csv", "id,text\na,caf\xe9\n".encode("latin-1")), "identify-language {d}/in.csv",
     "in.csv"),
    ("lid/utf16-csv", text("in.csv", "id,text\na,hello\n".encode("utf-16")), "identify-language {d}/in.csv",
     "in.csv"),
    ("lid/binary-as-parquet", random_bytes("in.parquet"), "identify-language {d}/in.parquet", "cannot read as parquet"),
    ("lid/binary-as-jsonl", random_bytes("in.jsonl"), "identify-language {d}/in.jsonl", "not UTF-8 text"),
    ("lid/repeated-header-column", text("in.csv", "id,text,text\na,b,c\n"), "identify-language {d}/in.csv",
     "appears more than once"),
    ("lid/semicolon-csv", text("in.csv", "id;text\na;hello\n"), "identify-language {d}/in.csv", "';'-separated"),
    ("lid/ragged-csv", text("in.csv", "id,text\na,b,c\n"), "identify-language {d}/in.csv", "cannot read as csv"),
    ("lid/folder-as-input", folder("in"), "identify-language {d}/in", "is a folder"),
    ("lid/unknown-suffix", text("in.txt", "id,text\na,b\n"), "identify-language {d}/in.txt", "unknown format"),
    ("lid/missing-file", None, "identify-language {d}/nowhere.csv", "file not found"),
    ("lid/garbage-lid-model", text("lid.ftz", "not a model"), f"identify-language {CAPTIONS} --lid-model {{d}}/lid.ftz",
     "not a fastText model"),
    ("lid/lid-model-is-folder", folder("lid"), f"identify-language {CAPTIONS} --lid-model {{d}}/lid", "is a folder"),
    ("lid/lid-model-missing", None, f"identify-language {CAPTIONS} --lid-model {{d}}/none.bin", "does not exist"),
    ("lid/map-onto-existing-column", None, f"identify-language {CAPTIONS} --map text=id", "already has a column"),
    ("lid/out-is-a-file", text("out", "x"), f"identify-language {CAPTIONS}", "exists and is not a folder"),
    # validate
    ("validate/unknown-table", None, f"validate {CAPTIONS} --table pictures", "unknown table"),
    ("validate/latitude-as-text", text("in.csv", "id,latitude,longitude\na,north,2\n"),
     "validate {d}/in.csv --table images", "id='a'"),
    # download-images: the URL column, an empty list, bounds
    ("download/no-url-column", text("in.csv", "id,link\na,http://127.0.0.1:9/a.jpg\n"), "download-images {d}/in.csv",
     "no column 'url' (--url-column)"),
    ("download/header-only", text("in.csv", "id,url\n"), "download-images {d}/in.csv", "no rows"),
    ("download/caption-column-without-webdataset", text("in.csv", "id,url,caption\na,http://127.0.0.1:9/a.jpg,c\n"),
     "download-images {d}/in.csv --caption-column caption", "only with --format webdataset"),
    ("download/caption-column-missing", text("in.csv", "id,url\na,http://127.0.0.1:9/a.jpg\n"),
     "download-images {d}/in.csv --format webdataset --caption-column caption", "no column 'caption'"),
    ("download/resize-zero", text("in.csv", "id,url\na,http://127.0.0.1:9/a.jpg\n"),
     "download-images {d}/in.csv --resize 0", "--resize"),
    # select-images: folders, area files, coordinates
    ("select/folder-without-photos", all_of(folder("photos"), text("photos/notes.txt", "hi")),
     "select-images {d}/photos", "no photos"),
    ("select/areas-not-json", text("areas.json", "{not json"), f"select-images {IMAGES} --languages {{d}}/areas.json",
     "areas.json"),
    ("select/areas-unknown-region", text("areas.json", '{"languages": {"hi": {"regions": ["IN/Atlantis"], '
                                                       '"countries": ["IN"], "continents": ["AS"]}}}'),
     f"select-images {IMAGES} --languages {{d}}/areas.json", "IN/Atlantis"),
    ("select/areas-key-no-language", text("areas.json", '{"languages": {"xx": {"regions": ["IN"], '
                                                        '"countries": ["IN"], "continents": ["AS"]}}}'),
     f"select-images {IMAGES} --languages {{d}}/areas.json", "key 'xx': 'xx' is not a language code"),
    ("select/areas-missing", None, f"select-images {IMAGES} --languages {{d}}/none.json", "none.json"),
    ("select/no-longitude", text("in.csv", "id,latitude\na,1\n"), "select-images {d}/in.csv", "'longitude'"),
    ("select/latitude-as-words", jsonl("in.jsonl", [{"id": "a", "latitude": "north", "longitude": 2}]),
     "select-images {d}/in.jsonl", "'latitude'"),
    ("select/header-only", text("in.csv", "id,latitude,longitude\n"), "select-images {d}/in.csv", "no rows"),
    # translate: refused before any weights load
    ("translate/missing-column", jsonl("in.jsonl", [{"id": "a", "text": "hi"}]),
     "translate {d}/in.jsonl --columns caption --targets fr --model {d}/none", "'caption'"),
    ("translate/integer-column", jsonl("in.jsonl", [{"id": "a", "text": 7}]),
     "translate {d}/in.jsonl --columns text --targets fr --model {d}/none", "expected text"),
    ("translate/model-path-missing", None, f"translate {CAPTIONS} --columns text --targets fr --model {{d}}/none",
     "does not exist"),
    ("translate/language-lid-cannot-recognise", None,
     f"translate {CAPTIONS} --columns text --targets mi --backend madlad --model {{d}}/none", "lid.176 has no label"),
    ("translate/lid-accept-syntax", None,
     f"translate {CAPTIONS} --columns text --targets fr --lid-accept fr --model {{d}}/none", "--lid-accept"),
    ("translate/candidates-over-beams", None,
     f"translate {CAPTIONS} --columns text --targets fr --num-beams 2 --num-candidates 5", "num_candidates"),
    ("translate/unsupported-target", None, "translate " + CAPTIONS + " --columns text --targets xx --model {m2m100}",
     "does not support xx"),
    ("translate/garbage-lid-model", text("lid.bin", "nope"),
     "translate " + CAPTIONS + " --columns text --targets fr --model {m2m100} --lid-model {d}/lid.bin",
     "not a fastText model"),
    # translate-qa
    ("qa/missing-positive", jsonl("in.jsonl", [{"id": "a", "task": "VQA", "query": "What is it?"}]),
     "translate-qa {d}/in.jsonl --targets fr --model {d}/none", "'positive'"),
    ("qa/integer-query", jsonl("in.jsonl", [{"id": "a", "task": "VQA", "query": 3, "positive": "a cat"}]),
     "translate-qa {d}/in.jsonl --targets fr --model {d}/none", "expected text"),
    # score
    ("score/no-image-column", jsonl("in.jsonl", [{"id": "a", "text": "a cat"}]),
     "score {d}/in.jsonl --clip-model {d}/none", "image_path"),
    ("score/name-without-pretrained", jsonl("in.jsonl", [{"id": "a", "text": "a cat", "image_path": "a.png"}]),
     "score {d}/in.jsonl --clip-model ViT-B-32", "needs --pretrained"),
    ("score/model-folder-missing", jsonl("in.jsonl", [{"id": "a", "text": "a cat", "image_path": "a.png"}]),
     "score {d}/in.jsonl --clip-model {d}/none", "does not exist"),
    ("score/image-root-is-a-file", all_of(jsonl("in.jsonl", [{"id": "a", "text": "a", "image_path": "a.png"}]),
                                          text("root", "x")),
     "score {d}/in.jsonl --clip-model {d}/none --image-root {d}/root", "not a folder"),
    ("score/references-not-a-list", jsonl("in.jsonl", [{"id": "a", "text": "a", "image_path": "a.png", "refs": "b"}]),
     "score {d}/in.jsonl --clip-model {d}/none --references-column refs", "'refs'"),
    ("score/references-column-is-text", jsonl("in.jsonl", [{"id": "a", "text": "a", "image_path": "a.png"}]),
     "score {d}/in.jsonl --clip-model {d}/none --references-column text", "already uses"),
    ("score/model-folder-with-broken-config", all_of(jsonl("in.jsonl", [{"id": "a", "text": "a", "image_path": "a.png"}]),
                                                     text("clip/model.json", "{not json")),
     "score {d}/in.jsonl --clip-model {d}/clip", "exactly one open_clip model config"),
    ("score/model-folder-without-weights", all_of(
        jsonl("in.jsonl", [{"id": "a", "text": "a", "image_path": "a.png"}]),
        text("clip/m.json", '{"embed_dim": 4, "vision_cfg": {}, "text_cfg": {}}')),
     "score {d}/in.jsonl --clip-model {d}/clip", "holds no weights"),
    ("translate/qe-folder-without-checkpoint", folder("qe"),
     "translate " + CAPTIONS + " --columns text --targets fr --model {m2m100} --qe-model {d}/qe",
     "no COMET checkpoint"),
    # evaluate: ids, ratings, embeddings, layouts
    ("eval/correlation-duplicate-ids", ratings("in.parquet", ["a", "a", "b"], [0.1, 0.2, 0.3], [1, 2, 3]),
     "evaluate correlation {d}/in.parquet", "repeated"),
    ("eval/correlation-null-ids", ratings("in.parquet", ["a", None, "b"], [0.1, 0.2, 0.3], [1, 2, 3]),
     "evaluate correlation {d}/in.parquet", "null or empty"),
    ("eval/correlation-empty-ids", ratings("in.parquet", ["a", " ", "b"], [0.1, 0.2, 0.3], [1, 2, 3]),
     "evaluate correlation {d}/in.parquet", "null or empty"),
    ("eval/correlation-nan-rating", ratings("in.parquet", ["a", "b", "c"], [0.1, 0.2, 0.3], [1, float("nan"), 3]),
     "evaluate correlation {d}/in.parquet", "NaN"),
    ("eval/correlation-rating-off-scale", ratings("in.parquet", ["a", "b", "c"], [0.1, 0.2, 0.3], [1, 2, 9]),
     "evaluate correlation {d}/in.parquet --rating-scale 1 4", "outside the declared scale"),
    ("eval/correlation-rating-as-text", jsonl("in.jsonl", [{"id": "a", "clip_score": 0.1, "rating": "good"}]),
     "evaluate correlation {d}/in.jsonl", "expected numeric"),
    ("eval/correlation-no-score", jsonl("in.jsonl", [{"id": "a", "rating": 1}]),
     "evaluate correlation {d}/in.jsonl", "'clip_score'"),
    ("eval/mmmeb-zero-embeddings", embeddings("in.parquet", [[0, 0], [0, 1]], V2), "evaluate mmmeb {d}/in.parquet",
     "all zeros"),
    ("eval/mmmeb-nan-embeddings", embeddings("in.parquet", [[float("nan"), 0], [0, 1]], V2),
     "evaluate mmmeb {d}/in.parquet", "NaN"),
    ("eval/mmmeb-ragged-embeddings", embeddings("in.parquet", [[1, 0], [0, 1, 0]], V2),
     "evaluate mmmeb {d}/in.parquet", "different lengths"),
    ("eval/mmmeb-dimension-mismatch", embeddings("in.parquet", [[1, 0, 0], [0, 1, 0]], V2),
     "evaluate mmmeb {d}/in.parquet", "dimensions"),
    ("eval/mmmeb-empty-vectors", embeddings("in.parquet", [[], []], [[], []]), "evaluate mmmeb {d}/in.parquet",
     "empty"),
    ("eval/mmmeb-duplicate-ids", embeddings("in.parquet", V2, V2, ids=["q", "q"]), "evaluate mmmeb {d}/in.parquet",
     "repeated"),
    ("eval/backretrieval-without-target", embeddings("in.parquet", V2, V2),
     "evaluate backretrieval {d}/in.parquet", "needs --target"),
    ("eval/folder-not-a-score-run", folder("run"), "evaluate valse {d}/run", "not a score run"),
    ("eval/valse-no-foil", ratings("in.parquet", ["a"], [0.1], [1]), "evaluate valse {d}/in.parquet", "foil"),
    # import
    ("import/source-missing", None, "import xm3600 {d}/nowhere", "no such file or folder"),
    ("import/vicr-another-header", text("vicr/vicr.csv", "image,caption,split,num_ratings,ratings\n"),
     "import vicr {d}/vicr", "not the vicr layout"),
    ("import/xm3600-wrong-layout", jsonl("xm/captions.jsonl", [{"id": "a", "caption": "hi"}]),
     "import xm3600 {d}/xm", "xm3600"),
    ("import/valse-not-json", text("valse/existence.json", "{{{"), "import valse {d}/valse", "existence.json"),
    ("import/openimages-wrong-columns", text("oi/validation-images-with-rotation.csv", "a,b\n1,2\n"),
     "import openimages {d}/oi", "openimages"),
    ("import/out-is-a-file", all_of(jsonl("xm/captions.jsonl", [{"id": "a"}]), text("out", "x")),
     "import xm3600 {d}/xm", "exists and is not a folder"),
    ("import/xm3600-key-is-a-list", jsonl("xm/captions.jsonl", [{"image/key": ["k"], "en": {"caption": ["a"]}}]),
     "import xm3600 {d}/xm", "is no key"),
    ("import/xm3600-not-utf8", text("xm/captions.jsonl", b'{"image/key": "caf\xe9"}\n'), "import xm3600 {d}/xm",
     "not UTF-8"),
    ("import/mmeb-query-is-a-number", jsonl("mm/VQA/train.jsonl", [{"qry": 5, "qry_image_path": "", "pos_text": "x",
                                                                    "pos_image_path": "p"}]),
     "import mmeb-train {d}/mm", "'query': record 1 has 5"),
    ("import/xvnli-hypothesis-is-a-number", jsonl("ar/test.jsonl", [{"gold_label": "entailment", "sentence1": "a",
                                                                    "sentence2": 5, "pairID": "1", "Flikr30kID": "2"}]),
     "import xvnli {d}/ar/test.jsonl", "has 5 (int)"),
    ("import/flickr8k-missing-token-file", text("f8/ExpertAnnotations.txt", "a.jpg\tb.jpg#0\t1\t2\t3\n"),
     "import flickr8k-expert {d}/f8", "Flickr8k.token.txt"),
    ("eval/pascal50s-fractional-votes", jsonl("p.jsonl", [{"id": "a", "score_a": 0.1, "score_b": 0.2, "votes_a": 1.5,
                                                            "votes_b": 3, "category": "HC"}]),
     "evaluate pascal50s {d}/p.jsonl", "not whole numbers"),
    ("eval/rating-scale-reversed", ratings("in.parquet", ["a", "b"], [0.1, 0.2], [1, 2]),
     "evaluate correlation {d}/in.parquet --rating-scale 4 1", "MIN is above MAX"),
    ("eval/xvnli-unknown-label", jsonl("xv.jsonl", [{"id": "a", "clip_score": 0.1, "label": "weird", "image_id": "i"}]),
     "evaluate xvnli {d}/xv.jsonl", "not in"),
    ("eval/cider-references-for-other-images", all_of(
        jsonl("c.jsonl", [{"image_id": "i", "text": "a cat", "system": "s", "language": "en"}]),
        jsonl("r.jsonl", [{"image_id": "j", "text": "a dog", "language": "en"}])),
     "evaluate cider {d}/c.jsonl --references {d}/r.jsonl", "missing"),
    # release configs
    ("release/repeated-target", config("r.yaml", "name: x\ntranslation: {input: captions.jsonl, targets: [fr, fr]}\n"),
     "release --config {d}/r.yaml", "fr given more than once"),
    ("release/config-is-a-folder", folder("conf"), "release --config {d}/conf", "is a folder"),
    ("release/config-missing", None, "release --config {d}/none.yaml", "no such file"),
    ("release/config-is-a-list", config("r.yaml", "- name: x\n"), "release --config {d}/r.yaml", "r.yaml"),
    ("release/config-not-utf8", text("r.yaml", b"name: \xff\xfe\n"), "release --config {d}/r.yaml", "r.yaml"),
    ("release/config-yaml-syntax", text("r.yaml", "name: [x\n"), "release --config {d}/r.yaml", "r.yaml"),
    ("release/config-empty", text("r.yaml", ""), "release --config {d}/r.yaml", "name"),
    ("release/misspelt-section", config("r.yaml", "name: x\ntransltion: {input: captions.jsonl}\n"),
     "release --config {d}/r.yaml", "transltion"),
    ("release/bad-name", config("r.yaml", "name: ../x\nlanguage_id: {input: captions.jsonl}\n"),
     "release --config {d}/r.yaml", "name"),
    ("release/negative-seed", config("r.yaml", "name: x\nseed: -3\nlanguage_id: {input: captions.jsonl}\n"),
     "release --config {d}/r.yaml", "seed"),
    ("release/shards-zero", config("r.yaml", "name: x\nshards: 0\nlanguage_id: {input: captions.jsonl}\n"),
     "release --config {d}/r.yaml", "shards"),
    ("release/input-missing", config("r.yaml", "name: x\nlanguage_id: {input: nowhere.jsonl}\n"),
     "release --config {d}/r.yaml", "input not found"),
    ("release/unknown-tiny-model", demo_config("r.yaml", lambda t: t.replace("tiny:open_clip", "tiny:clip9")),
     "release --config {d}/r.yaml", "tiny:clip9"),
    ("release/tiny-model-of-another-backend", demo_config("r.yaml", lambda t: t.replace('"tiny:m2m100"', '"tiny:madlad"')),
     "release --config {d}/r.yaml", "tiny:m2m100"),
    ("release/mmmeb-tiny-model-of-another-backend",
     demo_config("r.yaml", lambda t: t.replace("model: google/siglip-base-patch16-256-multilingual",
                                               "model: tiny:open_clip"), MMMEB),
     "release --config {d}/r.yaml --sample", "use 'tiny:hf_clip'"),
    ("release/benchmarks-translator-folder-missing",
     demo_config("r.yaml", lambda t: t.replace("model: facebook/m2m100_1.2B", "model: ./no-such-m2m100"), MCLIPSCORE),
     "release --config {d}/r.yaml --sample", "no-such-m2m100"),
    ("release/mmmeb-embedder-folder-missing",
     demo_config("r.yaml", lambda t: t.replace("model: xlm-roberta-large-ViT-H-14,", "model: ./no-such-clip,"), MMMEB),
     "release --config {d}/r.yaml --sample", "no-such-clip"),
    ("release/clip-name-without-pretrained", config("r.yaml", "name: x\nscoring: {input: captions.jsonl, images: "
                                                              "images.csv, clip_model: ViT-B-32}\n"),
     "release --config {d}/r.yaml", "needs scoring.pretrained"),
    ("release/bad-input-rows", all_of(config("r.yaml", "name: x\nlanguage_id: {input: in.jsonl}\n"),
                                      jsonl("in.jsonl", [{"id": "a", "text": 3}])),
     "release --config {d}/r.yaml", "expected text"),
    ("release/garbage-lid-model", all_of(config("r.yaml", "name: x\nlanguage_id: {input: captions.jsonl, "
                                                          "lid_model: lid.bin}\n"), text("lid.bin", "x")),
     "release --config {d}/r.yaml", "not a fastText model"),
    ("release/no-source-rows", config("r.yaml", "name: x\ntranslation: {input: captions.jsonl, source: xx, "
                                                "targets: [fr], translator: {model: tiny:m2m100}}\n"),
     "release --config {d}/r.yaml", "no row has language 'xx'"),
    ("release/unsupported-target-late-in-config", demo_config("r.yaml", lambda t: t.replace("[fr, de]", "[fr, zz]")),
     "release --config {d}/r.yaml", "does not support zz"),
    ("release/images-folder-without-photos", all_of(config("r.yaml", "name: x\nimage_selection: {input: photos}\n"),
                                                    folder("photos")),
     "release --config {d}/r.yaml", "no photos"),
    ("release/out-under-a-file", all_of(config("r.yaml", "name: x\nlanguage_id: {input: captions.jsonl}\n"),
                                        text("file", "x")),
     "release --config {d}/r.yaml --out {d}/file/release", "is a file, not a folder"),
    # explain: a folder that is neither a release nor a work folder (tests/explain/ has the rest)
    ("explain/not-a-release", text("in.csv", "id,text\n"), "explain {d} cap-1", "neither a release"),
    # explore: a folder that is not a release (tests/release/test_explore.py has the rest)
    ("explore/not-a-release", text("in.csv", "id,text\n"), "explore {d} --no-serve", "not a release (no data/"),
    ("explain/a-store-url", None, "explain s3://bucket/release cap-1", "explain reads a local folder"),
    # memo: a memo that is a file, on the memo command and on a build; a prune that names nothing
    ("memo/a-file", text("file", "x"), "memo stats --memo {d}/file", "exists and is not a folder"),
    ("memo/prune-nothing", None, "memo prune --memo {d}/memo", "say what to remove"),
    ("memo/a-build-with-a-file-memo", all_of(text("in.csv", "id,text\na,b\n"), text("file", "x")),
     "identify-language {d}/in.csv --memo {d}/file", "exists and is not a folder"),
    # dedup / contamination (tests/clean/ has the rest)
    ("dedup/neither-kind", jsonl("in.jsonl", [{"id": "a", "caption": "x"}]), "dedup {d}/in.jsonl",
     "neither an images table"),
    ("dedup/no-language-code", jsonl("in.jsonl", [{"id": "a", "text": "x", "language": "gmq-xx-yy"}]),
     "dedup {d}/in.jsonl", "is not a language code"),
    ("dedup/nan-threshold", jsonl("in.jsonl", [{"id": "a", "text": "x", "language": "en"}]),
     "dedup {d}/in.jsonl --min-cosine nan", "min-cosine"),
    ("dedup/images-without-path", jsonl("in.jsonl", [{"id": "a", "path": None}]), "dedup {d}/in.jsonl", "path"),
    ("contamination/no-such-reference", jsonl("in.jsonl", [{"id": "a", "text": "x", "language": "en"}]),
     "contamination {d}/in.jsonl --against {d}/nothing-here", "not found"),
    ("contamination/captions-against-an-image-folder",
     all_of(jsonl("in.jsonl", [{"id": "a", "text": "x", "language": "en"}]), text("photos/a.jpg", b"x")),
     "contamination {d}/in.jsonl --against {d}/photos", "cannot be compared"),
    ("contamination/embeddings-without-a-model",
     all_of(jsonl("in.jsonl", [{"id": "a", "text": "x", "language": "en"}]), text("emb/text_emb/x", "")),
     "contamination {d}/in.jsonl --against {d}/emb", "--reference-model"),
    ("release/a-yaml-list", config("r.yaml", "- name: x\n- language_id: {input: captions.jsonl}\n"),
     "release --config {d}/r.yaml", "a release config is a YAML mapping of sections"),
    ("release/contamination-embeddings-without-a-model",
     all_of(config("r.yaml", "name: x\ncontamination: {against: [emb]}\nlanguage_id: {input: captions.jsonl}\n"),
            jsonl("captions.jsonl", [{"id": "a", "text": "x", "language": "en"}]), text("emb/text_emb/x", "")),
     "release --config {d}/r.yaml", "--reference-model"),
    ("release/contamination-reference-missing",
     all_of(config("r.yaml", "name: x\ncontamination: {against: [gone.jsonl]}\nlanguage_id: {input: captions.jsonl}\n"),
            jsonl("captions.jsonl", [{"id": "a", "text": "x", "language": "en"}])),
     "release --config {d}/r.yaml", "gone.jsonl: not found"),
    ("explore/a-store-url", None, "explore s3://bucket/release --no-serve", "explore reads a local release"),
    # train (tests/train/ has the rest)
    ("train/distill-release-without-qa-translations",
     all_of(text("rel/manifest.json", '{"release": {"name": "x", "files": {}}, "release_sha256": "0"}'),
            folder("model")),
     "train distill {d}/rel --model {d}/model", "the release has no qa_parallel table"),
    ("train/distill-not-a-release", folder("rel"), "train distill {d}/rel --model {d}/model",
     "not a release manifest"),
    ("train/distill-model-without-config",
     all_of(text("rel/manifest.json", '{"release": {"name": "x", "files": {}}, "release_sha256": "0"}'),
            folder("rel/data"), parquet("rel/data/qa_parallel.parquet", {k: ["x"] for k in ("id", "task", "part", "source_language",
                                                                         "target_language", "source_text",
                                                                         "target_text")}),
            folder("model")),
     "train distill {d}/rel --model {d}/model --held-out 0", "not a transformers model folder"),
    ("train/clipscore-release-without-rated-pairs",
     all_of(text("rel/manifest.json", '{"release": {"name": "x", "files": {}}, "release_sha256": "0"}'),
            folder("rel/data"), parquet("rel/data/clip_scores.parquet", {"image_path": ["a.png"], "text": ["a cat"]})),
     "train clipscore {d}/rel --clip-model {d}/model", "the release has no rated_pairs table"),
    ("train/clipscore-release-without-captions",
     text("rel/manifest.json", '{"release": {"name": "x", "files": {}}, "release_sha256": "0"}'),
     "train clipscore {d}/rel --clip-model {d}/model", "the release has no clip_scores table"),
    ("train/clipscore-odd-accumulation", folder("rel"), "train clipscore {d}/rel --clip-model m --accumulation 3",
     "--accumulation must be even"),
]
REFUSED += [  # a lock file in the place of ours that is not one: refused, kept (test_folder_lock_cli.py: the rest)
    ("unlock/not-our-lock-file", text("f/.xmdata-lock", "my notes"), "unlock {d}/f", "is not an xmdata lock file"),
    ("unlock/a-folder-in-its-place", folder("f/.xmdata-lock"), "unlock --force {d}/f", "is a folder, not an xmdata lock"),
]
REFUSED += [  # publish: refused before any request (tests/release/test_publish.py has the rest, on a stand-in Hub)
    ("publish/a-repo-id-not-owner-name", text("in.csv", "id,text\n"), "publish {d} notarepo", "not owner/name"),
    ("publish/a-folder-that-does-not-verify", text("in.csv", "id,text\n"), "publish {d} owner/name",
     "does not verify against its manifest"),
    ("publish/a-tag-git-refuses", text("in.csv", "id,text\n"), "publish {d} owner/name --tag bad..tag",
     "is no git branch or tag name"),
]
NO_OUT = ("validate", "release --config {d}/r.yaml --out")
NEEDS_TINY = ("{m2m100}", "tiny:")


@pytest.mark.parametrize("case, build, command, expected", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_in_one_line_before_anything_is_written(case, build, command, expected, tmp_path, capsys, request):
    if build:
        build(tmp_path)
    if any(marker in command or marker in case for marker in ("{m2m100}", "release/unknown", "release/tiny",
                                                              "release/no-source", "release/unsupported")):
        command = command.replace("{m2m100}", request.getfixturevalue("tiny_models")["m2m100"].name_or_path)
        capsys.readouterr()  # what building the tiny models printed, on first use
    argv = command.replace("{d}", str(tmp_path)).split()
    out = tmp_path / "out"
    if argv[0] not in ("validate", "explain", "explore", "memo", "unlock", "publish") and "--out" not in argv:
        argv += ["--out", str(out)]
    existed = out.exists()
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err, err[-3000:]
    assert lines[0].startswith("xmdata: error: "), err
    # One line, or one per broken rule of one input (a contract lists every violation it found).
    assert len(lines) == 1 or all(": column " in line for line in lines), err
    assert expected in err, err
    assert out.exists() == existed and (not existed or out.is_file())  # nothing written to --out
    assert not (tmp_path / "file" / "release").exists()


def test_the_corpus_covers_every_command_and_sixty_kinds():
    from xmdata.cli_parser import build_parser

    commands = {c[2].split()[0] for c in REFUSED}
    parser_commands = set(build_parser().commands)
    # worker reads no table: its one refusal (--gpu with no GPU) is in test_placement.py
    service_and_tools = {"up", "down", "status", "serve", "models", "demo", "select-translations", "worker"}
    assert parser_commands - service_and_tools <= commands
    assert len(REFUSED) >= 60


def test_argument_errors_exit_2_in_the_cli_before_anything(tmp_path, capsys):
    for argv in (["identify-language", CAPTIONS, "--out", str(tmp_path / "o"), "--shards", "0"],
                 ["select-images", IMAGES, "--per-language", "-3", "--out", str(tmp_path / "o")],
                 ["evaluate", "correlation", CAPTIONS, "--out", str(tmp_path / "o"), "--rating-scale", "1"],
                 ["translate", CAPTIONS, "--columns", "text", "--targets", "fr", "--min-lid-prob", "1.5",
                  "--out", str(tmp_path / "o")],
                 ["translate", CAPTIONS, "--columns", "text", "--targets", "fr,de,fr", "--out", str(tmp_path / "o")],
                 ["select-images", IMAGES, "--seed", "-5", "--out", str(tmp_path / "o")],
                 ["evaluate", "mmmeb", CAPTIONS, "--seed", "-1", "--out", str(tmp_path / "o")],
                 ["serve", "--port", "99999"],  # one port bound for both: serve's was a traceback
                 ["explore", str(tmp_path / "o"), "--port", "-1"]):
        try:  # argparse exits; a value the params model refuses returns 2 from main
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
        assert code == 2 and "error:" in capsys.readouterr().err
        assert not (tmp_path / "o").exists()


# Rows a stage refuses one by one: counted by reason, rows in == rows out + rejects, never silent.

def test_language_id_stage_rejects_texts_without_letters_and_keeps_the_rest():
    from xmdata.models.base import ModelSpec
    from xmdata.tasks.translation.language_id import language_id_stage

    texts = ["\x01\x02", "<|image_1|>", "<image>", " 12 34 ", "?!", "\u200b\u200b", None, "",
             "<|image_1|> Ein Hund.", "Un chat noir."]
    table = pa.table({"id": [f"t{i}" for i in range(len(texts))], "text": pa.array(texts, pa.string())})
    stage = language_id_stage(ModelSpec("fasttext", "lid.176"))
    kept, rejects = stage.fn(table, stage.params)
    assert kept.column("id").to_pylist() == ["t8", "t9"] and kept.column("lid_label").to_pylist() == ["de", "fr"]
    assert rejects.column("reason").to_pylist() == ["empty_text"] * 2 + ["no_letters"] * 6
    assert kept.num_rows + rejects.num_rows == table.num_rows


def test_which_texts_arrow_passes_as_they_are_changes_no_decision_of_lid_text():
    """split_unlabelable lets Arrow pass a text with an ASCII letter and no '<', and asks lid_text
    about the rest: every text of a mix of the cases gets what lid_text alone gives it."""
    import random

    from xmdata.tasks.translation.language_id import lid_text, split_unlabelable

    pieces = ["a", "Z", "<", ">", "|", "_", "1", " ", "\t", "\n", "²", "Ⅻ", "é", "д", "猫", "\x00", "\u2028",
              "<image>", "<|image_1|>", "<IMAGE 3>", "<b>"]
    rng = random.Random(0)
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 6))) for _ in range(5000)]
    texts += ["A cat.<|image_1|>", "<image>", "x<image>", "²³", "дом", "___", "1a", "a\n"]
    table = pa.table({"id": [f"t{i}" for i in range(len(texts))], "text": texts})
    kept, rejects, read = split_unlabelable(table)
    texts = [t for t in texts if t.strip()]  # blank_mask's rejects (the pieces' whitespace is Python's too)
    assert read == [lid_text(t) for t in texts if lid_text(t) is not None]
    assert kept.column("text").to_pylist() == [t for t in texts if lid_text(t) is not None]
    assert rejects.column("reason").to_pylist().count("no_letters") == [lid_text(t) for t in texts].count(None) > 0
    assert kept.num_rows + rejects.num_rows == table.num_rows


@pytest.mark.slow  # starts the test run's xmdata service
def test_identify_language_rejects_texts_with_nothing_to_label_and_counts_every_row(tmp_path, capsys, prefect_server):
    texts = {"ok": "A red bicycle leans against a wall.", "control": "\x01\x02\x03", "image": "<|image_1|>",
             "image-nl": "<|image_1|>\n", "digits": "12345 678", "symbols": "!!! ??? ...", "blank": "   ",
             "emoji": "\U0001F600\U0001F600", "huge": "word " * 200_000, "mixed": "<|image_1|> A cat on a mat."}
    rows = [{"id": k, "text": v} for k, v in texts.items()] + [{"id": "ok", "text": "again"}, {"id": "", "text": "x"}]
    jsonl("in.jsonl", rows)(tmp_path)
    out = tmp_path / "out"
    assert main(["identify-language", str(tmp_path / "in.jsonl"), "--out", str(out), "--executor", "inprocess",
                 "--shards", "2", "--quiet"]) == 0
    import json

    stages = json.load(open(out / "summary.json"))["stages"]
    assert stages["captions"]["rejected"] == {"duplicate_id": 1, "empty_id": 1}
    assert stages["language_id"]["rejected"] == {"empty_text": 1, "no_letters": 6}
    for stage in stages.values():
        assert stage["rows_in"] == stage["rows_out"] + sum(stage["rejected"].values())
    assert stages["captions"]["rows_in"] == len(rows) and stages["language_id"]["rows_out"] == 3  # ok, huge, mixed


def test_photo_folder_refuses_bombs_and_broken_files_with_reasons_and_follows_links(tmp_path):
    from support.bad_inputs import png_bomb
    from xmdata.tasks.selection.image_folder import images_from_folder

    photos, outside = tmp_path / "photos", tmp_path / "secret"
    photos.mkdir()
    outside.mkdir()
    png_bomb("bomb.png")(photos)
    random_bytes("noise.jpg")(photos)
    text("empty.jpg", b"")(photos)
    from PIL import Image

    Image.new("RGB", (8, 8)).save(outside / "elsewhere.jpg")
    Image.new("RGB", (8, 8)).save(photos / "no-exif.jpg")
    os.symlink(outside / "elsewhere.jpg", photos / "link.jpg")
    os.symlink(tmp_path / "missing.jpg", photos / "dangling.jpg")
    kept, rejects = images_from_folder(str(photos))
    reasons = dict(zip(rejects.column("row_id").to_pylist(), rejects.column("reason").to_pylist()))
    # A link is followed wherever it leads (its photo has no GPS); a broken one is unreadable.
    assert reasons == {"bomb.png": "image_too_large", "dangling.jpg": "unreadable_exif",
                       "empty.jpg": "unreadable_exif", "link.jpg": "no_gps", "no-exif.jpg": "no_gps",
                       "noise.jpg": "unreadable_exif"}
    assert kept.num_rows + rejects.num_rows == 6


def test_coordinates_out_of_range_or_missing_are_rejected_by_reason():
    from xmdata.tasks.selection.geocode import split_coordinates

    table = pa.table({"id": list("abcdefg"), "latitude": [10.0, 95.0, None, float("nan"), -90.0, 1.0, float("inf")],
                      "longitude": [20.0, 1.0, 3.0, 1.0, 180.0, -180.5, 2.0]})
    kept, rejects = split_coordinates(table)
    assert kept.column("id").to_pylist() == ["a", "e"]
    assert sorted(zip(rejects.column("row_id").to_pylist(), rejects.column("reason").to_pylist())) == [
        ("b", "invalid_coordinates"), ("c", "no_gps"), ("d", "invalid_coordinates"),
        ("f", "invalid_coordinates"), ("g", "invalid_coordinates")]


def test_validate_says_which_rows_the_stages_would_refuse_and_why(tmp_path, capsys):
    (tmp_path / "images.csv").write_text("id,latitude,longitude\na,1,2\n,3,4\na,5,6\nc,95,7\nd,,8\ne,10,200\nf,0,0\n")
    assert main(["validate", str(tmp_path / "images.csv"), "--table", "images"]) == 1
    out = capsys.readouterr().out
    assert "7 rows have the types of 'images'; 2 would be kept, 5 refused" in out
    for line in ("ingest: duplicate_id: 1 row(s) (first: 'a')", "ingest: empty_id: 1 row(s)",
                 "geocode: invalid_coordinates: 2 row(s) (first: 'c', 'e')", "geocode: no_gps: 1 row(s) (first: 'd')"):
        assert line in out
    jsonl("captions.jsonl", [{"id": "a", "text": "hello", "language": "english"}, {"id": "b", "text": "<|image_1|>"},
                             {"id": "c", "text": "bonjour", "language": "fr"}])(tmp_path)
    assert main(["validate", str(tmp_path / "captions.jsonl")]) == 1
    out = capsys.readouterr().out
    assert "language: not_a_language_code: 1 row(s) (first: 'a')" in out and "no_letters: 1 row(s) (first: 'b')" in out
    assert main(["validate", str(tmp_path / "captions.jsonl"), "--map", "nothing=x"]) == 1
    jsonl("good.jsonl", [{"id": "c", "text": "bonjour", "language": "fr"}])(tmp_path)
    assert main(["validate", str(tmp_path / "good.jsonl")]) == 0
    # A scoring input: what the score stage refuses (a blank path is no image), not what language ID would.
    jsonl("pairs.jsonl", [{"id": "p1", "text": "1234", "image_path": "a.png"},
                          {"id": "p2", "text": "a dog", "image_path": " "},
                          {"id": "p3", "text": " ", "image_path": "a.png"}])(tmp_path)
    capsys.readouterr()
    assert main(["validate", str(tmp_path / "pairs.jsonl"), "--table", "score_input"]) == 1
    out = capsys.readouterr().out
    assert "clip_score: no_image_reference: 1 row(s) (first: 'p2')" in out
    assert "clip_score: empty_text: 1 row(s) (first: 'p3')" in out
    assert "no_letters" not in out and "3 rows have the types of 'score_input'; 1 would be kept, 2 refused" in out


def test_release_overrides_from_the_ui_are_validated_before_anything_is_written(tmp_path):
    from xmdata.flows.release import release_flow
    from xmdata.schemas import ContractError

    config("r.yaml", "name: x\nlanguage_id: {input: captions.jsonl}\n")(tmp_path)
    for shards in (0, -4):  # the form's number field, as `prefect deployment run -p shards=0` sends it
        with pytest.raises(ContractError, match="shards"):
            release_flow.fn(config=str(tmp_path / "r.yaml"), out=str(tmp_path / "out"), shards=shards)
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # a flow run: the broken model is found only when a shard loads it
def test_a_model_that_fails_to_load_mid_run_exits_2_in_one_line_without_traceback(tmp_path, capsys, prefect_server):
    from xmdata.models.fasttext_lid import FASTTEXT_MAGIC

    text("lid.bin", FASTTEXT_MAGIC + b"\x0c\x00\x00\x00 but no model after the magic")(tmp_path)
    capsys.readouterr()
    code = main(["identify-language", CAPTIONS, "--lid-model", str(tmp_path / "lid.bin"), "--executor", "inprocess",
                 "--shards", "1", "--quiet", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err[-3000:]
    shown = [line for line in err.splitlines() if "| ERROR" in line or line.startswith("xmdata:")]
    assert len(shown) == 1 and shown[0].startswith("xmdata: error: fasttext:"), err  # (tests log Prefect's INFO)
