"""SCML, fast: a certified working-set LP and the paper's stochastic
proximal method.

:class:`SCMLWorkingSet` (method ``fast``, certified)
    SCML is a linear program in ``(w, xi)`` with one row per triplet and
    one column per basis vector; at the optimum most triplets are
    satisfied with room to spare (their rows are slack) and most weights
    are 0 (the L1 term: on digits 130 of 1 280).  The solver keeps a
    working set of triplets and of basis vectors and the LP's dual
    restricted to them in one HiGHS model (:class:`RestrictedDual`),
    re-solved by the dual simplex method from the previous round's basis.
    Each round makes one pass over *every* triplet at the new ``w`` (the
    distances of the distinct pairs) and adds those whose hinge is active
    outside the set (the most violated first, at most ``max_add``), and
    the basis vectors outside the set with a negative reduced cost ``beta
    + (C^T a)_i / T`` at the round's multipliers (column generation, at
    most ``max_add_cols``); working triplets whose multiplier is nonbasic
    at 0 and whose margin is below ``-drop_margin`` leave the set, each
    once at most.  When nothing is left to add, :meth:`SCMLData.certificate
    <cvxmetric.scml.SCMLData.certificate>` judges ``w`` over every triplet
    and basis vector with the simplex multipliers (0 off the set).  Rows
    added cut the restricted solution off and columns added price it out;
    a triplet leaves once at most, so the rounds end, in the worst case
    with the whole LP.  The simplex multipliers are a vertex of the
    restricted dual, feasible to round-off, so the certified gap is the
    LP's own.  The first set holds the ``init_size`` triplets most
    violated at a multiple of the Euclidean metric written in the basis (a
    least-squares ``w``) and the ``init_cols`` basis vectors that most
    lower their hinges.

:class:`SCMLStochastic` (method ``stochastic``, reported)
    The paper's solver as metric-learn 0.7 implements it (``_BaseSCML._fit``):
    a regularised dual averaging step with AdaGrad scaling per iteration on
    a minibatch of ``batch_size`` triplets drawn with ``random_state``,
    ``w = -(t / gamma) min(avg_grad + beta, 0) / (delta + ada)``, the
    full objective evaluated every ``output_iter`` iterations and the best
    ``w`` of those checks kept.  Its result carries the certificate of that
    ``w`` with the multipliers the hinge signs give at it (1 where active);
    at metric-learn's defaults it does not reach the optimum: status
    ``max_iter_reached``, its gap reported.
"""

import logging
import time
from dataclasses import dataclass
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval

from .._solver import IterativeSolver
from .._validation import check_instance
from ._problem import SCMLData

logger = logging.getLogger("cvxmetric")

__all__ = ["SCMLWorkingSet", "SCMLStochastic", "RestrictedDual", "solve_fast",
           "solve_stochastic"]


class _OnSCML:
    """What both solvers share: SCML data only, a stop the state decides."""

    def check_data(self, data):
        check_instance(data, SCMLData, "data")

    def blas_flops(self, data):
        return 2.0 * data.n_triplets * data.n_basis

    def converged(self, state):
        return state.done


def euclidean_weights(data):
    """Nonnegative ``w`` with ``B^T diag(w) B`` near the identity (least
    squares on the diagonal ``sum_i w_i b_i^2 = 1``), scaled so that the
    mean triplet's distances are of the margin's order, and its margins
    ``1 + C w``."""
    w = np.maximum(np.linalg.lstsq(data.basis.T ** 2, np.ones(data.n_features),
                                   rcond=None)[0], 0.0)
    if not np.any(w > 0):
        w = np.ones(data.n_basis)
    margin = data.margins(w)
    scale = float(np.mean(np.abs(margin - 1.0)))
    if scale > 0 and np.isfinite(scale):
        # margins are affine in w: 1 + (m - 1) / s at w / s
        return w / scale, 1.0 + (margin - 1.0) / scale
    return w, margin


