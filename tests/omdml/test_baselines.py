"""Fusion baselines and retrieval scores of the OMDML experiments
(cvxmetric.experiments.omdml.baselines).

RCA, the distances and the top-K precision against direct computations;
the fusions on a synthetic case with one informative view, where -B must
pick it; identities the fusions must satisfy (Eucl-C = Eucl-U, -U sums the
per-view distances, OASIS-U sums similarities); determinism; bad input.
"""

import numpy as np
import pytest

from cvxmetric.metrics import mean_average_precision
from cvxmetric.experiments.omdml.baselines import (BASELINES, METHODS, evaluate, fit_view_metric,
                                        rca_metric, retrieval_scores, squared_distances,
                                        top_k_precision)
from cvxmetric.experiments.omdml.views import retrieval_split, synthetic_views


@pytest.fixture(scope="module")
def case():
    """Three views, only view 1 informative; split 60 / 30 / 30."""
    views, y, _ = synthetic_views(120, dims=(5, 4, 6), informative=1, n_classes=3,
                                  random_state=0)
    return views, y, retrieval_split(y, 30, 30, random_state=0)


@pytest.fixture(scope="module")
def result(case):
    views, y, split = case
    return evaluate(views, y, split, n_triplets=500, ks=(1, 5, 10), random_state=0)


# ---------------------------------------------------------------------------
# RCA and distances
# ---------------------------------------------------------------------------


def test_rca_is_the_inverse_within_class_covariance():
    rng = np.random.RandomState(0)
    X = rng.randn(40, 3) @ rng.randn(3, 3)
    y = np.repeat(["a", "b", "c", "d"], 10)
    C = np.zeros((3, 3))
    for c in np.unique(y):  # the textbook double sum, one class at a time
        R = X[y == c] - X[y == c].mean(axis=0)
        C += R.T @ R
    C /= len(y)
    assert np.allclose(rca_metric(X, y, shrinkage=0.0), np.linalg.inv(C))
    s = 0.1
    shrunk = np.linalg.inv(C + s * np.trace(C) / 3 * np.eye(3))
    assert np.allclose(rca_metric(X, y, shrinkage=s), shrunk)


def test_rca_whitens_the_classes():
    rng = np.random.RandomState(1)
    y = np.arange(300) % 3
    X = rng.randn(300, 2) * [5.0, 0.2] + 4 * rng.randn(3, 2)[y]
    M = rca_metric(X, y, shrinkage=0.0)
    L = np.linalg.cholesky(M).T
    Z = X @ L.T
    R = np.concatenate([Z[y == c] - Z[y == c].mean(axis=0) for c in range(3)])
    assert np.allclose(R.T @ R / len(y), np.eye(2))


def test_rca_singular_needs_shrinkage():
    X = np.c_[np.arange(6.0), np.zeros(6)]  # a constant feature
    y = np.arange(6) % 2
    with pytest.raises(ValueError, match="shrinkage"):
        rca_metric(X, y, shrinkage=0.0)
    assert np.all(np.isfinite(rca_metric(X, y)))


@pytest.mark.parametrize("X, y, kw, match", [
    (np.zeros((4, 2)), np.zeros(3), {}, "X, y"),
    (np.zeros((4, 2)), np.arange(4), {"shrinkage": -1.0}, "shrinkage"),
    (np.zeros((4, 2)), np.arange(4), {"shrinkage": True}, "shrinkage"),
    (np.full((4, 2), np.nan), np.arange(4), {}, "X"),
])
def test_rca_bad_input(X, y, kw, match):
    with pytest.raises(ValueError, match=match):
        rca_metric(X, y, **kw)


def test_squared_distances_by_brute_force():
    rng = np.random.RandomState(2)
    Q, X = rng.randn(4, 3), rng.randn(5, 3)
    A = rng.randn(3, 3)
    M = A @ A.T
    diff = Q[:, None, :] - X[None, :, :]
    assert np.allclose(squared_distances(Q, X, M),
                       np.einsum("qia,ab,qib->qi", diff, M, diff))
    assert np.allclose(squared_distances(Q, X), (diff ** 2).sum(axis=2))
    assert np.all(squared_distances(X, X) >= 0)
    with pytest.raises(ValueError, match="G: has 2 features"):
        squared_distances(Q, rng.randn(5, 2))
    with pytest.raises(ValueError, match="M"):
        squared_distances(Q, X, np.eye(2))


# ---------------------------------------------------------------------------
# Top-K precision
# ---------------------------------------------------------------------------


def test_top_k_precision_by_hand():
    # query 0 ranks items 0..4 in order; relevant: items 0 and 3
    # query 1: items 4, 3, 2, 1, 0; relevant: item 4 only
    D = np.array([[0.0, 1.0, 2.0, 3.0, 4.0],
                  [4.0, 3.0, 2.0, 1.0, 0.0]])
    rel = np.array([[True, False, False, True, False],
                    [False, False, False, False, True]])
    # P@1 = (1 + 1)/2; P@2 = (1/2 + 1/2)/2; P@4 = (2/4 + 1/4)/2; P@5 = (2/5 + 1/5)/2
    assert np.allclose(top_k_precision(D, rel, [1, 2, 4, 5]),
                       [1.0, 0.5, 0.375, 0.3])


def test_top_k_precision_ties_are_pessimistic():
    # every item at the same distance: the relevant one is ranked last
    D = np.zeros((1, 4))
    rel = np.array([[False, True, False, False]])
    assert np.allclose(top_k_precision(D, rel, [1, 3, 4]), [0.0, 0.0, 0.25])
    # with one relevant index per query
    assert np.allclose(top_k_precision(D, np.array([1]), [4]), [0.25])


