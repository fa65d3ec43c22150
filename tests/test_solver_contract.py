"""The shared solver contract: one meaning of status, checked settings, and
time budgets that hold, for every hand-written solver of every family."""

import math
import time
import warnings
from dataclasses import dataclass, fields, replace
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

import cvxmetric.mmc.fast  # noqa: F401 - registers the subclasses
import cvxmetric.qwise.fast  # noqa: F401
import cvxmetric.constraintdml.fast  # noqa: F401
import cvxmetric.rankdml.fast  # noqa: F401
import cvxmetric.slr.fast  # noqa: F401
from cvxmetric._solver import Deadline, IterativeSolver
from cvxmetric._tolerances import EXACT_GAP, certificate_tolerance
from cvxmetric.result import Certificate, SolverResult, Status


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


#: every public hand-written solver of every family
SOLVERS = sorted({c for c in _subclasses(IterativeSolver) if not c.__name__.startswith("_")},
                 key=lambda c: c.__qualname__)


def _cert(rel_gap, *, bound=True, violation=0.0):
    objective = 1.0
    return Certificate.from_bound(
        objective, objective - rel_gap if bound else -np.inf,
        max_violation=violation, min_eig=0.0, solver="test")


def _result(status, cert):
    return SolverResult(M=np.eye(2), status=status, objective=cert.objective,
                        n_iter=3, certificate=cert, method="test")


# -- one meaning of status ------------------------------------------------------


@pytest.mark.parametrize("raw", [Status.OPTIMAL, Status.OPTIMAL_INACCURATE,
                                 Status.MAX_ITER, Status.TIME_LIMIT])
def test_status_is_optimal_exactly_when_the_certificate_passes(raw):
    passing, failing = _cert(0.1 * EXACT_GAP), _cert(0.4)
    assert passing.passed and not failing.passed
    good = _result(raw, passing)
    assert good.status == Status.OPTIMAL and good.raw_status == raw
    bad = _result(raw, failing)
    assert bad.status != Status.OPTIMAL and bad.raw_status == raw
    # a solver that claims a solution it cannot certify is "inaccurate";
    # an early stop keeps saying why it stopped
    want = Status.OPTIMAL_INACCURATE if raw in Status.SOLVED else raw
    assert bad.status == want


def test_a_certificate_without_a_valid_bound_never_passes():
    cert = _cert(0.0, bound=False)
    assert not cert.passed and cert.rel_gap == math.inf
    cert = Certificate.from_bound(1.0, np.nan, max_violation=0.0, min_eig=0.0,
                                  solver="test")
    assert not cert.passed
    assert not _cert(0.0, violation=1.0).passed


def test_certificate_tolerances_come_from_the_table():
    for family in ("qwise", "mmc", "rankdml", "constraintdml", "slr"):
        gap, feas = certificate_tolerance(family)
        assert 0 < gap <= EXACT_GAP and 0 < feas < 1


# -- a toy solver that exercises run() -----------------------------------------


class _State(NamedTuple):
    iter_num: int
    error: float


@dataclass
class _Toy(IterativeSolver):
    """Error halves each iteration; the certified gap is ``gap_scale * error``
    (so a loose ``tol`` stops it before the package's certificate passes);
    each iteration sleeps ``sleep`` seconds in ``steps`` inner steps that
    check the deadline."""

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "gap_scale": [Interval(Real, 0, None, closed="left")],
        "sleep": [Interval(Real, 0, None, closed="left")],
        "steps": [Interval(Integral, 1, None, closed="left")],
    }

    gap_scale: float = 1.0
    sleep: float = 0.0
    steps: int = 1
    name = "toy"

    def init_state(self, data, init=None):
        return np.eye(2), _State(0, 1.0)

    def update(self, M, state, data):
        for _ in range(self.steps):
            if self.deadline.expired():
                break
            time.sleep(self.sleep / self.steps)
        return M, _State(state.iter_num + 1, state.error / 2)

    def finalize(self, M, state, data):
        return M, _cert(self.gap_scale * state.error), {}


