"""Qwise estimators with default (or single) settings: what the user's
parameters mean.

``n_iter_`` counts the iterations ``max_iter`` bounds, and a solver choice
that needs another setting gets it from the defaults.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from cvxmetric import QwiseSupervised, QwiseVectorSupervised


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.mark.parametrize("solver", ["fast", "subgradient"])
@pytest.mark.parametrize("max_iter", [1, 2, 65])
def test_n_iter_counts_max_iter(iris, solver, max_iter):
    """``max_iter=1`` stops after one iteration and says so (the fast solver
    checks its gap every 64 iterations; the block never runs past
    ``max_iter``)."""
    X, y = iris
    est = QwiseSupervised(solver=solver, max_iter=max_iter, random_state=0)
    with pytest.warns(ConvergenceWarning):
        est.fit(X, y)
    assert est.n_iter_ == max_iter
    assert est.status_ == "max_iter_reached"


@pytest.mark.parametrize("max_iter", [1, 2])
def test_vector_newton_n_iter_counts_max_iter(iris, max_iter):
    X, y = iris
    est = QwiseVectorSupervised(solver="newton", max_iter=max_iter, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    assert est.n_iter_ <= max_iter


# ---------------------------------------------------------------------------
# solver="newton" as written: the loss follows the solver
# ---------------------------------------------------------------------------


def test_vector_supervised_newton_as_written(iris):
    """``QwiseVectorSupervised(solver="newton")`` fits with the smoothed loss
    Algorithm 2 solves, to the optimum the exact path certifies for it."""
    X, y = iris
    est = QwiseVectorSupervised(solver="newton", random_state=0).fit(X, y)
    assert est.status_ == "optimal"
    assert est.loss_ == "huber"
    ref = QwiseVectorSupervised(loss="huber", random_state=0).fit(X, y)
    assert ref.status_ == "optimal"
    assert abs(est.objective_ - ref.objective_) <= 1e-5 * max(1.0, ref.objective_)
    # the exact path's own default is Eq. 14 as printed
    hinge = QwiseVectorSupervised(random_state=0).fit(X, y)
    assert hinge.loss_ == "hinge" and hinge.status_ == "optimal"


@pytest.mark.parametrize("psi", ["squared", "linear"])
def test_vector_newton_as_written(iris, psi):
    from cvxmetric import QwiseVector, quadruplets_from_labels

    X, y = iris
    quads = quadruplets_from_labels(y, 200, random_state=0)
    est = QwiseVector(psi=psi, solver="newton", preprocessor=X).fit(quads)
    assert est.status_ == "optimal" and est.loss_ == "huber"


def test_vector_newton_with_hinge_refused(iris):
    """An explicit ``loss="hinge"`` with Algorithm 2 is refused naming loss."""
    X, y = iris
    with pytest.raises(ValueError, match=r"^loss: "):
        QwiseVectorSupervised(solver="newton", loss="hinge", n_constraints=50,
                              random_state=0).fit(X, y)


@pytest.mark.parametrize("solver", ["fast", "cutting_plane"])
def test_structural_max_iter_warns(iris, solver):
    """A structural fit stopped by ``max_iter`` counts its iterations and
    says so with a ConvergenceWarning (the fast path too)."""
    from cvxmetric.qwise_structural import QwiseStructuralSupervised

    X, y = iris
    est = QwiseStructuralSupervised(solver=solver, max_iter=2, random_state=0)
    with pytest.warns(ConvergenceWarning):
        est.fit(X, y)
    assert est.n_iter_ == 2 and est.status_ == "max_iter_reached"


@pytest.mark.parametrize("solver", ["exact", "newton"])
def test_vector_supervised_raw_wine(solver):
    """Raw wine (features from 0.1 to 1 700): each feature is scaled in the
    twin (Jacobi), so the default exact path certifies it (it stopped at a
    gap of 1.8 after 210 s with one scale for all features)."""
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    est = QwiseVectorSupervised(solver=solver, random_state=0).fit(X, y)
    assert est.status_ == "optimal"
    sigma = est.result_.info.get("feature_scale")
    if sigma is not None:  # newton records the per-feature scales
        assert np.ptp(np.log2(sigma)) >= 10


def test_default_solver_is_fast_and_certified(iris):
    """The default solver is the fast one, certified like the exact path."""
    X, y = iris
    est = QwiseSupervised(random_state=0).fit(X, y)
    assert est.result_.method == "fast" and est.status_ == "optimal"
    ref = QwiseSupervised(solver="exact", random_state=0).fit(X, y)
    assert abs(est.objective_ - ref.objective_) <= 1e-6 * max(1.0, ref.objective_)
