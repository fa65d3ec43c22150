"""Qwise structural, fast: the 1-slack cutting-plane method of Sec. 4.4 and
the closed form by the Qwise dual solver.

* :class:`StructuralCuttingPlane` -- the paper's method (Joachims, Finley
  and Yu, "Cutting-plane training of structural SVMs"; MLR): a master
  problem in CVXPY over the cuts found so far and the sort-based oracle of
  :meth:`~cvxmetric.qwise_structural.StructuralData.oracle`, certified by
  the master's multipliers.
* :func:`solve_structural_fast` -- Eq. 16's closed form as a weighted Qwise
  Eq. 8 problem (:meth:`~cvxmetric.qwise_structural.StructuralData.as_qwise`),
  by :class:`~cvxmetric.qwise.QwiseDualSolver`.
"""

import logging
import time
import warnings
from dataclasses import dataclass
from numbers import Real
from typing import NamedTuple

import cvxpy as cp
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval

from .._exact import solve_certified
from .._linalg import project_psd
from .._solver import IterativeSolver, stop_message
from .._tolerances import EXACT_GAP
from .._validation import check_instance
from ..result import Certificate, SolverError, SolverResult, Status
from ._problem import Cut, StructuralData, _omega_expr

__all__ = ["StructuralCuttingPlane", "solve_structural_fast", "MASTER_SOLVERS"]

logger = logging.getLogger("cvxmetric")

#: Conic solvers of the cutting-plane master problem, in order.  SCS first:
#: on the master (one (d, d) PSD cone, a few hundred dense cut rows) its
#: factor-once splitting iterations are 7-15x faster than Clarabel's
#: interior point at d = 50 (0.47 s against 3.3-7.6 s for 100 cuts to 1e-8,
#: measured on the 2-core machine), and every master point is certified
#: by the package's own bound anyway.
MASTER_SOLVERS = ("SCS", "CLARABEL")


# ---------------------------------------------------------------------------
# The 1-slack cutting-plane method
# ---------------------------------------------------------------------------


class CuttingPlaneState(NamedTuple):
    iter_num: int
    error: float  # H(M) - xi: violation of the most violated constraint
    epsilon: float  # the stopping threshold this round (see StructuralCuttingPlane)
    xi: float  # the master's slack at M: max(0, max_k delta_k - <M, G_k>)
    cut: Cut  # the oracle's cut at M (added by the next round)
    cuts: tuple  # the cuts in the master problem
    lower: float  # best lower bound on Eq. 16 so far
    upper: float  # objective of the best M so far
    best_M: np.ndarray
    lam: np.ndarray  # the master's multipliers, one per cut
    master_iter: int  # interior-point iterations, summed over rounds
    history: tuple  # per round: (violation, lower, upper, seconds)
    master: dict = None  # this run's master problem (see _master_problem)


