"""OASIS (Chechik et al. 2010): the PA-I step, the loss going down, inputs."""

import cvxpy as cp
import numpy as np
import pytest

from cvxmetric.constraints import triplets_from_labels
from cvxmetric.slr.oasis import oasis, triplet_hinge_loss


def _separable(n=90, d=6, seed=0):
    """Classes separated in two coordinates, drowned by large nuisance ones:
    W = I ranks badly, a W that ignores the nuisance ranks perfectly."""
    rng = np.random.RandomState(seed)
    y = np.arange(n) % 3
    X = np.zeros((n, d))
    centers = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])
    X[:, :2] = 0.5 * centers[y] + 0.05 * rng.randn(n, 2)
    X[:, 2:] = 2.0 * rng.randn(n, d - 2)
    return X, y


@pytest.mark.parametrize("C", [1e-3, 10.0])
def test_first_step_is_the_pa_problem(C):
    """One step equals the PA-I problem solved by CVXPY:
    min 1/2 ||W - I||^2 + C xi  s.t.  1 - p^T W (p+ - p-) <= xi, xi >= 0."""
    X, y = _separable(n=30, d=3)
    W1 = oasis(X, y, 1, C=C, random_state=4)
    i, j, k = triplets_from_labels(y, 1, random_state=4)[0]
    p, v = X[i], X[j] - X[k]
    W = cp.Variable((3, 3))
    xi = cp.Variable(nonneg=True)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(W - np.eye(3)) + C * xi),
                      [1 - p @ W @ v <= xi])
    prob.solve(solver="CLARABEL")
    np.testing.assert_allclose(W1, W.value, atol=1e-6)


def test_loss_decreases_on_separable_problem():
    X, y = _separable()
    held = triplets_from_labels(y, 3000, random_state=99)
    losses = [triplet_hinge_loss(np.eye(X.shape[1]), X, held)]
    for steps in (200, 2000, 10000):
        losses.append(triplet_hinge_loss(oasis(X, y, steps, random_state=0), X, held))
    assert all(b < a for a, b in zip(losses, losses[1:]))
    assert losses[-1] < 0.1 * losses[0]
    _, info = oasis(X, y, 10000, random_state=0, return_info=True)
    run = info["losses"]
    assert run[-2000:].mean() < 0.5 * run[:2000].mean()  # measured 0.23
    assert 0 < info["n_updates"] < 10000


def test_deterministic_and_float32():
    X, y = _separable()
    a = oasis(X, y, 500, random_state=3)
    b = oasis(X, y, 500, random_state=3)
    np.testing.assert_array_equal(a, b)
    c = oasis(X, y, 500, random_state=3, dtype=np.float32)
    assert c.dtype == np.float64
    np.testing.assert_allclose(c, a, atol=1e-3)


@pytest.mark.parametrize("kwargs, err, match", [
    ({"n_steps": 0}, ValueError, "n_steps"),
    ({"C": 0.0}, ValueError, "C"),
    ({"C": -1.0}, ValueError, "C"),
    ({"dtype": np.int32}, ValueError, "dtype"),
])
def test_bad_arguments(kwargs, err, match):
    X, y = _separable()
    args = {"n_steps": 10}
    args.update(kwargs)
    with pytest.raises(err, match=match):
        oasis(X, y, **args)


def test_bad_data():
    X, y = _separable()
    with pytest.raises(ValueError, match="y"):
        oasis(X, np.zeros(len(y), int), 10)
    Xn = X.copy()
    Xn[1, 1] = np.nan
    with pytest.raises(ValueError, match="X"):
        oasis(Xn, y, 10)
