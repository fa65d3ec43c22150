"""Reductions (cvxmetric._reductions): apply/invert round trips, the order
in which IterativeSolver.run composes them, and their stages in the trace."""

from dataclasses import dataclass
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np
import pytest

from cvxmetric._reductions import Reduction, apply_reductions, invert_reductions
from cvxmetric._solver import IterativeSolver
from cvxmetric._trace import recording
from cvxmetric.mmc import MMCData
from cvxmetric.mmc.fast import (
    JACOBI,
    JACOBI_DIAGONAL,
    RELEVANT_COORDINATES,
    WHITEN,
    MMCNewton,
    MMCProjectedGradient,
)
from cvxmetric.result import Certificate, SolverResult


def _mmc(diagonal, seed=0):
    rng = np.random.default_rng(seed)
    # correlated features in mixed units: the changes of variables matter
    X = rng.normal(size=(40, 4)) @ rng.normal(size=(4, 4)) * [1.0, 10.0, 0.1, 3.0]
    y = rng.integers(0, 3, 40)
    P = rng.integers(0, 40, size=(90, 2))
    P = P[P[:, 0] != P[:, 1]]
    labels = np.where(y[P[:, 0]] == y[P[:, 1]], 1, -1)
    return MMCData.create(X, P, labels, diagonal=diagonal)


def _as_result(data, x):
    """A warm start holding the user's point ``x``."""
    info = {"w": x} if data.diagonal else {}
    return SolverResult(M=data.as_matrix(x), status="optimal", objective=0.0,
                        n_iter=0, certificate=None, method="test", info=info)


# -- apply / invert round trips ---------------------------------------------


@pytest.mark.parametrize("reduction, diagonal", [
    (WHITEN, False), (JACOBI, False), (JACOBI_DIAGONAL, True),
    (RELEVANT_COORDINATES, True)])
def test_a_point_goes_back_and_comes_again(reduction, diagonal):
    data = _mmc(diagonal)
    reduced, start, inverse = reduction.apply(data, None)
    assert start is None  # no warm start: the solver's own
    rng = np.random.default_rng(1)
    if reduction is RELEVANT_COORDINATES:
        x = rng.uniform(0.1, 1.0, size=len(reduced.K))
    else:
        # a feasible point of the reduced problem: a convex combination of
        # its start and a projected random point
        y = rng.normal(size=np.shape(reduced.start()))
        if not diagonal:
            y = y @ y.T
        x = 0.5 * reduced.start() + 0.5 * reduced.project(y)
    user = reduction.invert(x, inverse)
    assert np.shape(user) == ((data.n_features,) if diagonal
                              else (data.n_features, data.n_features))
    # the user's point, brought back as a warm start, is the reduced point
    _, again, _ = reduction.apply(data, _as_result(data, user))
    np.testing.assert_allclose(again, x, rtol=1e-9, atol=1e-12 * np.max(np.abs(x)))


@pytest.mark.parametrize("reduction, diagonal", [
    (WHITEN, False), (JACOBI, False), (JACOBI_DIAGONAL, True)])
def test_the_distances_do_not_depend_on_the_coordinates(reduction, diagonal):
    # the dual bound is evaluated on the dissimilar distances: the reduced
    # problem's must be the user's at the inverted point
    data = _mmc(diagonal)
    sp, _, inverse = reduction.apply(data, None)
    x = sp.start()
    user = reduction.invert(x, inverse)
    np.testing.assert_allclose(sp.dist(x), data.sqdist_D(user), rtol=1e-9)


def test_a_reduction_refuses_data_it_does_not_accept():
    with pytest.raises(ValueError, match="^data: .*'whiten'"):
        apply_reductions([WHITEN], _mmc(True), None)
    with pytest.raises(ValueError, match="^data: .*'relevant-coordinates'"):
        apply_reductions([RELEVANT_COORDINATES], _mmc(False), None)


