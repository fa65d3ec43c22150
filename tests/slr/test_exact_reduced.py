"""SLR exact path by the margin-set reduction (``solve_exact(reduce=...)``).

The reduced model keeps the near-margin terms' hinges, sums the active
ones into one quadratic form and leaves the inactive ones out; its point is
certified on the whole Eq. 4, and inconsistent partitions are repaired in
rounds.  Compared here with the whole symmetric form on the same data.
"""

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler

import cvxmetric.slr.exact as exact
from cvxmetric.slr import SLRData
from cvxmetric.slr.exact import solve_exact
from cvxmetric.slr.fast import warm_start


def wine(n=120, seed=0):
    X, y = load_wine(return_X_y=True)
    idx = np.random.RandomState(seed).permutation(len(y))[:n]
    return SLRData.from_labels(StandardScaler().fit_transform(X[idx]), y[idx])


def separable(n=60, d=8, seed=0):
    # three tight, far-apart classes: some bilinear form separates them
    rng = np.random.RandomState(seed)
    y = np.arange(n) % 3
    X = 10.0 * np.eye(d)[y] + 0.01 * rng.randn(n, d)
    return SLRData.from_labels(X, y)


def rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


@pytest.mark.parametrize("seed", [0, 1])
def test_reduced_equals_whole_form(seed):
    data = wine(seed=seed)
    full = solve_exact(data, reduce=False)
    red = solve_exact(data, reduce=True, warm_start=warm_start)
    assert full.status == red.status == "optimal"
    assert red.info["reduced"] and "reduced" not in full.info
    assert rel(red.objective, full.objective) <= 1e-8
    sizes = red.info["round_sizes"][0]
    n_ordered = data.n_samples ** 2
    assert sizes["active"] + 2 * sizes["margin"] < n_ordered  # a reduction


def test_separable_data_certified_zero():
    data = separable()
    res = solve_exact(data, reduce=True, warm_start=warm_start)
    assert res.status == "optimal" and res.certificate.passed
    assert res.objective <= 1e-6
    assert res.certificate.dual_bound == 0.0


def test_inconsistent_partition_is_repaired(monkeypatch):
    import cvxmetric.slr.fast as fast

    data = wine(seed=2)
    ref = solve_exact(data, reduce=False)
    # the partition guessed from two Newton steps and a thin band is wrong:
    # the rounds repair it
    real_run = fast.SemismoothNewton.run

    def rough(self, data, init=None, *, warn=True):
        return real_run(fast.SemismoothNewton(maxiter=2), data, init, warn=False)

    monkeypatch.setattr(fast.SemismoothNewton, "run", rough)
    monkeypatch.setattr(exact, "MARGIN_TERMS", 5)
    monkeypatch.setattr(exact, "MARGIN_BAND", 1e-6)
    res = solve_exact(data, reduce=True, warm_start=warm_start)
    assert res.status == "optimal"
    assert res.info.get("reduced") and len(res.info["round_sizes"]) >= 2
    assert rel(res.objective, ref.objective) <= 1e-8


def test_reduction_failure_falls_back_to_whole_form(monkeypatch):
    data = wine(n=60)
    monkeypatch.setattr(exact, "_reduced_solve", lambda *a, **k: None)
    # the patched reduction does not look at the warm start
    res = solve_exact(data, reduce=True, warm_start=lambda data: None)
    assert res.status == "optimal" and "reduced" not in res.info


def test_without_a_warm_start_the_whole_form_is_solved(monkeypatch):
    data = wine(n=60)
    monkeypatch.setattr(exact, "_reduced_solve", None)  # not reached
    res = solve_exact(data, reduce=True)
    assert res.status == "optimal" and "reduced" not in res.info


def test_bad_arguments():
    data = wine(n=40)
    with pytest.raises(ValueError, match="reduce"):
        solve_exact(data, reduce="yes")
    with pytest.raises(ValueError, match="max_rounds"):
        solve_exact(data, max_rounds=0)
    with pytest.raises(ValueError, match="form"):
        solve_exact(data, form="dense")
