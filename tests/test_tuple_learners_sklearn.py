"""scikit-learn's estimator checks, as they apply to tuple input.

``check_estimator`` feeds ``fit(X, y)`` with a sample matrix; the tuple
learners (``MMC``, ``ConstraintDML``, ``Qwise``, ``RankDML``) take pairs,
triplets or quadruplets instead, so the checks that build their own ``X``
do not apply to them (their ``fit(X, y)`` counterparts,
``MMCSupervised`` and the others, pass every check:
``tests/*/test_estimator.py``).  As metric-learn does, the checks that
make sense for tuples are restated here with tuples drawn from iris:
fit returns self and does not touch parameters, refitting is idempotent,
methods do not change the estimator, ``clone`` / ``get_params`` /
``set_params`` and pickling round-trip, ``n_features_in_``, NaN refused
with a message naming the argument, array-likes accepted, and model
selection (``cross_val_score``, ``GridSearchCV``) without ``scoring``.
"""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.model_selection import KFold, cross_val_score
from sklearn.preprocessing import StandardScaler

from cvxmetric import (
    MMC,
    ConstraintDML,
    Qwise,
    QwiseVector,
    RankDML,
    pairs_from_labels,
    quadruplets_from_labels,
    triplets_from_labels,
)


def _iris():
    X, y = load_iris(return_X_y=True)
    _, keep = np.unique(X, axis=0, return_index=True)  # iris repeats samples
    keep = np.sort(keep)
    return StandardScaler().fit_transform(X[keep]), y[keep]


X, Y = _iris()


def _case(name):
    """(estimator, fit args) on tuples of indices into ``preprocessor=X``."""
    if name == "MMC":
        P, L = pairs_from_labels(Y, 80, random_state=0)
        return MMC(preprocessor=X, solver="fast"), (P, L)
    if name == "ConstraintDML":
        P, L = pairs_from_labels(Y, 80, random_state=0)
        return ConstraintDML(preprocessor=X, solver="fast"), (P, L)
    if name == "Qwise":
        return Qwise(preprocessor=X, solver="fast"), (quadruplets_from_labels(Y, 80, random_state=0),)
    if name == "QwiseVector":
        return (QwiseVector(preprocessor=X, loss="huber", solver="newton"),
                (quadruplets_from_labels(Y, 80, random_state=0),))
    return RankDML(preprocessor=X, solver="fast"), (triplets_from_labels(Y, 80, random_state=0),)


NAMES = ["MMC", "ConstraintDML", "Qwise", "QwiseVector", "RankDML"]
METHODS = ("predict", "decision_function", "score", "transform")


def _call(est, method, args):
    if method == "transform":
        return est.transform(X)
    if method == "score":
        return est.score(*args)
    return getattr(est, method)(args[0])


@pytest.mark.parametrize("name", NAMES)
def test_fit_returns_self_and_keeps_parameters(name):
    est, args = _case(name)
    params = {k: v for k, v in est.get_params().items() if k != "preprocessor"}
    public = {k for k in vars(est) if not k.endswith("_")}
    assert est.fit(*args) is est
    after = {k: v for k, v in est.get_params().items() if k != "preprocessor"}
    assert after == params
    # fit adds only private or fitted (trailing underscore) attributes
    assert {k for k in vars(est) if not k.endswith("_") and not k.startswith("_")} == public
    assert est.n_features_in_ == X.shape[1]


@pytest.mark.parametrize("name", NAMES)
def test_idempotent_and_methods_do_not_change_state(name):
    est, args = _case(name)
    first = est.fit(*args).get_mahalanobis_matrix()
    second = est.fit(*args).get_mahalanobis_matrix()
    np.testing.assert_allclose(first, second, rtol=1e-12, atol=1e-14)
    for method in METHODS:
        if not hasattr(est, method):
            continue
        before = {k: (v.copy() if isinstance(v, np.ndarray) else v)
                  for k, v in vars(est).items() if k != "preprocessor"}
        _call(est, method, args)
        for k, v in before.items():
            now = vars(est)[k]
            if isinstance(v, np.ndarray):
                np.testing.assert_array_equal(now, v)
            elif k not in ("result_", "certificate_"):
                assert now == v, k


@pytest.mark.parametrize("name", NAMES)
def test_clone_params_and_pickle(name):
    est, args = _case(name)
    est.fit(*args)
    c = clone(est)
    assert not hasattr(c, "components_")
    assert c.get_params().keys() == est.get_params().keys()
    fitted_with = est.solver
    c.set_params(solver="exact")
    assert c.solver == "exact" and est.solver == fitted_with != "exact"
    back = pickle.loads(pickle.dumps(est))
    for method in METHODS:
        if hasattr(est, method):
            np.testing.assert_array_equal(np.asarray(_call(back, method, args)),
                                          np.asarray(_call(est, method, args)))


@pytest.mark.parametrize("name", NAMES)
def test_points_lists_and_nan(name):
    est, args = _case(name)
    tuples = args[0]
    points = X[tuples]  # 3-D array of points, no preprocessor needed
    ref = est.fit(*args)
    est2 = clone(est).set_params(preprocessor=None)
    est2.fit(points, *args[1:])
    np.testing.assert_allclose(est2.get_mahalanobis_matrix(),
                               ref.get_mahalanobis_matrix(), rtol=1e-6, atol=1e-9)
    # nested lists as well as arrays
    est3 = clone(est).fit(tuples.tolist(), *[np.asarray(a).tolist() for a in args[1:]])
    np.testing.assert_allclose(est3.get_mahalanobis_matrix(),
                               ref.get_mahalanobis_matrix(), rtol=1e-12, atol=1e-14)
    bad = points.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN") as err:
        clone(est2).fit(bad, *args[1:])
    assert "[[" not in str(err.value)
    with pytest.raises(ValueError, match="NaN"):
        ref.decision_function(bad)


@pytest.mark.parametrize("name", NAMES)
def test_cross_validation_without_scoring(name):
    est, args = _case(name)
    cv = KFold(4, shuffle=True, random_state=0)
    scores = cross_val_score(est, *args[:1], y=args[1] if len(args) > 1 else None, cv=cv)
    assert scores.shape == (4,) and np.all(np.isfinite(scores))
    # by hand: fit on the training tuples, score on the held-out ones
    tuples = np.asarray(args[0])
    for s, (tr, te) in zip(scores, cv.split(tuples)):
        part = [np.asarray(a)[tr] for a in args]
        test = [np.asarray(a)[te] for a in args]
        assert clone(est).fit(*part).score(*test) == pytest.approx(s)
