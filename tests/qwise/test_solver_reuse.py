"""One solver object runs any number of solves: everything a run needs lives in
its state (and its working-set record), nothing on the solver.

The same :class:`QwiseDualSolver` (and :class:`StructuralCuttingPlane`) run
on two different instances, one after the other and interleaved iteration by
iteration, gives exactly what two fresh objects give.
"""

import numpy as np
import pytest

from cvxmetric.constraints import LabeledPairs, Quadruplets
from cvxmetric.qwise import QwiseData, QwiseDualSolver
from cvxmetric.qwise_structural import StructuralCuttingPlane, StructuralData


def _instance(seed, n=30, d=4, n_quads=60, n_pairs=20):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    quads = Quadruplets.create(X, rng.randint(0, n, size=(n_quads, 4)), 1.0)
    idx = rng.randint(0, n, size=(n_pairs, 2))
    idx = idx[idx[:, 0] != idx[:, 1]]
    labels = np.where(np.arange(len(idx)) % 2 == 0, 1, -1)
    pairs = LabeledPairs.create(X, idx, labels)
    return quads, pairs


@pytest.fixture(scope="module")
def two_problems():
    (qa, pa), (qb, pb) = _instance(0), _instance(1, d=3, n_quads=45)
    return (QwiseData.from_sets(qa, pa, regularizer="trace", C_p=0.5, u=1.0, l=3.0),
            QwiseData.from_sets(qb, pb, regularizer="frobenius", u=0.5, l=2.0))


def _same(r, s):
    np.testing.assert_array_equal(r.M, s.M)
    assert r.objective == s.objective
    assert r.n_iter == s.n_iter
    assert r.status == s.status
    assert r.certificate.rel_gap == s.certificate.rel_gap
    np.testing.assert_array_equal(r.info["alpha"], s.info["alpha"])
    for key in ("polish_attempts", "row_scale", "omega", "eta"):
        assert r.info.get(key) == s.info.get(key)


@pytest.mark.parametrize("working_set", [None, 20])
def test_one_dual_solver_runs_two_problems_in_turn(two_problems, working_set):
    a, b = two_problems
    solver = QwiseDualSolver(tol=1e-9, working_set=working_set)
    first_a, then_b, again_a = solver.run(a), solver.run(b), solver.run(a)
    fresh_a = QwiseDualSolver(tol=1e-9, working_set=working_set).run(a)
    fresh_b = QwiseDualSolver(tol=1e-9, working_set=working_set).run(b)
    _same(first_a, fresh_a)
    _same(again_a, fresh_a)
    _same(then_b, fresh_b)
    if working_set is not None:
        assert len(fresh_a.info["working_set_rounds"]) >= 1


def _iterations(solver, steps):
    """Run ``steps`` = [(data, n_updates), ...] through ``solver``'s
    ``init_state`` / ``update`` / ``finalize``, each problem's state kept
    apart; the final (M, certificate, info) per problem."""
    runs = {}
    for data, n in steps:
        if id(data) not in runs:
            runs[id(data)] = solver.init_state(data)
        M, state = runs[id(data)]
        for _ in range(n):
            M, state = solver.update(M, state, data)
        runs[id(data)] = (M, state)
    return {key: solver.finalize(M, state, data)
            for (key, (M, state)), data in zip(runs.items(), [s[0] for s in steps])}


def test_one_dual_solver_interleaves_two_problems(two_problems):
    # check_every=8 and a polish from 1e-1: several gap checks, restarts and
    # endgame attempts per problem, alternating between the two problems
    a, b = two_problems
    kwargs = {"tol": 1e-9, "check_every": 8, "polish_from": 1e-1}
    shared = QwiseDualSolver(**kwargs)
    mixed = _iterations(shared, [(a, 3), (b, 2), (a, 4), (b, 6), (a, 5)])
    alone_a = _iterations(QwiseDualSolver(**kwargs), [(a, 12)])
    alone_b = _iterations(QwiseDualSolver(**kwargs), [(b, 8)])
    for got, want in ((mixed[id(a)], alone_a[id(a)]), (mixed[id(b)], alone_b[id(b)])):
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1].objective == want[1].objective
        assert got[1].rel_gap == want[1].rel_gap
        assert got[2]["polish_attempts"] == want[2]["polish_attempts"]
        np.testing.assert_array_equal(got[2]["alpha"], want[2]["alpha"])


@pytest.fixture(scope="module")
def two_structural(two_problems):
    a, b = two_problems
    return (StructuralData.from_quadruplets(a.quadruplets),
            StructuralData.from_quadruplets(b.quadruplets, regularizer="frobenius",
                                            C=2.0))


def test_one_cutting_plane_solver_runs_two_problems(two_structural):
    sa, sb = two_structural
    solver = StructuralCuttingPlane()
    first_a, then_b = solver.run(sa), solver.run(sb)
    for got, data in ((first_a, sa), (then_b, sb)):
        fresh = StructuralCuttingPlane().run(data)
        np.testing.assert_array_equal(got.M, fresh.M)
        assert got.objective == fresh.objective
        assert got.n_iter == fresh.n_iter
        assert got.info["n_cuts"] == fresh.info["n_cuts"]


def test_one_cutting_plane_solver_interleaves_two_problems(two_structural):
    # each run keeps its own master problem (its cuts, its room) in its state
    sa, sb = two_structural
    mixed = _iterations(StructuralCuttingPlane(), [(sa, 2), (sb, 3), (sa, 3), (sb, 2)])
    alone_a = _iterations(StructuralCuttingPlane(), [(sa, 5)])
    alone_b = _iterations(StructuralCuttingPlane(), [(sb, 5)])
    for got, want in ((mixed[id(sa)], alone_a[id(sa)]), (mixed[id(sb)], alone_b[id(sb)])):
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1].objective == want[1].objective
        assert got[2]["n_cuts"] == want[2]["n_cuts"] == 5
