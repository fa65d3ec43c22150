"""Constraint-based DML on raw (unstandardised) data: features of very
different sizes (scikit-learn's wine as loaded spans 0.1 to 1000).

The exact model works in per-feature scaled coordinates
(``ConstraintDMLModel``: ``B = D A D``, ``D`` a power of two per feature);
before that the default ``ConstraintDML(preprocessor=X)`` raised
``CertificateError`` here (best relative gap 0.046).  Each solve is
certified, its objective and constraints are re-derived in the user's
units, and its optimum is compared with the fast solver's certified
optimum on the same instance where that one certifies.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_wine

import cvxmetric as cm
from cvxmetric._tolerances import EXACT_GAP, FEASIBILITY
from cvxmetric.constraintdml._problem import (
    ConstraintData,
    ConstraintDMLModel,
    _feature_exponents,
    solve_constraint_exact,
)
from cvxmetric.constraintdml.fast import ConstraintDualSolver
from cvxmetric.result import SolverError


def _rel(a, b):
    return abs(float(a) - float(b)) / max(1.0, abs(float(b)))


@pytest.fixture(scope="module")
def wine_pairs():
    X, y = load_wine(return_X_y=True)
    pairs, labels = cm.pairs_from_labels(y, 180, random_state=0)
    return X, pairs, labels


def _check_in_user_units(data, res):
    """Objective, feasibility and PSD-ness of ``res.M`` recomputed here."""
    M = res.M
    X = data.X
    diff = X[data.pairs[:, 0]] - X[data.pairs[:, 1]]
    dist = np.einsum("pi,ij,pj->p", diff, M, diff)
    dm = dist[data.must]
    loss = dm.sum() if data.hard else np.maximum(dm - 1.0, 0.0).sum()
    a = np.diag(M) if data.diagonal else M
    obj = loss + 0.5 * data.lam * np.sum(a * a)
    assert _rel(obj, res.objective) <= 1e-9
    tol = FEASIBILITY * max(1.0, abs(obj))
    assert dist[data.cannot].min() >= 1.0 - tol
    assert np.linalg.eigvalsh(M)[0] >= -tol
    # the bound of the certificate is valid: below the objective, within gap
    cert = res.certificate
    assert cert.passed
    assert cert.dual_bound <= res.objective + 1e-12 * abs(res.objective)
    assert cert.rel_gap <= EXACT_GAP


def test_default_pair_learner_certifies_raw_wine(wine_pairs):
    """The reproduction: default settings, raw wine, 180 pairs (Eq. 1)."""
    X, pairs, labels = wine_pairs
    est = cm.ConstraintDML(preprocessor=X).fit(pairs, labels)
    assert est.status_ == "optimal"
    data = ConstraintData.from_pairs(X, pairs, labels)
    _check_in_user_units(data, est.result_)


@pytest.mark.parametrize("hard, diagonal", [(False, False), (True, True)],
                         ids=["eq4", "eq10"])
def test_raw_wine_exact_matches_fast(wine_pairs, hard, diagonal):
    """Two independent methods, one optimum (where the fast one certifies)."""
    X, pairs, labels = wine_pairs
    data = ConstraintData.from_pairs(X, pairs, labels, hard=hard, diagonal=diagonal)
    exact = solve_constraint_exact(data)
    _check_in_user_units(data, exact)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = ConstraintDualSolver(maxiter=2000).run(data)
    assert fast.certificate.passed
    assert _rel(exact.objective, fast.objective) <= 2 * EXACT_GAP


def test_feature_scales_follow_the_features(wine_pairs):
    """``D`` is a power of two per feature: about the cannot-links' RMS
    (within a factor sqrt(2)), 1 for a column no pair moves."""
    X, pairs, labels = wine_pairs
    X = np.hstack([X, np.full((X.shape[0], 1), 3.0)])  # a constant column
    data = ConstraintData.from_pairs(X, pairs, labels)
    dn, _ = data.normalized()
    e = _feature_exponents(dn)
    diff = dn.X[dn.pairs[dn.cannot, 0]] - dn.X[dn.pairs[dn.cannot, 1]]
    rms = np.sqrt(np.mean(diff ** 2, axis=0))
    moved = rms > 0
    ratio = rms[moved] / np.ldexp(1.0, e[moved])
    assert np.all((ratio >= 2 ** -0.5 - 1e-12) & (ratio <= 2 ** 0.5 + 1e-12))
    assert e[-1] == 0
    # raw wine's features differ by orders of magnitude
    assert e[:-1].max() - e[:-1].min() >= 8


def test_metric_is_repaired_onto_the_cone(wine_pairs):
    """``A = D^{-1} B_+ D^{-1}``: PSD although ``B`` carries round-off
    eigenvalues; the repair never breaks a cannot-link."""
    X, pairs, labels = wine_pairs
    dn, _ = ConstraintData.from_pairs(X, pairs, labels).normalized()
    model = ConstraintDMLModel(dn)
    res = model.solve()
    B = model.A.value
    w = np.ldexp(1.0, -model.exponents)
    A = model.metric()
    assert np.linalg.eigvalsh(A)[0] >= -1e-12 * np.abs(A).max()
    # A is B_+ mapped back: the unrepaired map differs by at most the
    # clipped eigenvalues
    lo = min(0.0, float(np.linalg.eigvalsh(0.5 * (B + B.T))[0]))
    assert np.abs(A - 0.5 * (B + B.T) * np.outer(w, w)).max() <= (
        abs(lo) * np.outer(w, w).max() + 1e-9 * np.abs(A).max())
    assert dn.distances(A)[dn.cannot].min() >= 1.0 - 1e-7
    assert res.certificate.passed


def test_standardised_data_keep_unit_scales():
    """Balanced features give D within a factor 2 of the same value per
    feature (the scaling only matters on unbalanced data)."""
    rng = np.random.RandomState(0)
    X = rng.randn(40, 5)
    pairs = np.array([[i, i + 20] for i in range(20)])
    labels = np.where(np.arange(20) % 2 == 0, 1, -1)
    dn, _ = ConstraintData.from_pairs(X, pairs, labels).normalized()
    e = _feature_exponents(dn)
    assert e.max() - e.min() <= 2


# ---------------------------------------------------------------------------
# one cannot-link far shorter than the others
# ---------------------------------------------------------------------------


def _short_cannot_link(eps):
    """12 unit-scale points, 11 ordinary pairs, and a cannot-link (row 11)
    between x_0 and x_0 + eps e_1."""
    rng = np.random.RandomState(0)
    X = rng.randn(12, 3)
    X = np.vstack([X, X[0] + np.array([eps, 0.0, 0.0])])
    pairs = [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11], [1, 2], [3, 4],
             [5, 6], [7, 8], [9, 10], [0, 12]]
    labels = [1, 1, 1, -1, -1, -1, 1, -1, 1, -1, 1, -1]
    return X, np.array(pairs), np.array(labels)


@pytest.mark.parametrize("hard", [True, False], ids=["eq1", "eq4"])
def test_short_cannot_link_exact_agrees_with_fast_or_names_pairs(hard):
    """A 1e-12 cannot-link next to unit data at lam = 1: well posed (the
    optimum is about lam / (2 l^4) = 5e47, attained and representable),
    certified by the fast solver.  The exact path either certifies the same
    optimum or fails with an error naming ``pairs`` and the row -- never the
    bare "claimed infeasible" it used to raise, never a wrong answer."""
    X, pairs, labels = _short_cannot_link(1e-12)
    data = ConstraintData.from_pairs(X, pairs, labels, hard=hard, lam=1.0)
    length = float(np.linalg.norm(X[0] - X[12]))
    fast = ConstraintDualSolver().run(data)
    assert fast.certificate.passed
    # the forced regulariser, d_A >= 1 => ||A||_F >= 1 / l^2, dominates
    floor = 0.5 / length ** 4
    assert floor <= fast.objective <= floor * (1 + 1e-9)
    try:
        exact = solve_constraint_exact(data)
    except SolverError as exc:  # CertificateError included
        msg = str(exc)
        assert "pairs: 1 cannot-link(s)" in msg and "row 11 (0, 12)" in msg
        assert "solver='fast'" in msg
    else:
        assert exact.certificate.passed
        assert _rel(exact.objective, fast.objective) <= 2 * EXACT_GAP


def test_refined_model_solves_the_same_problem(wine_pairs):
    # the point's own coordinates are a change of variables: the refined
    # model's certified optimum is the first model's
    X, pairs, labels = wine_pairs
    data, _ = ConstraintData.from_pairs(X, pairs, labels, lam=1.0).normalized()
    model = ConstraintDMLModel(data)
    first = model.solve()
    refined = model.refined()
    assert refined is not None
    again = refined.solve()
    assert first.certificate.passed and again.certificate.passed
    assert _rel(again.objective, first.objective) <= 2 * EXACT_GAP
    diag = ConstraintDMLModel(ConstraintData.from_pairs(
        X, pairs, labels, lam=1.0, diagonal=True).normalized()[0])
    d1 = diag.solve()
    d2 = diag.refined().solve()
    assert _rel(d2.objective, d1.objective) <= 2 * EXACT_GAP


def test_raw_breast_cancer_supervised_defaults_certify_by_refinement():
    # effective lam ~1e-12: the tiny regulariser alone sets the optimum's
    # scale along directions the must-links barely see (||A|| ~ 3e7); the
    # first Clarabel point fails its certificate (gap 7.8e-4), the solve in
    # its own coordinates certifies (it raised CertificateError after 225 s)
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = cm.ConstraintDMLSupervised(random_state=0).fit(X, y)
    res = est.result_
    assert est.status_ == "optimal" and res.info.get("refined") is True
    # the objective and the constraints re-derived in the user's units
    _, pairs, labels = cm.ConstraintDMLSupervised(random_state=0)._sample(X, y)
    A = est.get_mahalanobis_matrix()
    phi = X[pairs[:, 0]] - X[pairs[:, 1]]
    dist = np.einsum("pi,ij,pj->p", phi, A, phi)
    f = float(np.sum(dist[labels == 1])) + 0.5 * float(np.sum(A * A))
    assert _rel(f, est.objective_) <= 1e-9
    assert dist[labels == -1].min() >= 1 - FEASIBILITY * max(1.0, f)
    assert res.certificate.dual_bound <= est.objective_
