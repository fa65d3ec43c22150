"""MildML (Eq. 7-8): the selection, the fixed-selection problem, singleton bags."""

import itertools

import numpy as np
import pytest

from cvxmetric.ldml import (
    AllPairs,
    BagPairs,
    LDMLData,
    PairSet,
    fit_lowrank,
    fit_mildml,
    solve_exact,
)
from cvxmetric.ldml._mildml import MildMLSolver


def _random_bags(n=30, D=5, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D))
    bags, i = [], 0
    while i < n:
        k = int(rng.integers(1, 4))
        bags.append(np.arange(i, min(n, i + k)))
        i += k
    caps = [rng.choice(4, size=int(rng.integers(0, 3)), replace=False) for _ in bags]
    return X, bags, caps, rng


def test_selection_is_the_closest_instance_pair():
    X, bags, caps, rng = _random_bags()
    data = BagPairs(X, bags, caps)
    L = rng.standard_normal((3, 5))
    Z = X @ L.T
    pairs, dist = data.select(Z)
    for p, (d, e) in enumerate(zip(data.d, data.e)):
        brute = min(np.sum((Z[a] - Z[c]) ** 2) for a, c in itertools.product(bags[d], bags[e]))
        assert np.isclose(dist[p], brute, rtol=1e-10, atol=1e-10)
        i, j = pairs[p]
        assert i in bags[d] and j in bags[e]
        assert np.isclose(np.sum((Z[i] - Z[j]) ** 2), brute, rtol=1e-10, atol=1e-10)
        # t_de: the captions share a label
        assert data.s[p] == (1 if set(caps[d]) & set(caps[e]) else -1)


def test_fixed_selection_is_ldml_on_the_selected_pairs():
    X, bags, caps, rng = _random_bags(24, 3, 5)
    data = BagPairs(X, bags, caps, lam=0.1)
    res = fit_mildml(data, 3, random_state=0, maxiter=30)
    pairs = res.info["selected"]
    keep = pairs[:, 0] != pairs[:, 1]
    L, b = res.info["L"], res.info["b"]
    exact_data = LDMLData(X, pairs[keep], data.s[keep].astype(int), lam=0.1)
    # the inner objective is Eq. 2 on the selected pairs ...
    inner = PairSet(X, pairs[keep], data.s[keep], lam=0.1)
    assert np.isclose(inner.value_grad(L, b, grad=False), exact_data.objective(L.T @ L, b),
                      rtol=1e-12)
    # ... whose optimum the low-rank gradient method reaches at full rank
    exact = solve_exact(exact_data)
    low = fit_lowrank(inner, 3, n_init=1, random_state=0)
    assert abs(low.objective - exact.objective) <= 1e-6 * max(1.0, abs(exact.objective))
    # and MildML's value is Eq. 8 at its own selection
    assert np.isclose(data.objective(L, b), res.objective, rtol=1e-12)


def test_singleton_bags_optimise_ldml():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((25, 4))
    y = rng.integers(0, 3, 25)
    data = BagPairs(X, [[i] for i in range(25)], [[c] for c in y], lam=0.05)
    loss = AllPairs(X, y, lam=0.05)
    L = rng.standard_normal((4, 4))
    assert np.isclose(data.objective(L, 0.4), loss.value_grad(L, 0.4, grad=False),
                      rtol=1e-12)
    mil = fit_mildml(data, 4, random_state=0, maxiter=3000, tol=1e-13)
    ldml = solve_exact(loss.pair_data())
    assert abs(mil.objective - ldml.objective) <= 1e-6 * abs(ldml.objective)


def test_objective_never_increases():
    X, bags, caps, rng = _random_bags(40, 6, 7)
    data = BagPairs(X, bags, caps)
    solver = MildMLSolver(rank=2, maxiter=1)
    L, b = rng.standard_normal((2, 6)), 1.0
    values = [data.objective(L, b)]
    for _ in range(15):
        res = solver.run(data, (L, b), warn=False)
        L, b = res.info["L"], res.info["b"]
        values.append(res.objective)
    assert np.all(np.diff(values) <= 1e-12 * abs(values[0]))
    assert values[-1] < values[0]