@pytest.mark.parametrize("ks", [[0], [6], [], [1.5], [[1]]])
def test_top_k_precision_bad_ks(ks):
    with pytest.raises(ValueError, match="ks"):
        top_k_precision(np.zeros((2, 5)), np.zeros((2, 5), bool), ks)


def test_retrieval_scores_agree_with_metrics():
    rng = np.random.RandomState(3)
    D = rng.rand(6, 9)
    yq, yi = rng.randint(0, 3, 6), rng.randint(0, 3, 9)
    yi[:3] = [0, 1, 2]  # every query has a relevant item
    m, p = retrieval_scores(D, yq, yi, ks=(1, 3, 50))
    rel = yq[:, None] == yi[None, :]
    assert m == pytest.approx(mean_average_precision(-D, rel))
    assert np.allclose(p, top_k_precision(D, rel, [1, 3, 9]))  # K clipped to 9
    with pytest.raises(ValueError, match="distances"):
        retrieval_scores(D.T, yq, yi)
    with pytest.raises(ValueError, match="y_query"):
        retrieval_scores(D, yq + 10, yi)


# ---------------------------------------------------------------------------
# Fusions
# ---------------------------------------------------------------------------


def test_every_name_and_order(result):
    names = [f"{m}-{f}" for f in "BCU" for m in BASELINES]
    for table in result:
        assert list(table) == names
    for name in names:
        assert 0.0 <= result.map[name] <= 1.0
        assert result.topk[name].shape == (3,)
        assert result.seconds[name] >= 0.0
        assert (result.view[name] is None) == (not name.endswith("-B"))


def test_best_modality_is_the_informative_one(result):
    for m in BASELINES:
        assert result.view[f"{m}-B"] == 1
    # the informative view alone beats the noise-diluted Euclidean fusions
    assert result.map["Eucl-B"] > result.map["Eucl-C"]
    assert result.map["Eucl-B"] > 0.8


def test_lmnn_rows_are_certified(result, case):
    """The paper's LMNN rows: one certified fit per view (-B, -U), one on
    the concatenation (-C); nothing solved for Eucl, RCA, OASIS."""
    views, _, _ = case
    assert result.status["LMNN-B"] == ("optimal",) * len(views)
    assert result.status["LMNN-U"] == ("optimal",) * len(views)
    assert result.status["LMNN-C"] == ("optimal",)
    for m in ("Eucl", "RCA", "OASIS"):
        assert result.status[f"{m}-C"] == ()
    # a learned metric on the informative view beats the Euclidean one
    assert result.map["LMNN-B"] >= result.map["Eucl-B"]


def test_eucl_concatenation_equals_uniform_sum(result):
    # sum of squared distances over views = squared distance of the
    # concatenation (the paper's Table 2 has Eucl-C = Eucl-U too)
    assert result.map["Eucl-C"] == pytest.approx(result.map["Eucl-U"])
    assert np.allclose(result.topk["Eucl-C"], result.topk["Eucl-U"])


@pytest.mark.parametrize("method", METHODS)
def test_uniform_fusion_sums_the_view_rankers(case, method):
    views, y, (tr, _, te) = case
    fs = [fit_view_metric(method, v[tr], y[tr], n_triplets=300, random_state=0)
          for v in views]
    D = sum(f(v[te], v[tr]) for f, v in zip(fs, views))
    assert D.shape == (len(te), len(tr))
    if method == "OASIS":
        # a bilinear similarity: the ranker is minus q^T W x, summed
        S = sum(v[te] @ f.W @ v[tr].T for f, v in zip(fs, views))
        assert np.allclose(D, -S)
    else:
        assert np.all(D >= 0)


def test_evaluate_is_deterministic(case):
    views, y, split = case
    kw = dict(methods=("OASIS", "RCA"), fusions=("U",), n_triplets=300, ks=(5,))
    a = evaluate(views, y, split, random_state=7, **kw)
    b = evaluate(views, y, split, random_state=7, **kw)
    assert a.map == b.map
    assert list(a.map) == ["OASIS-U", "RCA-U"]


@pytest.mark.parametrize("kwargs, match", [
    ({"methods": ("LMNNX",)}, "methods"),
    ({"fusions": ("X",)}, "fusions"),
    ({"methods": ()}, "methods"),
    ({"split": (np.arange(3), np.arange(3))}, "split"),
    ({"split": (np.arange(3), np.arange(3), np.array([0.5]))}, "split"),
    ({"split": (np.arange(3), np.arange(3), np.array([500]))}, "split"),
    ({"y": np.zeros(5)}, "y"),
    ({"views": np.zeros((120, 3))}, "views"),
])
def test_evaluate_bad_input(case, kwargs, match):
    views, y, split = case
    args = {"views": views, "y": y, "split": split, **kwargs}
    with pytest.raises(ValueError, match=match):
        evaluate(args.pop("views"), args.pop("y"), args.pop("split"), **args)


def test_fit_view_metric_unknown_method(case):
    views, y, (tr, _, _) = case
    with pytest.raises(ValueError, match="method"):
        fit_view_metric("LMNNX", views[0][tr], y[tr])


# ---------------------------------------------------------------------------
# The experiment script
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_example_quick_run_prints_the_table_and_draws(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("matplotlib")
    script = Path(__file__).resolve().parents[2] / "examples" / "omdml_digits.py"
    proc = subprocess.run([sys.executable, str(script), "--quick", "--figures",
                           str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name in [f"{m}-{f}" for f in "BCU" for m in BASELINES] + ["mAP"]:
        assert name in proc.stdout
    assert "certified optimal fits" in proc.stdout
    assert (tmp_path / "omdml_topk.png").stat().st_size > 0
    assert (tmp_path / "omdml_mistakes.png").stat().st_size > 0
