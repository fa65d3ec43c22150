"""SLR Algorithm 2 (randomized compression) and Theorem 1.

* the sketches are normalised, ``E[S S^T] = I``;
* the blockwise pass equals the dense formulas and never allocates ``n x n``;
* with ``S`` a permutation (columns, ``m = n``, no replacement) Algorithm 2
  *is* Algorithm 1, iterate by iterate;
* with Gaussian ``S`` and ``m = n`` one regression is within Theorem 1's
  bound of Algorithm 1's; Theorem 1's bound holds for several ``m``;
* bad input raises ``ValueError`` naming the argument.
"""

import tracemalloc

import numpy as np
import pytest

from cvxmetric._tolerances import tolerance
from cvxmetric.result import Status
from cvxmetric.slr._problem import SLRData
from cvxmetric.slr.lowrank import lowrank_slr
from cvxmetric.slr.randomized import (
    _pair_residual,
    eq4_objective_factored,
    randomized_slr,
    sketch_matrix,
    theorem1_bound,
    theorem1_check,
)


def _classes(n=40, d=4, c=3, seed=0, unit=True):
    rng = np.random.RandomState(seed)
    y = np.arange(n) % c
    X = 1.5 * rng.randn(c, d)[y] + rng.randn(n, d)
    if unit:
        X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, y


def _dense_residual(K, y, d1=1.0, d2=0.0):
    same = y[:, None] == y[None, :]
    return np.where(same, np.maximum(d1 - K, 0.0), -np.maximum(K - d2, 0.0))


def _algorithm1(data, T):
    """T steps of Algorithm 1 from M_0 = I (the other solver's step)."""
    Z = data.Z_of_M(np.eye(data.n_features))
    for _ in range(T):
        _, Z = data.projection_step(Z)
    return data.M_of_Z(Z)


