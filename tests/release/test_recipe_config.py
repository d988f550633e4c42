"""Recipe configs: `sample:` merged over the config, the tiny models swapped in, imported inputs checked,
and the MMMEB source layouts refused whole when they are not what they claim."""
import json
import os

import pytest

from xmdata.flows.release_config import ReleaseConfig, apply_sample, deep_merge, load_release_config
from xmdata.flows.release_preflight import checked_release
from xmdata.flows.release_refs import model_refs, named_models, with_tiny_models
from xmdata.schemas import ContractError
from xmdata.tasks.importers.options import ImportOptions
from xmdata.tasks.importers.run import import_dataset


def test_sample_section_is_merged_over_the_config_and_null_removes():
    raw = {"name": "x", "imports": {"a": {"format": "xm3600", "source": "big", "options": {"images": "i"}},
                                    "b": {"format": "valse", "source": "v"}},
           "sample": {"imports": {"a": {"source": "small"}, "b": None}}}
    assert apply_sample(raw, False) == {k: v for k, v in raw.items() if k != "sample"}
    merged = apply_sample(raw, True)
    assert merged["imports"] == {"a": {"format": "xm3600", "source": "small", "options": {"images": "i"}}}
    assert deep_merge({"a": [1, 2]}, {"a": [3]}) == {"a": [3]}  # lists are replaced, not merged


def test_models_tiny_replaces_every_model_the_recipes_name():
    paper = ReleaseConfig.model_validate({
        "name": "x", "qa_translation": {"input": "q", "targets": ["fr"],
                                       "translator": {"backend": "madlad", "model": "google/madlad400-3b-mt"}},
        "benchmarks": {"sets": {}, "targets": ["fr"], "translator": {"model": "facebook/m2m100_1.2B"},
                       "filters": {"qe_model": "Unbabel/wmt23-cometkiwi-da-xxl", "qe_device": "cuda",
                                   "qe_precision": "bfloat16"},
                       "clip_model": "xlm-roberta-large-ViT-H-14", "pretrained": "frozen_laion5b_s13b_b90k"},
        "mmmeb": {"systems": [{"name": "s", "backend": "hf", "model": "google/siglip"}]}})
    tiny = with_tiny_models(paper)
    assert tiny.qa_translation.translator.model == "tiny:madlad" and tiny.qa_translation.filters is None
    assert tiny.benchmarks.translator.model == "tiny:m2m100" and tiny.benchmarks.filters.qe_model == "tiny:cometkiwi"
    assert tiny.benchmarks.filters.qe_precision == "float32"  # float16/bf16 XXL settings are for a GPU
    assert (tiny.benchmarks.clip_model, tiny.benchmarks.pretrained) == ("tiny:open_clip", None)
    assert tiny.mmmeb.systems[0].model == "tiny:hf_clip"
    assert paper.benchmarks.clip_model == "xlm-roberta-large-ViT-H-14"  # a copy: the paper's config is unchanged
    # Every model field is one reference; only lid.176 (real and small) keeps its name.
    assert {r.role: r.name for r in model_refs(tiny) if not (r.name or "").startswith("tiny:")} == \
        {"benchmarks.filters.lid_model": "lid.176"}
    assert named_models(paper)["benchmarks.translator"] == ("facebook/m2m100_1.2B", None)


@pytest.mark.parametrize("recipe", ["xm3600-selection", "xvlm2vec-train", "mclipscore-eval", "mclipscore-train",
                                    "mmmeb"])
def test_recipes_name_the_papers_models_and_refuse_a_missing_download(recipe):
    path = os.path.join(os.path.dirname(__file__), "..", "..", "data", "releases", f"{recipe}.yaml")
    with pytest.raises(ContractError, match="input not found: imports"):  # the real downloads are not here
        checked_release(path)
    release = load_release_config(path, sample=True, models="tiny")
    config = release.config
    assert config.citation.startswith("@") and all(os.path.exists(e.source) for e in config.imports.values())
    assert all(r.name.startswith("tiny:") or r.name == "lid.176" for r in model_refs(config))
    named = named_models(release.as_written)
    expected = {"xm3600-selection": set(), "xvlm2vec-train": {"google/madlad400-3b-mt"},
                "mclipscore-eval": {"facebook/m2m100_1.2B", "Unbabel/wmt23-cometkiwi-da-xxl", "xlm-roberta-large-ViT-H-14"},
                "mclipscore-train": {"facebook/m2m100_1.2B", "Unbabel/wmt23-cometkiwi-da-xxl",
                                     "xlm-roberta-large-ViT-H-14"},
                "mmmeb": {"google/siglip-base-patch16-256-multilingual", "xlm-roberta-large-ViT-H-14"}}[recipe]
    assert expected <= {model for model, _ in named.values()}


def test_an_input_from_an_import_the_config_lacks_is_refused(tmp_path):
    (tmp_path / "r.yaml").write_text("name: x\nqa_translation: {input: 'import:nowhere/qa_input.parquet', targets: [fr]}\n")
    with pytest.raises(ContractError, match="no import 'nowhere'"):
        load_release_config(str(tmp_path / "r.yaml"))
    (tmp_path / "m.yaml").write_text("name: x\nmmmeb: {sources: {xtd10: [missing]}}\n")
    with pytest.raises(ContractError, match=r"mmmeb.sources.xtd10: missing \(not an import\)"):
        load_release_config(str(tmp_path / "m.yaml"))