class RestrictedDual:
    """SCML's dual LP restricted to working triplets and basis vectors,
    one HiGHS model kept across the rounds of :class:`SCMLWorkingSet`::

        maximise sum_t a_t  over 0 <= a <= 1
        subject to  sum_t c_ti a_t >= -T beta   (i in the working basis)

    (``T`` times the dual of the module docstring's bound), one HiGHS
    column per working triplet and one row per working basis vector: the
    simplex basis has one row per basis vector, not one per triplet, and
    ``w_i`` is the dual value of row ``i``.  Triplets join as columns
    (the previous basis stays primal feasible), basis vectors as rows (it
    stays dual feasible), and a triplet whose ``a_t`` is nonbasic at 0
    leaves as a column (the basis stays valid), so each solve starts from
    the previous optimal basis: HiGHS's dual simplex re-solves in a few
    pivots per change, where a solve from scratch (``scipy.optimize
    .linprog``) repeats them all.

    Parameters
    ----------
    data : SCMLData
    tol : float
        HiGHS's primal and dual feasibility tolerances.
    """

    def __init__(self, data, tol):
        # highspy.Highs, the Python subclass, prints HiGHS's banner on
        # stdout at its first construction; the core class does not
        from highspy import HighsModelStatus, _Highs, kHighsInf

        self.data = data
        self.rows = np.empty(0, np.intp)  # triplets, in HiGHS's column order
        self.cols = np.empty(0, np.intp)  # basis vectors, in HiGHS's row order
        self.dropped = np.zeros(data.n_triplets, bool)
        self.iterations = 0
        self._inf, self._optimal = kHighsInf, HighsModelStatus.kOptimal
        self._h = h = _Highs()
        for key, value in (("output_flag", False), ("simplex_strategy", 1),
                           ("primal_feasibility_tolerance", tol),
                           ("dual_feasibility_tolerance", tol),
                           ("small_matrix_value", 1e-12)):
            h.setOptionValue(key, value)

    def add(self, rows=(), cols=()):
        """Add the triplets ``rows`` and the basis vectors ``cols`` (not in
        the model yet): the new basis vectors' rows over the working
        triplets, then the new triplets' columns over every working basis
        vector."""
        T, beta = self.data.n_triplets, self.data.beta
        cols, rows = np.asarray(cols, np.intp), np.asarray(rows, np.intp)
        if cols.size:
            m, n = self.rows.size, cols.size
            entries = self.data.block(self.rows, cols).T if m else np.zeros((n, 0))
            self._h.addRows(n, np.full(n, -T * beta), np.full(n, self._inf), m * n,
                            np.arange(0, m * n, max(m, 1), dtype=np.int32)[:n],
                            np.tile(np.arange(m, dtype=np.int32), n),
                            np.ascontiguousarray(entries).ravel())
            self.cols = np.concatenate([self.cols, cols])
        if rows.size:
            n, k = rows.size, self.cols.size
            entries = self.data.block(rows, self.cols) if k else np.zeros((n, 0))
            self._h.addCols(n, -np.ones(n), np.zeros(n), np.ones(n), n * k,
                            np.arange(0, n * k, max(k, 1), dtype=np.int32)[:n],
                            np.tile(np.arange(k, dtype=np.int32), n),
                            np.ascontiguousarray(entries).ravel())
            self.rows = np.concatenate([self.rows, rows])

    def solve(self):
        """Re-solve from the previous basis: ``(w, a)``, ``w`` the row duals
        (0 off the working basis), ``a`` the multipliers (0 off the working
        triplets)."""
        h = self._h
        h.run()
        status = h.getModelStatus()
        if status != self._optimal:
            raise RuntimeError(f"HiGHS: {h.modelStatusToString(status)}")
        self.iterations = int(h.getInfo().simplex_iteration_count)
        sol = h.getSolution()
        w = np.zeros(self.data.n_basis)
        w[self.cols] = np.maximum(np.asarray(sol.row_dual, float), 0.0)
        a = np.zeros(self.data.n_triplets)
        a[self.rows] = np.clip(np.asarray(sol.col_value, float), 0.0, 1.0)
        return w, a

    def drop(self, margin, below):
        """Remove the working triplets whose multiplier is nonbasic at 0 and
        whose margin is below ``-below``, each triplet once at most (so the
        rounds still end); returns how many left."""
        from highspy import HighsBasisStatus

        at_zero = np.array([s == HighsBasisStatus.kLower
                            for s in self._h.getBasis().col_status], bool)
        out = at_zero & (margin[self.rows] < -below) & ~self.dropped[self.rows]
        idx = np.flatnonzero(out)
        if idx.size:
            self._h.deleteCols(idx.size, idx.astype(np.int32))
            self.dropped[self.rows[idx]] = True
            self.rows = self.rows[~out]
        return int(idx.size)


class WSState(NamedTuple):
    iter_num: int
    error: float  # relative gap of the last certificate (inf before)
    lp: RestrictedDual  # the working triplets and basis vectors, and their LP
    a: np.ndarray  # hinge multipliers of every triplet (0 off the set)
    certificate: object
    done: bool
    rounds: tuple


