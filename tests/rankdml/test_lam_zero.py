"""``lam = 0`` (the first point of the paper's Fig. 7): certified where the
minimiser is bounded, refused (naming ``lam``) where it is not.

With a fixed trace the feasible set is compact: always well posed.  Without
one (Eq. 7, Eq. 11 as printed) the minimiser is bounded exactly when no
metric ``D`` in the cone has ``<D, K_t> >= 0`` for every triplet
(``RankData._bound_unregularised``)."""

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler

from cvxmetric._tolerances import tolerance
from cvxmetric.constraints import Triplets
from cvxmetric.rankdml import (
    RankData,
    RankDML,
    RankDMLSupervised,
    solve_exact,
    solve_fast,
)
from cvxmetric.rankdml.fast import warm_start

FAST = tolerance("rankdml", "fast")


def _rel(a, b):
    return abs(float(a) - float(b)) / max(1.0, abs(float(b)))


WELL_POSED = [
    dict(regularizer="laplacian", diagonal=True),  # Fig. 7: Eq. 10/11, lam = 0
    dict(regularizer="laplacian", diagonal=True, form="trace_fixed"),
    dict(regularizer="frobenius", diagonal=True),
    dict(regularizer="frobenius"),
    dict(regularizer="burg"),
    dict(regularizer="logdet"),
]


@pytest.mark.parametrize("cfg", WELL_POSED, ids=lambda c: "-".join(map(str, c.values())))
def test_lam_zero_is_certified_and_the_limit_of_small_lam(cfg, docs_iris):
    trip = docs_iris
    data = RankData.from_triplets(trip, lam=0.0, **cfg)
    res = solve_exact(data, warm_start=warm_start)
    assert res.status == "optimal" and res.certificate.passed
    # f*(0) <= f*(lam) and the small-lam optimum approaches it
    small = solve_exact(RankData.from_triplets(trip, lam=1e-6, **cfg), warm_start=warm_start)
    assert res.objective <= small.objective + 1e-6 * small.objective
    assert _rel(res.objective, small.objective) <= 1e-4
    if cfg.get("diagonal"):
        fast = solve_fast(data)
        assert fast.status == "optimal"
        assert _rel(fast.objective, res.objective) <= 10 * FAST


def test_diagonal_lam_zero_against_an_independent_lp(docs_iris):
    """Eq. 11 at lam = 0 is min sum_t [1 - k_t . a]_+ over a >= 0."""
    trip = docs_iris
    data = RankData.from_triplets(trip, regularizer="laplacian", diagonal=True, lam=0.0)
    X, T = trip.X, trip.indices
    K = (X[T[:, 0]] - X[T[:, 2]]) ** 2 - (X[T[:, 0]] - X[T[:, 1]]) ** 2
    a = cp.Variable(X.shape[1], nonneg=True)
    ref = cp.Problem(cp.Minimize(cp.sum(cp.pos(1 - K @ a)))).solve(solver=cp.CLARABEL)
    assert _rel(solve_exact(data, warm_start=warm_start).objective, ref) <= 1e-7


def test_estimators_accept_lam_zero(docs_iris):
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    est = RankDMLSupervised(regularizer="laplacian", lam=0, n_queries=30, n_top=3,
                            n_random=3, random_state=0).fit(X, y)
    assert est.status_ == "optimal"
    trip = docs_iris
    est = RankDML(regularizer="burg", lam=0.0, preprocessor=trip.X).fit(trip.indices)
    assert est.status_ == "optimal"


def _ordered():
    """Triplets the Euclidean metric already orders with a margin: D = I
    leaves every hinge argument non-increasing, so without a trace any
    solution plus c I is one too (unbounded minimisers)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 3))
    T = []
    for q in range(20):
        d = np.sum((X - X[q]) ** 2, axis=1)
        order = np.argsort(d)
        T.append((q, order[1], order[-1]))
    return Triplets.create(X, np.array(T))


@pytest.mark.parametrize("cfg", [dict(regularizer="frobenius"),
                                 dict(regularizer="frobenius", diagonal=True),
                                 dict(regularizer="laplacian", diagonal=True)])
def test_unbounded_minimiser_is_refused_naming_lam(cfg):
    with pytest.raises(ValueError, match="lam: 0 leaves this problem without a "
                                         "bounded minimiser"):
        RankData.from_triplets(_ordered(), lam=0.0, **cfg)
    trip = _ordered()
    with pytest.raises(ValueError, match="lam: 0"):
        RankDML(lam=0, preprocessor=trip.X, **cfg).fit(trip.indices)


def test_trace_fixed_is_well_posed_on_the_same_data():
    res = solve_exact(RankData.from_triplets(_ordered(), regularizer="logdet", lam=0.0))
    assert res.status == "optimal"


def test_fast_full_matrix_refuses_lam_zero(docs_iris):
    trip = docs_iris
    with pytest.raises(ValueError, match="lam: 0 with a full matrix"):
        RankDML(regularizer="burg", lam=0, solver="fast",
                preprocessor=trip.X).fit(trip.indices)


def test_negative_lam_is_still_refused(docs_iris):
    with pytest.raises(ValueError, match="lam"):
        RankData.from_triplets(docs_iris, lam=-1.0)
