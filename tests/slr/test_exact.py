"""SLR exact path: the three CVXPY forms of Eq. 4 agree and are certified."""

import cvxpy as cp
import numpy as np
import pytest

from cvxmetric._tolerances import EXACT_GAP, REFERENCE_AGREEMENT, TOLERANCES
from cvxmetric.slr import FORMS, SLRData, SLRModel, solve_exact


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


@pytest.fixture(scope="module")
def data():
    """20 points in 4 dims, 3 overlapping classes."""
    rng = np.random.RandomState(0)
    y = np.arange(20) % 3
    X = rng.normal(size=(20, 4)) + 0.7 * rng.normal(size=(3, 4))[y]
    return SLRData.from_labels(X, y)


@pytest.fixture(scope="module")
def exact(data):
    return {form: solve_exact(data, form=form) for form in FORMS}


def _pairwise_problem(data):
    """Eq. 4 written literally with M (d, d), K = X M X^T, no reformulation."""
    X, y = data.X, data.y
    M = cp.Variable((data.n_features, data.n_features))
    K = X @ M @ X.T
    same = (y[:, None] == y[None, :]).astype(float)
    loss = (cp.sum_squares(cp.multiply(same, cp.pos(data.delta1 - K)))
            + cp.sum_squares(cp.multiply(1 - same, cp.pos(K - data.delta2))))
    problem = cp.Problem(cp.Minimize(loss))
    problem.solve(solver="CLARABEL")
    return problem.value, M.value


def test_forms_agree_and_are_certified(data, exact):
    ref = exact["declared"].objective
    for form, res in exact.items():
        assert res.status == "optimal"
        assert res.certificate.passed, form
        assert res.certificate.rel_gap <= EXACT_GAP
        assert _rel(res.objective, ref) <= TOLERANCES["exact"], form
        assert res.info["form"] == form
        assert res.M.shape == (4, 4)
        # the objective is recomputed from M, not the solver's value
        assert res.objective == data.objective(res.M)
    assert exact["symmetric"].objective > 0  # n > d, classes overlap


def test_literal_statement_has_the_same_optimum(data, exact):
    value, M = _pairwise_problem(data)
    assert _rel(value, exact["symmetric"].objective) <= 1e-6
    assert _rel(data.objective(M), exact["symmetric"].objective) <= 1e-6


def test_symmetric_form_returns_a_symmetric_minimiser(exact):
    M = exact["symmetric"].M
    np.testing.assert_allclose(M, M.T, atol=1e-12)
    # the optimal similarities K are unique where the loss is strictly convex;
    # the range form's minimiser has the same objective
    assert _rel(exact["range"].objective, exact["symmetric"].objective) <= 1e-8


def test_scs_agrees_with_clarabel(data, exact):
    res = solve_exact(data, solvers=("SCS",))
    assert res.certificate.solver == "SCS" and res.certificate.passed
    assert _rel(res.objective, exact["symmetric"].objective) <= REFERENCE_AGREEMENT


def test_model_is_dpp_and_set_params_resolves(data):
    model = SLRModel(data)
    assert model.problem.is_dpp()
    model.set_params(delta1=2.0, delta2=0.5)
    res = model.solve()
    fresh = solve_exact(SLRData.from_labels(data.X, data.y, delta1=2.0, delta2=0.5))
    assert _rel(res.objective, fresh.objective) <= TOLERANCES["exact"]
    assert res.certificate.passed
    with pytest.raises(ValueError, match="delta1, delta2"):
        model.set_params(delta1=0.0, delta2=0.5)
    assert model.params["delta1"].value == 2.0  # a rejected value changes nothing


def test_rank_deficient_declared_form():
    """rank(X) < d: M is not unique, every form has the same optimum."""
    rng = np.random.RandomState(1)
    X = rng.normal(size=(16, 2)) @ rng.normal(size=(2, 5))
    y = np.arange(16) % 2
    data = SLRData.from_labels(X, y)
    assert data.rank == 2
    objs = [solve_exact(data, form=f).objective for f in FORMS]
    assert max(objs) - min(objs) <= 1e-6 * max(1.0, min(objs))


def test_separable_instance_has_zero_optimum_certified():
    """n <= d: the classes are separable by a bilinear form; the optimum is 0."""
    rng = np.random.RandomState(2)
    X = rng.normal(size=(6, 9))
    y = np.array([0, 1, 0, 1, 2, 2])
    res = solve_exact(SLRData.from_labels(X, y))
    assert res.certificate.passed
    assert res.objective <= 1e-8
    assert res.certificate.dual_bound == 0.0


def test_bad_inputs(data):
    with pytest.raises(ValueError, match="form"):
        solve_exact(data, form="dual")
    with pytest.raises(TypeError, match="data"):
        solve_exact(np.eye(3))


def test_targets_only_form_at_the_optimum(data, exact):
    """f* = ||T*||^2 - ||U^T T* U||^2 with T* = Pi_B(K*): the distance from
    the box of targets to the subspace {U Z U^T} (the docstring's derivation)."""
    M = exact["symmetric"].M
    K = data.X @ M @ data.X.T
    same = data.y[:, None] == data.y[None, :]
    T = np.where(same, np.maximum(K, data.delta1), np.minimum(K, data.delta2))
    U = data.U
    value = np.sum(T * T) - np.sum((U.T @ T @ U) ** 2)
    assert _rel(value, exact["symmetric"].objective) <= 1e-8
    # and K* is the projection of T* onto the subspace (one Algorithm 1 step
    # leaves the optimum in place)
    np.testing.assert_allclose(U @ (U.T @ T @ U) @ U.T, K, atol=1e-6)


@pytest.mark.usefixtures("one_blas_thread")
def test_exact_path_refuses_a_form_beyond_its_memory_limit(monkeypatch):
    """At digits size (n = 1437, r = 30) the conic solve of the whole form
    aborted the process with std::bad_alloc under 4 GiB; the whole form is
    refused up front, naming X and the certified alternative (the default
    path first tries the margin-set reduction, tests/slr/test_exact_reduced.py)."""
    import time  # thread_time: this thread's CPU seconds (load and BLAS spin not counted)

    import cvxmetric.slr.exact as exact
    from cvxmetric.slr.exact import EXACT_MAX_COEFFICIENTS

    rng = np.random.RandomState(0)
    n, d = 1000, 30
    assert n * (n + 1) // 2 * d > EXACT_MAX_COEFFICIENTS
    data = SLRData.from_labels(rng.randn(n, d), rng.randint(0, 5, n))
    t0 = time.thread_time()
    with pytest.raises(ValueError, match=r"^X: .*solver='newton'"):
        solve_exact(data, reduce=False)
    assert time.thread_time() - t0 < 5.0
    # a reduction that does not answer leaves the refusal
    monkeypatch.setattr(exact, "_reduced_solve", lambda *a, **k: None)
    with pytest.raises(ValueError, match=r"^X: .*solver='newton'"):
        solve_exact(data, warm_start=lambda data: None)