@pytest.mark.parametrize("kind", ["gaussian", "columns"])
def test_sketch_normalisation(kind):
    """E[S S^T] = I: mean over many draws within 5 standard errors."""
    n, m, draws = 5, 3, 4000
    rng = np.random.RandomState(0)
    acc = np.zeros((n, n))
    acc2 = np.zeros((n, n))
    for _ in range(draws):
        S = sketch_matrix(n, m, kind, rng)
        P = S @ S.T
        acc += P
        acc2 += P * P
    mean = acc / draws
    se = np.sqrt(np.maximum(acc2 / draws - mean ** 2, 1e-30) / draws)
    assert np.all(np.abs(mean - np.eye(n)) <= 5 * se + 1e-12)
    if kind == "columns":
        S = sketch_matrix(n, m, kind, 1)
        # columns are sqrt(n/m) e_i: off-diagonal of S S^T is zero exactly
        assert np.allclose(np.sort(S[S != 0]), np.sqrt(n / m))
        off = S @ S.T - np.diag(np.diag(S @ S.T))
        assert np.all(off == 0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pair_residual_matches_dense(dtype):
    rng = np.random.RandomState(1)
    n1, n2, k = 37, 29, 3
    P, Q = rng.randn(n1, k), rng.randn(n2, k)
    y1, y2 = np.sort(rng.randint(0, 4, n1)), np.sort(rng.randint(0, 4, n2))
    Lm, Rm = rng.randn(n1, 2), rng.randn(n2, 5)
    K = P @ Q.T
    same = y1[:, None] == y2[None, :]
    Res = np.where(same, np.maximum(0.7 - K, 0), -np.maximum(K + 0.2, 0))
    f, act, RW = _pair_residual(P, Q, y1, y2, 0.7, -0.2, right=Rm, block=50,
                                dtype=dtype)
    _, _, LRW = _pair_residual(P, Q, y1, y2, 0.7, -0.2, left=Lm, right=Rm,
                               block=50, dtype=dtype)
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    assert f == pytest.approx(np.sum(Res ** 2), rel=rtol)
    assert act == np.count_nonzero(Res)
    np.testing.assert_allclose(RW, Res @ Rm, rtol=rtol, atol=rtol * 10)
    np.testing.assert_allclose(LRW, Lm.T @ Res @ Rm, rtol=rtol, atol=rtol * 10)


def test_objective_matches_slrdata():
    X, y = _classes(n=31, d=5)
    M = np.random.RandomState(2).randn(5, 5)
    data = SLRData.from_labels(X, y)
    f = eq4_objective_factored(X, y, M, np.eye(5), block=40)
    assert f == pytest.approx(data.objective(M), rel=1e-12)


@pytest.mark.parametrize("resample", [False, True])
def test_columns_m_equals_n_is_algorithm1(resample):
    """S a permutation (columns, m = n, no replacement): Algorithm 1 exactly."""
    X, y = _classes(n=36, d=4)
    T = 6
    res = randomized_slr(X, y, 36, "columns", n_iter=T, replace=False,
                         resample=resample, random_state=0)
    data = SLRData.from_labels(X, y)
    M1 = _algorithm1(data, T)
    np.testing.assert_allclose(res.M, M1, rtol=1e-9, atol=1e-10 * np.abs(M1).max())
    gap = abs(res.objective - data.objective(M1)) / max(1.0, data.objective(M1))
    assert gap <= tolerance("slr", "exact")
    assert res.status == Status.MAX_ITER
    assert not res.certificate.passed  # no lower bound is claimed
    np.testing.assert_allclose(res.info["L"] @ res.info["R"].T, res.M)


def test_converges_to_exact_optimum_with_m_equals_n():
    """Run long, Algorithm 2 with a permutation sketch reaches Eq. 4's optimum."""
    from cvxmetric.slr.fast import SemismoothNewton

    X, y = _classes(n=30, d=4)
    data = SLRData.from_labels(X, y)
    ref = SemismoothNewton().run(data)
    res = randomized_slr(X, y, 30, "columns", n_iter=60, replace=False,
                         random_state=0)
    gap = (res.objective - ref.objective) / max(1.0, ref.objective)
    assert -tolerance("slr", "newton") <= gap <= tolerance("slr", "adaptive")


def test_gaussian_m_equals_n_within_theorem1():
    """One Gaussian regression with m = n is within Theorem 1 of Algorithm 1's.

    The target of the first iteration is Y = clip(X X^T) (M_0 = I); Theorem 1
    compares M = X^+ Y X^{+T} with the sketched solution.
    """
    X, y = _classes(n=600, d=2, c=3, seed=3)
    n = X.shape[0]
    res = randomized_slr(X, y, n, "gaussian", n_iter=1, random_state=5,
                         objective_max_n=0)
    K = X @ X.T
    Y = K + _dense_residual(K, y)
    Xp = np.linalg.pinv(X)
    M = Xp @ Y @ Xp.T
    s = np.linalg.svd(X, compute_uv=False)
    resid = np.linalg.norm(Y - X @ M @ X.T, 2)
    bound = theorem1_bound(n, 2, resid, s[-1])
    assert bound["valid"]
    err = np.linalg.norm(res.M - M, 2)
    assert err <= bound["bound"]
    # and the sketch matters: it is not Algorithm 1 exactly
    assert err > 1e-8 * np.linalg.norm(M, 2)


def test_theorem1_bound_holds():
    X, y = _classes(n=1000, d=3, c=4, seed=4, unit=False)
    errs = []
    for m in (500, 1000):
        out = theorem1_check(X, y, m, n_trials=3, random_state=m)
        assert out["valid"] and out["holds"]
        assert max(out["emp_eps"]) <= out["eps"]  # the event of Corollary 3
        errs.append(np.mean(out["errors"]))
    # the bound's eps is monotone in m
    assert theorem1_bound(1000, 3, 1.0, 1.0)["eps"] < theorem1_bound(500, 3, 1.0, 1.0)["eps"]


def test_theorem1_check_agrees_with_dense():
    """theorem1_check's M and residual (class sums) equal the dense formulas."""
    X, y = _classes(n=60, d=3, c=3, unit=False)
    out = theorem1_check(X, y, 60, n_trials=1, random_state=0)
    Y = (y[:, None] == y[None, :]).astype(float)
    Xp = np.linalg.pinv(X)
    M = Xp @ Y @ Xp.T
    assert out["M_norm"] == pytest.approx(np.linalg.norm(M, 2), rel=1e-10)
    assert out["resid_norm"] == pytest.approx(np.linalg.norm(Y - X @ M @ X.T, 2),
                                              rel=1e-10)


@pytest.mark.parametrize("kind", ["gaussian", "columns"])
def test_no_n_by_n_allocation(kind):
    """Peak traced memory stays far below one n x n float64 array."""
    rng = np.random.RandomState(0)
    n, d = 2000, 5
    y = np.arange(n) % 7
    X = rng.randn(n, d)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    nn = n * n * 8
    tracemalloc.start()
    try:
        res = randomized_slr(X, y, 40, kind, n_iter=1, random_state=0,
                             block=1 << 17, objective_max_n=None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert np.isfinite(res.objective)  # the all-pairs Eq. 4 pass ran
    assert peak < nn / 8


def test_objective_estimate_above_max_n():
    X, y = _classes(n=1500, d=4, c=5)  # more samples than estimate rows
    res = randomized_slr(X, y, 100, "columns", n_iter=3, random_state=0,
                         objective_max_n=1000)
    assert np.isnan(res.objective) and "objective_skipped" in res.info
    exact = eq4_objective_factored(X, y, res.info["L"], res.info["R"])
    est, se = res.info["objective_estimate"], res.info["objective_estimate_se"]
    assert abs(est - exact) <= 5 * se


def test_deterministic():
    X, y = _classes(n=50, d=4)
    a = randomized_slr(X, y, 20, "gaussian", n_iter=3, random_state=7)
    b = randomized_slr(X, y, 20, "gaussian", n_iter=3, random_state=7)
    np.testing.assert_array_equal(a.M, b.M)


@pytest.mark.parametrize("kwargs, match", [
    ({"n_sketch": 41}, "n_sketch"),
    ({"n_sketch": 0}, "n_sketch"),
    ({"n_sketch": 2.5}, "n_sketch"),
    ({"sketch": "srht"}, "sketch"),
    ({"n_iter": 0}, "n_iter"),
    ({"delta1": 0.0}, "delta1"),
    ({"dtype": np.int64}, "dtype"),
])
def test_bad_arguments(kwargs, match):
    X, y = _classes(n=40)
    args = {"n_sketch": 10}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        randomized_slr(X, y, **args)


def test_bad_data():
    X, y = _classes(n=40)
    with pytest.raises(ValueError, match="y"):
        randomized_slr(X, np.zeros(40, int), 10)  # one class
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="X"):
        randomized_slr(Xn, y, 10)
    with pytest.raises(ValueError, match="y"):
        randomized_slr(X, y[:-1], 10)
    with pytest.raises(ValueError, match="X"):
        randomized_slr(np.zeros((40, 4)), y, 10)


@pytest.mark.parametrize("kw", [dict(solver="randomized", n_sketch=20),
                                dict(solver="lowrank", rank=10, n_sketch=100)])
def test_result_independent_of_blas_threads(kw):
    """``SLR(solver="randomized", n_sketch=20, random_state=0)`` at d = 80:
    the same objective and M, bit for bit, on one and two BLAS threads (on
    two threads the products differed in the last bits: ...494 vs ...501)."""
    import warnings

    from cvxmetric import SLR
    from cvxmetric._solver import forced_blas_threads

    rng = np.random.RandomState(0)
    n, d = 1000, 80
    y = rng.randint(0, 5, n)
    X = rng.randn(5, d)[y] + rng.randn(n, d)
    fits = []
    for threads in (1, 2):
        # forced: the threading policy would pick one thread on a busy machine
        with forced_blas_threads(threads), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits.append(SLR(random_state=0, **kw).fit(X, y))
    assert fits[0].objective_ == fits[1].objective_
    np.testing.assert_array_equal(fits[0].bilinear_matrix_, fits[1].bilinear_matrix_)


@pytest.mark.parametrize("sketch", ["gaussian", "columns"])
def test_trace_names_its_stages_in_order(sketch):
    """The compressed regressions, then the Eq. 4 pass at the result."""
    X, y = _classes()
    res = randomized_slr(X, y, 20, sketch=sketch, n_iter=3, random_state=0)
    name = f"slr-randomized-{sketch}"
    assert [(s.name, s.kind) for s in res.trace] == [
        (name, "iterative"), ("eq4-objective", "evaluation")]
    run, evaluation = res.trace
    assert run.iterations == res.n_iter == 3 == len(res.info["sampled_objective"])
    assert run.status == res.status == Status.MAX_ITER and run.why == "first"
    assert evaluation.status == "exact" and evaluation.why == f"after {name}"
    assert evaluation.gap == res.certificate.rel_gap == np.inf
    assert evaluation.seconds == res.certificate.times["objective"]


@pytest.mark.parametrize("solve", [
    lambda X, y, **kw: randomized_slr(X, y, 20, **kw),
    lambda X, y, **kw: lowrank_slr(X, y, 2, **kw),
], ids=["randomized", "lowrank"])
@pytest.mark.parametrize("kwargs, iterations, status, evaluation", [
    ({"max_time": 0.0}, 0, Status.TIME_LIMIT, "exact"),
    ({"evaluate": False}, 2, Status.MAX_ITER, "skipped"),
    ({"objective_max_n": 10}, 2, Status.MAX_ITER, "estimated"),
])
def test_trace_says_how_the_run_ended(solve, kwargs, iterations, status, evaluation):
    """Algorithms 2 and 3 end their runs alike (one shared run record)."""
    X, y = _classes()
    res = solve(X, y, n_iter=2, random_state=0, **kwargs)
    run, final = res.trace
    assert (run.iterations, run.status, final.status) == (iterations, status,
                                                          evaluation)
    assert res.status == status