def test_the_base_reduction_is_the_identity():
    r = Reduction()
    data, init, inverse = r.apply("data", "init")
    assert (data, init) == ("data", "init") and r.invert("x", inverse) == "x"
    assert r.accepts(object())


# -- composition around a solver ------------------------------------------------


class Shift(Reduction):
    name = "shift"

    def __init__(self, by):
        self.by = by

    def apply(self, c, init):
        return c + self.by, (None if init is None else init + self.by), self.by

    def invert(self, x, by):
        return x - by


class Scale(Reduction):
    name = "scale"

    def __init__(self, by):
        self.by = by

    def apply(self, c, init):
        return c * self.by, (None if init is None else init * self.by), self.by

    def invert(self, x, by):
        return x / by


class _ToyState(NamedTuple):
    iter_num: int
    error: float


@dataclass
class _Toy(IterativeSolver):
    """Minimise ||x - c||^2 by halving steps (c: the data); certifies the
    distance to the data it is given (the user's)."""

    maxiter: int = 200
    tol: float = 1e-12
    name = "toy"

    def reductions(self, data):
        # not commuting: only the reverse order inverts them
        return [Shift(1.0), Scale(4.0)]

    def init_state(self, c, init=None):
        x = np.zeros_like(c) if init is None else init
        return x, _ToyState(0, float(np.max(np.abs(x - c))))

    def update(self, x, state, c):
        x = x + 0.5 * (c - x)
        return x, _ToyState(state.iter_num + 1, float(np.max(np.abs(x - c))))

    def finalize(self, x, state, c):
        err = float(np.max(np.abs(x - c)))
        cert = Certificate.from_bound(err, 0.0, max_violation=0.0, min_eig=0.0,
                                      solver=self.name)
        return x, cert, {}


def test_run_applies_in_order_and_inverts_in_reverse():
    c = np.array([1.0, -2.0, 3.0])
    with recording() as outer:
        res = _Toy().run(c)
    # the reduced problem is 4 (c + 1); its solution maps back to c
    np.testing.assert_allclose(res.M, c, atol=1e-10)
    assert res.status == "optimal"
    assert [(s.name, s.kind) for s in res.trace] == [
        ("shift", "reduction"), ("scale", "reduction"), ("toy", "iterative")]
    assert res.trace[1].why == "after shift" and res.trace[2].why == "after scale"
    assert [s.name for s in outer] == ["shift", "scale", "toy"]
    # a warm start goes through the reductions too: at the answer already
    warm = _Toy().run(c, init=c)
    assert warm.n_iter == 0 and np.allclose(warm.M, c)


def test_invert_reductions_is_the_reverse_composition():
    applied = [(Shift(1.0), 1.0), (Scale(4.0), 4.0)]
    assert invert_reductions(applied, 4.0 * (2.0 + 1.0)) == 2.0
    assert invert_reductions([], "x") == "x"


# -- the trace names the stages of MMC's fast solvers ---------------------------


@pytest.mark.parametrize("solver, diagonal, stage", [
    (MMCProjectedGradient(), False, "whiten"),
    (MMCProjectedGradient(precondition=False, maxiter=50), False, "jacobi"),
    (MMCProjectedGradient(), True, "jacobi-diagonal"),
    (MMCNewton(), True, "relevant-coordinates")])
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_the_trace_names_the_change_of_variables(solver, diagonal, stage):
    res = solver.run(_mmc(diagonal))
    assert [(s.name, s.kind) for s in res.trace] == [
        (stage, "reduction"), (solver.name, "iterative")]
    assert res.trace[0].status == "applied" and res.trace[0].seconds >= 0
    assert res.trace[1].iterations == res.n_iter


# -- RankDML's Eq. 7 as Qwise's Eq. 8 ----------------------------------------


def _eq7(lam=0.5):
    from sklearn.datasets import load_iris

    from cvxmetric.constraints import Triplets, triplets_from_labels
    from cvxmetric.rankdml import RankData

    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    T = triplets_from_labels(y, 120, random_state=0)
    return RankData.from_triplets(Triplets.create(X, T), lam=lam, regularizer="frobenius")


