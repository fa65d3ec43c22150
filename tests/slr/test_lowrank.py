"""SLR Algorithm 3 (low-rank alternating regression ``M = L R^T``).

* each half step solves its least-squares subproblem exactly (gradient
  zero, against a dense gradient);
* without compression the minimised objective never increases;
* at full rank it reaches the exact optimum (Eq. 4 adaptive, Eq. 1 fixed);
* nothing ``n x n`` is allocated;
* bad input raises ``ValueError`` naming the argument.
"""

import tracemalloc

import numpy as np
import pytest

from cvxmetric._tolerances import tolerance
from cvxmetric.experiments.slr.baselines import slr_whole
from cvxmetric.result import Status
from cvxmetric.slr._problem import SLRData
from cvxmetric.slr.lowrank import _half_step, _Problem, lowrank_slr


def _classes(n=60, d=6, c=4, seed=0):
    rng = np.random.RandomState(seed)
    y = np.arange(n) % c
    X = 1.5 * rng.randn(c, d)[y] + rng.randn(n, d)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, y


def _problem(X, y, target):
    codes = np.unique(y, return_inverse=True)[1]
    return _Problem(X, codes, 1.0, 0.0, target, np.dtype(np.float64), 1 << 22)


@pytest.mark.parametrize("target", ["adaptive", "fixed"])
def test_half_step_gradient_zero(target):
    """The closed-form L solves min_L ||X L R^T X^T - Y||_F^2 (grad = 0)."""
    X, y = _classes()
    prob = _problem(X, y, target)
    rng = np.random.RandomState(1)
    L_old, R = rng.randn(6, 3), rng.randn(6, 3)
    Xs, ys = prob.X, prob.y
    L, f = _half_step(prob, Xs @ L_old, Xs @ R)
    K_old = Xs @ L_old @ R.T @ Xs.T
    same = ys[:, None] == ys[None, :]
    if target == "adaptive":
        Y = np.where(same, np.maximum(K_old, 1.0), np.minimum(K_old, 0.0))
        assert f == pytest.approx(np.sum((Y - K_old) ** 2), rel=1e-12)
    else:
        Y = same.astype(float)
        assert f == pytest.approx(np.sum((Y - K_old) ** 2), rel=1e-12)
    G = 2 * Xs.T @ (Xs @ L @ R.T @ Xs.T - Y) @ Xs @ R
    scale = np.abs(2 * Xs.T @ Y @ Xs @ R).max()
    assert np.abs(G).max() <= 1e-10 * scale
    # and it is the minimum: random perturbations do not decrease the fit
    J = np.sum((Xs @ L @ R.T @ Xs.T - Y) ** 2)
    for _ in range(5):
        Lp = L + 1e-3 * rng.randn(*L.shape)
        assert np.sum((Xs @ Lp @ R.T @ Xs.T - Y) ** 2) >= J - 1e-12 * J


@pytest.mark.parametrize("target", ["adaptive", "fixed"])
def test_monotone_decrease(target):
    X, y = _classes(n=80, d=8)
    res = lowrank_slr(X, y, 3, n_iter=8, target=target, random_state=0)
    h = np.asarray(res.info["objective_history"])
    assert h.size == 2 * 8 + 1
    assert np.all(np.diff(h) <= 1e-10 * h[:-1])
    assert h[-1] < h[0]
    assert res.status == Status.MAX_ITER
    np.testing.assert_allclose(res.M, res.info["L"] @ res.info["R"].T)


def test_adaptive_objective_is_eq4():
    X, y = _classes()
    res = lowrank_slr(X, y, 2, n_iter=3, random_state=0)
    data = SLRData.from_labels(X, y)
    assert res.objective == pytest.approx(data.objective(res.M), rel=1e-10)
    assert res.info["eq4_objective"] == res.objective


def test_full_rank_reaches_eq4_optimum():
    from cvxmetric.slr.fast import SemismoothNewton

    X, y = _classes(n=30, d=4, c=3)
    ref = SemismoothNewton().run(SLRData.from_labels(X, y))
    res = lowrank_slr(X, y, 4, n_iter=30, random_state=0)
    gap = (res.objective - ref.objective) / max(1.0, ref.objective)
    assert -tolerance("slr", "newton") <= gap <= tolerance("slr", "lowrank")


