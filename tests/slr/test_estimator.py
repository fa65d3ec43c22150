"""SLR estimator: scikit-learn contract, solvers, bilinear API, input validation."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from cvxmetric._tolerances import tolerance
from cvxmetric.slr import SLR, SLRData, solve_exact


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


@pytest.fixture(scope="module")
def Xy():
    rng = np.random.RandomState(0)
    y = np.repeat(["a", "b", "c"], 10)  # string labels are class labels
    codes = np.repeat([0, 1, 2], 10)
    X = rng.normal(size=(30, 4)) + rng.normal(size=(3, 4))[codes]
    return X, y


@pytest.fixture(scope="module")
def fitted(Xy):
    return SLR().fit(*Xy)


# ---------------------------------------------------------------------------
# scikit-learn's generic checks
# ---------------------------------------------------------------------------


@parametrize_with_checks([SLR(), SLR(solver="adaptive", n_iter=3, delta1=2.0)])
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_sklearn_compatible(estimator, check):
    check(estimator)


PARAMS = dict(delta1=2.0, delta2=-1.0, solver="adaptive", n_iter=7, n_sketch=5,
              rank=2, sketch="columns", tol=1e-7, max_iter=9, random_state=3,
              verbose=1)


def test_init_stores_arguments_only():
    est = SLR(**PARAMS)
    for key, val in PARAMS.items():
        assert getattr(est, key) is val
    assert not [a for a in vars(est) if a.endswith("_")]
    SLR(solver="nope", delta1="x", n_iter=-1)  # validated by fit, not here


def test_get_set_params_clone_repr(fitted):
    params = SLR(**PARAMS).get_params()
    assert SLR().set_params(**params).get_params() == params
    cl = clone(fitted)
    assert not hasattr(cl, "bilinear_matrix_")
    assert repr(SLR(solver="exact")) == "SLR(solver='exact')"


# ---------------------------------------------------------------------------
# Fitting with each solver
# ---------------------------------------------------------------------------


def test_newton_default_matches_exact(Xy, fitted):
    X, y = Xy
    exact = SLR(solver="exact").fit(X, y)
    assert fitted.status_ == "optimal" and exact.status_ == "optimal"
    assert _rel(fitted.objective_, exact.objective_) <= tolerance("slr", "newton")
    assert fitted.certificate_.passed
    codes = np.unique(y, return_inverse=True)[1]
    ref = solve_exact(SLRData.from_labels(X, codes))
    assert _rel(exact.objective_, ref.objective) <= 1e-9
    assert fitted.n_features_in_ == 4
    np.testing.assert_array_equal(fitted.classes_, ["a", "b", "c"])
    assert fitted.bilinear_matrix_.shape == (4, 4)
    assert fitted.result_.method == "newton"


def test_adaptive_runs_n_iter_and_warns(Xy):
    X, y = Xy
    with pytest.warns(ConvergenceWarning, match="adaptive did not converge"):
        est = SLR(solver="adaptive", n_iter=3, tol=1e-12).fit(X, y)
    assert est.n_iter_ == 3 and est.status_ == "max_iter_reached"
    best = SLR().fit(X, y)
    assert est.objective_ >= best.objective_ * (1 - 1e-9)


def test_adaptive_with_enough_iterations_matches(Xy, fitted):
    est = SLR(solver="adaptive", n_iter=5000, tol=1e-10).fit(*Xy)
    assert est.status_ == "optimal"
    assert _rel(est.objective_, fitted.objective_) <= tolerance("slr", "adaptive")


def test_randomized_and_lowrank_dispatch(Xy, fitted):
    from cvxmetric.slr import lowrank_slr, randomized_slr

    X, y = Xy
    codes = np.unique(y, return_inverse=True)[1]
    est = SLR(solver="randomized", n_sketch=20, sketch="columns",
              random_state=0).fit(X, y)
    direct = randomized_slr(X, codes, 20, sketch="columns", n_iter=10,
                            random_state=np.random.RandomState(0))
    np.testing.assert_allclose(est.bilinear_matrix_, direct.M)
    assert est.objective_ >= fitted.objective_ * (1 - 1e-9)
    est = SLR(solver="lowrank", rank=2, random_state=0).fit(X, y)
    direct = lowrank_slr(X, codes, 2, n_iter=10,
                         random_state=np.random.RandomState(0))
    np.testing.assert_allclose(est.bilinear_matrix_, direct.M)
    assert np.linalg.matrix_rank(est.bilinear_matrix_) <= 2
    # deterministic given random_state
    again = SLR(solver="lowrank", rank=2, random_state=0).fit(X, y)
    np.testing.assert_array_equal(again.bilinear_matrix_, est.bilinear_matrix_)


# ---------------------------------------------------------------------------
# The bilinear similarity
# ---------------------------------------------------------------------------


def test_pair_score_is_the_bilinear_form(Xy, fitted):
    X, _ = Xy
    M = fitted.get_bilinear_matrix()
    pairs = np.stack([X[:5], X[5:10]], axis=1)  # (5, 2, 4)
    expected = np.array([X[k] @ M @ X[5 + k] for k in range(5)])
    np.testing.assert_allclose(fitted.pair_score(pairs), expected)
    S = fitted.pairwise_similarity(X[:5], X[5:10])
    np.testing.assert_allclose(np.diag(S), expected)
    np.testing.assert_allclose(fitted.pairwise_similarity(X), X @ M @ X.T)
    M[0, 0] += 1.0  # a copy
    assert fitted.bilinear_matrix_[0, 0] != M[0, 0]


def test_scores_separate_the_classes(Xy, fitted):
    X, y = Xy
    S = fitted.pairwise_similarity(X)
    same = y[:, None] == y[None, :]
    assert S[same].mean() > 0.5 > S[~same].mean()


def test_not_a_mahalanobis_learner(fitted):
    for name in ("get_mahalanobis_matrix", "transform", "pair_distance",
                 "components_", "decision_function", "predict"):
        assert not hasattr(fitted, name)


def test_unfitted_and_bad_pairs(Xy, fitted):
    X, _ = Xy
    with pytest.raises(NotFittedError):
        SLR().pair_score(np.zeros((1, 2, 4)))
    with pytest.raises(ValueError, match="pairs: expected shape"):
        fitted.pair_score(np.zeros((3, 2, 5)))
    with pytest.raises(ValueError, match="pairs: expected a 3-D"):
        fitted.pair_score(X[:4])
    with pytest.raises(ValueError, match="pairs: contains"):
        fitted.pair_score(np.full((1, 2, 4), np.nan))
    with pytest.raises(ValueError, match="pairs: no pairs"):
        fitted.pair_score(np.zeros((0, 2, 4)))
    with pytest.raises(ValueError, match="4 features"):
        fitted.pairwise_similarity(np.zeros((2, 3)))


# ---------------------------------------------------------------------------
# Input validation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("params, match", [
    (dict(solver="dual"), "solver"),
    (dict(sketch="srht"), "sketch"),
    (dict(n_iter=0), "n_iter"),
    (dict(tol=0.0), "tol"),
    (dict(delta1=0.0), "delta1, delta2"),
    (dict(delta1=np.nan), "delta1"),
    (dict(solver="randomized", n_sketch=31), "n_sketch: must be <= n_samples = 30"),
    (dict(solver="lowrank", n_sketch=31, rank=1), "n_sketch: must be <="),
    (dict(solver="lowrank", rank=5), "rank: must be <= n_features = 4"),
])
def test_bad_parameters(Xy, params, match):
    with pytest.raises(ValueError, match=match):
        SLR(**params).fit(*Xy)


def test_bad_data(Xy):
    X, y = Xy
    with pytest.raises(ValueError, match="y: SLR needs at least 2 classes"):
        SLR().fit(X, np.zeros(30))
    with pytest.raises(ValueError, match="y: Unknown label type"):
        SLR().fit(X, np.linspace(0, 1, 30))
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        SLR().fit(Xn, y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        SLR().fit(X, y[:-1])


@pytest.mark.parametrize("solver", ["randomized", "lowrank"])
def test_scalable_solver_as_written(Xy, solver):
    """``SLR(solver="randomized")`` / ``"lowrank"`` need no other setting:
    ``n_sketch`` defaults to ``min(n, 20 d)``, ``rank`` to ``d``."""
    from sklearn.exceptions import ConvergenceWarning

    X, y = Xy
    with pytest.warns(ConvergenceWarning):
        est = SLR(solver=solver, random_state=0).fit(X, y)
    info = est.result_.info
    if solver == "randomized":
        assert info["n_sketch"] == min(X.shape[0], 20 * X.shape[1])
    else:
        assert info["rank"] == X.shape[1] and info["n_sketch"] is None
    assert np.isfinite(est.objective_) and est.status_ == "max_iter_reached"


@pytest.mark.parametrize("solver", ["adaptive", "randomized", "lowrank"])
def test_max_iter_with_a_fixed_T_solver_is_refused(solver):
    # these run n_iter iterations (the paper's T): max_iter was dropped silently
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match=r"^max_iter: .*n_iter"):
        SLR(solver=solver, max_iter=5).fit(X, y)