def test_as_qwise_round_trips_a_warm_start():
    from cvxmetric.qwise import QwiseData
    from cvxmetric.rankdml.fast import AS_QWISE

    data = _eq7(0.5)
    rng = np.random.default_rng(0)
    B = rng.normal(size=(data.n_features, data.n_features))
    alpha = rng.uniform(0.0, 1.0, data.n_constraints)
    init = SolverResult(M=B @ B.T, status="optimal", objective=0.0, n_iter=0,
                        certificate=None, method="test", info={"alpha": alpha})
    qdata, qinit, inverse = AS_QWISE.apply(data, init)
    assert isinstance(qdata, QwiseData) and inverse.factor == 1.0
    # Qwise's multipliers are Eq. 7's divided by lam
    np.testing.assert_allclose(qinit.info["alpha"], alpha / 0.5)
    M, back = AS_QWISE.invert(qinit, inverse)
    np.testing.assert_allclose(M, B @ B.T, rtol=1e-14)
    np.testing.assert_allclose(back, alpha, rtol=1e-14)
    # only Eq. 7 with a full matrix is a Qwise problem
    assert AS_QWISE.accepts(data)
    for regularizer, diagonal in (("burg", False), ("frobenius", True)):
        assert not AS_QWISE.accepts(SimpleNamespace(regularizer=regularizer,
                                                    diagonal=diagonal))


def test_frobenius_pdhg_traces_its_reduction():
    from cvxmetric.rankdml.fast import FrobeniusPDHG

    with recording() as stages:
        res = FrobeniusPDHG().run(_eq7(0.5))
    assert res.status == "optimal"
    assert [(s.name, s.kind) for s in stages] == [("as-qwise", "reduction"),
                                                  ("fast", "iterative")]


# -- Qwise's and constraint-based DML's rescalings ------------------------------


def _qwise(seed=0, scale=1e3, regularizer="trace"):
    from cvxmetric.constraints import LabeledPairs, Quadruplets
    from cvxmetric.qwise import QwiseData

    rng = np.random.RandomState(seed)
    X = rng.randn(30, 4) * scale
    quads = Quadruplets.create(X, rng.randint(0, 30, size=(60, 4)), 1.0)
    idx = rng.randint(0, 30, size=(20, 2))
    idx = idx[idx[:, 0] != idx[:, 1]]
    pairs = LabeledPairs.create(X, idx, np.where(np.arange(len(idx)) % 2 == 0, 1, -1))
    # margins and bounds of the data's squared scale: far from unit scale
    return QwiseData.from_sets(quads, pairs, regularizer=regularizer, C_p=0.5,
                               u=scale ** 2, l=3 * scale ** 2)


def _vector(seed=0):
    from cvxmetric.constraints import Quadruplets
    from cvxmetric.qwise_vector import QwiseVectorData

    rng = np.random.RandomState(seed)
    X = rng.randn(30, 4) * [1e4, 1.0, 1e-3, 50.0]  # features far from unit scale
    quads = Quadruplets.create(X, rng.randint(0, 30, size=(60, 4)), 1.0)
    return QwiseVectorData.from_sets(quads, psi="squared", loss="huber")


def _constraint(seed=0, scale=1e3, diagonal=False):
    from cvxmetric.constraintdml._problem import ConstraintData

    rng = np.random.RandomState(seed)
    X = rng.randn(30, 4) * scale
    idx = rng.randint(0, 30, size=(40, 2))
    idx = idx[idx[:, 0] != idx[:, 1]]
    labels = np.where(np.arange(len(idx)) % 2 == 0, 1, -1)
    return ConstraintData.from_pairs(X, idx, labels, hard=False, diagonal=diagonal,
                                     lam=0.5)


def _warm(M, **info):
    return SolverResult(M=M, status="optimal", objective=0.0, n_iter=0,
                        certificate=None, method="test", info=info)


