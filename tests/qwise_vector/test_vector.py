"""The Qwise vector model: Eq. 14 (hinge), Eq. 27-30 (smoothed), Algorithm 2."""

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_iris
from sklearn.utils.estimator_checks import parametrize_with_checks

from cvxmetric import (
    LabeledPairs,
    Quadruplets,
    QwiseVector,
    QwiseVectorSupervised,
    Status,
    pairs_from_labels,
    quadruplets_from_labels,
)
from cvxmetric._tolerances import tolerance
from cvxmetric.qwise import QwiseData
from cvxmetric.qwise.exact import declared_problem
from cvxmetric.qwise_vector import (
    ProjectedNewton,
    QwiseVectorData,
    QwiseVectorModel,
    solve_exact,
)
from cvxmetric.qwise_vector._problem import phi_h

NEWTON_RTOL = tolerance("qwise_vector", "newton")


def _instance(seed=0, n=40, d=5, n_quads=150, n_pairs=50, margins="mixed", sep=1.0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    X = rng.normal(size=(n, d))
    X[:, 0] += sep * labels
    q = quadruplets_from_labels(labels, n_quads, random_state=seed)
    delta = rng.integers(0, 2, n_quads).astype(float) if margins == "mixed" else 1.0
    quads = Quadruplets.create(X, q, delta)
    pairs = None
    if n_pairs:
        p, lab = pairs_from_labels(labels, n_pairs, random_state=seed + 1)
        pairs = LabeledPairs.create(X, p, lab)
    return X, quads, pairs


CASES = [(psi, pairs, seed) for psi in ("squared", "linear") for pairs in (True, False)
         for seed in (0, 1)]


@pytest.mark.parametrize("psi,with_pairs,seed", CASES)
@pytest.mark.parametrize("loss", ["hinge", "huber"])
def test_exact_certified(psi, with_pairs, seed, loss):
    _, quads, pairs = _instance(seed, n_pairs=50 if with_pairs else 0)
    data = QwiseVectorData.from_sets(quads, pairs, psi=psi, loss=loss, C_q=0.7, C_p=1.3)
    res = solve_exact(data)
    assert res.status == Status.OPTIMAL
    assert res.certificate.rel_gap <= 1e-6
    omega = np.append(res.info["w"], res.info["b"])
    assert res.objective == pytest.approx(data.objective(omega), rel=1e-12)
    if psi == "squared":
        assert np.min(omega) >= 0
        np.testing.assert_allclose(res.M, np.diag(res.info["w"]))
    if not with_pairs:
        # b only appears in b^2 / 2: zero, up to the interior-point tolerance
        assert 0.5 * res.info["b"] ** 2 <= 1e-7 * max(1.0, res.objective)


@pytest.mark.parametrize("psi,with_pairs,seed", CASES)
@pytest.mark.parametrize("line_search", [True, False])
def test_newton_reaches_smoothed_optimum(psi, with_pairs, seed, line_search):
    _, quads, pairs = _instance(seed, n_pairs=50 if with_pairs else 0)
    data = QwiseVectorData.from_sets(quads, pairs, psi=psi, loss="huber", C_q=0.7,
                                     C_p=1.3)
    exact = solve_exact(data)
    res = ProjectedNewton(line_search=line_search).run(data, warn=False)
    if not line_search:
        # the paper's unit step need not converge (Newton's method on a
        # piecewise quadratic can cycle): whatever happens, the status says
        # what the certificate shows
        assert (res.status == Status.OPTIMAL) == res.certificate.passed
        return
    assert res.status == Status.OPTIMAL
    gap = (res.objective - exact.objective) / max(1.0, abs(exact.objective))
    assert abs(gap) <= NEWTON_RTOL
    # its own certificate: a valid bound, tight
    assert res.certificate.dual_bound <= exact.objective * (1 + 1e-9) + 1e-9
    assert res.certificate.rel_gap <= 1e-9
    np.testing.assert_allclose(res.info["w"], exact.info["w"], atol=1e-4)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), psi=st.sampled_from(["squared", "linear"]),
       d=st.integers(1, 6), n_quads=st.integers(1, 30), n_pairs=st.integers(0, 12),
       scale=st.sampled_from([1e-2, 1.0, 30.0]),
       C_q=st.sampled_from([0.01, 1.0, 20.0]))
