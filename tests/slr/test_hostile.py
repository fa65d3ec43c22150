"""Hostile numbers: extreme scales, offsets, degenerate data (SLR).

Eq. 4 at ``sX`` is Eq. 4 at ``X`` with ``M -> s^2 M`` (the form is bilinear,
there is no regulariser): the optimum value is scale-free and the minimiser
scales as ``M(sX) = M(X) / s^2``.  It is not offset-invariant.  Every input
gets the right answer or a ``ValueError`` naming ``X``; never NaN/inf, a raw
library exception, or a wrong objective with status ``optimal``.
"""

import warnings

import numpy as np
import pytest

from cvxmetric.slr import SLR, AdaptiveRegression, SemismoothNewton, SLRData, solve_exact

SOLVERS = ("newton", "adaptive", "exact")


def small(seed=0):
    rng = np.random.RandomState(seed)
    y = np.repeat([0, 1, 2], 5)
    return 2.0 * rng.randn(3, 3)[y] + rng.randn(15, 3), y


@pytest.fixture(scope="module")
def reference():
    X, y = small()
    return X, y, SLR(solver="exact").fit(X, y)


def _fit(solver, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SLR(solver=solver, n_iter=3000).fit(X, y)


def _sane(est):
    assert np.isfinite(est.objective_)
    assert np.all(np.isfinite(est.bilinear_matrix_))
    assert (est.status_ == "optimal") == est.certificate_.passed


# -- the reproduction: 1e200, 1e-200, + 1e8 ----------------------------------


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("transform, match", [
    (lambda X: X * 1e200, "below float64's range|M_0 = I"),
    (lambda X: X * 1e-200, "beyond float64's range"),
    (lambda X: X + 1e8, "no matrix M in float64 represents"),
])
def test_reproduction_raises_instead_of_a_wrong_optimum(solver, transform, match):
    X, y = small()
    with pytest.raises(ValueError, match=match) as info:
        _fit(solver, transform(X), y)
    assert str(info.value).startswith("X:")


# -- the scaling law --------------------------------------------------------------


@pytest.mark.parametrize("s", [1e-150, 1e-6, 1e6, 1e150])
@pytest.mark.parametrize("solver", ["newton", "exact"])
def test_scaling_law_value_invariant_minimiser_over_s_squared(reference, s, solver):
    X, y, ref = reference
    est = _fit(solver, X * s, y)
    _sane(est)
    assert est.status_ == "optimal"
    assert est.objective_ == pytest.approx(ref.objective_, rel=1e-8)
    # the minimum-norm minimiser is unique here (rank X = d): M(sX) s^2 = M(X)
    M = (est.bilinear_matrix_ * s) * s
    np.testing.assert_allclose(M, ref.bilinear_matrix_, rtol=1e-5,
                               atol=1e-7 * np.abs(ref.bilinear_matrix_).max())


def test_algorithm_1_literal_m0_identity_in_the_users_units(reference):
    # start="identity" is the paper's M_0 = I; at 1e150 its similarities overflow
    X, y, _ = reference
    with pytest.raises(ValueError, match="M_0 = I"):
        AdaptiveRegression(maxiter=5, start="identity").run(SLRData.from_labels(X * 1e150, y))
    est = AdaptiveRegression(maxiter=3000, start="identity").run(
        SLRData.from_labels(X * 1e-100, y))  # K_0 = 1e-200 X X^T: fine
    assert est.status == "optimal"


@pytest.mark.parametrize("s", [1e-100, 1e150])
def test_algorithm_1_default_start_is_scale_equivariant(reference, s):
    # the default M_0 = (X^T X)^+ is I in whitened coordinates: the same run
    # at every scale, the same certified optimum as at scale 1
    X, y, ref = reference
    est = _fit("adaptive", X * s, y)
    _sane(est)
    assert est.status_ == "optimal"
    assert est.objective_ == pytest.approx(ref.objective_, rel=1e-6)
    a = AdaptiveRegression(maxiter=5).run(SLRData.from_labels(X, y), warn=False)
    b = AdaptiveRegression(maxiter=5).run(SLRData.from_labels(X * s, y), warn=False)
    assert b.objective == pytest.approx(a.objective, rel=1e-10)


def test_moderate_offset_is_solved_and_not_offset_invariant(reference):
    X, y, ref = reference
    a = _fit("newton", X + 1e4, y)
    b = _fit("exact", X + 1e4, y)
    _sane(a)
    assert a.status_ == b.status_ == "optimal"
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-8)
    assert abs(a.objective_ - ref.objective_) > 1.0  # a different problem


def test_offset_that_destroys_the_spread_is_the_constant_data():
    # 1e8 + 1e-10 x rounds to 1e8 exactly: X is constant (rank 1)
    X, y = small()
    Xd = 1e8 + 1e-10 * X
    assert np.all(Xd == 1e8)
    for solver in SOLVERS:
        est = _fit(solver, Xd, y)
        _sane(est)
        assert est.status_ == "optimal"
        # one similarity c for all pairs: 75 same-class, 150 different-class
        # pairs; min 75 (1 - c)^2 + 150 c^2 at c = 1/3: 50
        assert est.objective_ == pytest.approx(50.0, rel=1e-8)


