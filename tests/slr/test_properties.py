"""Property-based tests of SLR (hypothesis; small example counts).

* the scaling law of Eq. 4: ``f*(sX) = f*(X)`` and ``M(sX) = M(X) / s^2``
  for ``s`` in ``[1e-6, 1e6]``;
* Newton (dense and matrix-free) against the exact path;
* the exact path against an independent CVXPY statement of Eq. 4 written
  here from the docs' equation (variable ``M``, every ordered pair, the
  squared hinges with ``cp.pos``), not the package's model;
over sizes beyond the tiny, with duplicated points and collinear features.
"""

import warnings

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cvxmetric.slr import SLR, SemismoothNewton, SLRData, solve_exact

SETTINGS = settings(max_examples=10, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def instances(draw, max_n=40, max_d=5):
    seed = draw(st.integers(0, 2 ** 31 - 1))
    n_classes = draw(st.integers(2, 4))
    n = draw(st.integers(max(6, 2 * n_classes), max_n))
    d = draw(st.integers(1, max_d))
    rng = np.random.RandomState(seed)
    y = rng.permutation(np.arange(n) % n_classes)
    X = 1.5 * rng.randn(n_classes, d)[y] + rng.randn(n, d)
    kind = draw(st.sampled_from(["plain", "collinear", "duplicated feature",
                                 "duplicated points"]))
    if kind == "collinear" and d >= 2:
        X[:, -1] = X[:, 0] - 0.5 * X[:, 1 % d]
    elif kind == "duplicated feature":
        X = np.hstack([X, X[:, :1]])
    elif kind == "duplicated points":
        k = n // 3
        X[:k] = X[n - k:]
        y[:k] = y[n - k:]
    return X, y


def independent_eq4(X, y, delta1=1.0, delta2=0.0):
    """Eq. 4 as written in docs/slr/formulation.md, straight into CVXPY."""
    n, d = X.shape
    same = (y[:, None] == y[None, :]).astype(float)
    M = cp.Variable((d, d))
    K = X @ M @ X.T
    obj = (cp.sum_squares(cp.multiply(same, cp.pos(delta1 - K)))
           + cp.sum_squares(cp.multiply(1.0 - same, cp.pos(K - delta2))))
    prob = cp.Problem(cp.Minimize(obj))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # judged by the recomputed value below
        prob.solve(solver="CLARABEL")
    assert prob.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE)
    # recomputed at the solver's M (not the solver's value)
    Kv = X @ M.value @ X.T
    val = (np.sum(same * np.maximum(delta1 - Kv, 0) ** 2)
           + np.sum((1 - same) * np.maximum(Kv - delta2, 0) ** 2))
    return float(val)


def rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


@SETTINGS
@given(instances(), st.floats(-6, 6))
def test_scaling_law(inst, log_s):
    X, y = inst
    s = 10.0 ** log_s
    a = SLR().fit(X, y)
    b = SLR().fit(X * s, y)
    assert a.status_ == b.status_ == "optimal"
    assert rel(b.objective_, a.objective_) <= 1e-8
    # the same similarities: K(sX, M(sX)) = K(X, M(X))
    Ka = X @ a.bilinear_matrix_ @ X.T
    Kb = (X * s) @ b.bilinear_matrix_ @ (X * s).T
    np.testing.assert_allclose(Kb, Ka, atol=1e-5 * max(1.0, np.abs(Ka).max()))


@SETTINGS
@given(instances(max_n=50, max_d=6))
def test_newton_dense_and_cg_match_exact(inst):
    X, y = inst
    data = SLRData.from_labels(X, y)
    exact = solve_exact(data)
    assert exact.certificate.passed
    for hessian in ("dense", "cg"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no convergence warning
            res = SemismoothNewton(hessian=hessian).run(data)
        assert res.status == "optimal"
        assert rel(res.objective, exact.objective) <= 1e-8
        # each bound is valid: never above a certified optimum
        assert res.certificate.dual_bound <= exact.objective + 1e-6 * max(1.0, exact.objective)


@settings(SETTINGS, max_examples=6)
@given(instances(max_n=24, max_d=4))
def test_exact_matches_an_independent_cvxpy_formulation(inst):
    X, y = inst
    exact = solve_exact(SLRData.from_labels(X, y))
    ref = independent_eq4(X, y)  # the value of a feasible point of Eq. 4
    assert rel(exact.objective, ref) <= 1e-6
    # the package's lower bound is below every feasible value
    assert exact.certificate.dual_bound <= ref + 1e-9 * max(1.0, ref)
