"""The scoring options, declared once: ScoringParams reaches the shard whole, the open_clip backend reads
typed options, and a shard finished before this was so keeps its params hash (it is not redone)."""
import inspect
import pathlib

import pytest

from xmdata.models.base import ModelError, ModelSpec
from xmdata.models.open_clip_scorer import OpenClipOptions, OpenClipScorer
from xmdata.runtime.atomic import hash_params
from xmdata.tasks.release.sections import ScoringConfig
from xmdata.tasks.scoring.clip_scores import clip_score
from xmdata.tasks.scoring.score import ScoreShard, clip_score_stage
from xmdata.tasks.stage_params import ScoringParams

ROOT = pathlib.Path(__file__).resolve().parents[2]


def recorded_model(name: str, device: str, options: list) -> dict:
    return {"backend": "open_clip", "name_or_path": name, "revision": None, "device": device, "dtype": "float32",
            "options": options}


# Each: the ScoringParams fields, image root, references column; then the params dict and hash that
# clip_model_spec + clip_score_stage(model, image_root, references_column, embeddings, batch_size, weight,
# prefix, max_pixels) recorded for them before the shard took the params whole (run on that code, 74d037c).
BEFORE = [
    ({"clip_model": "xlm-roberta-base-ViT-B-32", "pretrained": "laion5b_s13b_b90k"}, "/data/images", None,
     {"model": recorded_model("xlm-roberta-base-ViT-B-32", "cpu", [["pretrained", "laion5b_s13b_b90k"]]),
      "image_root": "/data/images", "references_column": None, "embeddings": None, "batch_size": None,
      "weight": 2.5, "prefix": "", "max_pixels": 64000000},
     "4d875c213ca7279dcb2fe01dcb372dbbbfed11d0369971ad1837481b764a4421"),
    ({"clip_model": "/models/clip", "embeddings": "float16", "weight": 1.0, "prefix": "A photo depicts",
      "batch_size": 64, "max_image_pixels": 1000}, None, "refs",
     {"model": recorded_model("/models/clip", "cpu", [["pretrained", None]]),
      "image_root": None, "references_column": "refs", "embeddings": "float16", "batch_size": 64,
      "weight": 1.0, "prefix": "A photo depicts", "max_pixels": 1000},
     "4f4f7c80fb42a9383b755e901a5def24d69ccd33b620bccf79ac626204ec0c23"),
    ({"clip_model": "xlm-roberta-base-ViT-B-32", "pretrained": "/ckpt/model.pt", "device": "cuda"}, "/img", None,
     {"model": recorded_model("xlm-roberta-base-ViT-B-32", "cuda",
                              [["autocast", "bfloat16"], ["pretrained", "/ckpt/model.pt"]]),
      "image_root": "/img", "references_column": None, "embeddings": None, "batch_size": None,
      "weight": 2.5, "prefix": "", "max_pixels": 64000000},
     "c39defc8834fff94719a0ebb7cd3e902ad5b03b231388ef137668a5415e01140"),
    ({"clip_model": "/models/clip", "device": "cuda", "autocast": "none", "embeddings": "float32"}, "/img",
     "references",
     {"model": recorded_model("/models/clip", "cuda", [["pretrained", None]]),
      "image_root": "/img", "references_column": "references", "embeddings": "float32", "batch_size": None,
      "weight": 2.5, "prefix": "", "max_pixels": 64000000},
     "04ed454230e3cf9a460a283ab9e7508c63fea4cb75cd4d62a214889ccd509a47"),
    ({"clip_model": "ViT-B-32", "device": "cuda", "autocast": "float16", "batch_size": 256}, "/img", None,
     {"model": recorded_model("ViT-B-32", "cuda", [["autocast", "float16"], ["pretrained", None]]),
      "image_root": "/img", "references_column": None, "embeddings": None, "batch_size": 256,
      "weight": 2.5, "prefix": "", "max_pixels": 64000000},
     "18e4158d75ce0e2c4a17506f9925130c642e433f09ee22f2b0474f9402b7032d"),
]