@dataclass
class StructuralCuttingPlane(IterativeSolver):
    """1-slack cutting-plane solver of Eq. 16 (Joachims, Finley, Yu; MLR).

    One round (one :meth:`update`) adds the most violated constraint at the
    current ``M`` (:meth:`StructuralData.oracle`) to the working set and
    re-solves the master problem::

        minimise_{M PSD, xi >= 0}  Omega(M) + C xi
        subject to  <M, G_k> >= delta_k - xi   for each cut k

    in CVXPY (rebuilt each round: one PSD variable, one slack, one linear
    constraint per cut with the cut's (d, d) matrix as constant), through
    the package's certified path (Clarabel, SCS as fallback).  It stops
    when the most violated constraint exceeds ``xi`` by at most
    ``epsilon``: ``H(M) - xi <= epsilon``.

    Certificate: the master's multipliers ``lambda`` (``sum lambda <= C``)
    give the dual value ``g(lambda)`` of :meth:`StructuralData.dual_bound`,
    a lower bound on the master's optimum and hence on Eq. 16's (the
    master has a subset of Eq. 16's constraints); ``Omega(M) + C H(M)`` at
    the master's ``M`` is an upper bound.  The gap is at most
    ``C (H(M) - xi)`` plus the master's own gap.

    Attributes
    ----------
    maxiter : int
        Maximum number of rounds (cuts).
    tol : float
        Relative gap aimed at when ``epsilon`` is None: each round stops at
        ``epsilon = tol * max(1, f(M)) / C``, so that the certified relative
        gap is ``tol`` plus the master's gap (about 1e-9).  Default
        ``EXACT_GAP / 2``: the result is normally certified ``optimal``.
    epsilon : float > 0, optional
        Absolute stopping threshold on ``H(M) - xi`` (SVM-struct's and
        MLR's ``epsilon``; MLR uses 0.01).  Overrides ``tol``; a loose
        value ends with status ``optimal_inaccurate``.
    max_time : float, optional
        Wall-clock budget (seconds), checked between rounds.
    solvers : tuple of str
        Conic solvers of the master problem, in order.
    master_tol : float
        Tolerance passed to the conic solver of the master.
    """

    maxiter: int = 500
    tol: float = 0.5 * EXACT_GAP
    max_time: float = None
    epsilon: float = None
    solvers: tuple = MASTER_SOLVERS
    master_tol: float = 1e-9

    name = "structural"

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "epsilon": [Interval(Real, 0, None, closed="neither"), None],
        "solvers": [tuple, list],
        "master_tol": [Interval(Real, 0, None, closed="neither")],
    }

    def blas_flops(self, data):
        return float(data.op.n_pairs) * data.n_features ** 2

    def _epsilon(self, data, upper):
        if self.epsilon is not None:
            return float(self.epsilon)
        return self.tol * max(1.0, abs(upper)) / data.C

    def init_state(self, data, init=None):
        check_instance(data, StructuralData, "data")
        d = data.n_features
        M = np.zeros((d, d))
        if init is not None:
            M = project_psd(np.asarray(init.M, dtype=float))
        cut = data.oracle(M)
        upper = data.regularizer_value(M) + data.C * cut.violation
        state = CuttingPlaneState(
            iter_num=0, error=cut.violation, epsilon=self._epsilon(data, upper),
            xi=0.0, cut=cut, cuts=(), lower=0.0, upper=upper, best_M=M,
            lam=np.zeros(0), master_iter=0, history=())
        return M, state

    def converged(self, state):
        return state.error <= state.epsilon

    @staticmethod
    def _master_problem(data, n_cuts, cache):
        """The master problem with room for at least ``n_cuts`` cuts
        (``cache``: the run's current one, or None).

        Kept between rounds (in the run's state): cut ``k`` is row ``k`` of
        the parameter ``A`` (its ``G_k`` flattened) and entry ``k`` of
        ``delta``; unused rows are zero (``0 >= 0 - xi``, implied by
        ``xi >= 0``).  The problem is
        DPP, so a new cut only updates parameter values, and SCS restarts
        from the previous round's solution (CVXPY's warm start).  The room
        doubles when it runs out (one recompilation).
        """
        if cache is not None and cache["room"] >= n_cuts:
            return cache
        d = data.n_features
        room = max(16, 2 * (cache["room"] if cache is not None else 0), n_cuts)
        M = cp.Variable((d, d), symmetric=True, name="M")
        xi = cp.Variable(nonneg=True, name="xi")
        A = cp.Parameter((room, d * d), name="A", value=np.zeros((room, d * d)))
        delta = cp.Parameter(room, name="delta", value=np.zeros(room))
        # [declare:structural-master]
        con = A @ cp.vec(M, order="C") >= delta - xi
        problem = cp.Problem(
            cp.Minimize(_omega_expr(data.regularizer, M) + data.C * xi),
            [con, M >> 0])
        # [/declare]
        return {"room": room, "problem": problem, "M": M, "xi": xi,
                "A": A, "delta": delta, "con": con}

    def _master(self, data, cuts, cache):
        """Solve the master problem over ``cuts`` (``cache``: the run's
        master problem so far); ``(M, lam, delta, info, master problem)``."""
        K = len(cuts)
        m = self._master_problem(data, K, cache)
        A = np.zeros(m["A"].shape)
        A[:K] = np.stack([c.G.reshape(-1) for c in cuts])  # G symmetric
        delta = np.zeros(m["room"])
        delta[:K] = [c.delta for c in cuts]
        m["A"].value, m["delta"].value = A, delta
        M, con = m["M"], m["con"]
        A, delta = A[:K], delta[:K]
        Gs = np.stack([c.G for c in cuts])

        def multipliers():
            lam = np.maximum(np.ravel(con.dual_value)[:K], 0.0)
            total = float(lam.sum())
            return lam * (data.C / total) if total > data.C else lam

        def master_value(Mv):
            return data.regularizer_value(Mv) + data.C * max(
                0.0, float(np.max(delta - A @ Mv.reshape(-1))))

        def certify(name, version, opts, times):
            Mv = 0.5 * (M.value + M.value.T)
            lam = multipliers()
            upper = master_value(project_psd(Mv))
            S = np.tensordot(lam, Gs, axes=1)
            bound = data.dual_bound(S, float(lam @ delta), upper)
            min_eig = float(np.linalg.eigvalsh(Mv)[0])
            return Certificate.from_bound(
                master_value(Mv), bound, max_violation=max(0.0, -min_eig),
                min_eig=min_eig, solver=name, solver_version=version,
                tolerances=opts, times=times)

        try:
            _, info = solve_certified(m["problem"], certify, solvers=self.solvers,
                                      tol=self.master_tol)
        except SolverError as exc:
            # an uncertified master point still gives valid bounds (the
            # multipliers are repaired, the upper bound is recomputed)
            if M.value is None or con.dual_value is None:
                raise
            info = exc.result[1] if exc.result is not None else {"n_iter": 0}
            logger.info("structural master not certified: %s", exc)
        return project_psd(M.value), multipliers(), delta, info, m

    def update(self, M, state, data):
        t0 = time.perf_counter()
        cuts = state.cuts + (state.cut,)
        Mv, lam, delta, info, master = self._master(data, cuts, state.master)
        dist = data.distances(Mv)
        cut = data.oracle(Mv, dist=dist)
        f = data.regularizer_value(Mv) + data.C * cut.violation
        # the master's slack at its M, from the cuts themselves
        xi = max(0.0, max(c.delta - float(np.sum(c.G * Mv)) for c in cuts))
        S = np.tensordot(lam, np.stack([c.G for c in cuts]), axes=1)
        upper = min(state.upper, f)
        best_M = Mv if f <= state.upper else state.best_M
        lower = max(state.lower, data.dual_bound(S, float(lam @ delta), upper))
        error = max(cut.violation - xi, 0.0)
        history = state.history + ((error, lower, upper, time.perf_counter() - t0),)
        logger.debug("structural round %d: H - xi = %.3e, bounds [%.9g, %.9g]",
                     state.iter_num + 1, error, lower, upper)
        new = CuttingPlaneState(
            iter_num=state.iter_num + 1, error=error,
            epsilon=self._epsilon(data, upper), xi=xi, cut=cut, cuts=cuts,
            lower=lower, upper=upper, best_M=best_M, lam=lam,
            master_iter=state.master_iter + int(info.get("n_iter", 0)),
            history=history, master=master)
        return Mv, new

    def finalize(self, M, state, data):
        best = state.best_M
        cert = data.certificate(best, state.lower, solver="cutting_plane")
        info = {
            "n_cuts": len(state.cuts),
            "rounds": state.iter_num,
            "epsilon": float(state.epsilon),
            "final_violation": float(state.error),
            "xi": float(state.xi),
            "lower": float(state.lower),
            "upper": float(state.upper),
            "master_iter": int(state.master_iter),
            "lambda": state.lam,
            "history": [dict(zip(("violation", "lower", "upper", "seconds"), h))
                        for h in state.history],
        }
        return best, cert, info


