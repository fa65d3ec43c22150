"""Matrix-free Newton (CG on the Gram form), time budgets, solver settings."""

import time  # thread_time: this thread's CPU seconds (load and BLAS spin not counted)
import warnings

import numpy as np
import pytest

from cvxmetric._solver import Deadline
from cvxmetric.slr import (
    AdaptiveRegression,
    SemismoothNewton,
    SLRData,
    lowrank_slr,
    randomized_slr,
    solve_exact,
)
from cvxmetric.bench.slr import make_synthetic_classes
from cvxmetric.slr._problem import DENSE_MAX_SYM, Expired, cg, smat, svec


@pytest.fixture(scope="module")
def medium():
    X, y = make_synthetic_classes(120, 8, 4, random_state=3)
    return SLRData.from_labels(X, y)


def test_hess_vec_equals_the_dense_hessian(medium):
    data = medium
    Z = data.least_squares_Z()
    f, G, H, _ = data.evaluate(Z, grad=True, hessian=True)
    f2, G2, n_active, masks, _ = data.pass_masks(Z)
    assert f2 == pytest.approx(f, rel=1e-12)
    np.testing.assert_allclose(G2, 0.5 * (G + G.T), atol=1e-10 * np.abs(G).max())
    rng = np.random.RandomState(0)
    D = rng.randn(data.rank, data.rank)
    D = D + D.T
    np.testing.assert_allclose(svec(data.hess_vec(D, masks)), H @ svec(D),
                               atol=1e-10 * np.abs(H).max() * np.abs(D).max())


def test_cg_solves_a_spd_system():
    rng = np.random.RandomState(1)
    A = rng.randn(6, 6)
    A = A @ A.T + np.eye(6)
    b = smat(rng.randn(6), 3)
    X, res, k = cg(lambda D: smat(A @ svec(D), 3), b, tol=1e-12, maxiter=50)
    np.testing.assert_allclose(A @ svec(X), svec(b), atol=1e-10)
    assert res <= 1e-12 and k <= 50


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cg_newton_matches_dense_newton_and_exact(seed):
    X, y = make_synthetic_classes(90, 6, 3, random_state=seed)
    data = SLRData.from_labels(X, y)
    exact = solve_exact(data)
    dense = SemismoothNewton(hessian="dense").run(data)
    mf = SemismoothNewton(hessian="cg").run(data)
    assert dense.info["hessian"] == "dense" and mf.info["hessian"] == "cg"
    for res in (dense, mf):
        assert res.status == "optimal" and res.certificate.passed
        assert res.objective == pytest.approx(exact.objective, rel=1e-8)
    # the certified bounds are valid: below the exact optimum
    assert mf.certificate.dual_bound <= exact.objective * (1 + 1e-9)


def test_auto_switches_to_cg_above_the_dense_size():
    X, y = make_synthetic_classes(400, 66, 5, random_state=0)
    data = SLRData.from_labels(X, y)
    assert data.n_sym > DENSE_MAX_SYM and not data.dense_hessian
    res = SemismoothNewton().run(data)
    assert res.info["hessian"] == "cg"
    assert res.status == "optimal"
    # never a (n, p) feature matrix or a (p, p) Hessian
    assert "Q" not in data._cache
    # the matrix-free lower bound of the certificate agrees
    bound, parts = data.lower_bound(res.info["Z"])
    assert bound <= res.objective * (1 + 1e-12)
    assert res.objective > 1.0  # not the separable case
    assert (res.objective - bound) / max(1.0, res.objective) <= 1e-6


# -- time budgets --------------------------------------------------------------


@pytest.fixture(scope="module")
def slow():
    # a pass is short; the run is many passes
    X, y = make_synthetic_classes(700, 90, 10, random_state=0)
    return X, y, SLRData.from_labels(X, y)


@pytest.mark.usefixtures("one_blas_thread")
@pytest.mark.parametrize("hessian", ["dense", "cg"])
def test_newton_honours_max_time_within_one_block(slow, hessian):
    _, _, data = slow
    budget = 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the cost of one Newton step on this machine: the budget is
        # checked between steps, so a run may overrun it by one step
        t0 = time.thread_time()
        SemismoothNewton(hessian=hessian, maxiter=1).run(data)
        one_step = time.thread_time() - t0
        t0 = time.thread_time()
        res = SemismoothNewton(hessian=hessian, max_time=budget).run(data)
    elapsed = time.thread_time() - t0
    assert res.status == "time_limit_reached"
    assert res.raw_status == "time_limit_reached"
    assert not res.certificate.passed
    assert np.isfinite(res.objective)
    # at most the step under way when the budget ran out, and the final
    # objective pass and M (one pass: far below a Newton step)
    assert elapsed < budget + one_step + 2.0


@pytest.mark.usefixtures("one_blas_thread")
def test_adaptive_honours_max_time(slow):
    _, _, data = slow
    t0 = time.thread_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = AdaptiveRegression(maxiter=100000, max_time=0.1).run(data)
    assert time.thread_time() - t0 < 2.0
    assert res.status == "time_limit_reached"


def test_pass_raises_expired_inside_the_block_loop(medium):
    dead = Deadline(0.0)
    time.sleep(0.001)
    with pytest.raises(Expired):
        medium.pass_masks(medium.least_squares_Z(), deadline=dead)


@pytest.mark.usefixtures("one_blas_thread")
@pytest.mark.parametrize("fn", ["randomized", "lowrank"])
def test_algorithms_2_and_3_honour_max_time(slow, fn):
    X, y, _ = slow
    t0 = time.thread_time()
    if fn == "randomized":
        res = randomized_slr(X, y, 500, n_iter=10_000, max_time=0.05, random_state=0)
    else:
        res = lowrank_slr(X, y, 20, n_iter=10_000, max_time=0.05, random_state=0)
    assert time.thread_time() - t0 < 3.0
    assert res.status == "time_limit_reached"
    assert res.n_iter < 10_000
    assert not res.certificate.passed
    assert np.isfinite(res.objective)


