"""OMDML: Eq. 3 exact, the PA step, the projections, Algorithms 1 and 2,
Theorem 4.1, Hedge, the estimator and bad input."""

import math

import cvxpy as cp
import numpy as np
import pytest

from cvxmetric import OMDML
from cvxmetric.constraints import triplets_from_labels
from cvxmetric.omdml import (
    LowRankOMDML,
    OMDMLData,
    OMDMLModel,
    OMDMLOnline,
    mistake_bound,
    pa_step,
    project_rank2,
    solve_exact,
    solve_joint_alternating,
    solve_joint_grid,
)
from cvxmetric._linalg import project_psd


def _views(seed=0, n=60, dims=(4, 3, 5), informative=0, sep=0.8, T=200):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    views = [rng.normal(size=(n, d)) for d in dims]
    views[informative][:, 0] += sep * 3 * y
    return views, y, triplets_from_labels(y, T, random_state=seed)


# ---------------------------------------------------------------------------
# the PA step (Eq. 4-5) and the projections
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
def test_pa_step_is_the_solution_of_eq4(seed):
    rng = np.random.default_rng(seed)
    n = 5
    G = rng.normal(size=(n, n))
    M0 = G @ G.T / n
    a, b = rng.normal(size=n), 0.3 * rng.normal(size=n)
    C = [0.01, 0.1, 1.0, 10.0][seed % 4]
    M1, tau, loss = pa_step(M0, a, b, C)
    # Eq. 4 as a CVXPY problem (no PSD constraint: the projection is separate)
    M = cp.Variable((n, n), symmetric=True)
    xi = cp.Variable(nonneg=True)
    V = np.outer(a, a) - np.outer(b, b)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(M - M0) + C * xi),
                      [cp.sum(cp.multiply(M, V)) + 1 <= xi])
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12,
               tol_feas=1e-12)
    assert loss > 0
    np.testing.assert_allclose(M1, M.value, atol=1e-8 * max(1.0, np.abs(M1).max()))
    assert 0 < tau <= C


def test_pa_step_passive_when_no_loss():
    a, b = np.array([0.1, 0.0]), np.array([5.0, 0.0])
    M = np.eye(2)
    M1, tau, loss = pa_step(M, a, b, 1.0)
    assert loss == 0.0 and tau == 0.0 and M1 is M


