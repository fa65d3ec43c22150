"""SLR baselines (Euclid, SLR-Whole, SLR-Fixed), the mAP evaluation, the
synthetic data, the benchmark plumbing and the two examples (--quick)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cvxmetric._tolerances import tolerance
from cvxmetric.metrics import mean_average_precision
from cvxmetric.result import Status
from cvxmetric.bench import slr as _bench
from cvxmetric.bench.slr import (
    make_synthetic_classes,
    retrieval_map,
    train_test_split_indices,
)
from cvxmetric.slr._problem import SLRData, eq3_closed_form
from cvxmetric.experiments.slr.baselines import euclidean_scores, slr_fixed, slr_whole

ROOT = Path(__file__).resolve().parents[2]


def _classes(n=40, d=5, c=3, seed=0):
    rng = np.random.RandomState(seed)
    y = np.arange(n) % c
    X = 1.5 * rng.randn(c, d)[y] + rng.randn(n, d)
    return X, y


@pytest.mark.parametrize("shape", [(40, 5), (8, 12)])
@pytest.mark.parametrize("deltas", [(1.0, 0.0), (2.0, -0.5)])
def test_slr_whole_is_eq3(shape, deltas):
    """Class-sum form == dense Eq. 3; Eq. 1 value and its optimum agree."""
    n, d = shape
    X, y = _classes(n, d)
    d1, d2 = deltas
    res = slr_whole(X, y, d1, d2)
    D = np.where(y[:, None] == y[None, :], d1, d2)
    M = eq3_closed_form(X, D)
    np.testing.assert_allclose(res.M, M, atol=1e-10 * max(1.0, np.abs(M).max()))
    f = np.sum((X @ M @ X.T - D) ** 2)
    assert abs(res.objective - f) / max(1.0, f) <= tolerance("slr", "exact")
    assert res.status == Status.OPTIMAL and res.certificate.passed
    data = SLRData.from_labels(X, y, delta1=d1, delta2=d2)
    assert res.info["eq4_objective"] == pytest.approx(data.objective(M), rel=1e-9,
                                                      abs=1e-9)


def test_slr_whole_matches_cvxpy_eq1():
    from cvxmetric.slr.exact import solve_eq1

    X, y = _classes(n=20, d=3)
    D = (y[:, None] == y[None, :]).astype(float)
    _, value = solve_eq1(X, D)
    res = slr_whole(X, y)
    assert abs(res.objective - value) / max(1.0, value) <= tolerance("slr", "exact")


def test_slr_fixed_is_lowrank_fixed():
    X, y = _classes(n=40, d=5)
    a = slr_fixed(X, y, 3, n_iter=20, random_state=0)
    whole = slr_whole(X, y)
    # rank(M_whole) <= n_classes = 3: the alternating method reaches it
    gap = (a.objective - whole.objective) / max(1.0, whole.objective)
    assert -tolerance("slr", "exact") <= gap <= tolerance("slr", "lowrank")
    assert a.method == "slr-fixed"


def test_euclidean_scores():
    rng = np.random.RandomState(0)
    A, B = rng.randn(4, 3), rng.randn(6, 3)
    D = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(euclidean_scores(A, B), -D, atol=1e-12)
    with pytest.raises(ValueError, match="X_items"):
        euclidean_scores(A, rng.randn(6, 2))


def test_retrieval_map_matches_metrics():
    X, y = make_synthetic_classes(300, 20, 6, random_state=1)
    tr, te = train_test_split_indices(300, 0.3, random_state=0)
    M = np.random.RandomState(2).randn(20, 20)
    rel = y[te][:, None] == y[tr][None, :]
    want = mean_average_precision(X[te] @ M @ X[tr].T, rel)
    got = retrieval_map(X[tr], y[tr], X[te], y[te], M, chunk=7)
    assert got == pytest.approx(want, rel=1e-12)
    L, R = np.linalg.qr(M)[0], M.T @ np.linalg.qr(M)[0]  # M = L R^T
    assert retrieval_map(X[tr], y[tr], X[te], y[te], factors=(L, R)) == \
        pytest.approx(want, rel=1e-9)
    want_e = mean_average_precision(euclidean_scores(X[te], X[tr]), rel)
    got_e = retrieval_map(X[tr], y[tr], X[te], y[te], kind="euclidean", chunk=50)
    assert got_e == pytest.approx(want_e, rel=1e-12)
    with pytest.raises(ValueError, match="kind"):
        retrieval_map(X[tr], y[tr], X[te], y[te], kind="cosine")


def test_make_synthetic_classes():
    X, y = make_synthetic_classes(103, 40, 10, random_state=3)
    assert X.shape == (103, 40) and y.shape == (103,)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0)
    counts = np.bincount(y)
    assert counts.size == 10 and counts.max() - counts.min() <= 1
    X2, y2 = make_synthetic_classes(103, 40, 10, random_state=3)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    with pytest.raises(ValueError, match="n_classes"):
        make_synthetic_classes(10, 5, 11)


def test_run_bench_rows(monkeypatch):
    """The benchmark's plumbing on a tiny problem, in process."""
    tiny = {"n_train": 120, "n_test": 40, "d": 12, "n_classes": 4, "methods": [
        {"method": "euclid"}, {"method": "slr-whole"},
        {"method": "slr", "rank": 3, "n_iter": 2, "dtype": "float32"},
        {"method": "alg2-c", "n_iter": 2, "m": 60},
        {"method": "oasis", "n_steps": 50}, {"method": "newton"}]}
    monkeypatch.setitem(_bench.BENCH_PROBLEMS, "tiny", tiny)
    rows = _bench.run_bench(problems=("tiny",), isolate=False)
    keys = {"problem", "method", "d", "N", "n", "objective", "gap", "gap_kind",
            "seconds", "peak_mb", "base_mb", "status", "n_iter", "error", "map"}
    assert [r["method"] for r in rows][:2] == ["euclid", "slr-whole"]
    for r in rows:
        assert keys <= set(r) and r["error"] is None
        assert 0.0 < r["map"] <= 1.0
    learned = [r for r in rows if r["method"] != "euclid"]
    assert min(r["gap"] for r in learned) == 0.0
    newton = [r for r in rows if r["method"] == "newton"][0]
    # the certified optimum of Eq. 4 is the best row
    assert newton["status"] == "optimal" and newton["gap"] == 0.0
    assert all(r["gap"] >= 0 and r["gap_kind"] == "vs best row" for r in learned)
    assert "mAP" in _bench.format_table(rows)
    with pytest.raises(ValueError, match="problems"):
        _bench.run_bench(problems=("nope",), isolate=False)


