"""SCML's fast solvers against the exact optimum: the certified working set
at the family's tolerance, the paper's stochastic method reported."""

import numpy as np
import pytest

from cvxmetric._tolerances import tolerance
from cvxmetric.scml import SCMLData, SCMLStochastic, SCMLWorkingSet, solve_exact


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
