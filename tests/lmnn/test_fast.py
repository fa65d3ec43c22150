"""LMNN's fast solvers: the certified working set against the exact optimum,
its certificate over every triplet, max_time, and the paper's subgradient
method."""

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine

from cvxmetric import LMNN, formulation
from cvxmetric._tolerances import tolerance
from cvxmetric.lmnn import LMNNData, LMNNSubgradient, LMNNWorkingSet
from cvxmetric.lmnn import _collection as lc
from cvxmetric.lmnn.fast import scan


def _cases():
    X, y = load_iris(return_X_y=True)
    yield "iris", LMNNData(X, y)
    X, y = load_wine(return_X_y=True)
    yield "wine", LMNNData((X - X.mean(axis=0)) / X.std(axis=0), y)
    for b in lc.bundled_instances():
        yield b["name"], lc._to_data(b["arrays"], b["hyperparameters"])


CASES = dict(_cases())


@pytest.fixture(scope="module")
def exact():
    return {name: formulation("lmnn").solve_exact(data) for name, data in CASES.items()}


def _rel(f, ref):
    return (f - ref) / max(1.0, abs(ref))


@pytest.mark.parametrize("name", list(CASES))
def test_fast_reaches_the_exact_optimum(name, exact):
    data = CASES[name]
    res = LMNNWorkingSet().run(data)
    assert res.status == "optimal" and res.certificate.passed
    assert abs(_rel(res.objective, exact[name].objective)) <= tolerance("lmnn", "fast")
    # the certificate is LMNN's own, over every triplet
    assert res.objective == pytest.approx(data.objective(res.M), rel=1e-12)
    assert res.info["working_set"] <= data.n_triplets


def test_scan_agrees_with_the_blockwise_objective():
    data = CASES["iris"]
    M = np.diag([0.3, 1.0, 2.0, 0.5])
    found = scan(data, M, band=0.0)
    assert found.hinge == pytest.approx(data.hinge_sum(M), rel=1e-10)
    ids, ijl = data.triplets()
    Xd = data.X
    arg = 1 + np.einsum("td,de,te->t", Xd[ijl[:, 0]] - Xd[ijl[:, 1]], M,
                        Xd[ijl[:, 0]] - Xd[ijl[:, 1]]) \
        - np.einsum("td,de,te->t", Xd[ijl[:, 0]] - Xd[ijl[:, 2]], M,
                    Xd[ijl[:, 0]] - Xd[ijl[:, 2]])
    # (iris has ties: arguments at 0 up to round-off go either way)
    assert set(ids[arg > 1e-9]) <= set(found.ids) <= set(ids[arg > -1e-9])
    capped = scan(data, M, band=0.0, cap=10)
    assert capped.ids.size == 10
    assert np.min(capped.arg) >= np.sort(arg)[-10] - 1e-9


def test_a_violated_triplet_outside_the_set_is_picked_up():
    # an impostor moved onto the segment from its anchor to a target: the
    # triplet is violated at the first solve's metric, and it is taken out
    # of the working set, so only the pass over every triplet can find it
    X, y = load_iris(return_X_y=True)
    X, y = X[::3].copy(), y[::3]
    data0 = LMNNData(X, y)
    first = LMNNWorkingSet().run(data0)
    i = 0
    far = np.flatnonzero(y != y[i])[-1]
    X[far] = X[i] + 0.5 * (X[data0.targets[i, 0]] - X[i])
    data = LMNNData(X, y, targets=data0.targets)
    sid = (i * data.k + 0) * data.n_samples + far
    solver = LMNNWorkingSet()
    M, state = solver.init_state(data, first)
    assert sid in set(state.W)
    keep = state.W != sid
    state = state._replace(W=state.W[keep])
    M, state = solver.update(M, state, data)
    assert sid in set(state.W) and state.certificate is None
    res = solver.run(data, first)
    assert res.status == "optimal" and sid in set(res.info["triplet_ids"])
    ref = formulation("lmnn").solve_exact(data)
    assert abs(_rel(res.objective, ref.objective)) <= tolerance("lmnn", "fast")


def test_max_time_stops_with_a_status_that_says_so():
    data = CASES["wine"]
    with pytest.warns(Warning):
        res = LMNNWorkingSet(max_time=0.0).run(data)
    assert res.status != "optimal" and res.raw_status == "time_limit_reached"
    assert np.isfinite(res.certificate.dual_bound)
    res = LMNNSubgradient(max_time=0.0).run(data, warn=False)
    assert res.raw_status == "time_limit_reached"


@pytest.mark.parametrize("name", ["iris", "wine", "synthetic"])
def test_subgradient_decreases_and_its_bound_is_valid(name, exact):
    data = CASES[name]
    ref = exact[name].objective
    start = LMNNSubgradient(maxiter=15).run(data, warn=False)
    res = LMNNSubgradient().run(data, warn=False)
    assert res.objective <= start.objective
    assert res.objective >= ref * (1 - 1e-9)
    assert res.certificate.dual_bound <= ref * (1 + 1e-9)
    assert res.objective == pytest.approx(data.objective(res.M), rel=1e-12)


def test_estimator_solvers():
    X, y = load_iris(return_X_y=True)
    X = X[::2]
    y = y[::2]
    exact = LMNN(solver="exact").fit(X, y)
    auto = LMNN().fit(X, y)
    assert auto.objective_ == exact.objective_  # auto runs exact at this size
    fast = LMNN(solver="fast").fit(X, y)
    assert fast.status_ == "optimal"
    assert abs(_rel(fast.objective_, exact.objective_)) <= tolerance("lmnn", "fast")
    sub = LMNN(solver="subgradient", max_iter=30).fit(X, y)
    assert sub.n_iter_ <= 30 and sub.objective_ >= exact.objective_ * (1 - 1e-9)
    f = formulation("lmnn")
    assert [m.name for m in f.methods] == ["exact", "fast", "subgradient"]
    assert f.method("fast").role == "fast" and f.method("subgradient").role == "paper"


def test_fast_path_runs_in_feature_units_on_badly_scaled_features():
    """Features spread over 2^10 (raw pixels, raw wine): the working set is
    solved in per-feature units and certified in the user's."""
    X, y = load_iris(return_X_y=True)
    X = X * np.array([1.0, 1e-3, 1.0, 1e1])
    est = LMNN(solver="fast").fit(X, y)
    assert est.status_ == "optimal"
    assert "feature_exponents" in est.result_.info
    ref = LMNN(solver="exact").fit(X, y)
    assert est.objective_ == pytest.approx(ref.objective_, rel=tolerance("lmnn", "fast"))


def test_fast_path_runs_in_the_span_of_the_samples():
    """Features summing to one (a histogram's bins): the samples span d - 1
    directions; the working set is solved there and certified in R^d."""
    X, y = load_iris(return_X_y=True)
    H = X / X.sum(axis=1, keepdims=True)
    est = LMNN(solver="fast").fit(H, y)
    assert est.status_ == "optimal"
    assert est.result_.info["span"] == 3
    ref = LMNN(solver="exact").fit(H, y)
    assert est.objective_ == pytest.approx(ref.objective_, rel=tolerance("lmnn", "fast"))