@dataclass
class SCMLWorkingSet(_OnSCML, IterativeSolver):
    """SCML's certified fast solver (module docstring).

    Attributes
    ----------
    maxiter : int
        Rounds (restricted LPs) at most.
    tol : float
        Certified relative gap at which it stops.
    max_time : float, optional
    init_size : int
        Triplets in the first set.
    init_cols : int
        Basis vectors in the first set.
    max_add : int
        Triplets added per round at most (the most violated first).
    max_add_cols : int
        Basis vectors added per round at most (the most negative reduced
        costs first).
    drop_margin : float or None
        A working triplet whose multiplier is 0 and whose margin ``1 + c_t^T
        w`` is below ``-drop_margin`` leaves the set (once at most); None
        keeps every triplet.
    lp_tol : float
        HiGHS's feasibility tolerances.
    """

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "init_size": [Interval(Integral, 1, None, closed="left")],
        "init_cols": [Interval(Integral, 1, None, closed="left")],
        "max_add": [Interval(Integral, 1, None, closed="left")],
        "max_add_cols": [Interval(Integral, 1, None, closed="left")],
        "drop_margin": [Interval(Real, 0, None, closed="left"), None],
        "lp_tol": [Interval(Real, 0, None, closed="neither")],
    }

    maxiter: int = 100
    tol: float = 1e-6
    max_time: float = None
    init_size: int = 2000
    init_cols: int = 100
    max_add: int = 1000
    max_add_cols: int = 200
    drop_margin: float = 0.5
    lp_tol: float = 1e-10

    name = "fast"

    def init_state(self, data, init=None):
        if init is None:
            w, margin = euclidean_weights(data)
        else:
            w = np.maximum(np.asarray(init.info["w"], float), 0.0) if "w" in init.info \
                else euclidean_weights(data)[0]
            margin = data.margins(w)
        size = min(self.init_size, data.n_triplets)
        rows = np.sort(np.argsort(-margin, kind="stable")[:size])
        # the basis vectors that most lower the hinges of the first set
        # (most negative reduced cost with every multiplier at 1)
        a0 = np.zeros(data.n_triplets)
        a0[rows] = 1.0
        r = data.reduced_costs(a0)
        cols = np.sort(np.argsort(r, kind="stable")[:min(self.init_cols, data.n_basis)])
        if init is not None:
            cols = np.union1d(cols, np.flatnonzero(w > 0))
        lp = RestrictedDual(data, self.lp_tol)
        lp.add(rows, cols)
        return w, WSState(0, np.inf, lp, np.zeros(data.n_triplets), None, False, ())

    def update(self, w, state, data):
        t0 = time.perf_counter()
        lp = state.lp
        size, basis = lp.rows.size, lp.cols.size
        w, a = lp.solve()
        t_lp = time.perf_counter() - t0
        margin = data.margins(w)
        outside = np.ones(data.n_triplets, bool)
        outside[lp.rows] = False
        violated = np.flatnonzero(outside & (margin > 0.0))
        # basis vectors outside the set with a negative reduced cost (priced
        # with this round's multipliers, valid whatever rows join)
        r = data.reduced_costs(a)
        r[lp.cols] = np.inf
        neg = np.flatnonzero(r < 0.0)
        cert, done, dropped = None, False, 0
        if violated.size or neg.size:
            if self.drop_margin is not None:
                dropped = lp.drop(margin, self.drop_margin)
            lp.add(violated[np.argsort(-margin[violated], kind="stable")[:self.max_add]],
                   neg[np.argsort(r[neg], kind="stable")][:self.max_add_cols])
        else:
            # nothing left to add: the restricted LP's optimum is the LP's,
            # and its certificate decides (a failure ends the run at
            # maxiter: the status says it is not certified)
            cert = data.certificate(w, a, solver=self.name)
            done = cert.passed and cert.rel_gap <= self.tol
            if not done:
                return w, state._replace(iter_num=self.maxiter, certificate=cert, a=a,
                                         error=float(cert.rel_gap))
        rounds = state.rounds + ({"size": int(size), "basis": int(basis),
                                  "violated_outside": int(violated.size),
                                  "negative_reduced_costs": int(neg.size),
                                  "dropped": dropped, "lp_iterations": lp.iterations,
                                  "lp_seconds": t_lp,
                                  "gap": None if cert is None else float(cert.rel_gap),
                                  "seconds": time.perf_counter() - t0},)
        logger.info("%s round %d: %d triplets x %d basis vectors (%d simplex "
                    "iterations), %d violated outside, %d basis vectors priced in, "
                    "%d triplets dropped", self.name, state.iter_num + 1, size, basis,
                    lp.iterations, violated.size, neg.size, dropped)
        return w, state._replace(
            iter_num=state.iter_num + 1, a=a, certificate=cert, done=done,
            error=state.error if cert is None else float(cert.rel_gap), rounds=rounds)

    def finalize(self, w, state, data):
        cert = state.certificate
        if cert is None:
            cert = data.certificate(w, state.a, solver=self.name)
        cert.tolerances = {"tol": self.tol, "lp_tol": self.lp_tol,
                           "max_add": self.max_add, "max_add_cols": self.max_add_cols,
                           "drop_margin": self.drop_margin}
        info = {"w": w, "a": state.a, "working_set": int(state.lp.rows.size),
                "working_basis": int(state.lp.cols.size),
                "working_set_rounds": list(state.rounds)}
        return data.metric(w), cert, info


