"""LDML's fast solvers against the exact optimum, and their gradients."""

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine

from cvxmetric import NotAttainedError
from cvxmetric._tolerances import tolerance
from cvxmetric.ldml import (
    AllPairs,
    PairSet,
    ProjectedGradient,
    fit_lowrank,
    solve_exact,
    solve_fast,
)


def _iris(n=30, seed=0):
    X, y = load_iris(return_X_y=True)
    idx = np.random.default_rng(seed).choice(len(y), n, replace=False)
    return X[idx], y[idx]


def _rel(a, b):
    return (a - b) / max(1.0, abs(b))


@pytest.mark.parametrize("lam,reg", [(0.0, "trace"), (0.1, "trace"), (0.1, "frobenius")])
@pytest.mark.parametrize("kind", ["all", "pairs"])
def test_gradient_matches_finite_differences(lam, reg, kind):
    X, y = _iris(20, 1)
    rng = np.random.default_rng(2)
    if kind == "all":
        loss = AllPairs(X, y, lam=lam, regularizer=reg, block=7)
    else:
        pairs = rng.integers(0, 20, size=(60, 2))
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        loss = PairSet(X, pairs, np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1),
                       lam=lam, regularizer=reg)
    L, b = 0.3 * rng.standard_normal((3, 4)), 0.8
    f, gL, gb = loss.value_grad(L, b)
    E, h = rng.standard_normal(L.shape), 1e-6
    fd = (loss.value_grad(L + h * E, b, grad=False)
          - loss.value_grad(L - h * E, b, grad=False)) / (2 * h)
    fdb = (loss.value_grad(L, b + h, grad=False) - loss.value_grad(L, b - h, grad=False)) / (2 * h)
    assert np.isclose(fd, np.sum(gL * E), rtol=1e-6, atol=1e-6 * abs(f))
    assert np.isclose(fdb, gb, rtol=1e-6, atol=1e-6 * abs(f))
    # Eq. 2 itself at M = L^T L
    assert np.isclose(f, loss.pair_data().objective(L.T @ L, b), rtol=1e-12)


def test_kernel_gram_regulariser_gradient():
    X, y = _iris(15, 3)
    K = np.exp(-0.5 * np.sum((X[:, None] - X[None]) ** 2, axis=2))
    rng = np.random.default_rng(0)
    for reg in ("trace", "frobenius"):
        loss = AllPairs(K, y, lam=0.2, regularizer=reg, gram=K)
        A = 0.1 * rng.standard_normal((2, 15))
        f, gA, _ = loss.value_grad(A, 0.3)
        E, h = rng.standard_normal(A.shape), 1e-6
        fd = (loss.value_grad(A + h * E, 0.3, grad=False)
              - loss.value_grad(A - h * E, 0.3, grad=False)) / (2 * h)
        assert np.isclose(fd, np.sum(gA * E), rtol=1e-6)
        # the regulariser is that of M = X^T A^T A X in kernel space:
        # tr(A K A^T) for the trace
        if reg == "trace":
            r = loss.value_grad(A, 0.3, grad=False) - AllPairs(K, y).value_grad(
                A, 0.3, grad=False)
            assert np.isclose(r, 0.2 * np.trace(A @ K @ A.T))


def test_all_pairs_blocks_and_pair_set_agree():
    X, y = _iris(25, 4)
    L, b = np.random.default_rng(1).standard_normal((2, 4)), 1.1
    ref = AllPairs(X, y, block=512).value_grad(L, b)
    for block in (1, 4, 25):
        got = AllPairs(X, y, block=block).value_grad(L, b)
        assert np.isclose(got[0], ref[0], rtol=1e-12)
        np.testing.assert_allclose(got[1], ref[1], rtol=1e-10, atol=1e-12)
    data = AllPairs(X, y).pair_data()
    ps = PairSet(X, data.pairs, data.s).value_grad(L, b)
    assert np.isclose(ps[0], ref[0], rtol=1e-12)
    np.testing.assert_allclose(ps[1], ref[1], rtol=1e-10, atol=1e-12)


