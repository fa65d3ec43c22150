"""A declared problem with a term or a constraint added is certified on its
own conic data (cvxmetric.certify): the certified path accepts a point only
when that certificate passes, and the bound never exceeds the modified
problem's optimum found independently."""

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler

from cvxmetric import (
    MMC,
    SLR,
    LDMLSupervised,
    Qwise,
    RankDML,
    pairs_from_labels,
    quadruplets_from_labels,
    triplets_from_labels,
)

pytestmark = pytest.mark.filterwarnings("ignore:Solution may be inaccurate")


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    idx = np.random.RandomState(0).choice(150, 45, replace=False)
    return X[idx], y[idx]


def _variant(dp, family):
    """One variant per family: a term or a constraint the family lacks."""
    if family == "qwise":
        return dp.add_term(0.05 * cp.sum(cp.abs(dp.M)))              # sparsity
    if family == "slr":
        return dp.add_term(5.0 * cp.sum_squares(dp.M))                # shrinkage
    if family in ("slr-l1", "ldml-l1"):
        return dp.add_term(0.05 * cp.sum(cp.abs(dp.M)))              # sparsity
    if family == "mmc":
        # a trace cap would be infeasible (Eq. 2 fixes the scale): cap the
        # largest diagonal entry at half its optimal value instead
        M = dp.matrix()
        k = int(np.argmax(np.diag(M)))
        return dp.add_constraint("cap", dp.M[k, k] <= 0.5 * M[k, k])
    trace = float(np.trace(dp.matrix()))
    return dp.add_constraint("trace", cp.trace(dp.M) <= 0.5 * trace)  # a cap


def _declared(iris, family):
    X, y = iris
    if family == "qwise":
        quads = quadruplets_from_labels(y, 40, random_state=0)
        return Qwise(preprocessor=X).declared_problem(quads, delta=1.0)
    if family == "mmc":
        return MMC(preprocessor=X).declared_problem(*pairs_from_labels(y, 20, random_state=0))
    if family == "rankdml":
        triplets = triplets_from_labels(y, 40, random_state=0)
        return RankDML(preprocessor=X).declared_problem(triplets)
    if family.startswith("slr"):
        return SLR().declared_problem(X[:30], y[:30])
    est = LDMLSupervised(random_state=0)    # "ldml" and "ldml-l1"
    return est.declared_problem(X[::3], y[::3])


@pytest.mark.parametrize("family", ["qwise", "mmc", "rankdml", "slr", "slr-l1", "ldml",
                                    "ldml-l1"])
def test_variant_is_certified(iris, family):
    dp = _declared(iris, family)
    dp.solve()
    assert not dp.modified
    _variant(dp, family)
    value = dp.solve()                       # judged by cvxmetric.certify
    cert = dp.certificate()
    assert cert.passed, cert.message
    assert cert.objective == pytest.approx(value)
    assert cert.dual_bound <= cert.objective + 1e-9 * max(1.0, abs(cert.objective))
    # the same problem, solved on its own by the other solver
    other = cp.Problem(dp.problem.objective, dp.problem.constraints)
    other.solve(solver="CLARABEL")
    assert cert.dual_bound <= other.value + 1e-7 * max(1.0, abs(other.value))
    assert cert.dual_bound == pytest.approx(other.value, rel=1e-6, abs=1e-7)