def _psd(rng, d):
    B = rng.normal(size=(d, d))
    return B @ B.T


def test_normalize_maps_a_qwise_solution_back_exactly():
    from cvxmetric.qwise.fast import NORMALIZE, QwiseSolution

    data = _qwise()
    assert not data.scaling.identity and NORMALIZE.accepts(data)
    twin, start, inverse = NORMALIZE.apply(data, None)
    assert start is None and twin.scale_free
    rng = np.random.default_rng(0)
    M_n = _psd(rng, data.n_features)
    alpha_n = rng.uniform(0.0, 1.0, twin.n_constraints) * twin.c_q
    back = NORMALIZE.invert(QwiseSolution(M_n, alpha_n), inverse)
    # certified on the twin, mapped by powers of two
    on_twin = twin.certificate(M_n, alpha_n, solver="")
    assert back.certificate.rel_gap == on_twin.rel_gap
    np.testing.assert_allclose(back.certificate.objective, data.objective(back.x),
                               rtol=1e-9)
    assert back.info["scaling"] == data.scaling.as_dict()
    # the user's point, brought back as a warm start, is the twin's exactly
    _, again, _ = NORMALIZE.apply(data, _warm(back.x, alpha=back.alpha))
    np.testing.assert_array_equal(again.M, M_n)
    np.testing.assert_array_equal(again.info["alpha"], alpha_n)


def test_feature_scaling_maps_a_vector_point_back_exactly():
    from cvxmetric.qwise.fast import QwiseSolution
    from cvxmetric.qwise_vector.fast import FeatureScaling

    data = _vector()
    sigma = data.feature_scale()
    assert not np.all(sigma == 1.0)
    reduction = FeatureScaling(sigma)
    assert reduction.accepts(data) and not reduction.accepts(_qwise())
    scaled, start, inverse = reduction.apply(data, None)
    assert start is None
    omega_s = np.random.default_rng(1).uniform(0.0, 1.0, data.n_features + 1)
    back = reduction.invert(QwiseSolution(omega_s), inverse)
    # the same losses and objective at the mapped point
    np.testing.assert_allclose(data.objective(back.x), scaled.objective(omega_s),
                               rtol=1e-12)
    np.testing.assert_array_equal(back.info["feature_scale"], sigma)
    _, again, _ = reduction.apply(data, _warm(None, w=back.x[:-1], b=back.x[-1]))
    np.testing.assert_array_equal(again.info["w"], omega_s[:-1])


@pytest.mark.parametrize("diagonal", [False, True])
def test_constraint_normalize_maps_a_solution_back_exactly(diagonal):
    from cvxmetric.constraintdml.fast import NORMALIZE, ConstraintSolution

    data = _constraint(diagonal=diagonal)
    data_n, start, (problem, k) = NORMALIZE.apply(data, "warm")
    assert start == "warm" and problem is data_n and k != 0  # u is unit free
    rng = np.random.default_rng(2)
    d = data.n_features
    A_n = rng.uniform(0.1, 1.0, d) if diagonal else _psd(rng, d)
    u = data_n.clip(rng.uniform(0.0, 1.0, data_n.n_pairs))
    back = NORMALIZE.invert(ConstraintSolution(A_n, u), (problem, k))
    np.testing.assert_array_equal(np.ldexp(back.A, 2 * k), A_n)
    assert back.info == {"scale_exponent": k}
    # the objective is the same in both units
    on_user = data.certificate(back.A, u, solver="")
    np.testing.assert_allclose(back.certificate.objective, on_user.objective, rtol=1e-9)
    # without a primal point: the primal map of u, computed where it is certified
    mapped = NORMALIZE.invert(ConstraintSolution(None, u), (problem, k))
    np.testing.assert_array_equal(np.ldexp(mapped.A, 2 * k),
                                  data_n.primal_of(data_n.Y_of(u))[0])