class _Data:
    n_features = 2


def test_run_at_a_loose_tol_does_not_claim_to_pass():
    with pytest.warns(ConvergenceWarning) as caught:
        res = _Toy(tol=0.3).run(_Data())
    assert res.raw_status == Status.OPTIMAL  # its own rule was met
    assert res.status == Status.OPTIMAL_INACCURATE
    assert not res.certificate.passed
    text = str(caught[0].message)
    assert "without a certified optimum" in text and "> tol" not in text


def test_run_stopped_by_maxiter_but_certified_is_optimal():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a certified answer warns nothing
        res = _Toy(tol=1e-30, maxiter=40).run(_Data())
    assert res.raw_status == Status.MAX_ITER
    assert res.status == Status.OPTIMAL and res.certificate.passed


def test_run_stopped_early_never_passes_whatever_the_tol():
    with pytest.warns(ConvergenceWarning, match="stopped in 1 iterations"):
        res = _Toy(tol=1e-30, maxiter=1).run(_Data())
    assert res.status == Status.MAX_ITER and not res.certificate.passed


class _Clock:
    """A clock that only the toy's inner steps advance: budgets are checked
    against it, so the test measures steps, not a loaded machine's seconds."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds

    process_time = staticmethod(time.process_time)


def test_max_time_is_honoured_inside_a_long_iteration(monkeypatch):
    """One iteration would take 5 s; the deadline is checked in its inner
    steps (0.05 s each), so a 0.2-s budget ends the run within one inner
    step."""
    import cvxmetric._solver as solver_module

    clock = _Clock()
    monkeypatch.setattr(solver_module, "time", clock)
    monkeypatch.setattr(time, "sleep", clock.sleep)
    solver = _Toy(tol=1e-30, maxiter=10, sleep=5.0, steps=100, max_time=0.2)
    with pytest.warns(ConvergenceWarning, match="time limit"):
        res = solver.run(_Data())
    assert res.raw_status == Status.TIME_LIMIT and res.status == Status.TIME_LIMIT
    assert 0.2 <= clock.now <= 0.2 + 0.05 + 1e-12


def test_deadline():
    assert not Deadline(None).expired() and Deadline(None).remaining() == math.inf
    d = Deadline(0.0, start=time.perf_counter() - 1.0)
    assert d.expired() and d.hit and d.remaining() < 0


# -- settings checked on construction -----------------------------------------


def _bad_values(constraints):
    """Values outside every allowed option of one field."""
    allows_none = None in constraints
    out = [] if allows_none else [None]
    for c in constraints:
        if isinstance(c, Interval):
            if c.left is not None:
                out.append(c.left - 1)
            if c.type is Integral:
                out.append(1.5)  # not an integer
            else:
                out += [math.nan, -math.inf]
        elif isinstance(c, StrOptions):
            out.append("no-such-option")
        elif c == "boolean":
            out.append("yes")
    return out


@pytest.mark.parametrize("cls", SOLVERS, ids=lambda c: c.__qualname__)
def test_every_field_has_a_constraint_and_defaults_pass(cls):
    names = {f.name for f in fields(cls)}
    assert names <= set(cls._parameter_constraints), cls
    cls()  # the defaults are valid


@pytest.mark.parametrize("cls", SOLVERS, ids=lambda c: c.__qualname__)
def test_every_bad_setting_is_refused_naming_the_field(cls):
    for f in fields(cls):
        for bad in _bad_values(cls._parameter_constraints[f.name]):
            if bad is not None and isinstance(f.default, bool) and bad in (0, 1):
                continue
            with pytest.raises(ValueError, match=f.name):
                cls(**{f.name: bad})


class TestBlasPolicy:
    """The one threading policy of the solvers (cvxmetric._solver)."""

    @staticmethod
    def _limits(monkeypatch, flops, busy):
        import cvxmetric._solver as solver

        seen = []
        monkeypatch.setattr(solver, "threadpool_limits",
                            lambda limits, user_api: seen.append(limits))
        monkeypatch.setattr(solver, "_others_busy_cores", lambda: busy)
        solver.blas_threads(flops)
        return seen[-1]

    def test_small_calls_run_on_one_thread(self, monkeypatch):
        from cvxmetric._solver import THREADED_FLOPS

        assert self._limits(monkeypatch, 0.5 * THREADED_FLOPS, 0.0) == 1

    def test_large_calls_keep_blas_threads_when_idle(self, monkeypatch):
        from cvxmetric._solver import THREADED_FLOPS

        # None: BLAS's own setting, so a user's outer limit stays in force
        assert self._limits(monkeypatch, 10 * THREADED_FLOPS, 0.0) is None
        assert self._limits(monkeypatch, 10 * THREADED_FLOPS, None) is None

    def test_large_calls_run_on_one_thread_when_loaded(self, monkeypatch):
        from cvxmetric._solver import BUSY_CORES, THREADED_FLOPS

        assert self._limits(monkeypatch, 10 * THREADED_FLOPS, BUSY_CORES) == 1

    def test_forced_count_wins(self):
        from threadpoolctl import threadpool_info

        from cvxmetric._solver import THREADED_FLOPS, blas_threads, forced_blas_threads

        def blas_threads_now():
            return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

        with forced_blas_threads(1):
            with blas_threads(10 * THREADED_FLOPS):
                assert set(blas_threads_now()) <= {1}

    def test_busy_cores_sample_is_a_number_or_none(self):
        from cvxmetric._solver import _sample_busy_cores

        busy = _sample_busy_cores()
        assert busy is None or 0.0 <= busy


# -- stateless solvers: one object, any number of solves ------------------------


def _mmc_data(seed, diagonal):
    from cvxmetric.mmc import MMCData

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 4)) @ rng.normal(size=(4, 4))
    y = rng.integers(0, 3, 40)
    P = rng.integers(0, 40, size=(90, 2))
    P = P[P[:, 0] != P[:, 1]]
    return MMCData.create(X, P, np.where(y[P[:, 0]] == y[P[:, 1]], 1, -1),
                          diagonal=diagonal)


def _iris(seed, n=45):
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import StandardScaler

    X, y = load_iris(return_X_y=True)
    idx = np.random.default_rng(seed).choice(len(y), n, replace=False)
    return StandardScaler().fit_transform(X[idx]), y[idx]


def _rank_data(seed, regularizer, lam):
    from cvxmetric.constraints import Triplets, triplets_from_labels
    from cvxmetric.rankdml import RankData

    X, y = _iris(seed)
    T = triplets_from_labels(y, 150, random_state=seed)
    return RankData.from_triplets(Triplets.create(X, T), lam=lam, regularizer=regularizer)


def _slr_data(seed):
    from cvxmetric.slr import SLRData

    X, y = _iris(seed, 30)
    return SLRData.from_labels(X, y)


def _ldml_data(seed, lam, regularizer="trace"):
    from cvxmetric.ldml import AllPairs

    X, y = _iris(seed, 24)
    return AllPairs(X, y, lam=lam, regularizer=regularizer).pair_data()


def _ldml_loss(seed, rank):
    from cvxmetric.ldml import AllPairs

    X, y = _iris(seed, 24)
    L0 = 0.3 * np.random.default_rng(seed).standard_normal((rank, X.shape[1]))
    return AllPairs(X, y, lam=0.1), (L0, 0.5)


def _bags(seed, rank):
    from cvxmetric.ldml._mildml import BagPairs

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((30, 5))
    bags, i = [], 0
    while i < 30:
        k = int(rng.integers(1, 4))
        bags.append(np.arange(i, min(30, i + k)))
        i += k
    caps = [rng.choice(4, size=int(rng.integers(0, 3)), replace=False) for _ in bags]
    return BagPairs(X, bags, caps, lam=0.1), (0.3 * rng.standard_normal((rank, 5)), 0.5)


def _two_instances(name):
    """``(make solver, (data A, init A), (data B, init B))``: two different
    instances (a different kind where the solver takes several)."""
    from cvxmetric.ldml import LowRankLDML, ProjectedGradient
    from cvxmetric.ldml._mildml import MildMLSolver
    from cvxmetric.mmc.fast import MMCNewton, MMCProjectedGradient
    from cvxmetric.rankdml.fast import FrobeniusPDHG, RankDualSolver
    from cvxmetric.slr.fast import AdaptiveRegression, SemismoothNewton

    cases = {
        "mmc-fast": (MMCProjectedGradient, lambda: (_mmc_data(0, False), None),
                     lambda: (_mmc_data(1, True), None)),
        "mmc-fast-jacobi": (lambda: MMCProjectedGradient(precondition=False, maxiter=200),
                            lambda: (_mmc_data(0, False), None),
                            lambda: (_mmc_data(2, False), None)),
        "mmc-newton": (MMCNewton, lambda: (_mmc_data(0, True), None),
                       lambda: (_mmc_data(1, True), None)),
        # Burg at a small lam runs its continuation in lam
        "rankdml-dual": (RankDualSolver, lambda: (_rank_data(0, "burg", 1e-4), None),
                         lambda: (_rank_data(1, "logdet", 1.0), None)),
        "rankdml-pdhg": (FrobeniusPDHG, lambda: (_rank_data(0, "frobenius", 1.0), None),
                         lambda: (_rank_data(1, "frobenius", 0.1), None)),
        "slr-newton": (SemismoothNewton, lambda: (_slr_data(0), None),
                       lambda: (_slr_data(1), None)),
        "slr-newton-cg": (lambda: SemismoothNewton(hessian="cg"),
                          lambda: (_slr_data(0), None), lambda: (_slr_data(1), None)),
        "slr-adaptive": (lambda: AdaptiveRegression(maxiter=6),
                         lambda: (_slr_data(0), None), lambda: (_slr_data(1), None)),
        "ldml-pg": (ProjectedGradient, lambda: (_ldml_data(0, 0.1), None),
                    lambda: (_ldml_data(1, 0.05, "frobenius"), None)),
        "ldml-lowrank": (lambda: LowRankLDML(rank=2), lambda: _ldml_loss(0, 2),
                         lambda: _ldml_loss(1, 2)),
        "mildml": (lambda: MildMLSolver(rank=2, maxiter=30), lambda: _bags(0, 2),
                   lambda: _bags(1, 2)),
    }
    return cases[name]


def _same(a, b):
    assert (a.objective, a.n_iter, a.status, a.raw_status) == \
        (b.objective, b.n_iter, b.status, b.raw_status)
    np.testing.assert_array_equal(a.M, b.M)


@pytest.mark.parametrize("name", [
    "mmc-fast", "mmc-fast-jacobi", "mmc-newton", "rankdml-dual", "rankdml-pdhg",
    "slr-newton", "slr-newton-cg", "slr-adaptive", "ldml-pg", "ldml-lowrank", "mildml"])
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_one_solver_object_runs_two_solves_as_two_fresh_ones(name):
    make, first, second = _two_instances(name)
    shared = make()
    settings = dict(vars(shared))
    a1 = shared.run(*first())
    b = shared.run(*second())
    a2 = shared.run(*first())  # nothing of the second solve stays behind
    # a run keeps nothing on the solver: its settings are all it holds
    assert vars(shared) == settings
    _same(a1, make().run(*first()))
    _same(b, make().run(*second()))
    _same(a2, a1)


def test_the_deadline_belongs_to_the_run():
    from cvxmetric.mmc.fast import MMCProjectedGradient

    solver = MMCProjectedGradient(max_time=0.0, tol=1e-15)
    res = solver.run(_mmc_data(0, False), warn=False)
    assert res.status == Status.TIME_LIMIT
    # outside a run the solver holds no deadline (none expired, none set)
    assert solver.deadline.max_time is None and not solver.deadline.expired()
    res = replace(solver, max_time=None).run(_mmc_data(0, False))
    assert res.status == Status.OPTIMAL
