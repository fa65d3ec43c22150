"""SCML, fast: a certified working-set LP and the paper's stochastic
proximal method.

:class:`SCMLWorkingSet` (method ``fast``, certified)
    SCML is a linear program in ``(w, xi)`` with one row per triplet; at the
    optimum most triplets are satisfied with room to spare and their rows
    are slack.  The solver keeps a working set of triplets, solves the LP
    restricted to them by HiGHS's dual simplex
    (:func:`~cvxmetric.scml.exact.simplex_multipliers`), then makes one
    pass over *every* triplet at the new ``w`` (one product ``C w``) and
    adds those whose hinge is active outside the set (the most violated
    first, at most ``max_add`` per round).  The restricted LP's value
    never exceeds the optimum and the rows added cut its solution off, so
    the rounds end, in the worst case with every triplet in the set.  When
    no triplet outside is active, :meth:`SCMLData.certificate
    <cvxmetric.scml.SCMLData.certificate>` judges ``w`` over every triplet
    with the simplex multipliers (0 off the set): an exactly feasible
    dual, so the certified gap is the LP's own.  The first set holds the
    triplets most violated at a small multiple of the Euclidean metric
    written in the basis (a least-squares ``w``), up to ``init_size``.

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
    scale = float(np.mean(np.abs(data.C @ w)))
    return w / scale if scale > 0 and np.isfinite(scale) else w


class WSState(NamedTuple):
    iter_num: int
    error: float  # relative gap of the last certificate (inf before)
    rows: np.ndarray  # the working set (sorted triplet indices)
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
    max_add : int
        Triplets added per round at most (the most violated first).
    lp_tol : float
        HiGHS's feasibility tolerances.
    """

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "init_size": [Interval(Integral, 1, None, closed="left")],
        "max_add": [Interval(Integral, 1, None, closed="left")],
        "lp_tol": [Interval(Real, 0, None, closed="neither")],
    }

    maxiter: int = 100
    tol: float = 1e-6
    max_time: float = None
    init_size: int = 2000
    max_add: int = 4000
    lp_tol: float = 1e-10

    name = "fast"

    def init_state(self, data, init=None):
        w = euclidean_weights(data) if init is None else np.maximum(
            np.asarray(init.info.get("w", euclidean_weights(data)), float), 0.0)
        margin = 1.0 + data.C @ w
        size = min(self.init_size, data.n_triplets)
        rows = np.sort(np.argsort(-margin, kind="stable")[:size])
        return w, WSState(0, np.inf, rows, np.zeros(data.n_triplets), None, False, ())

    def update(self, w, state, data):
        t0 = time.perf_counter()
        w, a = simplex_multipliers(data, state.rows, tol=self.lp_tol)
        margin = 1.0 + data.C @ w
        outside = np.ones(data.n_triplets, bool)
        outside[state.rows] = False
        violated = np.flatnonzero(outside & (margin > 0.0))
        cert, done, rows = None, False, state.rows
        if violated.size:
            add = violated[np.argsort(-margin[violated], kind="stable")[:self.max_add]]
            rows = np.union1d(rows, add)
        else:
            cert = data.certificate(w, a, solver=self.name)
            done = cert.passed and cert.rel_gap <= self.tol
            if not done and rows.size == data.n_triplets:
                done = True  # the full LP: nothing left to add
        rounds = state.rounds + ({"size": int(state.rows.size),
                                  "violated_outside": int(violated.size),
                                  "gap": None if cert is None else float(cert.rel_gap),
                                  "seconds": time.perf_counter() - t0},)
        logger.info("%s round %d: working set %d, %d violated outside", self.name,
                    state.iter_num + 1, state.rows.size, violated.size)
        return w, state._replace(
            iter_num=state.iter_num + 1, rows=rows, a=a, certificate=cert, done=done,
            error=state.error if cert is None else float(cert.rel_gap), rounds=rounds)

    def finalize(self, w, state, data):
        cert = state.certificate
        if cert is None:
            cert = data.certificate(w, state.a, solver=self.name)
        cert.tolerances = {"tol": self.tol, "lp_tol": self.lp_tol,
                           "max_add": self.max_add}
        info = {"w": w, "a": state.a, "working_set": int(state.rows.size),
                "working_set_rounds": list(state.rounds)}
        return data.metric(w), cert, info

    def solution(self, M, state):
        return M


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
        "random_state": ["random_state"],
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
        rows = data.C[idx]
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
        a = (1.0 + data.C @ w > 0).astype(float)
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
