"""Every existing params hash stays what it was (55 item 5: the fields a model choice is made of are
declared once, and the CLI's rules moved into the params models): a changed hash reruns every finished
shard of a user's outputs. The figures were taken before the change; a new field or a renamed one
fails here, and needs a version bump and a line in the changelog, not a silent rerun."""
from __future__ import annotations

from xmdata.runtime.atomic import hash_params
from xmdata.tasks.clean.params import CleanParams
from xmdata.tasks.clean.signatures import embedding_spec, signature_stage
from xmdata.tasks.scoring.score import clip_score_stage
from xmdata.tasks.stage_params import ScoringParams
from xmdata.tasks.train.clipscore_params import ClipscoreParams
from xmdata.tasks.translation.candidate_scores import candidate_qe_stage
from xmdata.tasks.translation.params import TranslateParams
from xmdata.tasks.translation.translate import translate_stage

PINNED = {
    "score_default": "ff9419ee87e9c36a84f8cf3e80ffeeaaee29657d503848cc1e475454b8f402dd",
    "score_cuda": "04cf0e690482e11eca15adc48a4944056750cdd5fd96c0c67cfb5b7cf47d8578",
    "translate": "729c9a862af592cb019554c70da812858fd15ce70bb36adb9cd695d7406222d6",
    "translate_qe": "b47504bd2cd0490df77001c4dd6543aa5cc215c08ef8763f0c76703a2d14dd68",
    "translate_cuda": "3bd4e80579fcc28948eccd0c0a502fa92557f14b616b6681200d72ddcb891dcd",
    "translate_cuda_qe": "5c9570ceb058cdabd7307a9486990c6953761d6c201f1c1f5f282f2cc9ef7181",
    "clean": "b106503617fbec29638166b2a25fa0f48a558fcb49a3acd68fd1cf39ab811673",
    "clean_model": "d941458ef4e9aabdfe081f6ab753e3378774ae126e602121af30c5fc61f1e86e",
    "clipscore": "9b63ba66c898f97f53fb7fbe103410c17c17b518b424816da86ae2bca3004892",
    "clipscore_cuda": "98c7242ce5ce5621cccf37f6acd08dd0dd58c4a29da53ce8b81105da17fe596b",
}


def current_hashes() -> dict:
    out = {}
    for name, kw in {"score_default": dict(clip_model="ViT-B-32", pretrained="openai"),
                     "score_cuda": dict(clip_model="ViT-B-32", pretrained="openai", device="cuda", max_image_pixels=10**6, decode_mode="fast")}.items():
        p = ScoringParams(**kw)
        out[name] = clip_score_stage(p, p.spec(), "/images", None).params_hash
    for name, kw in {"translate": dict(targets=["fr", "de"]),
                     "translate_cuda": dict(targets=["fr"], translator={"device": "cuda"}, filters={"qe_device": "cuda"})}.items():
        p = TranslateParams(**kw)
        out[name] = translate_stage(p, p.translator.spec()).params_hash
        out[name + "_qe"] = candidate_qe_stage(p.filters.qe_spec()).params_hash
    for name, kw in {"clean": dict(), "clean_model": dict(model="ViT-B-32", pretrained="openai", max_image_pixels=10**6)}.items():
        p = CleanParams(**kw)
        out[name] = signature_stage("images", p, embedding_spec(p)).params_hash
    for name, kw in {"clipscore": dict(clip_model="ViT-B-32", pretrained="openai"), "clipscore_cuda": dict(clip_model="ViT-B-32", pretrained="openai", device="cuda")}.items():
        out[name] = hash_params(ClipscoreParams(**kw).model_dump())
    return out


def test_params_hashes_are_the_ones_finished_shards_were_recorded_with():
    assert current_hashes() == PINNED


def test_cometkiwi_goes_where_the_translator_goes_from_every_door():
    """Was a rule of the command line alone (--device moved COMETKiwi too); a config or the UI form that
    put the translator on cuda left COMETKiwi on the CPU. Now the params model holds it: the hash is
    the one the command line's run was recorded with."""
    from xmdata.cli_parser import build_parser
    from xmdata.cli_params import params_from_args
    from xmdata.tasks.translation.params import TranslateQaParams

    config = TranslateParams(targets=["fr"], translator={"device": "cuda"})
    assert config.filters.qe_device == "cuda"
    assert candidate_qe_stage(config.filters.qe_spec()).params_hash == PINNED["translate_cuda_qe"]
    args = build_parser().parse_args(["translate", "in.parquet", "--targets", "fr", "--device", "cuda", "--out", "o"])
    assert params_from_args(args) == config
    assert TranslateParams(targets=["fr"], translator={"device": "cuda"}, filters={"qe_device": "cpu"}).filters.qe_device == "cpu"
    assert TranslateQaParams(targets=["fr"], translator={"device": "cuda"}).filters is None  # filters off stay off
    assert TranslateQaParams(targets=["fr"], translator={"device": "cuda"}, filters={}).filters.qe_device == "cuda"


def test_embeddings_on_is_one_spelling_for_a_config_and_the_flag():
    from xmdata.cli_parser import build_parser
    from xmdata.cli_params import params_from_args

    assert ScoringParams(clip_model="m", embeddings=True).embeddings == "float16"
    assert ScoringParams(clip_model="m", embeddings=False).embeddings == "none"
    args = build_parser().parse_args(["score", "p.parquet", "--clip-model", "m", "--embeddings", "--out", "o"])
    assert params_from_args(args) == ScoringParams(clip_model="m", embeddings=True)