@pytest.mark.slow
@pytest.mark.parametrize("script", ["slr_digits.py", "slr_synthetic.py"])
def test_example_quick(script):
    # the LMNN column on a short budget (its status is printed either way)
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / script), "--quick",
                           "--lmnn-time", "10", "--no-figures"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "mAP" in proc.stdout
    assert "LMNN (k=3" in proc.stdout and "fits certified optimal" in proc.stdout


def test_lmnn_baseline_is_the_certified_lmnn_in_the_span():
    """The span reduction changes no optimum: the data isometrically
    embedded in one more dimension (the same targets, a null direction)
    give the same certified objective and the same distances; the rank
    keeps the top eigen-directions."""
    from cvxmetric import LMNN
    from cvxmetric.experiments.slr.baselines import lmnn_baseline, lmnn_scores

    X, y = _classes(n=36, d=4, c=3, seed=1)
    ref = LMNN().fit(X, y)
    Q = np.linalg.qr(np.random.RandomState(0).randn(5, 4))[0]  # (5, 4) orthonormal
    Xr = X @ Q.T + 0.7  # rank 4 in 5 dimensions, the same distances
    fit = lmnn_baseline(Xr, y)
    assert fit.status == "optimal" and fit.span == 4 and fit.L.shape == (4, 5)
    assert fit.objective == pytest.approx(ref.objective_, rel=1e-6)
    D = -lmnn_scores(Xr[:5], Xr, fit.L)
    D_ref = -euclidean_scores(ref.transform(X[:5]), ref.transform(X))
    np.testing.assert_allclose(D, D_ref, rtol=1e-4, atol=1e-6 * np.abs(D_ref).max())
    low = lmnn_baseline(Xr, y, rank=2)
    assert low.L.shape == (2, 5) and low.objective == pytest.approx(fit.objective)
    w = np.linalg.eigvalsh(fit.M)[::-1]
    assert np.linalg.eigvalsh(low.M)[::-1][:2] == pytest.approx(w[:2], rel=1e-8)
    with pytest.raises(ValueError, match="X_items"):
        lmnn_scores(Xr[:5], X, fit.L)
    with pytest.raises(ValueError, match="X"):
        lmnn_baseline(np.ones((6, 3)), np.arange(6) % 2)