@pytest.mark.parametrize("fields, image_root, references, record, digest", BEFORE)
def test_a_shard_finished_before_the_params_came_whole_keeps_its_params_hash(fields, image_root, references,
                                                                             record, digest):
    params = ScoringParams(**fields)
    stage = clip_score_stage(params, params.spec(), image_root, references)
    assert hash_params(record) == digest  # the record as written then
    assert stage.params_hash == digest
    assert hash_params(stage.params.model_dump()) == digest
    assert stage.params.params == params and stage.params.model == params.spec()  # typed, whole, to the shard
    # A release config's section scores as its ScoringParams: same hash, and the shard holds no input paths.
    section = ScoringConfig(input="captions.parquet", images="images.parquet", **fields)
    from_section = clip_score_stage(section, section.spec(), image_root, references)
    assert from_section.params_hash == digest and type(from_section.params.params) is ScoringParams


def test_the_shard_declares_no_option_of_its_own():
    """What is not in ScoringParams is what the input says (image root, references) and the model resolved."""
    assert set(ScoreShard.model_fields) == {"params", "model", "image_root", "references_column"}
    assert "weight" not in inspect.signature(clip_score_stage).parameters
    assert inspect.signature(clip_score).parameters["weight"].default is inspect.Parameter.empty
    packages = [p for folder in ("xmdata", "flows", "tasks", "models", "runtime", "schemas")
                for p in (ROOT / folder).rglob("*.py")]
    with_default = [p.relative_to(ROOT).as_posix() for p in packages if "DEFAULT_WEIGHT" in p.read_text("utf-8")]
    assert with_default == ["tasks/stage_params.py"]


def test_open_clip_reads_typed_options_and_refuses_a_misspelt_one():
    source = (ROOT / "models" / "open_clip_scorer.py").read_text(encoding="utf-8")
    assert ".option(" not in source  # no untyped lookup left
    cpu = ScoringParams(clip_model="ViT-B-32", pretrained="laion2b_s34b_b79k").spec()
    assert OpenClipScorer(cpu).options == OpenClipOptions(pretrained="laion2b_s34b_b79k", autocast=None)
    cuda = ScoringParams(clip_model="ViT-B-32", device="cuda").spec()
    assert OpenClipScorer(cuda).options.autocast == "bfloat16"  # ScoringParams' default, the only one
    with pytest.raises(ModelError, match="pretrain: Extra inputs"):
        OpenClipScorer(ModelSpec("open_clip", "ViT-B-32", options={"pretrain": "x"}))
    with pytest.raises(ModelError, match="autocast"):
        OpenClipScorer(ModelSpec("open_clip", "ViT-B-32", options={"autocast": "float64"}))


def test_local_model_paths_are_made_absolute_for_workers_elsewhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "clip").mkdir()
    spec = ScoringParams(clip_model="./clip", pretrained="./clip/weights.safetensors").spec()
    assert spec.name_or_path == str(tmp_path / "clip")
    assert spec.option("pretrained") == str(tmp_path / "clip" / "weights.safetensors")


def test_a_python_or_ui_run_makes_the_checks_the_command_line_makes(tmp_path):
    """The run's checks live in one place (check_score_run): the flow makes them for a UI form or a
    Python caller, before anything is written; the command line makes them before any server starts
    and tells the flow (`checked`), so that they run once."""
    import pyarrow as pa

    from xmdata.flows.score import score_pairs
    from xmdata.schemas import ContractError

    pairs = pa.table({"id": ["a"], "text": ["a red square"], "image_path": ["red.png"]})
    out = tmp_path / "out"
    with pytest.raises(ModelError, match="needs --pretrained"):
        score_pairs(pairs, str(out), 1, str(tmp_path), ScoringParams(clip_model="ViT-B-32"))
    with pytest.raises(ContractError, match="not a folder"):
        score_pairs(pairs, str(out), 1, str(tmp_path / "nowhere"), ScoringParams(clip_model="ViT-B-32"))
    assert not out.exists()
