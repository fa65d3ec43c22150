"""SCML, fast: a certified working-set LP and the paper's stochastic
proximal method.

:class:`SCMLWorkingSet` (method ``fast``, certified)
    SCML is a linear program in ``(w, xi)`` with one row per triplet and
    one column per basis vector; at the optimum most triplets are
    satisfied with room to spare (their rows are slack) and most weights
    are 0 (the L1 term: on digits 130 of 1 280).  The solver keeps a
    working set of triplets and of basis vectors, solves the LP restricted
    to them by HiGHS's dual simplex
    (:func:`~cvxmetric.scml.exact.simplex_multipliers`), then makes one
    pass over *every* triplet at the new ``w`` (one product ``C w``) and
    adds those whose hinge is active outside the set (the most violated
    first, at most ``max_add`` per round).  When no triplet outside is
    active; with them, the basis vectors outside the set with a negative
    reduced cost ``beta + (C^T a)_i / T`` at the round's multipliers join
    it (column generation, at most ``max_add_cols`` per round).  When
    nothing is left to add, :meth:`SCMLData.certificate
    <cvxmetric.scml.SCMLData.certificate>` judges ``w`` over every triplet
    and basis vector with the simplex multipliers (0 off the set).  Rows added cut the restricted
    solution off and columns added price it out, so the rounds end, in the
    worst case with the whole LP.  The simplex multipliers are a vertex of
    the restricted dual, feasible to round-off, so the certified gap is the
    LP's own.  The first set holds the ``init_size`` triplets most violated
    at a multiple of the Euclidean metric written in the basis (a
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
from .exact import simplex_multipliers

logger = logging.getLogger("cvxmetric")

__all__ = ["SCMLWorkingSet", "SCMLStochastic", "solve_fast", "solve_stochastic"]


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
    mean triplet's distances are of the margin's order."""
    w = np.maximum(np.linalg.lstsq(data.basis.T ** 2, np.ones(data.n_features),
                                   rcond=None)[0], 0.0)
    if not np.any(w > 0):
        w = np.ones(data.n_basis)
    scale = float(np.mean(np.abs(data.margins(w) - 1.0)))
    return w / scale if scale > 0 and np.isfinite(scale) else w


class WSState(NamedTuple):
    iter_num: int
    error: float  # relative gap of the last certificate (inf before)
    rows: np.ndarray  # the working triplets (sorted indices)
    cols: np.ndarray  # the working basis vectors (sorted indices)
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
    lp_tol : float
        HiGHS's feasibility tolerances.
    """

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "init_size": [Interval(Integral, 1, None, closed="left")],
        "init_cols": [Interval(Integral, 1, None, closed="left")],
        "max_add": [Interval(Integral, 1, None, closed="left")],
        "max_add_cols": [Interval(Integral, 1, None, closed="left")],
        "lp_tol": [Interval(Real, 0, None, closed="neither")],
    }

    maxiter: int = 100
    tol: float = 1e-6
    max_time: float = None
    init_size: int = 2000
    init_cols: int = 100
    max_add: int = 4000
    max_add_cols: int = 200
    lp_tol: float = 1e-10

    name = "fast"

    def init_state(self, data, init=None):
        w = euclidean_weights(data) if init is None else np.maximum(
            np.asarray(init.info.get("w", euclidean_weights(data)), float), 0.0)
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
        return w, WSState(0, np.inf, rows, cols, np.zeros(data.n_triplets), None,
                          False, ())

    def update(self, w, state, data):
        t0 = time.perf_counter()
        w, a = simplex_multipliers(data, state.rows, state.cols, tol=self.lp_tol)
        margin = data.margins(w)
        outside = np.ones(data.n_triplets, bool)
        outside[state.rows] = False
        violated = np.flatnonzero(outside & (margin > 0.0))
        # basis vectors outside the set with a negative reduced cost (priced
        # with this round's multipliers, valid whatever rows join)
        r = data.reduced_costs(a)
        r[state.cols] = np.inf
        neg = np.flatnonzero(r < 0.0)
        priced = neg.size
        cert, done, rows, cols = None, False, state.rows, state.cols
        if violated.size or neg.size:
            add = violated[np.argsort(-margin[violated], kind="stable")[:self.max_add]]
            rows = np.union1d(rows, add)
            cols = np.union1d(cols, neg[np.argsort(r[neg], kind="stable")]
                              [:self.max_add_cols])
        else:
            # nothing left to add: the restricted LP is the LP, and its
            # certificate decides (a failure ends the run at maxiter: the
            # status says it is not certified)
            cert = data.certificate(w, a, solver=self.name)
            done = cert.passed and cert.rel_gap <= self.tol
            if not done:
                return w, state._replace(iter_num=self.maxiter, certificate=cert, a=a,
                                         error=float(cert.rel_gap))
        rounds = state.rounds + ({"size": int(state.rows.size),
                                  "basis": int(state.cols.size),
                                  "violated_outside": int(violated.size),
                                  "negative_reduced_costs": int(priced),
                                  "gap": None if cert is None else float(cert.rel_gap),
                                  "seconds": time.perf_counter() - t0},)
        logger.info("%s round %d: %d triplets x %d basis vectors, %d violated outside, "
                    "%d basis vectors priced in", self.name, state.iter_num + 1,
                    state.rows.size, state.cols.size, violated.size, priced)
        return w, state._replace(
            iter_num=state.iter_num + 1, rows=rows, cols=cols, a=a, certificate=cert,
            done=done, error=state.error if cert is None else float(cert.rel_gap),
            rounds=rounds)

    def finalize(self, w, state, data):
        cert = state.certificate
        if cert is None:
            cert = data.certificate(w, state.a, solver=self.name)
        cert.tolerances = {"tol": self.tol, "lp_tol": self.lp_tol,
                           "max_add": self.max_add, "max_add_cols": self.max_add_cols}
        info = {"w": w, "a": state.a, "working_set": int(state.rows.size),
                "working_basis": int(state.cols.size),
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