def test_newton_vs_exact_generated(seed, psi, d, n_quads, n_pairs, scale, C_q):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n_quads, d)) * scale
    P = rng.normal(size=(n_pairs, d)) * scale
    if psi == "squared":
        P = np.abs(P)
    y = rng.choice([-1.0, 1.0], n_pairs)
    delta = rng.integers(0, 2, n_quads).astype(float)
    data = QwiseVectorData.from_features(Z, delta, P, y, psi=psi, loss="huber", h=0.05,
                                         C_q=C_q, C_p=1.0)
    exact = solve_exact(data)
    res = ProjectedNewton().run(data)
    assert res.status == Status.OPTIMAL
    assert abs(res.objective - exact.objective) / max(1.0, abs(exact.objective)) \
        <= NEWTON_RTOL


def _points_off_kinks(data, rng, n=5):
    """Random points whose margins are away from the losses' breakpoints."""
    out = []
    while len(out) < n:
        omega = data.project(rng.normal(size=data.n_features + 1)) + 0.05
        u = data.c - data.margins(omega)
        if np.min(np.abs(np.abs(u) - data.h)) > 1e-3:
            out.append(omega)
    return out


@pytest.mark.parametrize("psi", ["squared", "linear"])
def test_gradient_and_hessian_finite_differences(psi):
    _, quads, pairs = _instance(3, n=20, d=4, n_quads=40, n_pairs=20)
    data = QwiseVectorData.from_sets(quads, pairs, psi=psi, loss="huber", h=0.3)
    rng = np.random.default_rng(0)
    eps = 1e-6
    for omega in _points_off_kinks(data, rng):
        g, H = data.gradient(omega), data.hessian(omega)
        E = np.eye(omega.size)
        num_g = np.array([(data.objective(omega + eps * e) - data.objective(omega - eps * e))
                          / (2 * eps) for e in E])
        num_H = np.array([(data.gradient(omega + eps * e) - data.gradient(omega - eps * e))
                          / (2 * eps) for e in E])
        np.testing.assert_allclose(g, num_g, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(H, num_H, rtol=1e-5, atol=1e-5)


def test_losses_are_the_papers():
    # Eq. 29 and Eq. 30 as printed, with y t = s
    h = 0.05
    data = QwiseVectorData.from_features(np.eye(2), [1.0, 0.0], psi="linear",
                                         loss="huber", h=h)
    for s in np.linspace(-1, 2, 301):
        l1 = 0.0 if s > 1 + h else ((1 + h - s) ** 2 / (4 * h) if abs(1 - s) <= h
                                    else 1 - s)
        l0 = 0.0 if s > 0 else (s ** 2 / (4 * h) if abs(-h - s) <= h else -h - s)
        got = data.losses(np.array([s, s]))
        assert got[0] == pytest.approx(l1, abs=1e-15)
        assert got[1] == pytest.approx(l0, abs=1e-15)
    # continuity at the breakpoints and the hinge as h -> 0
    assert phi_h(np.array([h]), h)[0] == pytest.approx(h)
    assert phi_h(np.array([-h]), h)[0] == 0.0


@pytest.mark.parametrize("psi", ["squared", "linear"])
def test_smoothing_bound(psi):
    """-h C_q |B| <= F_h* - F* <= h/4 (C_p |P| + C_q |A|), and F_h* -> F*."""
    _, quads, pairs = _instance(5)
    hinge = QwiseVectorData.from_sets(quads, pairs, psi=psi, loss="hinge")
    f_star = solve_exact(hinge).objective
    previous = np.inf
    for h in (0.5, 0.2, 0.05, 0.01, 1e-3):
        smooth = hinge.with_loss("huber", h)
        f_h = ProjectedNewton().run(smooth).objective
        low, high = smooth.smoothing_bounds()
        assert low - 1e-7 <= f_h - f_star <= high + 1e-7
        assert max(high, -low) <= h * (hinge.C.sum())
        assert abs(f_h - f_star) <= previous + 1e-9
        previous = max(high, -low)


def test_dual_bound_is_a_lower_bound():
    _, quads, pairs = _instance(7)
    for loss in ("hinge", "huber"):
        data = QwiseVectorData.from_sets(quads, pairs, loss=loss)
        opt = solve_exact(data).objective
        rng = np.random.default_rng(0)
        for _ in range(20):
            beta = rng.uniform(size=data.c.size)
            assert data.dual_bound(beta) <= opt + 1e-9


def test_eq14_is_eq11_with_diagonal_metric():
    """The remark after Eq. 14: with M = diag(w), Omega = 0.5 ||M||_F^2,
    u = b - 1, l = b + 1, Eq. 11 at fixed b is Eq. 14 less b^2 / 2."""
    X, quads, pairs = _instance(2, margins="one")
    vec = QwiseVectorData.from_sets(quads, pairs, psi="squared", loss="hinge", C_q=1.0,
                                    C_p=1.0)
    res = solve_exact(vec)
    w, b = res.info["w"], res.info["b"]
    assert b > 1.0  # u = b - 1 >= 0 is a valid Eq. 11 bound
    eq11 = QwiseData.from_sets(quads, pairs, regularizer="frobenius", C_q=1.0, C_p=1.0,
                               u=b - 1.0, l=b + 1.0)
    # the same function at every diagonal point ...
    rng = np.random.default_rng(0)
    for v in [w] + [np.abs(rng.normal(size=w.size)) for _ in range(3)]:
        assert eq11.objective(np.diag(v)) + 0.5 * b ** 2 == pytest.approx(
            vec.objective(np.append(v, b)), rel=1e-12)
    # ... and the same minimiser over diagonal M
    dp = declared_problem(eq11)
    dp.add_constraint("diagonal", dp.M == cp.diag(cp.diag(dp.M)))
    value = dp.solve(solver="CLARABEL")
    assert value + 0.5 * b ** 2 == pytest.approx(res.objective, rel=1e-6)
    np.testing.assert_allclose(np.diag(dp.matrix()), w, atol=1e-5)


def test_model_is_dpp_and_parameters_resolve():
    _, quads, pairs = _instance(0)
    for loss in ("hinge", "huber"):
        model = QwiseVectorModel(QwiseVectorData.from_sets(quads, pairs, loss=loss))
        assert model.problem.is_dpp()
        model.set_params(C_q=2.5)
        res = model.solve()
        direct = solve_exact(QwiseVectorData.from_sets(quads, pairs, loss=loss,
                                                              C_q=2.5))
        assert res.objective == pytest.approx(direct.objective, rel=1e-7)
        with pytest.raises(ValueError, match="C_q"):
            model.set_params(C_q=-1.0)
        with pytest.raises(ValueError, match="nope"):
            model.set_params(nope=1.0)


# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------


def test_bad_input():
    _, quads, pairs = _instance(0)
    with pytest.raises(ValueError, match="psi"):
        QwiseVectorData.from_sets(quads, psi="cubic")
    for h in (0.0, -0.1, 0.9):
        with pytest.raises(ValueError, match="h"):
            QwiseVectorData.from_sets(quads, loss="huber", h=h)
    q2 = Quadruplets.create(quads.X, quads.indices, 0.5)
    with pytest.raises(ValueError, match="delta: the smoothed losses"):
        QwiseVectorData.from_sets(q2, loss="huber")
    QwiseVectorData.from_sets(q2, loss="hinge")  # any margin for the hinge
    with pytest.raises(ValueError, match="loss"):
        ProjectedNewton().run(QwiseVectorData.from_sets(quads, loss="hinge"))
    X = quads.X
    est = QwiseVector(preprocessor=X)
    with pytest.raises(ValueError, match="pair_labels"):
        est.fit(quads.indices, pairs=pairs.indices)
    with pytest.raises(ValueError, match="pairs"):
        est.fit(quads.indices, pair_labels=pairs.labels)
    with pytest.raises(ValueError, match="psi"):
        QwiseVector(psi="cubic", preprocessor=X).fit(quads.indices)
    with pytest.raises(ValueError, match="h"):
        QwiseVector(h=0.0, preprocessor=X).fit(quads.indices)
    with pytest.raises(ValueError, match="loss"):
        QwiseVector(solver="newton", loss="hinge", preprocessor=X).fit(quads.indices)
    with pytest.raises(ValueError, match="delta"):
        QwiseVector(loss="huber", preprocessor=X).fit(quads.indices, delta=2.0)
    lin = QwiseVector(psi="linear", preprocessor=X)
    sets = {"a": quads.indices[:20], "b": quads.indices[20:40]}
    with pytest.raises(ValueError, match="delta: expected one entry per attribute"):
        lin.fit(sets, delta={"a": 1.0})
    with pytest.raises(ValueError, match="pairs"):
        lin.fit(sets, pairs=pairs.indices, pair_labels=pairs.labels)
    with pytest.raises(ValueError, match="psi='linear'"):
        QwiseVector(preprocessor=X).fit(sets)
    with pytest.raises(ValueError, match="quadruplets: the dict"):
        lin.fit({})
    with pytest.raises(ValueError, match="NaN"):
        QwiseVectorData.from_features(np.array([[np.nan, 1.0]]), 1.0)


# ---------------------------------------------------------------------------
# estimators
# ---------------------------------------------------------------------------


def test_estimator_solvers_agree_and_predict():
    X, quads, pairs = _instance(4, sep=4.0)
    kw = dict(pairs=pairs.indices, pair_labels=pairs.labels)
    ex = QwiseVector(loss="huber", preprocessor=X).fit(quads.indices, delta=quads.delta,
                                                       **kw)
    nt = QwiseVector(loss="huber", solver="newton", preprocessor=X).fit(
        quads.indices, delta=quads.delta, **kw)
    assert ex.status_ == nt.status_ == Status.OPTIMAL
    assert nt.objective_ == pytest.approx(ex.objective_, rel=1e-8)
    D = nt.pair_distance(pairs.indices)
    w = nt.coef_
    diff = X[pairs.indices[:, 0]] - X[pairs.indices[:, 1]]
    np.testing.assert_allclose(D, (diff ** 2) @ w)
    # similar (+1) where D_w < b: the paper's decision
    np.testing.assert_array_equal(nt.predict(pairs.indices),
                                  np.where(D - nt.intercept_ < 0, 1, -1))
    assert 0.5 < nt.score(pairs.indices, pairs.labels) <= 1.0
    assert 0.5 < nt.score(quads.indices) <= 1.0
    np.testing.assert_allclose(nt.get_mahalanobis_matrix(), np.diag(w), atol=1e-12)
    np.testing.assert_allclose(nt.transform(X), X * np.sqrt(w))
    with pytest.raises(ValueError, match="y: scoring pairs"):
        nt.score(pairs.indices)
    with pytest.raises(ValueError, match="tuples"):
        nt.predict(np.zeros((3, 3), int))


def test_linear_attributes_rows_of_L():
    X, quads, pairs = _instance(6)
    sets = {"first": quads.indices[:60], "second": quads.indices[60:]}
    est = QwiseVector(psi="linear", preprocessor=X).fit(sets)
    assert est.coef_.shape == (2, X.shape[1])
    assert est.attributes_ == ["first", "second"]
    for row, key in enumerate(sets):
        one = QwiseVector(psi="linear", preprocessor=X).fit(sets[key])
        np.testing.assert_allclose(est.coef_[row], one.coef_, atol=1e-7)
    np.testing.assert_allclose(est.transform(X), X @ est.coef_.T)
    D = est.pair_distance(pairs.indices)
    assert D.shape == (len(pairs.indices), 2)


def test_supervised_solvers():
    X, y = load_iris(return_X_y=True)
    fits = {s: QwiseVectorSupervised(n_constraints=150, loss="huber", solver=s,
                                     random_state=0).fit(X, y)
            for s in ("exact", "newton")}
    assert fits["newton"].objective_ == pytest.approx(fits["exact"].objective_,
                                                      rel=1e-8)
    assert fits["newton"].score(X, y) > 0.9


@parametrize_with_checks([
    QwiseVectorSupervised(n_constraints=40),
    QwiseVectorSupervised(n_constraints=30, loss="huber", solver="newton", C_p=0.0),
])
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("scale", [1e-3, 1e3])
def test_extreme_feature_scales(scale):
    """Pixels of digits times 1e3 (Psi up to 2.6e8) or 1e-3: both solvers
    work in the units of QwiseVectorData.scaled and certify on the data as
    given (without it Clarabel stopped at a gap of 0.46 and Newton did not
    converge)."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    est = {s: QwiseVectorSupervised(n_constraints=300, solver=s, loss="huber",
                                    random_state=0).fit(X[:300] * scale, y[:300])
           for s in ("exact", "newton")}
    assert est["exact"].status_ == est["newton"].status_ == Status.OPTIMAL
    assert est["newton"].objective_ == pytest.approx(est["exact"].objective_, rel=1e-6)