@pytest.mark.parametrize("seed", range(10))
def test_rank2_projection_equals_full_projection(seed):
    rng = np.random.default_rng(seed)
    n = 12
    G = rng.normal(size=(n, n // 2))
    P = G @ G.T  # PSD, singular
    a, b = rng.normal(size=n), rng.normal(size=n)
    tau = [0.1, 1.0, 10.0][seed % 3]
    M = P - tau * np.outer(a, a) + tau * np.outer(b, b)
    np.testing.assert_allclose(project_rank2(M), project_psd(M), atol=1e-10 * max(
        1.0, np.abs(M).max()))
    # at most one negative eigenvalue (the interlacing argument)
    assert np.sum(np.linalg.eigvalsh(M) < -1e-10) <= 1


def test_algorithm1_projections_agree():
    views, _, t = _views(1)
    d = OMDMLData.from_views(views, t)
    r2 = OMDMLOnline(projection="rank2").run(d, warn=False)
    full = OMDMLOnline(projection="full").run(d, warn=False)
    np.testing.assert_allclose(r2.info["theta"], full.info["theta"])
    for A, B in zip(r2.info["metrics"], full.info["metrics"]):
        np.testing.assert_allclose(A, B, atol=1e-9)
    sparse = OMDMLOnline(project_every=10).run(d, warn=False)
    for M in sparse.info["metrics"]:  # projected at the end of the stream
        assert np.linalg.eigvalsh(M)[0] >= -1e-10


def test_lomdml_gradient_finite_differences():
    rng = np.random.default_rng(3)
    W = rng.normal(size=(2, 4))
    a, b = rng.normal(size=4), rng.normal(size=4)

    def loss(W):
        return max(0.0, float((W @ a) @ (W @ a) - (W @ b) @ (W @ b)) + 1.0)

    f = float((W @ a) @ (W @ a) - (W @ b) @ (W @ b))
    assert f + 1 > 0  # the hinge is active: the gradient is Eq. 7's
    grad = LowRankOMDML._gradient(W, a, b)
    eps = 1e-6
    num = np.zeros_like(W)
    for idx in np.ndindex(*W.shape):
        E = np.zeros_like(W)
        E[idx] = eps
        num[idx] = (loss(W + E) - loss(W - E)) / (2 * eps)
    np.testing.assert_allclose(grad, num, rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------------
# Eq. 3 exact, the joint references
# ---------------------------------------------------------------------------


def test_exact_certified_dpp_and_dual_bound():
    views, _, t = _views(2)
    d = OMDMLData.from_views(views, t, C=0.5)
    model = OMDMLModel(d, [0.5, 0.25, 0.25])
    assert model.problem.is_dpp()
    res = model.solve()
    assert res.status == "optimal" and res.certificate.rel_gap <= 1e-6
    Ms = res.info["metrics"]
    assert res.objective == pytest.approx(d.objective(Ms, [0.5, 0.25, 0.25]), rel=1e-10)
    for M in Ms:
        assert np.linalg.eigvalsh(M)[0] >= -1e-7
    rng = np.random.default_rng(0)
    for _ in range(10):
        assert d.dual_bound(rng.uniform(0, d.C, d.n_triplets),
                            np.array([0.5, 0.25, 0.25])) <= res.objective + 1e-7


def test_joint_references():
    views, _, t = _views(4, dims=(3, 3), T=120)
    d = OMDMLData.from_views(views, t)
    uniform = solve_exact(d)
    grid = solve_joint_grid(d, resolution=8)
    thetas, objs = grid.info["grid"]
    assert len(thetas) == 9 and grid.objective == pytest.approx(objs.min())
    assert grid.objective <= uniform.objective + 1e-9
    alt = solve_joint_alternating(d)
    assert alt.objective <= uniform.objective + 1e-7
    assert all(np.diff(alt.info["history"][:-1]) <= 1e-7)


# ---------------------------------------------------------------------------
# the paper's claims
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_theorem_4_1_mistake_bound(seed):
    views, _, t = _views(seed, T=400, sep=0.5 + 0.2 * seed)
    d = OMDMLData.from_views(views, t)
    T, m = d.n_triplets, d.n_views
    beta = math.sqrt(T) / (math.sqrt(T) + math.sqrt(math.log(m)))
    res = OMDMLOnline(beta=beta).run(d, warn=False)
    bound = mistake_bound(beta, res.info["z_counts"], m)
    assert res.info["mistakes"] <= bound


@pytest.mark.parametrize("seed", [5, 6, 7, 8])
def test_hedge_weights_the_informative_view(seed):
    """One view carries the classes, three are noise.  With a large
    ``gamma`` every triplet is a Hedge round and the weight goes to the
    informative view; with ``gamma = 1`` Hedge only sees the few triplets
    that trigger an update (20-40 here) and its weights stay noisy
    (docs/omdml/formulation.md)."""
    views, _, t = _views(seed, dims=(6, 6, 6, 6), informative=2, sep=1.5, T=600)
    for rank in (None, 3):
        est = OMDML(rank=rank, gamma=1e6, random_state=0).fit(views, t)
        assert np.argmax(est.theta_) == 2 and est.theta_[2] > 0.9


def test_online_objective_reported_against_exact():
    views, _, t = _views(6)
    d = OMDMLData.from_views(views, t)
    for passes in (1, 3):
        res = OMDMLOnline(maxiter=passes).run(d, warn=False)
        exact = solve_exact(d, res.info["theta"])
        # an online learner is not optimal; its objective is above the
        # optimum at its own theta and its certificate says so
        assert res.objective >= exact.objective - 1e-7
        assert res.status != "optimal"


# ---------------------------------------------------------------------------
# estimator and bad input
# ---------------------------------------------------------------------------


def test_estimator_partial_fit_transform_and_distance():
    views, y, t = _views(7)
    for rank in (None, 2):
        one = OMDML(rank=rank, random_state=0).fit(views, t)
        parts = OMDML(rank=rank, random_state=0)
        for chunk in np.array_split(t, 3):
            parts.partial_fit(views, chunk)
        np.testing.assert_allclose(parts.theta_, one.theta_)
        for A, B in zip(parts.metrics_, one.metrics_):
            np.testing.assert_allclose(A, B, atol=1e-12)
        assert parts.mistakes_ == one.mistakes_
        Z = one.transform(views)
        pairs = np.array([[0, 1], [2, 5], [7, 3]])
        d2 = np.sum((Z[pairs[:, 0]] - Z[pairs[:, 1]]) ** 2, axis=1)
        np.testing.assert_allclose(one.pair_distance(views, pairs), d2, rtol=1e-8)
        assert 0.5 < one.score(views, t) <= 1.0
    ex = OMDML(solver="exact", theta=[0.5, 0.3, 0.2]).fit(views, t)
    assert ex.status_ == "optimal"
    np.testing.assert_allclose(ex.theta_, [0.5, 0.3, 0.2])


def test_bad_input():
    views, _, t = _views(8)
    with pytest.raises(ValueError, match=r"views\[1\]: has 59 samples"):
        OMDML().fit([views[0], views[1][:-1]], t)
    with pytest.raises(ValueError, match=r"views\[0\]: the view is empty"):
        OMDML().fit([np.zeros((60, 0)), views[1]], t)
    with pytest.raises(ValueError, match="triplets: index 60 is out of range"):
        OMDML().fit(views, np.array([[0, 1, 60]]))
    for beta in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="beta"):
            OMDML(beta=beta).fit(views, t)
    with pytest.raises(ValueError, match="theta: must lie in the simplex"):
        OMDML(theta=[0.5, 0.5, 0.5]).fit(views, t)
    with pytest.raises(ValueError, match="theta"):
        OMDML(theta=[0.5, 0.5]).fit(views, t)
    # a rank above a view's dimension is capped (tests/omdml/test_ranks.py);
    # the solver itself refuses it
    with pytest.raises(ValueError, match=r"rank: 4 exceeds the dimension 3 of views\[1\]"):
        LowRankOMDML(rank=4).run(OMDMLData.from_views(views, t), warn=False)
    bad = [v.copy() for v in views]
    bad[2][0, 0] = np.nan
    with pytest.raises(ValueError, match=r"views\[2\]: contains 1 NaN"):
        OMDML().fit(bad, t)
    with pytest.raises(ValueError, match="views: expected a list"):
        OMDML().fit(views[0], t)
    with pytest.raises(ValueError, match="solver"):
        OMDML(solver="exact").partial_fit(views, t)


def test_lomdml_divergence_is_an_error():
    from cvxmetric import SolverError

    views, _, t = _views(9)
    big = [10.0 * v for v in views]  # far from the paper's [0, 1] features
    with pytest.raises(SolverError, match="eta: LOMDML diverged"):
        OMDML(rank=2, eta=1.0, random_state=0).fit(big, t)


def test_online_fit_says_it_stops_by_design():
    # the online algorithm ends after its passes, not at Eq. 3's optimum:
    # fit says so with a ConvergenceWarning; a stream's partial_fit does not
    import warnings

    from sklearn.datasets import load_iris
    from sklearn.exceptions import ConvergenceWarning

    from cvxmetric import OMDML, triplets_from_labels

    X, y = load_iris(return_X_y=True)
    views, t = [X[:, :2], X[:, 2:]], triplets_from_labels(y, 100, random_state=0)
    with pytest.warns(ConvergenceWarning, match="stops there by design"):
        est = OMDML().fit(views, t)
    assert est.status_ != "optimal"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        OMDML().partial_fit(views, t)
