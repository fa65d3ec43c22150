"""A cannot-link far shorter than the other pairs (the hostile-input case:
a difference of 1e-150 next to unit-scale data).

``d_A >= 1`` on a cannot-link of length ``l`` forces ``||A||_F >= 1 / l^2``,
so the optimum is at least ``lam / (2 l^4)``; with one such pair along a
coordinate axis it is ``diag(1 / l^2, 0, ...)`` plus an O(1) part, and the
objective is ``lam / (2 l^4)`` up to a relative ``l^4``.  The fast solver
used to hang (full matrix) or stop at ``A = 0`` (diagonal) at ``l =
1e-150``, and at ``l = 1e-12`` to certify an objective 5e-6 too high (the
pair operator centred X before differencing, which rounds a short pair
between points far from the mean).  Now: the right answer while
``lam / l^4 <= 1e100``, a ``ValueError`` naming ``pairs`` beyond.
"""

import warnings

import numpy as np
import pytest

from cvxmetric.constraintdml.estimator import ConstraintDML

VARIANTS = [(True, False), (False, False), (True, True), (False, True)]
IDS = ["eq1", "eq4", "eq10", "eq10-hinge"]


def _data(length, offset=0.0):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 3))
    base = np.full(3, offset)
    X = np.vstack([X, base, base + [length, 0.0, 0.0]])
    pairs = np.array([[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11], [12, 13],
                      [20, 21]])
    y = np.array([1, 1, 1, -1, -1, -1, 1, -1])
    return X, pairs, y


def _fit(X, pairs, y, hard, diagonal, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ConvergenceWarning is a failure here
        return ConstraintDML(preprocessor=X, solver="fast", hard=hard,
                             diagonal=diagonal, **kw).fit(pairs, y)


@pytest.mark.parametrize("hard, diagonal", VARIANTS, ids=IDS)
@pytest.mark.parametrize("length", [1e-150, 1e-40, 1e-26])
def test_too_short_cannot_link_is_refused_naming_pairs(hard, diagonal, length):
    X, pairs, y = _data(length)
    with pytest.raises(ValueError, match=r"pairs: 1 cannot-link\(s\) are far shorter"):
        _fit(X, pairs, y, hard, diagonal)


@pytest.mark.parametrize("hard, diagonal", VARIANTS, ids=IDS)
@pytest.mark.parametrize("length", [1e-6, 1e-12, 1e-20, 1e-24])
def test_short_cannot_link_gives_the_right_answer(hard, diagonal, length):
    X, pairs, y = _data(length)
    est = _fit(X, pairs, y, hard, diagonal)
    assert est.status_ == "optimal" and est.certificate_.passed
    A = est.mahalanobis_matrix_
    # the cannot-link meets its margin in the user's data, not a rounded one
    phi = X[20] - X[21]
    assert abs(float(phi @ A @ phi) - 1.0) <= 1e-9
    expected = 0.5 / length**4  # lam = 1
    assert abs(est.objective_ - expected) <= 1e-9 * expected


def test_short_pair_between_points_far_from_the_mean():
    """The pair 1e-12 apart at coordinates ~3 (centring X first would round
    its difference by about 1e-5 relative)."""
    X, pairs, y = _data(1e-12, offset=3.0)
    phi = X[20] - X[21]
    est = _fit(X, pairs, y, True, False)
    assert est.status_ == "optimal"
    A = est.mahalanobis_matrix_
    assert abs(float(phi @ A @ phi) - 1.0) <= 1e-9
    expected = 0.5 / float(phi @ phi) ** 2
    assert abs(est.objective_ - expected) <= 1e-9 * expected


def test_uniformly_tiny_data_still_names_X():
    """When every cannot-link is that short the whole X is at a refused
    scale: the error names X (ConstraintData.normalized)."""
    X, pairs, y = _data(1.0)
    with pytest.raises(ValueError, match=r"^X: "):
        _fit(X * 1e-150, pairs, y, True, False)
