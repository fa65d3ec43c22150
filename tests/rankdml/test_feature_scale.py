"""The exact path's per-feature scaling (B = D A D) and raw, unstandardised data.

* the scaled internal model is the declared problem rewritten exactly: at
  the same metric both objectives agree (every regulariser, the LogDet /
  Burg constant shift included, reduced models too), and its optimum is the
  declared optimum;
* its point is repaired in the scaled coordinates and certified in the
  data's units;
* default RankDML / RankDMLSupervised fits on raw scikit-learn data whose
  features span four orders of magnitude end ``optimal`` (they used to run
  past 200 s with every conic solve failing the certificate).
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.exceptions import ConvergenceWarning

from cvxmetric._tolerances import EXACT_GAP
from cvxmetric.constraints import Triplets, triplets_from_labels
from cvxmetric.rankdml import (
    RankData,
    RankDML,
    RankDMLModel,
    RankDMLSupervised,
    solve_exact,
)
from cvxmetric.rankdml.exact import _feature_scale, _solve_exact
from cvxmetric.rankdml.fast import warm_start
from cvxmetric.result import SolverError

#: per-feature units of the badly scaled copies of the test data
UNITS = np.array([1e-1, 1.0, 3e1, 1e3])


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


def _point(data, rng):
    """A feasible metric of ``data`` (PSD / nonnegative, trace tau)."""
    d = data.n_features
    if data.diagonal:
        a = rng.uniform(0.2, 2.0, d)
    else:
        G = rng.normal(size=(d, d))
        a = G @ G.T / d + 0.3 * np.eye(d)
    if data.trace_fixed:
        a = a * (data.tau / (a.sum() if data.diagonal else np.trace(a)))
    return a


def _set_scaled(model, data, a):
    """Put ``a`` (data units) into a scaled model's variable and slacks."""
    D = model.scale
    model.A.value = D * D * a if data.diagonal else (D[:, None] * a) * D[None, :]
    if model.eps is not None:
        model.eps.value = np.maximum(data.margins(a)[model.margin_index], 0.0)


@pytest.mark.parametrize("reduced", [False, True])
def test_scaled_model_objective_is_the_declared_one(rk, rank_triplets, reduced):
    # at any feasible metric, the scaled model's objective (with the slacks
    # at their hinges) is f(A) of the declared problem: the regulariser
    # survives the reparametrisation exactly (the LogDet / Burg constant
    # shift included), and so do the trace and the reduction's linear term
    rng = np.random.RandomState(3)
    D = np.array([0.5, 2.0, 8.0, 0.125])
    for _, kw in rk.KINDS:
        data = rk.make_data(rank_triplets, **kw)
        N = data.n_constraints
        margin = active = None
        a = _point(data, rng)
        if reduced:
            arg = data.margins(a)
            active = arg > 0.5
            margin = ~active
        model = RankDMLModel(data, margin=margin, active=active, scale=D)
        assert model.problem.is_dpp()
        _set_scaled(model, data, a)
        got = float(model.problem.objective.value)
        assert got == pytest.approx(data.objective(a), rel=1e-10, abs=1e-10), kw
        if data.trace_fixed:
            tr = model.constraints["trace"]
            assert abs(float(np.ravel(tr.violation())[0])) <= 1e-10 * data.tau
        assert np.all(np.ravel(model.constraints["triplets"].violation()) <= 1e-9)
        assert len(model.margin_index) == (N if margin is None else margin.sum())


def test_scaled_model_solves_to_the_declared_optimum(rk, rank_triplets, kind_data,
                                                    kind_exact):
    D = np.array([0.5, 2.0, 8.0, 0.125])
    res = RankDMLModel(kind_data, scale=D).solve()
    assert res.status == "optimal" and res.certificate.passed
    assert _rel(res.objective, kind_exact.objective) <= EXACT_GAP
    # the point returned is in the data's units and feasible there
    viol, min_eig = kind_data.violation(res.M)
    assert min_eig >= -1e-12 * max(1.0, float(np.abs(res.M).max()))
    assert viol <= 1e-9 * max(1.0, kind_data.tau or 1.0)


def test_scale_must_be_powers_of_two(rank_triplets):
    data = RankData.from_triplets(rank_triplets)
    with pytest.raises(ValueError, match="scale: .*powers of two"):
        RankDMLModel(data, scale=np.array([1.0, 3.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="scale: expected 4 positive"):
        RankDMLModel(data, scale=np.array([1.0, 0.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="scale: expected 4 positive"):
        RankDMLModel(data, scale=np.ones(3))


def test_feature_scale_follows_the_columns_units(rank_triplets):
    X = rank_triplets.X
    base = _feature_scale(RankData.from_triplets(rank_triplets))
    base = np.ones(4) if base is None else base
    scaled = RankData.from_triplets(Triplets(X * UNITS, rank_triplets.indices))
    D = _feature_scale(scaled)
    # powers of two, within a factor 2 of the units times the unit scale
    assert np.array_equal(np.ldexp(1.0, np.frexp(D)[1] - 1), D)
    ratio = D / (base * UNITS)
    assert np.all((ratio >= 0.25) & (ratio <= 4.0)), ratio
    # a constant feature keeps 1
    Xc = X.copy()
    Xc[:, 2] = 5.0
    Dc = _feature_scale(RankData.from_triplets(Triplets(Xc, rank_triplets.indices)))
    assert Dc is None or Dc[2] == 1.0


def test_badly_scaled_columns_certified_like_the_declared_model(rk, rank_triplets):
    # the same triplets with columns in units 0.1 .. 1000: the exact path
    # (scaled) certifies, and agrees with the declared model solved in the
    # data's units where that one certifies (CertificateError is a
    # SolverError)
    t = Triplets(rank_triplets.X * UNITS, rank_triplets.indices)
    for kw in ({}, {"regularizer": "logdet"}, {"regularizer": "burg"},
               {"diagonal": True}):
        data = RankData.from_triplets(t, lam=0.8, **kw)
        res = solve_exact(data, warm_start=warm_start)
        assert res.status == "optimal" and res.certificate.passed, kw
        assert res.certificate.rel_gap <= EXACT_GAP
        assert res.objective == pytest.approx(data.objective(res.M), rel=1e-12)
        try:
            ref = _solve_exact(data, reduce=False, scaled=False, solvers=("CLARABEL",))
        except SolverError:
            continue  # (Clarabel fails on the unscaled Burg model: measured)
        assert _rel(res.objective, ref.objective) <= 2 * EXACT_GAP, kw


def _fit_quietly(est, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return est.fit(*args)


def test_raw_wine_defaults_are_certified():
    # features from 0.12 (hue) to 314 (proline): 2 000 triplets from labels
    X, y = load_wine(return_X_y=True)
    t = triplets_from_labels(y, 2000, random_state=0)
    est = _fit_quietly(RankDML(preprocessor=X), t)
    assert est.status_ == "optimal" and est.certificate_.passed
    assert est.certificate_.rel_gap <= EXACT_GAP
    sup = _fit_quietly(RankDMLSupervised(random_state=0), X, y)
    assert sup.status_ == "optimal" and sup.certificate_.passed


def test_raw_breast_cancer_supervised_default_is_certified():
    X, y = load_breast_cancer(return_X_y=True)
    est = _fit_quietly(RankDMLSupervised(random_state=0), X, y)
    assert est.status_ == "optimal" and est.certificate_.passed
    assert est.certificate_.rel_gap <= EXACT_GAP
