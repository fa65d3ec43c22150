"""LDML Eq. 2 exact: certified with and without a regulariser, and the
infimum that is not attained is refused."""

import numpy as np
import pytest
from sklearn.datasets import load_iris

from cvxmetric import NotAttainedError
from cvxmetric._trace import recording
from cvxmetric.constraints import pairs_from_labels
from cvxmetric.ldml.exact import LDMLData, solve_exact, staged_bound


@pytest.fixture(scope="module")
def iris_pairs():
    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    _, keep = np.unique(X, axis=0, return_index=True)
    X, y = X[np.sort(keep)], y[np.sort(keep)]
    p, lab = pairs_from_labels(y, 200, random_state=0)
    return X, p, lab


@pytest.mark.parametrize("lam,reg", [(0.0, "trace"), (0.1, "trace"), (0.5, "frobenius")])
def test_exact_certified(iris_pairs, lam, reg):
    X, p, lab = iris_pairs
    data = LDMLData(X, p, lab, lam=lam, regularizer=reg)
    res = solve_exact(data)
    assert res.status == "optimal" and res.certificate.rel_gap <= 1e-6
    M, b = res.M, res.info["b"]
    assert res.objective == pytest.approx(data.objective(M, b), rel=1e-12)
    assert np.linalg.eigvalsh(M)[0] >= -1e-7
    # the bound is a lower bound at other points too
    rng = np.random.default_rng(0)
    tau = res.info["trace_bound"]
    for _ in range(5):
        A = rng.normal(size=M.shape) * 0.3
        P = M + A @ A.T
        assert staged_bound(data, P, tau) <= res.objective + 1e-7
        assert data.objective(P, b) >= res.objective - 1e-7


def test_not_attained_is_refused():
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 10]
    y = np.r_[np.zeros(20), np.ones(20)]
    p, lab = pairs_from_labels(y, 50, random_state=0)
    with pytest.raises(NotAttainedError, match="separates"):
        solve_exact(LDMLData(X, p, lab))
    # a regulariser makes it attained
    assert solve_exact(LDMLData(X, p, lab, lam=0.1)).status == "optimal"
    with pytest.raises(NotAttainedError, match="same label"):
        solve_exact(LDMLData(X, p[lab == 1], lab[lab == 1], lam=1.0))


def test_bad_input(iris_pairs):
    X, p, lab = iris_pairs
    with pytest.raises(ValueError, match="lam"):
        LDMLData(X, p, lab, lam=-1.0)
    with pytest.raises(ValueError, match="regularizer"):
        LDMLData(X, p, lab, regularizer="l1")
    with pytest.raises(ValueError, match="pairs: 1 pair"):
        LDMLData(X, np.array([[0, 0]]), [1])
    with pytest.raises(ValueError, match="y"):
        LDMLData(X, p, lab[:-1])
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        LDMLData(bad, p, lab)


@pytest.fixture(scope="module")
def wine_pairs():
    # the conformance suite's wine case: standardised training part, metric-
    # learn's 20 C^2 labelled pairs; Clarabel stops "optimal_inaccurate"
    # about 1e-4 short of the certificate on it
    from cvxmetric.bench.conformance import load_dataset

    X, y = load_dataset("wine", 0)
    p, lab = pairs_from_labels(y, 20 * 3 ** 2, random_state=0)
    return X, p, lab


def test_polish_certifies_clarabel_on_wine(wine_pairs):
    from cvxmetric.ldml.fast import solve_fast

    data = LDMLData(*wine_pairs, lam=0.1)
    res = solve_exact(data)
    assert res.status == "optimal" and res.certificate.rel_gap <= 1e-6
    assert res.info["polished"] and res.raw_status == "optimal_inaccurate"
    assert res.certificate.solver == "CLARABEL"
    assert res.objective == pytest.approx(data.objective(res.M, res.info["b"]), rel=1e-12)
    fast = solve_fast(data)
    assert fast.status == "optimal"
    assert res.objective == pytest.approx(fast.objective, rel=1e-8)


