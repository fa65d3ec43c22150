"""LDML Eq. 2 exact: certified with and without a regulariser, and the
infimum that is not attained is refused."""

import numpy as np
import pytest
from sklearn.datasets import load_iris

from cvxmetric import NotAttainedError
from cvxmetric.constraints import pairs_from_labels
from cvxmetric.ldml.exact import LDMLData, solve_exact


@pytest.fixture(scope="module")
def iris_pairs():
    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    _, keep = np.unique(X, axis=0, return_index=True)
    X, y = X[np.sort(keep)], y[np.sort(keep)]
    p, lab = pairs_from_labels(y, 200, random_state=0)
    return X, p, lab


@pytest.mark.parametrize("lam,reg", [(0.0, "trace"), (0.1, "trace"), (0.5, "frobenius")])
def test_exact_certified(iris_pairs, lam, reg):
    X, p, lab = iris_pairs
    data = LDMLData(X, p, lab, lam=lam, regularizer=reg)
    res = solve_exact(data)
    assert res.status == "optimal" and res.certificate.rel_gap <= 1e-6
    M, b = res.M, res.info["b"]
    assert res.objective == pytest.approx(data.objective(M, b), rel=1e-12)
    assert np.linalg.eigvalsh(M)[0] >= -1e-7
    # the bound is a lower bound at other points too
    rng = np.random.default_rng(0)
    tau = res.info["trace_bound"]
    for _ in range(5):
        A = rng.normal(size=M.shape) * 0.3
        P = M + A @ A.T
        assert data.dual_bound(P, b + rng.normal(), tau) <= res.objective + 1e-7
        assert data.objective(P, b) >= res.objective - 1e-7


def test_not_attained_is_refused():
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 10]
    y = np.r_[np.zeros(20), np.ones(20)]
    p, lab = pairs_from_labels(y, 50, random_state=0)
    with pytest.raises(NotAttainedError, match="separates"):
        solve_exact(LDMLData(X, p, lab))
    # a regulariser makes it attained
    assert solve_exact(LDMLData(X, p, lab, lam=0.1)).status == "optimal"
    with pytest.raises(NotAttainedError, match="same label"):
        solve_exact(LDMLData(X, p[lab == 1], lab[lab == 1], lam=1.0))


def test_bad_input(iris_pairs):
    X, p, lab = iris_pairs
    with pytest.raises(ValueError, match="lam"):
        LDMLData(X, p, lab, lam=-1.0)
    with pytest.raises(ValueError, match="regularizer"):
        LDMLData(X, p, lab, regularizer="l1")
    with pytest.raises(ValueError, match="pairs: 1 pair"):
        LDMLData(X, np.array([[0, 0]]), [1])
    with pytest.raises(ValueError, match="y"):
        LDMLData(X, p, lab[:-1])
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        LDMLData(bad, p, lab)