def test_the_rescalings_refuse_other_data():
    from cvxmetric.constraintdml.fast import NORMALIZE as CONSTRAINT_NORMALIZE
    from cvxmetric.qwise.fast import NORMALIZE

    with pytest.raises(ValueError, match="^data: .*'normalize'"):
        apply_reductions([NORMALIZE], _vector(), None)
    with pytest.raises(ValueError, match="^data: .*'normalize'"):
        apply_reductions([CONSTRAINT_NORMALIZE], _qwise(), None)


def _rescaling_solvers():
    from cvxmetric.constraintdml.fast import ConstraintDualSolver
    from cvxmetric.qwise import ProjectedSubgradient, QwiseDualSolver
    from cvxmetric.qwise_vector import ProjectedNewton

    return [
        ("qwise-pdhg", lambda: QwiseDualSolver(tol=1e-9), _qwise,
         {"seed": [0, 1], "regularizer": ["trace", "frobenius"]}, "normalize", "scaling"),
        ("qwise-pdhg-working-set", lambda: QwiseDualSolver(tol=1e-9, working_set=20),
         _qwise, {"seed": [0, 1], "regularizer": ["trace", "frobenius"]}, "normalize",
         "scaling"),
        ("qwise-subgradient", lambda: ProjectedSubgradient(maxiter=200), _qwise,
         {"seed": [0, 1], "regularizer": ["trace", "similar"]}, "normalize", "scaling"),
        ("qwise-newton", ProjectedNewton, _vector, {"seed": [0, 1]}, "feature-scale",
         "feature_scale"),
        ("constraintdml", ConstraintDualSolver, _constraint,
         {"seed": [0, 1], "diagonal": [False, True]}, "normalize", "scale_exponent"),
    ]


def _two_instances(make, params):
    keys = list(params)
    return [make(**{k: params[k][i] for k in keys}) for i in range(2)]


def _same_result(r, s):
    np.testing.assert_array_equal(r.M, s.M)
    assert (r.objective, r.n_iter, r.status) == (s.objective, s.n_iter, s.status)
    assert r.certificate.rel_gap == s.certificate.rel_gap
    for key in ("alpha", "u", "w"):
        if key in s.info:
            np.testing.assert_array_equal(r.info[key], s.info[key])


@pytest.mark.parametrize("case", _rescaling_solvers(), ids=lambda c: c[0])
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_rescaling_solver_runs_two_problems_in_turn(case):
    _, make_solver, make_data, params, _, _ = case
    a, b = _two_instances(make_data, params)
    solver = make_solver()
    first_a, then_b, again_a = solver.run(a), solver.run(b), solver.run(a)
    fresh_a, fresh_b = make_solver().run(a), make_solver().run(b)
    _same_result(first_a, fresh_a)
    _same_result(again_a, fresh_a)
    _same_result(then_b, fresh_b)


@pytest.mark.parametrize("case", _rescaling_solvers(), ids=lambda c: c[0])
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_the_trace_names_the_rescaling(case):
    _, make_solver, make_data, params, stage, reported = case
    data = _two_instances(make_data, params)[0]
    solver = make_solver()
    with recording() as stages:
        res = solver.run(data)
    assert (stages[0].name, stages[0].kind, stages[0].status) == (stage, "reduction",
                                                                  "applied")
    # then the solver's own runs (one per working-set round)
    assert {(s.name, s.kind) for s in stages[1:]} == {(solver.name, "iterative")}
    if "working_set_rounds" in res.info:
        assert len(stages) - 1 == len(res.info["working_set_rounds"]) >= 1
    else:
        assert len(stages) == 2 and stages[1].iterations == res.n_iter
    assert reported in res.info  # the result reports the rescaling


def test_qwise_data_at_unit_scale_is_solved_as_given():
    from cvxmetric.qwise import QwiseDualSolver

    data = _qwise(scale=1.0)
    assert data.scaling.identity
    res = QwiseDualSolver(tol=1e-9).run(data)
    assert [(s.name, s.kind) for s in res.trace] == [("fast", "iterative")]
    assert "scaling" not in res.info