def test_polish_from_a_perturbed_optimum(wine_pairs):
    """From the optimum plus a full-rank perturbation (its leading
    eigenvectors turned away from the optimum's face) the polish finds the
    optimum: objective to round-off, KKT residual ~0."""
    from cvxmetric.ldml._polish import _gradient, _kkt, polish
    from cvxmetric.ldml.fast import solve_fast

    data = LDMLData(*wine_pairs, lam=0.1)
    opt = solve_fast(data)
    rng = np.random.default_rng(1)
    A = rng.normal(size=opt.M.shape)
    start = opt.M + 1e-3 * (A @ A.T) / len(A)
    out = polish(data, start, opt.info["b"] + 1e-3)
    assert out
    M, b = out[0]
    assert data.objective(M, b) == pytest.approx(opt.objective, rel=1e-12)
    Q = data.span()
    Psi = data.Phi @ Q

    def kkt(M, b):
        Mr = Q.T @ M @ Q
        G, rb, _ = _gradient(data, Psi, Mr, b)
        return _kkt(G, Mr, rb)

    assert kkt(M, b) < 1e-5 * kkt(start, opt.info["b"] + 1e-3)
    assert np.linalg.matrix_rank(M, 1e-8 * np.abs(M).max()) == np.linalg.matrix_rank(
        opt.M, 1e-8 * np.abs(opt.M).max())


@pytest.mark.parametrize("reg", ["trace", "frobenius"])
def test_polish_chart_derivatives(wine_pairs, reg):
    """The chart's gradient and Hessian against finite differences of its
    value (central differences; the Hessian through polarisation)."""
    from cvxmetric.ldml._polish import _Chart

    data = LDMLData(*wine_pairs, lam=0.1, regularizer=reg)
    Q = data.span()
    rng = np.random.default_rng(0)
    U = np.linalg.qr(rng.normal(size=(Q.shape[1], 4)))[0]
    A = rng.normal(size=(4, 4))
    chart = _Chart(data, data.Phi @ Q, U, A @ A.T + np.eye(4))
    b = 3.0
    g, H = chart.derivatives(b)
    h = 1e-5
    fd = np.array([(chart.value(h * e, b) - chart.value(-h * e, b)) / (2 * h)
                   for e in np.eye(len(g))])
    np.testing.assert_allclose(g, fd, rtol=0, atol=1e-7 * np.abs(g).max())
    h = 1e-4
    for _ in range(3):
        v, w = rng.normal(size=len(g)), rng.normal(size=len(g))
        second = (chart.value(h * (v + w), b) - chart.value(h * (v - w), b)
                  - chart.value(h * (w - v), b) + chart.value(-h * (v + w), b)) / (4 * h * h)
        assert v @ H @ w == pytest.approx(second, rel=1e-4, abs=1e-4 * np.abs(H).max())


def test_polish_is_not_trusted(wine_pairs, monkeypatch):
    """A polished point whose certificate fails is never returned."""
    from cvxmetric import CertificateError
    from cvxmetric.ldml import exact

    monkeypatch.setattr(exact, "polish", lambda data, M, b: [(2.0 * M, b + 1.0)])
    data = LDMLData(*wine_pairs, lam=0.1)
    try:
        res = exact.solve_exact(data, solvers=("CLARABEL",))
    except CertificateError:
        return
    assert not res.info["polished"] and res.certificate.rel_gap <= 1e-6


def test_polish_grows_a_face_too_small(wine_pairs):
    """From the optimum with its weakest direction removed (a face one too
    small) the polish grows the face back and reaches the optimum."""
    from cvxmetric.ldml._polish import polish
    from cvxmetric.ldml.fast import solve_fast

    data = LDMLData(*wine_pairs, lam=0.1)
    opt = solve_fast(data)
    w, V = np.linalg.eigh(opt.M)
    k = int(np.sum(w > 1e-8 * w[-1]))
    assert k >= 2
    start = (V[:, -(k - 1):] * w[-(k - 1):]) @ V[:, -(k - 1):].T
    out = polish(data, start, opt.info["b"])
    assert out
    M, b = out[0]
    assert data.objective(M, b) == pytest.approx(opt.objective, rel=1e-12)
    assert np.linalg.matrix_rank(M, 1e-8 * np.abs(M).max()) == k


def test_continuation_attempt_is_polished_to_the_optimum(iris_pairs):
    """The continuation model (whitened, per pair, plus a trace term) solves
    a nearby problem; its point certifies on Eq. 2 only through the polish,
    at the optimum of the model as printed."""
    from cvxmetric.ldml import exact

    data = LDMLData(*iris_pairs, lam=0.0)
    ref = solve_exact(data)
    f0 = data.value_at_zero()
    tau = data.trace_bound(f0)
    cert, info, M, b = exact._solve_scaled(data, data.basis(), float(data.n_pairs), tau, f0,
                                           ("CLARABEL",), False, delta=exact.CONTINUATION)
    assert cert.passed and info["polished"]
    assert cert.objective == pytest.approx(ref.objective, rel=1e-8)
    assert data.objective(M, b) == pytest.approx(cert.objective, rel=1e-12)


