import numpy as np
import pytest
from scipy import stats

from xmdata.schemas import ContractError
from xmdata.tasks.evaluation.backretrieval import (Side, backretrieval, corr_baseline, cross_lingual_recall,
                                             evaluate_backretrieval)
from xmdata.tasks.evaluation.ranking import recall_at_k, unit_rows


def world(m=600, d=24, image_noise=1.3, seed=0):
    """Parallel items: one latent meaning each; source and target photos are two noisy views of it."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(m, d))
    return rng, z, z + image_noise * rng.normal(size=(m, d)), z + image_noise * rng.normal(size=(m, d))


def test_hand_example():
    # source texts s0, s1, s2 retrieve targets t1, t0, t0; target images t0 ~ s1, t1 ~ s0.
    src_text = unit_rows(np.array([[1, 0], [0, 1], [0.1, 1]]))
    tgt_text = unit_rows(np.array([[0, 1], [1, 0]]))
    src_image = unit_rows(np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]]))
    tgt_image = unit_rows(np.array([[0, 1, 0.5], [1, 0, 0]]))
    # s0 -> t1 -> image [1,0,0]: s0's image ranks 1st; s1 -> t0 -> s1 1st, s2 2nd; s2 -> t0: s2 ranks 2nd.
    assert backretrieval(src_text, src_image, tgt_text, tgt_image, k=1) == pytest.approx(2 / 3)
    assert backretrieval(src_text, src_image, tgt_text, tgt_image, k=2) == pytest.approx(1.0)


def test_ties_score_their_expectation():
    gallery = np.zeros((50, 4), dtype=np.float32)  # every candidate equally similar
    assert recall_at_k(np.ones((50, 4), np.float32), gallery, np.arange(50), 10).mean() == pytest.approx(10 / 50)


def test_perfect_text_encoder_gives_the_image_retrievals_own_recall():
    _, z, gs, gt = world()
    pairs = np.column_stack([np.arange(len(z)), np.arange(len(z))])
    result = evaluate_backretrieval(Side({"perfect": z}, gs), Side({"perfect": z}, gt), pairs, n=len(z), seeds=2)
    image_recall = recall_at_k(unit_rows(gt), unit_rows(gs), np.arange(len(z)), 10).mean()
    assert 0.1 < image_recall < 0.9  # the image retrieval alone is far from perfect
    assert result["models"]["perfect"]["backretrieval"]["mean"] == pytest.approx(image_recall)
    assert result["image_recall"]["mean"] == pytest.approx(image_recall)
    assert result["models"]["perfect"]["xlr"]["mean"] == 1.0


def test_random_and_constant_text_encoders_give_k_over_n():
    rng, z, gs, gt = world(m=5000)
    random = Side({"random": rng.normal(size=z.shape), "constant": np.ones_like(z)}, gs)
    other = Side({"random": rng.normal(size=z.shape), "constant": np.ones_like(z)}, gt)
    result = evaluate_backretrieval(random, other, n=300, seeds=10)
    assert result["random_expectation"] == pytest.approx(10 / 300)
    # 3,000 queries, about 100 hits expected: sd of the mean about 0.0033
    assert abs(result["models"]["random"]["backretrieval"]["mean"] - 10 / 300) < 0.01
    # a constant encoder retrieves one target for all: exactly K of the N source images rank in its top K
    assert result["models"]["constant"]["backretrieval"]["mean"] == pytest.approx(10 / 300)
    assert result["agreement_with_xlr"] == {"reason": "no parallel pairs: XLR unknown"}


def test_bkr_follows_xlr_across_models_and_samples_are_seeded():
    rng, z, gs, gt = world(m=800, image_noise=0.8)
    noise = [0.2, 0.6, 1.0, 1.6, 3.0]
    src = Side({f"f{i}": z + s * rng.normal(size=z.shape) for i, s in enumerate(noise)}, gs)
    tgt = Side({f"f{i}": z + s * rng.normal(size=z.shape) for i, s in enumerate(noise)}, gt)
    pairs = np.column_stack([np.arange(800), np.arange(800)])
    result = evaluate_backretrieval(src, tgt, pairs, n=300, seeds=2, seed=7)
    xlr = [result["models"][f"f{i}"]["xlr"]["mean"] for i in range(5)]
    bkr = [result["models"][f"f{i}"]["backretrieval"]["mean"] for i in range(5)]
    assert xlr == sorted(xlr, reverse=True) and bkr == sorted(bkr, reverse=True)
    assert result["agreement_with_xlr"]["backretrieval_spearman"]["mean"] == pytest.approx(1.0)
    assert result["agreement_with_xlr"]["backretrieval_pearson"]["mean"] > 0.9
    assert evaluate_backretrieval(src, tgt, pairs, n=300, seeds=2, seed=7) == result
    other = evaluate_backretrieval(src, tgt, pairs, n=300, seeds=2, seed=8)
    assert other["models"]["f1"]["backretrieval"]["per_seed"] != result["models"]["f1"]["backretrieval"]["per_seed"]


def test_xlr_and_corr_by_definition():
    rng, z, gs, gt = world(m=300)
    fs, ft = unit_rows(z + 0.5 * rng.normal(size=z.shape)), unit_rows(z + 0.5 * rng.normal(size=z.shape))
    sims = fs @ ft.T
    ranks = (sims > np.diag(sims)[:, None]).sum(axis=1) + 1
    assert cross_lingual_recall(fs, ft, k=5) == pytest.approx(np.mean(ranks <= 5))
    gs_u, gt_u = unit_rows(gs), unit_rows(gt)
    expected = stats.spearmanr((1 - fs @ ft.T).ravel(), (1 - gs_u @ gt_u.T).ravel()).statistic
    assert corr_baseline(fs, gs_u, ft, gt_u, np.random.default_rng(0)) == pytest.approx(expected)


def test_mismatched_encoders_and_empty_sides_are_refused():
    rng, z, gs, gt = world(m=20)
    with pytest.raises(ContractError, match="f 24 vs 12"):
        evaluate_backretrieval(Side({"f": z}, gs), Side({"f": z[:, :12]}, gt))
    with pytest.raises(ContractError, match="at least two items"):
        evaluate_backretrieval(Side({"f": z[:1]}, gs[:1]), Side({"f": z}, gt))
