"""Algorithm 1 (projected subgradient, Sec. 4.1 / 4.3) against finite
differences and the exact optimum.

* The subgradient of Eq. 15 as ProjectedSubgradient uses it,
  ``h(N+) + R + mu * M``, is the gradient of ``QwiseData.objective`` at points
  away from the kinks: checked by central finite differences on symmetric
  directions.
* The incremental update of ``h(N+)`` equals ``h`` recomputed from scratch
  (naively, one outer product per constraint) on ``state.violated``.
* The active-set run returns, and is within ``TOLERANCES["subgradient"]``
  of the exact optimum on a small instance.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from cvxmetric._tolerances import TOLERANCES
from cvxmetric.qwise import ProjectedSubgradient
from cvxmetric.result import Certificate, SolverResult, Status

SUBGRADIENT = TOLERANCES["subgradient"]


def as_init(M):
    cert = Certificate(np.nan, -np.inf, np.inf, np.inf, 0.0, 0.0, "test")
    return SolverResult(M=M, status=Status.OPTIMAL, objective=np.nan, n_iter=0,
                        certificate=cert, method="test", info={})


def naive_h(data, mask):
    """``sum_{q in mask} c_q (C_near(q) - C_far(q))`` one outer product at a time."""
    X, op = data.X, data.op
    d = X.shape[1]
    h = np.zeros((d, d))
    for q in np.flatnonzero(mask):
        for pair, sign in ((data.near_q[q], 1.0), (data.far_q[q], -1.0)):
            phi = X[op.i[pair]] - X[op.j[pair]]
            h += sign * data.c_q[q] * np.outer(phi, phi)
    return h


def naive_margins(data, M):
    X, op = data.X, data.op
    D = lambda p: (X[op.i[p]] - X[op.j[p]]) @ M @ (X[op.i[p]] - X[op.j[p]])
    return np.array([data.delta_q[q] + D(data.near_q[q]) - D(data.far_q[q])
                     for q in range(data.n_constraints)])


def sym_basis(d):
    for a in range(d):
        for b in range(a, d):
            E = np.zeros((d, d))
            E[a, b] = E[b, a] = 1.0
            yield E


def point_away_from_kinks(data, seed, eps):
    """A random positive definite M whose hinge arguments all stay away
    from 0 by more than any finite-difference step can move them."""
    rng = np.random.RandomState(seed)
    d = data.n_features
    # largest change of a hinge argument per unit step along a basis direction
    phi = data.X[data.op.i] - data.X[data.op.j]
    lip = 4.0 * float(np.max(np.abs(phi)) ** 2)
    for _ in range(1000):
        B = rng.randn(d, d)
        M = rng.choice([0.01, 0.05, 0.2]) * (B @ B.T + 0.1 * np.eye(d))
        if np.min(np.abs(data.margins(M))) > 100 * eps * lip:
            return M
    raise RuntimeError("no point away from the kinks found")  # pragma: no cover


@pytest.mark.parametrize("which", ["eq8", "eq11"])
def test_subgradient_matches_finite_differences(which, eq8_data, eq11_data):
    data = eq8_data if which == "eq8" else eq11_data
    solver = ProjectedSubgradient()
    eps = 1e-6
    for seed in range(3):
        M = point_away_from_kinks(data, seed, eps)
        M0, state = solver.init_state(data, init=as_init(M))
        np.testing.assert_allclose(M0, M, atol=1e-12)  # PD: projection is a no-op
        grad = state.h + data.R + data.mu * M0  # Eq. 15, as in update()
        assert np.sum(state.violated) > 0  # something to differentiate
        for E in sym_basis(data.n_features):
            fd = (data.objective(M + eps * E) - data.objective(M - eps * E)) / (2 * eps)
            an = float(np.sum(grad * E))
            # central differences are exact for piecewise linear + quadratic
            # functions away from kinks, up to round-off ~ 1e-16 f / eps
            scale = max(1.0, abs(data.objective(M)))
            assert abs(fd - an) <= 1e-7 * scale, (fd, an)


def test_violated_set_and_h_at_init(eq11_data):
    data = eq11_data
    M = point_away_from_kinks(data, 5, 1e-6)
    _, state = ProjectedSubgradient().init_state(data, init=as_init(M))
    np.testing.assert_array_equal(state.violated, naive_margins(data, M) > 0)
    np.testing.assert_allclose(state.h, naive_h(data, state.violated),
                               rtol=0, atol=1e-10 * max(1, np.abs(state.h).max()))


@pytest.mark.parametrize("active_set", [True, False])
def test_incremental_h_equals_recomputed(eq11_data, active_set):
    data = eq11_data
    solver = ProjectedSubgradient(active_set=active_set, recheck_every=7,
                                  maxiter=10_000)
    M, state = solver.init_state(data)
    changes = 0
    prev = state.violated
    for t in range(60):
        M, state = solver.update(M, state, data)
        changes += int(np.sum(state.violated != prev))
        prev = state.violated
        scale = max(1.0, np.abs(state.h).max())
        np.testing.assert_allclose(state.h, naive_h(data, state.violated),
                                   rtol=0, atol=1e-9 * scale)
        # the violated set is a subset of the accumulated active list
        assert not np.any(state.violated & ~state.active)
        if state.full_check:
            np.testing.assert_array_equal(state.violated,
                                          naive_margins(data, M) > 0)
    assert changes > 0, "N+ never changed: the incremental update was not exercised"
    assert state.iter_num == 60


def test_full_check_schedule(eq11_data):
    solver = ProjectedSubgradient(recheck_every=5, maxiter=10_000)
    M, state = solver.init_state(eq11_data)
    full = []
    for _ in range(20):
        M, state = solver.update(M, state, eq11_data)
        full.append(state.full_check)
    # every 5th iteration at least (also when the step is small)
    assert all(full[k] for k in range(4, 20, 5))


@pytest.mark.parametrize("which", ["eq8", "eq11"])
def test_active_set_run_reaches_tolerance(which, eq8_data, eq11_data, exact_eq8,
                                          exact_eq11, rel_gap):
    """Default step rule and eta0, active sets, a 4000-iteration budget:
    within TOLERANCES["subgradient"] of the exact optimum."""
    data, exact = (eq8_data, exact_eq8) if which == "eq8" else (eq11_data, exact_eq11)
    solver = ProjectedSubgradient(maxiter=4000)
    assert solver.active_set
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        r = solver.run(data)
    assert r.status in (Status.OPTIMAL, Status.MAX_ITER)
    assert r.method == "subgradient" and r.n_iter <= 4000
    if r.status == Status.MAX_ITER:
        assert any(issubclass(w.category, ConvergenceWarning) for w in caught)
    assert r.objective == pytest.approx(data.objective(r.M), rel=1e-12)
    assert np.linalg.eigvalsh(r.M)[0] >= -1e-10
    assert r.objective >= exact.objective * (1 - 1e-9) - 1e-12
    assert rel_gap(r.objective, exact.objective) <= SUBGRADIENT
    # its (ergodic) multipliers give a valid, if loose, lower bound
    assert r.certificate.dual_bound <= exact.objective * (1 + 1e-9) + 1e-12