@pytest.mark.parametrize("fn", ["randomized", "lowrank"])
def test_algorithms_2_and_3_status_is_consistent(medium, fn):
    X, y = medium.X, medium.y
    res = (randomized_slr(X, y, 60, n_iter=3, random_state=0) if fn == "randomized"
           else lowrank_slr(X, y, 4, n_iter=3, random_state=0))
    # a fixed number of iterations, no lower bound: never "optimal"
    assert res.status == res.raw_status == "max_iter_reached"
    assert not res.certificate.passed
    assert res.certificate.dual_bound == -np.inf


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), "1"])
def test_algorithms_2_and_3_reject_bad_max_time(medium, bad):
    with pytest.raises(ValueError, match="max_time"):
        randomized_slr(medium.X, medium.y, 10, max_time=bad)
    with pytest.raises(ValueError, match="max_time"):
        lowrank_slr(medium.X, medium.y, 2, max_time=bad)


# -- solver settings ------------------------------------------------------------


@pytest.mark.parametrize("cls, field, bad", [
    (SemismoothNewton, "maxiter", 0),
    (SemismoothNewton, "maxiter", 1.5),
    (SemismoothNewton, "tol", 0.0),
    (SemismoothNewton, "tol", float("nan")),
    (SemismoothNewton, "max_time", -1.0),
    (SemismoothNewton, "max_time", float("inf")),
    (SemismoothNewton, "reg", -1e-3),
    (SemismoothNewton, "armijo", 0.0),
    (SemismoothNewton, "armijo", 1.0),
    (SemismoothNewton, "max_backtrack", 0),
    (SemismoothNewton, "hessian", "sparse"),
    (SemismoothNewton, "cg_maxiter", 0),
    (AdaptiveRegression, "maxiter", -3),
    (AdaptiveRegression, "tol", -1.0),
    (AdaptiveRegression, "max_time", "1"),
    (AdaptiveRegression, "check_every", 0),
])
def test_each_solver_field_is_validated(cls, field, bad):
    with pytest.raises(ValueError, match=field):
        cls(**{field: bad})


def test_every_field_has_a_constraint():
    from dataclasses import fields

    for cls in (SemismoothNewton, AdaptiveRegression):
        assert {f.name for f in fields(cls)} <= set(cls._parameter_constraints)


@pytest.mark.parametrize("block_rows", [7, 50, 120])
def test_upper_block_passes_equal_the_full_sums(medium, block_rows):
    # the passes run over the upper block triangle with weights 2 / 1:
    # every quantity must equal its sum over all n^2 terms, for block sizes
    # that do and do not divide n
    import dataclasses

    data = dataclasses.replace(medium, block_rows=block_rows, _cache={})
    U = data.U
    Z = data.least_squares_Z()
    Z = 0.5 * (Z + Z.T)
    same = data.y[:, None] == data.y[None, :]
    a = data._args(U @ Z @ U.T, same)
    rho = np.maximum(a, 0.0)
    Lam = np.where(same, -2.0 * rho, 2.0 * rho)
    f, G, n_active, masks, _ = data.pass_masks(Z)
    assert f == pytest.approx(float(np.sum(rho * rho)), rel=1e-12)
    assert n_active == int(np.count_nonzero(a > 0))
    np.testing.assert_allclose(G, U.T @ Lam @ U, atol=1e-11 * np.abs(G).max())
    assert data.evaluate(Z)[0] == pytest.approx(f, rel=1e-12)
    # dual quantities against the masks of a perturbed point
    Z1 = Z + 1e-2 * np.eye(data.rank)
    *_, dual = data.pass_masks(Z1, dual_mask=masks)
    a1 = data._args(U @ Z1 @ U.T, same)
    rho1 = np.maximum(a1, 0.0)
    Lam1 = np.where(a > 0, np.where(same, -2.0 * rho1, 2.0 * rho1), 0.0)
    D = np.where(same, data.delta1, data.delta2)
    assert dual["sq"] == pytest.approx(float(np.sum(Lam1 * Lam1)), rel=1e-12)
    assert dual["lin"] == pytest.approx(float(np.sum(Lam1 * D)), rel=1e-12)
    np.testing.assert_allclose(dual["E"], U.T @ Lam1 @ U,
                               atol=1e-11 * np.abs(dual["E"]).max())
    # Hessian products, double and single precision
    rng = np.random.RandomState(0)
    D = rng.randn(data.rank, data.rank)
    D = D + D.T
    ref = 2.0 * U.T @ ((a > 0) * (U @ D @ U.T)) @ U
    scale = np.abs(ref).max()
    np.testing.assert_allclose(data.hess_vec(D, masks), ref, atol=1e-11 * scale)
    np.testing.assert_allclose(data.hess_vec(D, masks, dtype=np.float32), ref,
                               atol=1e-5 * scale)
    # the Eq. 3 start from class sums, and Eq. 4 at a symmetric M
    np.testing.assert_allclose(data.least_squares_Z(), U.T @ data.target() @ U,
                               atol=1e-10 * np.abs(data.least_squares_Z()).max())
    M = data.M_of_Z(Z)
    M = 0.5 * (M + M.T)
    Ms = M + 1e-300 * np.triu(np.ones_like(M), 1)  # not exactly symmetric
    assert data.objective(M) == pytest.approx(f, rel=1e-9)
    assert data.objective(Ms) == pytest.approx(data.objective(M), rel=1e-12)