def test_nearly_collinear_features_raise_or_certify():
    X, y = small(2)
    X[:, 2] = X[:, 0] + 1e-7 * np.random.RandomState(2).randn(15)
    for solver in SOLVERS:
        try:
            est = _fit(solver, X, y)
        except ValueError as exc:
            assert str(exc).startswith("X:") and "condition number" in str(exc)
        else:  # pragma: no cover - depends on the instance
            _sane(est)


# -- degenerate data -----------------------------------------------------------


def _cases():
    X, y = small()
    Xc = X.copy()
    Xc[:, 2] = Xc[:, 0] + Xc[:, 1]
    return {
        "duplicated points": (np.vstack([X, X]), np.concatenate([y, y])),
        "duplicated feature": (np.hstack([X, X[:, :1]]), y),
        "collinear features": (Xc, y),
        "d = 1": (X[:, :1], y),
        "n = 2": (X[[0, 5]], np.array([0, 1])),
        "one-sample class": (X[:11], y[:11]),
        "constant": (np.ones((15, 3)), y),
        "mixed column scales": (X * np.array([1e-150, 1.0, 1e150]), y),
        "subnormal entries": (np.where(np.abs(X) < 0.5, 1e-310, X), y),
    }


@pytest.mark.parametrize("name", list(_cases()))
def test_degenerate_inputs_are_certified_and_agree(name):
    X, y = _cases()[name]
    results = {}
    for solver in ("newton", "exact"):
        est = _fit(solver, X, y)
        _sane(est)
        assert est.status_ == "optimal", (name, solver)
        results[solver] = est.objective_
    assert results["newton"] == pytest.approx(results["exact"], rel=1e-7, abs=1e-9)


def test_duplicated_points_double_every_sum():
    # each pair (i, j) appears 4 times, the optimum is 4 times the original
    X, y = small()
    a = _fit("newton", X, y)
    b = _fit("newton", np.vstack([X, X]), np.concatenate([y, y]))
    assert b.objective_ == pytest.approx(4.0 * a.objective_, rel=1e-8)


def test_two_samples_are_separable():
    X, y = small()
    est = _fit("newton", X[[0, 5]], np.array([0, 1]))
    assert est.objective_ == pytest.approx(0.0, abs=1e-12)
    assert est.status_ == "optimal"


@pytest.mark.parametrize("bad, match", [
    (np.zeros((15, 3)), "all samples are zero"),
    (np.full((15, 3), np.nan), "NaN"),
    (np.full((15, 3), np.inf), "infinity"),
])
def test_invalid_samples(bad, match):
    _, y = small()
    with pytest.raises(ValueError, match=match):
        SLR().fit(bad, y)


def test_one_class_is_refused():
    X, _ = small()
    with pytest.raises(ValueError, match="2 classes|class"):
        SLR().fit(X, np.zeros(15, dtype=int))


def test_solvers_direct_raise_value_error_not_nan():
    X, y = small()
    for Xs in (X * 1e200, X * 1e-200, X + 1e8):
        data = SLRData.from_labels(Xs, y)
        for run in (lambda: SemismoothNewton().run(data),
                    lambda: solve_exact(data)):
            with pytest.raises(ValueError, match="^X:"):
                run()


# ---------------------------------------------------------------------------
# Algorithms 2 and 3 (randomized, lowrank) at extreme scales: the runs are on
# rows of unit mean square norm, so at s X they are the runs at X with
# M / s^2 (same sketches, same objective), or a ValueError naming X where
# that M is not representable.
# ---------------------------------------------------------------------------

SCALABLE = [dict(solver="randomized", n_sketch=10),
            dict(solver="randomized", n_sketch=10, sketch="columns"),
            dict(solver="lowrank", rank=2),
            dict(solver="lowrank", rank=2, n_sketch=10)]


def _fit_quiet(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SLR(random_state=0, **kw).fit(X, y)


@pytest.mark.parametrize("kw", SCALABLE, ids=lambda kw: "-".join(map(str, kw.values())))
def test_scalable_solvers_scale_equivariant(kw):
    X, y = small()
    ref = _fit_quiet(X, y, **kw)
    for s in (1e150, 1e-150, 3.7):
        est = _fit_quiet(X * s, y, **kw)
        _sane(est)
        assert abs(est.objective_ - ref.objective_) <= 1e-10 * ref.objective_
        M = (est.bilinear_matrix_ * s) * s
        np.testing.assert_allclose(M, ref.bilinear_matrix_, rtol=1e-9,
                                   atol=1e-9 * np.abs(ref.bilinear_matrix_).max())


@pytest.mark.parametrize("kw", SCALABLE, ids=lambda kw: "-".join(map(str, kw.values())))
def test_scalable_solvers_unrepresentable_refused(kw):
    """At 1e200 the learned M (of order 1e-400) underflows, at 1e-160 (of
    order 1e320) it overflows: a ValueError naming X, not an objective of
    inf or a LinAlgError."""
    X, y = small()
    for s in (1e200, 1e-160):
        with pytest.raises(ValueError, match=r"^X: the learned M"):
            _fit_quiet(X * s, y, **kw)