def test_fixed_reaches_eq1_optimum():
    """SLR-Fixed at rank >= rank(M_whole) attains Eq. 1's optimum (SLR-Whole):
    the paper's "the alternating method can achieve the global optimum"."""
    X, y = _classes(n=50, d=6, c=3)
    whole = slr_whole(X, y)
    res = lowrank_slr(X, y, 3, n_iter=30, target="fixed", random_state=0)
    gap = (res.objective - whole.objective) / max(1.0, whole.objective)
    assert -tolerance("slr", "exact") <= gap <= tolerance("slr", "lowrank")
    assert res.info["problem"].startswith("Eq. 1")


@pytest.mark.parametrize("sketch", ["columns", "gaussian"])
def test_sketched_variant_improves(sketch):
    X, y = _classes(n=120, d=6)
    res = lowrank_slr(X, y, 3, n_iter=4, n_sketch=60, sketch=sketch,
                      random_state=0)
    base = lowrank_slr(X, y, 3, n_iter=1, n_sketch=120, sketch="columns",
                       random_state=0)
    assert np.isfinite(res.objective)
    h = res.info["objective_history"]
    assert h[-1] < h[0]
    assert res.objective < 10 * base.objective


def test_no_n_by_n_allocation():
    rng = np.random.RandomState(0)
    n, d = 2000, 6
    y = np.arange(n) % 5
    X = rng.randn(n, d)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    tracemalloc.start()
    try:
        res = lowrank_slr(X, y, 2, n_iter=1, random_state=0, block=1 << 17)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert np.isfinite(res.objective)
    assert peak < n * n * 8 / 8


@pytest.mark.parametrize("kwargs, match", [
    ({"rank": 7}, "rank"),
    ({"rank": 0}, "rank"),
    ({"n_sketch": 61}, "n_sketch"),
    ({"target": "hinge"}, "target"),
    ({"n_sketch": 10, "sketch": "rows"}, "sketch"),
    ({"n_iter": 0}, "n_iter"),
    ({"delta2": 2.0}, "delta1, delta2"),
])
def test_bad_arguments(kwargs, match):
    X, y = _classes()
    args = {"rank": 2}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        lowrank_slr(X, y, **args)


def test_bad_data():
    X, y = _classes()
    with pytest.raises(ValueError, match="y"):
        lowrank_slr(X, np.ones(60, int), 2)
    Xn = X.copy()
    Xn[0, 0] = np.inf
    with pytest.raises(ValueError, match="X"):
        lowrank_slr(Xn, y, 2)


@pytest.mark.parametrize("target, name", [("adaptive", "slr-lowrank"),
                                          ("fixed", "slr-fixed")])
def test_trace_names_its_stages_in_order(target, name):
    """The alternating iterations, then the Eq. 4 pass at the result."""
    X, y = _classes()
    res = lowrank_slr(X, y, 2, n_iter=3, target=target, random_state=0)
    assert [(s.name, s.kind) for s in res.trace] == [
        (name, "iterative"), ("eq4-objective", "evaluation")]
    run, evaluation = res.trace
    assert run.iterations == res.n_iter == 3
    assert run.status == res.status == Status.MAX_ITER and run.why == "first"
    assert evaluation.status == "exact" and evaluation.why == f"after {name}"
    assert evaluation.gap == res.certificate.rel_gap == np.inf
    assert run.seconds == res.certificate.times["iterations"]
    assert evaluation.seconds == res.certificate.times["objective"]




def test_estimator_trace_is_the_solver_trace():
    from sklearn.exceptions import ConvergenceWarning

    from cvxmetric import SLR

    X, y = _classes()
    est = SLR(solver="lowrank", rank=2, n_iter=2, random_state=0)
    with pytest.warns(ConvergenceWarning):
        est.fit(X, y)
    assert [(s.name, s.kind) for s in est.result_.trace] == [
        ("slr-lowrank", "iterative"), ("eq4-objective", "evaluation")]