def test_level_set_bounds_are_sound(wine_pairs, iris_pairs):
    """The level-set SDPs give bounds from their multipliers (weak duality),
    never their values: the sharpened dual bound stays below F at the
    optimum, and the trace bound above the optimum's trace."""
    from cvxmetric.ldml.fast import solve_fast

    data = LDMLData(*wine_pairs, lam=0.1)
    opt = solve_fast(data)
    f = opt.objective
    tau = f / data.lam
    for scale in (1.0, 1.0 + 1e-4):
        M = opt.M * scale
        assert staged_bound(data, M, tau, f) <= data.objective(
            M, opt.info["b"]) + 1e-12
    data = LDMLData(*iris_pairs, lam=0.0)
    ref = solve_exact(data)
    data._direction = False  # as if no strictly feasible direction were found
    f0 = data.value_at_zero()
    Q = data.span()
    assert data.trace_bound(f0) >= np.trace(Q.T @ ref.M @ Q)


def _perturbed_optimum(data, eps):
    """The fast solver's optimum plus a symmetric perturbation of relative
    size ``eps`` (a point whose dual point has a PSD deficit)."""
    from cvxmetric.ldml.fast import solve_fast

    M0 = solve_fast(data).M
    A = np.random.default_rng(1).normal(size=M0.shape)
    return M0 + eps * (A + A.T) * np.abs(M0).max()


def _no_solver(monkeypatch):
    """Make every solve the certificate might run raise."""
    import cvxpy as cp
    from cvxpy.reductions.solvers.solving_chain import SolvingChain

    from cvxmetric.ldml import exact

    def refuse(*args, **kwargs):
        raise AssertionError("a solver ran inside a certificate")

    monkeypatch.setattr(cp.Problem, "solve", refuse)
    # conic_solve runs the solver through the chain, not Problem.solve
    monkeypatch.setattr(SolvingChain, "solve_via_data", refuse)
    for name in ("_newton_repair", "strict_direction", "level_min", "trace_bound",
                 "recession"):
        monkeypatch.setattr(LDMLData, name, refuse)
    monkeypatch.setattr(exact, "polish", refuse)


@pytest.mark.parametrize("eps,stages,expected", [
    # recorded before the bound and its stages were separated (the Newton
    # repair, then the level-set SDP; the repair fails, the direction SDP,
    # then the level-set SDP)
    (1e-4, ["_newton_repair", "level_min"], 39.675740523469855),
    (1e-2, ["_newton_repair", "strict_direction", "level_min"], 22.996258509341992),
])
def test_the_stages_then_the_pure_bound_give_the_staged_bound(iris_pairs, monkeypatch, eps,
                                                              stages, expected):
    from cvxmetric.ldml.exact import bound_stages

    data = LDMLData(*iris_pairs, lam=0.1)
    M = _perturbed_optimum(data, eps)
    tau = data.trace_bound(data.value_at_zero())
    f = data.objective(M, data.best_b(data.distances(M)))
    ran = []
    for name in ("_newton_repair", "strict_direction", "level_min"):
        method = getattr(LDMLData, name)
        monkeypatch.setattr(LDMLData, name, lambda self, *a, _m=method, _n=name, **k: (
            ran.append(_n), _m(self, *a, **k))[1])
    dual = data.dual_point(M)
    known = bound_stages(data, dual, tau, f)
    assert ran == stages  # in this order, under these conditions
    staged = data.bound(dual, tau, **known)
    assert staged == pytest.approx(expected, rel=1e-6)
    # what they add: the bound from the dual point alone is lower
    assert data.bound(dual, tau) < staged
    # and the pure bound, given the stages' outputs, runs none of them
    _no_solver(monkeypatch)
    assert data.dual_bound(M, None, tau, **known) == staged
    assert data.dual_bound(M, None, tau) == data.bound(dual, tau)


def test_the_declared_certificate_runs_no_solver(iris_pairs, monkeypatch):
    from cvxmetric.ldml.exact import declared_problem

    data = LDMLData(*iris_pairs, lam=0.0)
    dp = declared_problem(data)
    M = _perturbed_optimum(data, 1e-2)
    dp.solve()
    solved = dp.certificate()
    assert solved.passed
    _no_solver(monkeypatch)
    # the certified solve's certificate of its point, kept; any other point
    # is bounded from what is known without solving (no stage is traced)
    with recording() as stages:
        assert dp.certificate() == solved
        other = dp.certificate(M)
    assert stages == []
    assert other.dual_bound <= solved.objective and not other.passed
    # before any solve, without a regulariser: no trace bound is known
    fresh = declared_problem(LDMLData(*iris_pairs, lam=0.0))
    assert fresh.certificate(dp.matrix()).dual_bound <= solved.objective