def test_bad_bags():
    X = np.random.default_rng(0).standard_normal((6, 2))
    with pytest.raises(ValueError, match=r"bags\[1\]: the bag is empty"):
        BagPairs(X, [[0, 1], [], [2]], [[0], [1], [0]])
    with pytest.raises(ValueError, match=r"bags\[1\]: index 9 is out of range"):
        BagPairs(X, [[0, 1], [9], [2]], [[0], [1], [0]])
    with pytest.raises(ValueError, match="bag_labels: expected one label set per bag"):
        BagPairs(X, [[0, 1], [2], [3]], [[0], [1]])
    with pytest.raises(ValueError, match="refer to nothing"):
        BagPairs(X, [[0, 1], [2], [3]], [[], [], []])
    with pytest.raises(ValueError, match="both pairs that share"):
        BagPairs(X, [[0, 1], [2], [3]], [[0], [0], [0]])
    with pytest.raises(ValueError, match="listed twice"):
        BagPairs(X, [[0, 0], [2], [3]], [[0], [1], [0]])


def test_selection_of_large_overlapping_bags_and_ties():
    # bags of up to 7 instances (beyond the running minimum's 16 instance
    # pairs), an instance in two bags (distance 0), and rounded coordinates
    # (exact ties): the smallest distance of every bag pair, from its bags
    rng = np.random.default_rng(4)
    X = np.round(rng.standard_normal((60, 3)) * 2) / 2
    bags, i = [], 0
    while i < 60:
        k = int(rng.integers(1, 8))
        bags.append(np.arange(i, min(60, i + k)))
        i += k
    bags.append(np.array([0, 59]))  # shares instances with the first and last bags
    caps = [rng.choice(3, size=int(rng.integers(1, 3)), replace=False) for _ in bags]
    data = BagPairs(X, bags, caps)
    pairs, dist = data.select(X)
    for p, (d, e) in enumerate(zip(data.d, data.e)):
        brute = min(np.sum((X[a] - X[c]) ** 2) for a, c in itertools.product(bags[d], bags[e]))
        i, j = pairs[p]
        assert i in bags[d] and j in bags[e]
        assert np.sum((X[i] - X[j]) ** 2) == brute
        assert abs(dist[p] - brute) <= 1e-12


def test_each_iteration_selects_once_per_trial_step():
    # the selection (and the distances) of the accepted trial point are kept
    # for the next iteration's gradient, not recomputed
    X, bags, caps, rng = _random_bags(60, 4, 2)
    data = BagPairs(X, bags, caps, lam=0.05)
    calls = {"select": 0, "distances": 0}
    select, distances = data.select, data.loss._distances

    def counted_select(Z):
        calls["select"] += 1
        return select(Z)

    def counted_distances(Z):
        calls["distances"] += 1
        return distances(Z)

    data.select, data.loss._distances = counted_select, counted_distances
    L0 = rng.standard_normal((4, 4))
    res = MildMLSolver(rank=4, maxiter=25, tol=1e-12).run(data, (L0, 0.5), warn=False)
    assert res.n_iter == 25
    # one selection and one distance pass per evaluation of Eq. 8: the start
    # and each trial step (at least one per iteration), none for gradients
    assert calls["distances"] == calls["select"]
    assert 1 + res.n_iter <= calls["select"] <= 1 + 3 * res.n_iter
    data.select, data.loss._distances = select, distances
    # the kept selection is that of the returned point
    L = res.info["L"]
    np.testing.assert_array_equal(res.info["selected"], data.select(X @ L.T)[0])
    assert data.objective(L, res.info["b"]) == res.objective


def test_a_deadline_inside_the_line_search_is_not_convergence():
    # every trial step is refused and slow: the budget runs out while the
    # line search is halving, which must end time_limit_reached (not a
    # stationary point, as a step too small to lower F would)
    import time

    X, bags, caps, rng = _random_bags(30, 3, 3)
    data = BagPairs(X, bags, caps, lam=0.05)
    evaluate = data._evaluate
    state = {"n": 0}

    def refused(L, b):
        state["n"] += 1
        f, pairs, dist = evaluate(L, b)
        if state["n"] == 1:
            return f, pairs, dist  # the start
        time.sleep(0.01)
        return np.inf, pairs, dist

    data._evaluate = refused
    res = MildMLSolver(rank=3, maxiter=50, max_time=0.05).run(
        data, (rng.standard_normal((3, 3)), 0.5), warn=False)
    assert res.raw_status == "time_limit_reached"
    assert res.status == "time_limit_reached"