def test_a_benchmark_set_on_an_import_without_pairs_is_refused_before_the_build(tmp_path):
    (tmp_path / "b.yaml").write_text(
        "name: x\nimports: {xm: {format: xm3600, source: .}}\n"
        "benchmarks: {targets: [fr], clip_model: 'tiny:open_clip', sets: {xm: {source: xm, metric: correlation, "
        "images: .}}}\n")
    with pytest.raises(ContractError, match=r"benchmarks.sets.xm.source: xm \(a xm3600 import has no pairs a set "
                       r"can score; formats that do: .*vicr"):
        load_release_config(str(tmp_path / "b.yaml"))
    (tmp_path / "two.yaml").write_text(
        "name: x\nimports: {a: {format: vicr, source: .}, b: {format: vicr, source: .}}\n"
        "benchmarks: {targets: [fr], clip_model: 'tiny:open_clip', sets: {a: {source: a, metric: correlation, "
        "images: ia}, b: {source: b, metric: correlation, images: ib}}}\n")
    with pytest.raises(ContractError, match=r"the rated sets a, b name different images folders"):
        load_release_config(str(tmp_path / "two.yaml"))


def test_mmmeb_source_layouts_are_refused_whole_or_row_by_row(tmp_path):
    (tmp_path / "xtd").mkdir()
    (tmp_path / "xtd" / "test_image_names.txt").write_text("a.jpg\n")
    (tmp_path / "xtd" / "test_1kcaptions_en.txt").write_text("one\ntwo\n")
    with pytest.raises(ContractError, match="at most one caption a line"):
        import_dataset("xtd10", str(tmp_path / "xtd"), str(tmp_path / "out-xtd"))
    assert not (tmp_path / "out-xtd").exists()  # nothing written
    (tmp_path / "maxm").mkdir()
    (tmp_path / "maxm" / "en.json").write_text(json.dumps({"annotations": []}))
    with pytest.raises(ContractError, match="not the maxm layout"):
        import_dataset("maxm", str(tmp_path / "maxm"), str(tmp_path / "out-maxm"))
    sample = os.path.join(os.path.dirname(__file__), "..", "..", "data", "sample")
    report = import_dataset("flickr30k-entities", os.path.join(sample, "flickr30k_entities"), str(tmp_path / "f30k"),
                            ImportOptions(images=os.path.join(sample, "flickr30k_entities", "images")))
    assert report["refused"] == {"entity_without_box": 1} and report["written"] == {"phrases": 5}
    report = import_dataset("imagenet-val", os.path.join(sample, "imagenet"), str(tmp_path / "inet"))
    assert report["written"] == {"images": 6, "labels": 19}


def test_xtd10_caption_files_named_otherwise_are_refused_not_skipped(tmp_path, capsys):
    from xmdata.cli import main

    (tmp_path / "test_image_names.txt").write_text("a.jpg\n")
    (tmp_path / "test_1kcaptions_zh_CN.txt").write_text("一只狗\n")  # a language code with an underscore: read
    assert main(["import", "xtd10", str(tmp_path), "--out", str(tmp_path / "zh")]) == 0
    (tmp_path / "test_1kcaptions_2.txt").write_text("x\n")
    assert main(["import", "xtd10", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "test_1kcaptions_2.txt" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_rows_whose_image_is_missing_are_rejected_each_with_its_path(tmp_path):
    from xmdata.tasks.importers.base import drop_missing_images

    (tmp_path / "a.jpg").write_bytes(b"x")
    rows = [{"id": "1", "p": "a.jpg"}, {"id": "2", "p": "b.jpg"}, {"id": "3", "p": "b.jpg"}]
    kept, (refused,) = drop_missing_images(rows, str(tmp_path), "maxm", "p")
    assert kept == rows[:1] and refused.column("row_id").to_pylist() == ["2", "3"]
    assert set(refused.column("reason").to_pylist()) == {"image_file_missing"}
    assert drop_missing_images(rows, None, "maxm", "p") == (rows, [])


def test_an_import_file_that_is_not_utf8_or_not_json_is_refused_in_one_line(tmp_path, capsys):
    from xmdata.cli import main

    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "test_image_names.txt").write_bytes(b"a.jpg\xff\xfe\n")
    (tmp_path / "x" / "test_1kcaptions_fr.txt").write_text("un chien\n")
    assert main(["import", "xtd10", str(tmp_path / "x"), "--out", str(tmp_path / "o1")]) == 2
    assert "not UTF-8" in capsys.readouterr().err
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "fr.json").write_text('{"split": "fr", ')
    assert main(["import", "maxm", str(tmp_path / "m"), "--out", str(tmp_path / "o2")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and ("JSON" in err[0] or "json" in err[0]) and not (tmp_path / "o2").exists()


def test_models_tiny_swaps_mbr_s_comet_for_the_tiny_reference_comet():
    from xmdata.flows.release_refs import resolve_tiny_models

    config = ReleaseConfig.model_validate({"name": "x", "translation": {
        "input": "t", "targets": ["fr"], "filters": {"select": "qe_mbr", "mbr_top_k": 3,
                                                     "mbr_metric": "Unbabel/wmt22-comet-da"}}})
    tiny = with_tiny_models(config)
    assert tiny.translation.filters.mbr_metric == "tiny:comet_ref"
    resolved = resolve_tiny_models(tiny)
    assert resolved.translation.filters.mbr_metric.endswith("/comet_ref")
    assert named_models(config)["translation.filters.mbr_metric"] == ("Unbabel/wmt22-comet-da", None)
    chrf = ReleaseConfig.model_validate({"name": "x", "translation": {"input": "t", "targets": ["fr"],
                                                                      "filters": {"select": "mbr"}}})
    assert "translation.filters.mbr_metric" not in named_models(chrf)  # chrF is no model