CASES = [(0.0, "trace"), (0.1, "trace"), (1.0, "trace"), (0.1, "frobenius")]


@pytest.fixture(scope="module")
def iris_cases():
    X, y = _iris(30, 0)
    out = {}
    for lam, reg in CASES:
        data = AllPairs(X, y, lam=lam, regularizer=reg).pair_data()
        out[lam, reg] = (X, y, data, solve_exact(data))
    return out


@pytest.mark.parametrize("case", CASES)
def test_projected_gradient_reaches_the_exact_optimum(iris_cases, case):
    _, _, data, exact = iris_cases[case]
    res = ProjectedGradient().run(data)
    assert res.status == "optimal" and res.certificate.passed
    assert abs(_rel(res.objective, exact.objective)) <= tolerance("ldml", "fast")
    # b: the same threshold (the objective is strictly convex in b)
    assert np.isclose(res.info["b"], exact.info["b"], rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("case", CASES)
def test_solve_fast_is_certified_at_the_exact_optimum(iris_cases, case):
    _, _, data, exact = iris_cases[case]
    res = solve_fast(data)
    assert res.status == "optimal" and res.method == "fast"
    assert abs(_rel(res.objective, exact.objective)) <= tolerance("ldml", "fast")
    assert res.info["phases"][0] == "lbfgs"


def test_solve_fast_where_the_trace_bound_is_loose():
    # lam tr(M) with tr(M*) far below F / lam: the projected gradient alone
    # ran its 20 000 iterations without a passing certificate here
    from cvxmetric.bench.ldml import pairs_data

    data = pairs_data(300, 8, 800)
    res = solve_fast(data)
    assert res.status == "optimal"
    assert res.n_iter < 1000


@pytest.mark.parametrize("case", CASES)
def test_lowrank_at_full_rank_reaches_the_exact_optimum(iris_cases, case):
    X, y, data, exact = iris_cases[case]
    lam, reg = case
    res = fit_lowrank(AllPairs(X, y, lam=lam, regularizer=reg), 4, n_init=2,
                      random_state=0)
    assert abs(_rel(res.objective, exact.objective)) <= 1e-6
    assert res.info["L"].shape == (4, 4)
    np.testing.assert_allclose(res.M, res.info["L"].T @ res.info["L"])


def test_lowrank_below_full_rank():
    X, y = _iris(30, 0)
    loss = AllPairs(X, y, lam=0.1)
    full = fit_lowrank(loss, 4, n_init=1, random_state=0)
    one = fit_lowrank(loss, 1, n_init=3, random_state=0)
    # a rank-1 metric cannot beat the convex optimum, and is not certified
    assert one.objective >= full.objective - 1e-9 * abs(full.objective)
    assert np.linalg.matrix_rank(one.M) == 1
    assert one.status != "optimal" and one.raw_status == "optimal"
    # the best start is kept
    assert one.objective == min(one.info["objectives"])
    again = fit_lowrank(loss, 1, n_init=3, random_state=0)
    np.testing.assert_array_equal(again.info["L"], one.info["L"])


def test_fast_refuses_a_separable_set_without_regulariser():
    X, y = load_wine(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    idx = np.random.default_rng(0).choice(len(y), 30, replace=False)
    data = AllPairs(X[idx], y[idx]).pair_data()
    with pytest.raises(NotAttainedError, match="lam > 0"):
        ProjectedGradient().run(data)


def test_bad_arguments():
    X, y = _iris(10, 0)
    with pytest.raises(ValueError, match="labels"):
        AllPairs(X, y[:5])
    with pytest.raises(ValueError, match="labels"):
        AllPairs(X, np.zeros(10))
    with pytest.raises(ValueError, match="lam"):
        AllPairs(X, y, lam=-1.0)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="X"):
        AllPairs(Xn, y)
    loss = AllPairs(X, y)
    with pytest.raises(ValueError, match="rank"):
        fit_lowrank(loss, 5)
    with pytest.raises(ValueError, match="n_init"):
        fit_lowrank(loss, 2, n_init=0)
    with pytest.raises(ValueError, match="check_every"):
        ProjectedGradient(check_every=0)


@pytest.mark.parametrize("lam", [0.0, 0.1])
def test_all_pairs_of_raw_wine_are_certified_by_the_dual_repair(lam):
    # 10 011 pairs of features from 1e-1 to 1e3: the whitened L-BFGS ends
    # near the optimum and the Newton repair of the dual (no SDP beyond 5 000
    # pairs) certifies it; fast and low rank agree
    X, y = load_wine(return_X_y=True)
    idx = np.random.default_rng(0).permutation(len(y))[:142]
    loss = AllPairs(X[idx], y[idx], lam=lam)
    data = loss.pair_data()
    assert data.n_pairs > 5000
    res = solve_fast(data, loss=loss)
    assert res.status == "optimal" and res.certificate.passed
    low = fit_lowrank(AllPairs(X[idx], y[idx], lam=lam), X.shape[1], random_state=0)
    assert low.status == "optimal"
    assert abs(_rel(low.objective, res.objective)) <= tolerance("ldml", "lowrank")


@pytest.mark.parametrize("eps,passes", [(1e-5, True), (1e-4, True), (1e-3, False)])
def test_certificate_from_the_polished_dual_point_is_tight(eps, passes):
    """A point moved along the optimum's face is 1e-10 .. 1e-5 above the
    optimum in F, but its own slopes are 1e-4 .. 1e-1 from the dual optimum:
    the dual point taken at its Newton polish gives the gap F(M) - F* to
    round-off (passing when that is below the tolerance, failing when not),
    and the point itself is kept."""
    from cvxmetric.bench.conformance import load_dataset
    from cvxmetric.constraints import pairs_from_labels
    from cvxmetric.ldml import LDMLData, certify_point

    X, y = load_dataset("wine", 0)
    p, lab = pairs_from_labels(y, 180, random_state=0)
    data = LDMLData(X, p, lab, lam=0.1)
    opt = solve_fast(data)
    w, V = np.linalg.eigh(opt.M)
    U = V[:, w > 1e-8 * w[-1]]
    A = np.random.default_rng(0).normal(size=(U.shape[1],) * 2)
    M = opt.M + eps * U @ (A + A.T) @ U.T
    plain, _ = certify_point(data, M, opt.info["b"], solver="t", sharpen=False)
    cert, _ = certify_point(data, M, opt.info["b"], solver="t")
    assert not plain.passed
    assert cert.passed == passes
    assert cert.objective == plain.objective  # the certificate is on M itself
    excess = cert.objective - opt.objective
    if passes:
        assert cert.gap == pytest.approx(excess, rel=1e-3, abs=1e-12)


def test_solve_fast_finishes_with_newton_on_a_rank_deficient_optimum():
    """Breast cancer's 80 conformance pairs at lam = 0.1: a rank-deficient
    optimum, where L-BFGS on the square factor needs 4 500 iterations; a
    rough L-BFGS point finished by Newton's method on its face is certified
    and equals the exact optimum."""
    from cvxmetric.bench.conformance import load_dataset
    from cvxmetric.constraints import pairs_from_labels
    from cvxmetric.ldml import LDMLData, solve_exact

    X, y = load_dataset("breast_cancer", 0)
    p, lab = pairs_from_labels(y, 80, random_state=0)
    data = LDMLData(X, p, lab, lam=0.1)
    res = solve_fast(data)
    assert res.status == "optimal" and res.info["phases"] == ["lbfgs", "newton"]
    assert res.info["lbfgs_iter"] < 2000
    ref = solve_exact(data)
    assert res.objective == pytest.approx(ref.objective, rel=1e-10)
    w = np.linalg.eigvalsh(res.M)
    assert np.sum(w > 1e-8 * w[-1]) < data.d  # the optimum is rank-deficient
