"""SCML's fast solvers against the exact optimum: the certified working set
at the family's tolerance, the paper's stochastic method reported."""

import numpy as np
import pytest

from cvxmetric._tolerances import tolerance
from cvxmetric.scml import SCMLData, SCMLStochastic, SCMLWorkingSet, solve_exact
from cvxmetric.scml.exact import simplex_multipliers
from cvxmetric.scml.fast import RestrictedDual


def blobs(n_per_class=12, n_classes=3, d=4, seed=0):
    rng = np.random.RandomState(seed)
    y = np.repeat(np.arange(n_classes), n_per_class)
    return rng.randn(n_classes, d)[y] + rng.randn(y.size, d), y


@pytest.mark.parametrize("basis,beta", [("lda", 1e-5), ("triplet_diffs", 1e-3)])
def test_working_set_reaches_the_exact_optimum(basis, beta):
    X, y = blobs()
    data = SCMLData.from_labels(X, y, basis=basis, beta=beta, n_basis=30,
                                random_state=0)
    exact = solve_exact(data)
    # a small first set, so that rounds add triplets
    fast = SCMLWorkingSet(init_size=20, max_add=30).run(data)
    assert fast.status == "optimal" and fast.certificate.passed
    gap = (fast.objective - exact.objective) / max(1.0, abs(exact.objective))
    assert abs(gap) <= tolerance("scml", "fast")
    assert len(fast.info["working_set_rounds"]) >= 2
    assert fast.info["working_set"] <= data.n_triplets
    np.testing.assert_allclose(fast.M, data.metric(fast.info["w"]))


@pytest.mark.parametrize("drop_margin", [0.0, None])
def test_dropping_triplets_keeps_the_optimum(drop_margin):
    """Triplets leave the set (margin below -drop_margin, multiplier at 0)
    or never do; the certified optimum is the exact one either way."""
    X, y = blobs(seed=2)
    data = SCMLData.from_labels(X, y, beta=1e-4, n_basis=30, random_state=0)
    exact = solve_exact(data)
    fast = SCMLWorkingSet(init_size=40, max_add=20, max_add_cols=5,
                          drop_margin=drop_margin).run(data)
    assert fast.status == "optimal" and fast.certificate.passed
    assert fast.objective == pytest.approx(exact.objective, rel=tolerance("scml", "fast"),
                                           abs=tolerance("scml", "fast"))
    dropped = sum(r["dropped"] for r in fast.info["working_set_rounds"])
    assert (dropped > 0) == (drop_margin is not None)


def test_restricted_dual_is_the_restricted_lp_warm_started():
    """The persistent HiGHS model, grown and shrunk, solves the same
    restricted LP as a solve from scratch (scipy's linprog)."""
    X, y = blobs(seed=4)
    data = SCMLData.from_labels(X, y, beta=1e-5, n_basis=20, random_state=0)
    rng = np.random.RandomState(0)
    order = rng.permutation(data.n_triplets)
    lp = RestrictedDual(data, 1e-10)
    lp.add(np.sort(order[:30]), np.arange(8))
    w, a = lp.solve()
    lp.add(np.sort(order[30:60]), np.arange(8, 20))
    w, a = lp.solve()
    lp.drop(data.margins(w), 0.0)
    lp.add(np.sort(order[60:90]))
    w, a = lp.solve()
    rows, cols = np.sort(lp.rows), np.sort(lp.cols)
    w_ref, a_ref = simplex_multipliers(data, rows, cols)
    assert a.mean() == pytest.approx(a_ref.mean(), rel=1e-9, abs=1e-12)
    # w and a are a primal-dual pair of the restricted LP: equal objectives
    hinge = np.maximum(0.0, data.margins(w)[rows])
    assert np.any(w > 0)
    assert (hinge.sum() / data.n_triplets + data.beta * w.sum()
            == pytest.approx(a.sum() / data.n_triplets, rel=1e-9))
    assert np.all(a[~np.isin(np.arange(data.n_triplets), rows)] == 0)
    assert np.all(w[~np.isin(np.arange(data.n_basis), cols)] == 0)


def test_stochastic_is_metric_learns_update_and_is_reported():
    X, y = blobs(seed=1)
    data = SCMLData.from_labels(X, y, n_basis=20, random_state=0)
    exact = solve_exact(data)
    sto = SCMLStochastic(maxiter=2000, output_iter=100, random_state=0)
    res = sto.run(data, warn=False)
    assert res.status == "max_iter_reached"
    assert res.objective >= exact.objective - 1e-9
    assert res.certificate.dual_bound <= exact.objective + 1e-9
    assert np.all(res.info["w"] >= 0)
    # reproducible with its seed
    again = SCMLStochastic(maxiter=2000, output_iter=100, random_state=0).run(
        data, warn=False)
    np.testing.assert_array_equal(res.info["w"], again.info["w"])
    # metric-learn's first step, by hand: w = -(1 / gamma) min(g + beta, 0) / (1e-3 + |g|)
    one = SCMLStochastic(maxiter=1, output_iter=1, random_state=0)
    idx = np.random.RandomState(0).randint(0, data.n_triplets, size=(1, 10))[0]
    g = data.C[idx].sum(axis=0) / 10  # at w = 0 every hinge is active
    w1 = -(1 / 5e-3) * np.minimum(g + data.beta, 0) / (1e-3 + np.abs(g))
    np.testing.assert_allclose(one.run(data, warn=False).info["w"], w1, rtol=1e-12)
    with pytest.raises(ValueError, match="output_iter"):
        SCMLStochastic(maxiter=10, output_iter=20)