# ---------------------------------------------------------------------------
# The closed form by the Qwise dual solver
# ---------------------------------------------------------------------------


def _zero_if_optimal(data, t0):
    """``M = 0`` as a certified fast result when Eq. 16's bound with every
    hinge multiplier at its cap ``C w_t`` closes the gap there, else None."""
    M = np.zeros((data.X.shape[1],) * 2)
    _, _, w, _ = data.terms()
    dist = data.distances(M)
    upper = data.objective(M, dist=dist)
    bound = data.hinge_dual_bound(data.C * w, M, upper, dist=dist)
    cert = data.certificate(M, bound, solver="fast", tolerances={})
    if not cert.passed:
        return None
    cert.times["total"] = time.perf_counter() - t0
    return SolverResult(M=M, status=Status.OPTIMAL, objective=cert.objective,
                        n_iter=0, certificate=cert, method="fast",
                        info={"zero_certified": True}, time=cert.times["total"],
                        raw_status=Status.OPTIMAL)


def solve_structural_fast(data, *, tol=None, maxiter=None, max_time=None, warn=True):
    """Eq. 16 through its closed form, by the Qwise dual solver.

    The closed form ``Omega(M) + C H(M)`` is a Qwise Eq. 8 problem with
    per-hinge weights (:meth:`StructuralData.as_qwise`), solved by
    :class:`~cvxmetric.qwise.QwiseDualSolver` (restarted PDHG with its
    working set; it scales to 10^6 hinges).  Its ``M`` is certified here on
    Eq. 16 itself: the upper bound is :meth:`StructuralData.objective`, the
    lower bound :meth:`StructuralData.hinge_dual_bound` of its multipliers
    (constant hinges at their cap).  Not the paper's algorithm (that is
    :class:`StructuralCuttingPlane`): the same optimum, reached without
    cuts.

    Parameters
    ----------
    data : StructuralData
    tol, maxiter, max_time
        Passed to :class:`~cvxmetric.qwise.QwiseDualSolver` when given.
    warn : bool, default=True
        Emit a ``ConvergenceWarning`` when the result is not ``"optimal"``.

    Returns
    -------
    SolverResult
        ``method="fast"``.
    """
    from ..qwise.fast import QwiseDualSolver

    check_instance(data, StructuralData, "data")
    t0 = time.perf_counter()
    try:
        qdata, keep = data.as_qwise()
    except ValueError as exc:
        # data so small that the closed form's scale-free hinge weight
        # underflows: the exact paths (in the user's units) certify M = 0
        # there, and so does this path, with the same bound (every
        # multiplier at its cap, the subgradient of the hinges at M = 0)
        zero = _zero_if_optimal(data, t0) if str(exc).startswith("X:") else None
        if zero is None:
            raise
        return zero
    options = {k: v for k, v in (("tol", tol), ("maxiter", maxiter),
                                 ("max_time", max_time)) if v is not None}
    res = QwiseDualSolver(**options).run(qdata, warn=False)
    M = project_psd(res.M)
    dist = data.distances(M)
    upper = data.objective(M, dist=dist)
    # multipliers of the closed form's hinges: the Qwise ones halved
    # (the hinge weight is 2 C w_t there, C w_t here)
    alpha = np.zeros(data.n_terms)
    alpha[keep] = 0.5 * np.asarray(res.info["alpha"], dtype=float)
    bound = data.hinge_dual_bound(alpha, M, upper, dist=dist)
    cert = data.certificate(M, bound, solver="fast", tolerances={"tol": tol})
    cert.times["total"] = time.perf_counter() - t0
    out = SolverResult(M=M, status=res.raw_status, objective=cert.objective,
                       n_iter=res.n_iter, certificate=cert, method="fast",
                       info={"qwise_status": res.status},
                       time=cert.times["total"], raw_status=res.raw_status)
    if out.status != Status.OPTIMAL and warn:
        warnings.warn(stop_message("fast", out, max_time), ConvergenceWarning,
                      stacklevel=2)
    return out