class SGState(NamedTuple):
    iter_num: int
    error: float
    avg: np.ndarray  # running average of the minibatch gradients
    ada: np.ndarray  # root of the summed squared gradients
    best: tuple  # (objective, w) of the best check
    done: bool
    draws: np.ndarray  # (maxiter, batch_size) minibatches, drawn up front


@dataclass
class SCMLStochastic(_OnSCML, IterativeSolver):
    """The paper's stochastic proximal method, as metric-learn 0.7 runs it
    (module docstring); its defaults are metric-learn's.

    Attributes
    ----------
    maxiter : int
        metric-learn's ``max_iter`` (10 000).
    tol : float
        Unused by the iterations (they run ``maxiter`` steps); a result is
        ``optimal`` only when its certificate passes.
    max_time : float, optional
    gamma : float
        Learning rate (5e-3).
    batch_size : int
        Triplets per step (10).
    output_iter : int
        Iterations between full objective checks (500).
    random_state : int, RandomState or None
        Seeds the minibatches.
    """

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "gamma": [Interval(Real, 0, None, closed="neither")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "output_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state", None],
    }

    maxiter: int = 10_000
    tol: float = 1e-6
    max_time: float = None
    gamma: float = 5e-3
    batch_size: int = 10
    output_iter: int = 500
    random_state: object = None

    name = "stochastic"

    def validate_params(self):
        super().validate_params()
        if self.output_iter > self.maxiter:
            raise ValueError(f"{type(self).__name__}: output_iter ({self.output_iter}) "
                             f"must be at most maxiter ({self.maxiter}).")

    def init_state(self, data, init=None):
        K = data.n_basis
        rng = check_random_state(self.random_state)
        # metric-learn draws every minibatch up front
        draws = rng.randint(0, data.n_triplets, size=(self.maxiter, self.batch_size))
        return np.zeros(K), SGState(0, np.inf, np.zeros(K), np.zeros(K),
                                    (np.inf, np.zeros(K)), False, draws)

    def update(self, w, state, data):
        t = state.iter_num
        idx = state.draws[t]
        rows = data.block(idx)
        active = 1.0 + rows @ w > 0
        grad = rows[active].sum(axis=0) / self.batch_size
        avg = (t * state.avg + grad) / (t + 1)
        ada = np.sqrt(state.ada ** 2 + grad ** 2)
        w = -(t + 1) / (self.gamma * (1e-3 + ada)) * np.minimum(avg + data.beta, 0.0)
        best = state.best
        if (t + 1) % self.output_iter == 0:
            f = data.objective(w)
            if f < best[0]:
                best = (f, w)
        return w, state._replace(iter_num=t + 1, avg=avg, ada=ada, best=best)

    def solution(self, w, state):
        return state.best[1] if np.isfinite(state.best[0]) else w

    def finalize(self, w, state, data):
        a = (data.margins(w) > 0).astype(float)
        cert = data.certificate(w, a, solver=self.name)
        cert.tolerances = {"gamma": self.gamma, "batch_size": self.batch_size,
                           "output_iter": self.output_iter}
        return data.metric(w), cert, {"w": w, "a": a}


# ---------------------------------------------------------------------------
# The collection's solves (the registry's Method.collection)
# ---------------------------------------------------------------------------


def solve_fast(data):
    """:class:`SCMLWorkingSet` at its defaults."""
    return SCMLWorkingSet().run(data)


def solve_stochastic(data):
    """:class:`SCMLStochastic` at metric-learn's defaults, ``random_state=0``."""
    return SCMLStochastic(random_state=0).run(data, warn=False)
