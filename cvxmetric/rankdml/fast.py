"""RankDML, fast: hand-written solvers of the problem in :mod:`.exact`.

Each solves exactly the problem :class:`~cvxmetric.rankdml.RankDMLModel`
declares,

    minimise_{A in F}  f(A) = sum_t [1 - <A, K_t>]_+ + (lam / 2) Reg(A),

and stop on the relative duality gap certified by
:meth:`RankData.certificate` (a feasible primal point against the dual bound
``g(alpha)`` of :mod:`._problem`), so "converged" means "certified to
``tol``".  Neither builds a (d, d) matrix per triplet.

:class:`RankDualSolver` (every regulariser, full or diagonal, except Eq. 11
as printed; the default for Burg / LogDet)
    Projected semismooth Newton-CG on the *dual*

        maximise_{alpha in [0, 1]^N}  g(alpha) = 1^T alpha
                 + min_{A in F} (lam/2) Reg(A) - <S(alpha), A>.

    Hinge terms make a primal gradient method stall; the dual is smooth
    because ``Reg`` is strongly convex on ``F`` (Frobenius; Burg's spectral
    form in the whitened ``B = W A W``, ``lam/2 (||B||^2 - 2 logdet B)``, and
    its printed form, ``lam/2 ||A P||^2`` alone having modulus
    ``lam / lambda_max(A0hat)^2``; LogDet on the bounded set
    ``tr(A) = tau``; the trace-fixed Laplacian on ``sum(a) = tau``), and its
    gradient is the vector of hinge arguments at the primal map
    ``A*(alpha)`` (:meth:`RankData.primal_map`: a spectral formula and, for
    trace-fixed problems, an exact one-dimensional root for the trace
    multiplier; for Burg's printed form with a non-isotropic prior, damped
    Newton on ``A`` with the trace row, warm started, whose Hessian
    factor also gives the map's derivative).  ``A*(alpha)`` is feasible by construction: every iterate
    yields a primal upper bound and a dual lower bound.  (An accelerated
    projected gradient method on the same dual was tried first: 24 000
    iterations on a 6-dimensional Frobenius instance whose optimum is rank
    deficient; Newton needs 60-80.)

:class:`DiagonalInteriorPoint` (diagonal problems: Eq. 11 as printed, its
trace-fixed variant, and diagonal Eq. 7)
    The paper solves the diagonal problems by "standard quadratic
    programming techniques"; this is one, written for their structure: a
    primal-dual interior-point method (Mehrotra predictor-corrector) for
    the QP

        minimise  (lam/2) a^T Q a + 1^T xi
        s.t.      K a + xi >= 1,  xi >= 0,  a >= 0,  (1^T a = tau)

    (``Q = I`` for Frobenius; ``Q = I - 11^T/d`` for the Laplacian; the
    trace row only with ``form="trace_fixed"``: as printed, Eq. 11 is this
    QP without it, and ``lam Q + K^T D K + diag(mu / a)`` stays positive
    definite through ``diag(mu / a)``).  Each iteration forms the (d, d) matrix
    ``lam Q + K^T D K + diag(mu / a)`` chunk by chunk (``O(N d^2)``, the
    only large cost), factors it once, and solves for the predictor and the
    corrector with the bordered trace row.  Its certificate is the
    family's own: the iterate projected onto ``F`` against ``g(alpha)`` at
    its (clipped) hinge multipliers.
"""

import dataclasses
import time
import warnings
from dataclasses import dataclass
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import scipy.linalg
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval

from .._linesearch import backtracking
from .._reductions import Reduction, apply_reductions, invert_reductions
from .._settings import _IP_CHUNK, _MU_MIN, _MU_START
from .._solver import IterativeSolver, stop_message
from ..result import SolverResult, Status
from ._problem import project_capped_simplex

__all__ = ["RankDualSolver", "DiagonalInteriorPoint", "FrobeniusPDHG", "solve_fast",
           "warm_start"]


# ---------------------------------------------------------------------------
# Projected Newton on the dual
# ---------------------------------------------------------------------------


class DualState(NamedTuple):
    iter_num: int
    error: float  # certified relative duality gap (best primal vs best dual)
    alpha: np.ndarray  # (N,) dual iterate in [0, 1]
    g: float  # g(alpha)
    margins: np.ndarray  # (N,) gradient of g at alpha: hinge arguments at A
    cache: tuple  # spectral data of the primal map at alpha
    nu: float  # trace multiplier (warm start of the root)
    upper: float  # best primal objective seen
    best_A: object
    lower: float  # best dual bound seen
    best_alpha: np.ndarray
    n_cg: int  # conjugate-gradient iterations so far
    n_fallback: int  # projected-gradient fallback steps so far
    noise: float = 0.0  # round-off of the gap at the best pair (RankData.roundoff)
    prev_diff: float = np.inf  # upper - lower one iteration earlier
    mu: float = _MU_START  # the Newton system's regularisation factor
    lipschitz: float = None  # the fallback gradient step's estimate, once taken


def _gap(upper, lower):
    return (upper - lower) / max(1.0, abs(upper))


@dataclass
class RankDualSolver(IterativeSolver):
    """Projected semismooth Newton-CG on the smooth dual (default for full A).

    Formulation: ``max_{alpha in [0,1]^N} g(alpha)`` (module docstring), the
    Lagrangian dual of Eq. 7 / 9 / 11 over the hinge multipliers, with the
    primal recovered as ``A*(alpha)`` (feasible by construction).

    ``grad g(alpha) = 1 - <A*(alpha), K_t>`` (the hinge arguments) and a
    generalised Hessian is ``-J^T DA* J`` with ``J alpha = S(alpha)`` and
    ``DA*`` the (Clarke) Jacobian of the primal map
    (:meth:`RankData.primal_jvp`); the map is only piecewise smooth where the
    PSD constraint is active (Frobenius), which is what makes first-order and
    quasi-Newton methods crawl there and a semismooth Newton method fast.
    One iteration is a projected Newton step (Bertsekas 1982): with ``h``
    the curvature of ``-g`` along the projected gradient (a Rayleigh
    quotient), multipliers at a bound that a gradient step of length
    ``1/h`` would push across it are held there (the face of the Cauchy
    point; a fixed threshold instead would either stall on small free
    multipliers or on rank-deficient diagonal duals); on the others,
    ``(H_FF + rho I) p = grad_F`` is solved by conjugate gradients (relative
    residual ``min(0.1, ||grad_F||)``) with Hessian-vector products
    ``J^T DA*(J v)`` -- one Laplacian product, one derivative of the
    spectral map and one pass of pair distances each, no per-triplet matrix
    -- and ``rho = h mu min(1, ||projected gradient||)`` (regularised
    semismooth Newton) with ``mu`` adapted as in Levenberg-Marquardt:
    divided by 10 after a full step, multiplied by 10 (at most 1) after a
    step cut below a quarter or a failed one, starting at 0.01; then a
    projected Armijo backtracking search along ``clip(alpha + s p, 0, 1)`` (once the predicted increase of ``g`` is
    below its round-off, a step is accepted when it reduces the projected
    gradient instead).  Should it fail, a projected gradient step is taken.
    The start is the better (larger ``g``) of ``alpha = 0`` (``A*(0)`` is
    the prior) and the indicator of the hinges violated at ``A*(0)``.
    ``error`` is the relative gap between the best primal objective and the
    best dual bound seen (the bound is also evaluated at the multipliers made
    consistent with ``A``).  For Burg / LogDet at a small ``lam`` the run
    goes through larger values of ``lam`` first (:meth:`continuation`).

    Attributes
    ----------
    maxiter : int
    tol : float
        Target certified relative duality gap.
    cg_maxiter : int
        Conjugate-gradient iterations per Newton step.
    """

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "cg_maxiter": [Interval(Integral, 1, None, closed="left")],
    }

    maxiter: int = 500
    tol: float = 1e-9
    cg_maxiter: int = 200

    name = "fast-dual"

    def run(self, data, init=None, *, warn=True):
        """Iterate from ``init``; below the continuation threshold of ``lam``
        (:meth:`continuation`), through a sequence of larger ``lam`` first.

        ``maxiter`` and ``max_time`` bound the whole run, stages included;
        ``n_iter`` counts the iterations of every stage.

        The continuation is a sequence of runs of this solver (one stage of
        the trace each), not a reduction: the problems at the larger
        ``lam`` are solved, not mapped back -- each only warm starts the
        next -- and they share one ``maxiter`` and ``max_time``.
        """
        lams = self.continuation(data)
        if not lams:
            return super().run(data, init, warn=warn)
        t0 = time.perf_counter()
        used = 0
        for lam_k in lams:
            rest = (None if self.max_time is None
                    else max(self.max_time - (time.perf_counter() - t0), 0.0))
            left = self.maxiter - used
            if left < 2 or (rest is not None and rest <= 0.0):
                break
            # a stage only warm starts the next: a loose gap is enough
            stage = dataclasses.replace(self, maxiter=left - 1, tol=max(self.tol, 1e-5),
                                        max_time=rest)
            res = super(RankDualSolver, stage).run(dataclasses.replace(data, lam=lam_k),
                                                   init, warn=False)
            used += res.n_iter
            init = dataclasses.replace(res, info={"alpha": res.info["alpha"]})
        rest = (None if self.max_time is None
                else max(self.max_time - (time.perf_counter() - t0), 1e-3))
        final = dataclasses.replace(self, maxiter=max(self.maxiter - used, 1), max_time=rest)
        res = super(RankDualSolver, final).run(data, init, warn=warn)
        res.info["continuation"] = [float(x) for x in lams]
        res.n_iter += used
        res.time = time.perf_counter() - t0
        return res

    #: Continuation threshold (:meth:`continuation`): ``lam`` against the
    #: per-triplet size of the spectral map's argument.
    continuation_ratio = 1e-2

    def continuation(self, data):
        """The larger ``lam`` solved first (largest first), or ``[]``.

        Burg / LogDet: the primal map is a spectral function of ``z / lam``,
        ``z`` the eigenvalues of ``V (S(alpha) - nu I) V``; as ``lam``
        shrinks the dual approaches the nonsmooth ``1^T alpha - tau
        lambda_max(S)`` and the region where Newton's quadratic model holds
        shrinks with it (measured on the docs' iris triplets, LogDet:
        17 iterations at ``lam = 1``, 179 at ``1e-3``, no certificate in 500
        at ``1e-4``).  Below ``lam_0 = continuation_ratio * ||V S(1) V||_2 /
        N`` the dual is solved at ``lam_0, lam_0 / 10, ...`` down to ``lam``,
        each stage warm started from the last one's multipliers (the dual
        optimum moves continuously with ``lam``): 10-20 Newton steps a
        decade on the same instance.
        """
        if data.regularizer not in ("burg", "logdet") or data.diagonal or data.lam <= 0:
            return []
        N = data.n_constraints
        if N == 0:
            return []
        VSV = data.V @ data.S_of(np.ones(N)) @ data.V
        lam0 = self.continuation_ratio * float(np.linalg.norm(VSV, 2)) / N
        if not data.lam < lam0 or not np.isfinite(lam0):
            return []
        k = int(np.ceil(np.log10(lam0 / data.lam)))
        return [data.lam * 10.0 ** j for j in range(min(k, 30), 0, -1)]

    def converged(self, state):
        # at least one Newton step, even when the starting multipliers are
        # already certified (iteration counts then mean "steps taken")
        # ... or when the gap is down to the floating-point resolution of the
        # hinge arguments (huge distances against the unit margin) and has
        # stopped halving: more iterations cannot certify more (the
        # certificate adds that resolution to the gap and says so)
        diff = state.upper - state.lower
        return state.iter_num >= 1 and (
            state.error <= self.tol
            or diff <= 0.01 * state.noise
            or (diff <= state.noise and diff > 0.5 * state.prev_diff))

    def _evaluate(self, data, alpha, nu):
        """``g``, ``A``, margins and the primal map's cache at ``alpha``."""
        A, lower, nu, cache = data.primal_map_cached(data.S_of(alpha), nu)
        g = float(np.sum(alpha)) + lower
        return g, A, data.margins(A), cache, nu

    def _bounds(self, data, alpha, A, margins, upper, best_A, lower, best_alpha, g):
        obj = float(np.sum(np.maximum(margins, 0.0))) + 0.5 * data.lam * data.penalty(A)
        if obj < upper:
            upper, best_A = obj, A
        if g > lower:
            lower, best_alpha = g, alpha
        cons = np.where(margins > 1e-9, 1.0, np.where(margins < -1e-9, 0.0, alpha))
        if not np.array_equal(cons, alpha):
            val = data.dual_bound(cons)
            if val > lower:
                lower, best_alpha = val, cons
        return upper, best_A, lower, best_alpha

    def init_state(self, data, init=None):
        if data.free_laplacian:
            raise ValueError(
                "data: Eq. 11 as printed (form='printed', no trace constraint) "
                "has a dual restricted to 1^T S(alpha) <= 0, not a smooth dual "
                "on the box; use DiagonalInteriorPoint (or form='trace_fixed').")
        N = data.n_constraints
        if init is not None and init.info.get("alpha") is not None:
            alpha = np.clip(np.asarray(init.info["alpha"], float), 0.0, 1.0)
        else:
            # the better (larger g) of alpha = 0 -- A*(0) is the prior
            # metric for Burg / LogDet, the flat metric for the Laplacian,
            # 0 for Frobenius -- and the multipliers of the hinges violated
            # there (good when most hinges end up active)
            g0, A0, _ = data.dual_value(np.zeros(N))
            viol = (data.margins(A0) > 0).astype(float)
            alpha = viol if data.dual_value(viol)[0] > g0 else np.zeros(N)
        g, A, m, cache, nu = self._evaluate(data, alpha, None)
        upper, best_A, lower, best_alpha = self._bounds(
            data, alpha, A, m, np.inf, A, -np.inf, alpha, g)
        return A, DualState(0, _gap(upper, lower), alpha, g, m, cache, nu, upper,
                            best_A, lower, best_alpha, 0, 0,
                            data.roundoff(best_A, best_alpha))

    def _hess_vec(self, data, cache, free, v):
        """``(J^T DA* J v)_F`` for ``v`` supported on the free set ``F``."""
        u = np.zeros(data.n_constraints)
        u[free] = v
        dA = data.primal_jvp(cache, data.S_of(u))
        return data.constraint_values(dA, subset=free)

    def _cg(self, data, cache, free, rhs, rho):
        """Conjugate gradients for ``(H_FF + rho I) p = rhs``."""
        p = np.zeros_like(rhs)
        r = rhs.copy()
        z = r.copy()
        rr = float(r @ r)
        # relative residual min(0.1, ||rhs||): tighter as the gradient vanishes
        stop = min(0.01, rr) * rr
        k = 0
        for k in range(1, self.cg_maxiter + 1):
            if self.deadline.expired():  # max_time within one CG step
                break
            Hz = self._hess_vec(data, cache, free, z) + rho * z
            zHz = float(z @ Hz)
            if zHz <= 0:  # round-off on a singular direction
                break
            step = rr / zHz
            p += step * z
            r -= step * Hz
            rr_new = float(r @ r)
            if rr_new <= stop:
                break
            z = r + (rr_new / rr) * z
            rr = rr_new
        return p, k

    def update(self, A, state, data):
        s = state
        alpha, g, m, cache, nu = s.alpha, s.g, s.margins, s.cache, s.nu
        # projected gradient (ascent) and the binding set
        pg = np.clip(alpha + m, 0.0, 1.0) - alpha
        pg_norm = float(np.linalg.norm(pg))
        # curvature scale: Rayleigh quotient of the Hessian along pg
        everyone = np.arange(len(alpha))
        h = float(pg @ self._hess_vec(data, cache, everyone, pg)) / max(
            float(pg @ pg), 1e-300)
        h = max(h, 1e-300)
        # a multiplier is held at its bound when a gradient step of length
        # 1/h would cross it (the face of the Cauchy point)
        step_g = m / h
        binding = (((alpha + step_g <= 0) & (m < 0))
                   | ((alpha + step_g >= 1) & (m > 0)))
        free = np.flatnonzero(~binding)
        p = np.zeros_like(alpha)
        n_cg = 0
        if len(free):
            mF = m[free]
            rho = h * s.mu * min(1.0, pg_norm)
            pF, n_cg = self._cg(data, cache, free, mF, rho)
            p[free] = pF
        p[binding] = m[binding] / h
        noise = 1e-11 * max(1.0, abs(g))

        def trial(step):
            new = np.clip(alpha + step * p, 0.0, 1.0)
            move = float(m @ (new - alpha))
            return new, move, (self._evaluate(data, new, nu) if move > 0 else None)

        def accept(step, v):
            new, move, evaluated = v
            if evaluated is None:
                return True  # no ascent along p: the search stops (not a step)
            if evaluated[0] >= g + 1e-4 * move:
                return True
            if move <= noise:
                # the predicted increase is below the round-off of g: judge
                # the step by the projected gradient (the optimality
                # residual) instead, as Newton methods do near a solution
                pg_new = np.clip(new + evaluated[2], 0.0, 1.0) - new
                return float(np.linalg.norm(pg_new)) <= 0.9 * pg_norm
            return False

        accepted, step = False, 1.0
        if not self.deadline.expired():
            search = backtracking(trial, accept, max_backtracks=39,
                                  deadline=self.deadline)
            step = search.step
            accepted = search.accepted and search.value[2] is not None
            if accepted:
                new = search.value[0]
                g_new, A_new, m_new, cache_new, nu_new = search.value[2]
        n_fallback = s.n_fallback
        # Levenberg-Marquardt schedule of the regularisation: shrink it
        # after a full Newton step (the model is trusted), grow it when the
        # step had to be cut below a quarter or failed.  A fixed rho = 0.01 h
        # damps the flat directions of an ill-conditioned dual for good
        # (Burg with tau = 1e4 on 30 points: 500 iterations at a relative
        # gap 1e-3; adaptive: certified)
        mu, lipschitz = s.mu, s.lipschitz
        if accepted and step == 1.0:
            mu = max(_MU_MIN, 0.1 * mu)
        elif not accepted or step < 0.25:
            mu = min(1.0, 10.0 * mu)
        if not accepted:
            # projected gradient step with a backtracked Lipschitz estimate
            n_fallback += 1
            (new, g_new, A_new, m_new, cache_new, nu_new), lipschitz = \
                self._gradient_step(data, A, s, lipschitz or max(h, 1e-12))
        upper, best_A, lower, best_alpha = self._bounds(
            data, new, A_new, m_new, s.upper, s.best_A, s.lower, s.best_alpha, g_new)
        noise = (s.noise if best_A is s.best_A and best_alpha is s.best_alpha
                 else data.roundoff(best_A, best_alpha))
        return A_new, DualState(s.iter_num + 1, _gap(upper, lower), new, g_new, m_new,
                                cache_new, nu_new, upper, best_A, lower, best_alpha,
                                s.n_cg + n_cg, n_fallback, noise, s.upper - s.lower,
                                mu, lipschitz)

    def _gradient_step(self, data, A, s, L0):
        """The fallback projected gradient step from ``s``'s multipliers.

        The search runs on the Lipschitz estimate ``L`` (the step is
        ``1 / L``), from ``L0``: each backtrack doubles ``L`` until the
        ascent test holds.  Returns ``((alpha, g, A, margins, cache, nu),
        lipschitz)`` with the next estimate; the current iterate when time
        is out or no progress is possible at this precision.
        """
        alpha, g, m, nu = s.alpha, s.g, s.margins, s.nu
        current = (alpha, g, A, m, s.cache, nu)

        def trial(L):
            if self.deadline.expired():
                return None  # out of time: the current iterate stays
            new = np.clip(alpha + m / L, 0.0, 1.0)
            return new, self._evaluate(data, new, nu)

        def accept(L, value):
            if value is None:
                return True
            diff = value[0] - alpha
            return (value[1][0] >= g + float(m @ diff) - 0.5 * L * float(diff @ diff)
                    or L > 1e300 or not np.any(diff))

        search = backtracking(trial, accept, step=L0, shrink=2.0)
        lipschitz = 0.5 * search.step
        if search.value is None:
            return current, lipschitz
        new, evaluated = search.value
        if evaluated[0] < g:  # no progress possible at this precision
            return current, lipschitz
        return (new, *evaluated), lipschitz

    def finalize(self, A, state, data):
        best = state.best_A
        cert = data.certificate(best, state.best_alpha, solver=self.name,
                                tolerances={"tol": self.tol,
                                            "cg_maxiter": self.cg_maxiter})
        info = {"alpha": state.best_alpha, "n_cg": state.n_cg,
                "n_fallback": state.n_fallback}
        return data.to_matrix(best), cert, info


# ---------------------------------------------------------------------------
# Interior point for the diagonal QPs
# ---------------------------------------------------------------------------


class IPState(NamedTuple):
    iter_num: int
    error: float  # certified relative duality gap at the projected iterate
    a: np.ndarray  # (d,) > 0
    xi: np.ndarray  # (N,) > 0 hinge slacks
    w: np.ndarray  # (N,) > 0 surplus of K a + xi >= 1
    alpha: np.ndarray  # (N,) multipliers of K a + xi >= 1
    beta: np.ndarray  # (N,) multipliers of xi >= 0
    mu: np.ndarray  # (d,) multipliers of a >= 0
    nu: float  # multiplier of 1^T a = tau
    best_a: np.ndarray
    best_alpha: np.ndarray
    best_error: float
    complementarity: float


@dataclass
class DiagonalInteriorPoint(IterativeSolver):
    """Primal-dual interior point (Mehrotra) for the diagonal RankDML QPs.

    Formulation (module docstring): Eq. 11 (``regularizer="laplacian"``,
    ``a >= 0``; ``sum(a) = tau`` with ``form="trace_fixed"``) or the diagonal Eq. 7
    (``"frobenius"``, ``a >= 0``), in slack form.  The iterates stay
    interior; ``error`` is the certified relative duality gap of the
    original problem at the iterate projected onto ``F`` and the clipped
    multipliers ``alpha`` -- not the interior-point method's own
    complementarity, which is only used to steer the centring.

    Attributes
    ----------
    maxiter : int
    tol : float
        Target certified relative duality gap.
    step_fraction : float
        Fraction of the step to the boundary taken.
    """

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "step_fraction": [Interval(Real, 0, 1, closed="neither")],
    }

    maxiter: int = 200
    tol: float = 1e-9
    step_fraction: float = 0.995

    name = "fast-ipm"


    def _project(self, data, a):
        if data.trace_fixed:
            return project_capped_simplex(a, data.tau)[0]
        return np.maximum(a, 0.0)

    def _error(self, data, a, alpha):
        a = self._project(data, a)
        obj = data.objective(a)
        lower = data.best_dual_bound(alpha, a)
        return _gap(obj, lower), a

    def init_state(self, data, init=None):
        if not data.diagonal:
            raise ValueError(
                "data: DiagonalInteriorPoint solves diagonal problems only "
                "(diagonal=True); use RankDualSolver for a full matrix."
            )
        K = data.K
        N, d = K.shape
        # a flat start inside F; for Frobenius, the scale that puts the
        # average triplet on its margin
        if data.trace_fixed:
            a = np.full(d, data.tau / d)
        else:
            mean_k = float(np.mean(K @ np.ones(d)))
            if not mean_k > 0 and data.regularizer == "laplacian":
                # Eq. 11 as printed on data the flat metric misorders on
                # average: the scale of the distance differences
                mean_k = float(np.mean(np.abs(K) @ np.ones(d)))
            a = np.full(d, 1.0 / mean_k if mean_k > 0 else 1.0)
        if init is not None:
            a0 = data.as_variable(init.M)
            a = np.maximum(self._project(data, a0), 1e-3 * a)
            if data.trace_fixed:
                a *= data.tau / a.sum()
        Ka = K @ a
        xi = np.maximum(1.0 - Ka, 0.0) + 1.0
        w = Ka + xi - 1.0  # >= 1
        alpha = np.full(N, 0.5)
        beta = np.full(N, 0.5)
        mu = np.ones(d)
        err, a_proj = self._error(data, a, alpha)
        comp = self._complementarity(a, xi, w, alpha, beta, mu)
        return a, IPState(0, err, a, xi, w, alpha, beta, mu, 0.0, a_proj, alpha, err,
                          comp)

    @staticmethod
    def _complementarity(a, xi, w, alpha, beta, mu):
        m = 2 * len(xi) + len(a)
        return (float(alpha @ w) + float(beta @ xi) + float(mu @ a)) / m

    def _hessian(self, data, D, a, mu):
        """``lam Q + K^T D K + diag(mu / a)`` (d, d), chunk by chunk."""
        K = data.K
        d = K.shape[1]
        H = np.zeros((d, d))
        # rows whose weight is negligible (inactive hinges: alpha -> 0; active
        # ones: beta -> 0) are skipped: late iterations touch only the margin
        # set, and no denormal products are formed
        rows = np.flatnonzero(D > 1e-15 * float(D.max()))
        for s in range(0, len(rows), _IP_CHUNK):
            r = rows[s:s + _IP_CHUNK]
            Z = K[r] * np.sqrt(D[r])[:, None]
            H += Z.T @ Z
        lam = data.lam
        H[np.diag_indices(d)] += lam + mu / a
        if data.regularizer == "laplacian":
            H -= lam / d  # lam (I - 11^T / d)
        return 0.5 * (H + H.T)

    def update(self, a, state, data):
        s = state
        K = data.K
        lam = data.lam
        d = K.shape[1]
        eq = data.trace_fixed
        a, xi, w, alpha, beta, mu, nu = s.a, s.xi, s.w, s.alpha, s.beta, s.mu, s.nu
        m = 2 * len(xi) + d
        Qa = a - a.mean() if data.regularizer == "laplacian" else a
        r_a = lam * Qa - K.T @ alpha - mu + (nu if eq else 0.0)
        r_b = alpha + beta - 1.0
        r_p = K @ a + xi - w - 1.0
        r_e = float(a.sum()) - data.tau if eq else 0.0
        D = 1.0 / (xi / beta + w / alpha)
        H = self._hessian(data, D, a, mu)
        try:
            factor = scipy.linalg.cho_factor(H, check_finite=False)
        except np.linalg.LinAlgError:
            H[np.diag_indices(d)] += 1e-12 * max(1.0, float(np.trace(H)) / d)
            factor = scipy.linalg.cho_factor(H, check_finite=False)
        ones = np.ones(d)
        Hinv_e = scipy.linalg.cho_solve(factor, ones) if eq else None

        def direction(c_w, c_xi, c_a):
            r3 = -r_p - (c_xi + xi * r_b) / beta + c_w / alpha
            rhs = -r_a + K.T @ (D * r3) + c_a / a
            x = scipy.linalg.cho_solve(factor, rhs, check_finite=False)
            dnu = 0.0
            if eq:
                dnu = (float(x.sum()) + r_e) / float(Hinv_e.sum())
                x = x - dnu * Hinv_e
            da = x
            dal = D * (r3 - K @ da)
            dmu = (c_a - mu * da) / a
            dw = (c_w - w * dal) / alpha
            dbe = -r_b - dal
            dxi = (c_xi - xi * dbe) / beta
            return da, dxi, dw, dal, dbe, dmu, dnu

        def max_step(v, dv):
            neg = dv < 0
            return float(np.min(-v[neg] / dv[neg])) if np.any(neg) else np.inf

        def step_length(dirs):
            da, dxi, dw, dal, dbe, dmu, _ = dirs
            return min(1.0, max_step(a, da), max_step(xi, dxi), max_step(w, dw),
                       max_step(alpha, dal), max_step(beta, dbe), max_step(mu, dmu))

        comp = self._complementarity(a, xi, w, alpha, beta, mu)
        # predictor (affine scaling)
        aff = direction(-alpha * w, -beta * xi, -mu * a)
        if not all(np.all(np.isfinite(v)) for v in aff):
            # the Newton system has left the floating-point range (Eq. 11 as
            # printed at a scale-free weight lam / s^4 far above 1): stop at
            # the best certified point, reported as not converged
            return a, s._replace(iter_num=max(self.maxiter, s.iter_num + 1))
        sa = step_length(aff)
        da, dxi, dw, dal, dbe, dmu, _ = aff
        comp_aff = (float((alpha + sa * dal) @ (w + sa * dw))
                    + float((beta + sa * dbe) @ (xi + sa * dxi))
                    + float((mu + sa * dmu) @ (a + sa * da))) / m
        sigma = min(1.0, (comp_aff / comp) ** 3) if comp > 0 else 0.0
        # corrector with centring
        target = sigma * comp
        dirs = direction(target - alpha * w - dal * dw,
                         target - beta * xi - dbe * dxi,
                         target - mu * a - dmu * da)
        step = min(1.0, self.step_fraction * step_length(dirs))
        da, dxi, dw, dal, dbe, dmu, dnu = dirs
        a = a + step * da
        xi = xi + step * dxi
        w = w + step * dw
        alpha = alpha + step * dal
        beta = beta + step * dbe
        mu = mu + step * dmu
        nu = nu + step * dnu
        err, a_proj = self._error(data, a, alpha)
        best_a, best_alpha, best_error = s.best_a, s.best_alpha, s.best_error
        if err <= best_error:
            best_a, best_alpha, best_error = a_proj, alpha, err
        comp = self._complementarity(a, xi, w, alpha, beta, mu)
        return a, IPState(s.iter_num + 1, best_error, a, xi, w, alpha, beta, mu, nu,
                          best_a, best_alpha, best_error, comp)

    def finalize(self, a, state, data):
        cert = data.certificate(state.best_a, state.best_alpha, solver=self.name,
                                tolerances={"tol": self.tol})
        info = {"alpha": np.clip(state.best_alpha, 0.0, 1.0),
                "complementarity": state.complementarity}
        return data.to_matrix(state.best_a), cert, info


# ---------------------------------------------------------------------------
# Eq. 7 (full matrix): restarted PDHG on the equivalent Qwise problem
# ---------------------------------------------------------------------------


class _NoQwiseForm(ValueError):
    """No ``lam`` up to ``256^64`` times the declared one gives a Qwise
    problem (:class:`AsQwise`)."""


class _QwiseInverse(NamedTuple):
    lam: float  # the declared lam
    factor: float  # lam' / lam of the Qwise problem solved


class AsQwise(Reduction):
    """Eq. 7 with a full matrix as Qwise's Eq. 8 (:meth:`RankData.as_qwise`).

    ``apply`` returns the Qwise problem and the warm start's multipliers
    divided by ``lam``; ``invert`` takes the Qwise solver's result to
    ``(M, alpha)`` of Eq. 7: the symmetric part of ``M`` and the
    multipliers times ``lam``, clipped to ``[0, 1]``.

    Qwise refuses data whose scale-free hinge weight ``C_q s^4`` leaves its
    range: the regulariser is then below the round-off of the hinges (a
    nearly hard-margin problem).  The scaling law (``X -> X / c``, ``lam ->
    lam / c^4``) cannot change that weight, so ``apply`` reduces the same
    triplets at a larger ``lam' = lam 256^k`` where Qwise accepts them
    (the user's warm start, which belongs to the declared ``lam``, is then
    dropped); the certificate on the declared problem then takes the
    multipliers scaled by ``lam / lam'``.  Exact when no hinge is active at
    ``lam'`` (the hard-margin solution is the same for every small
    ``lam``); otherwise a warm start.  ``inverse_data`` holds ``lam`` and
    ``lam' / lam``.
    """

    name = "as-qwise"

    def accepts(self, data):
        return data.regularizer == "frobenius" and not data.diagonal

    def apply(self, data, init):
        lam, factor = data.lam, 1.0
        try:
            qdata = data.as_qwise()
        except ValueError:
            qdata = None
            for _ in range(64):
                factor *= 256.0
                try:
                    qdata = dataclasses.replace(data, lam=lam * factor).as_qwise()
                    break
                except ValueError:
                    continue
            if qdata is None:
                raise _NoQwiseForm("data: no lam up to 256^64 times the declared "
                                   "one gives a Qwise problem.") from None
            init = None
        qinit = None
        if init is not None:
            info = dict(init.info)
            if info.get("alpha") is not None:
                info["alpha"] = np.clip(np.asarray(info["alpha"], float), 0.0, 1.0) / lam
            qinit = dataclasses.replace(init, M=np.asarray(init.M, float), info=info)
        return qdata, qinit, _QwiseInverse(lam, factor)

    def invert(self, res, inverse):
        # Qwise's multipliers times lam' are those of the problem at lam';
        # times lam / lam' those of the declared problem at the same A
        alpha = np.clip(inverse.lam * np.asarray(res.info["alpha"], float), 0.0, 1.0)
        return 0.5 * (res.M + res.M.T), alpha


AS_QWISE = AsQwise()


@dataclass
class FrobeniusPDHG(IterativeSolver):
    """Eq. 7 with a full matrix: restarted PDHG (default for that problem).

    Eq. 7 is Qwise's Eq. 8 with the quadruplets ``(q, r, q, i)``, margins 1,
    ``Omega = ||M||_F^2 / 2`` and ``C_q = 1 / lam``; its objective is ``lam``
    times Qwise's and its hinge multipliers are ``lam`` times Qwise's
    (``g(lam beta) = lam g_Qwise(beta)``).  This solver runs
    :class:`cvxmetric.qwise.fast.QwiseDualSolver` (restarted primal-dual
    hybrid gradient with a ray warm start, working set and exact power-of-two
    rescaling of the data) on that problem and certifies the point on
    :class:`RankData` itself, so its certificate is the family's.

    Why not :class:`RankDualSolver` here: on real data most hinges of Eq. 7
    stay active at the optimum (digits, 14 370 critical triplets, d = 30:
    ~70 %), the dual has N variables but a Hessian of rank at most
    ``d (d + 1) / 2``, and the projected Newton method on it crawls
    (500 iterations, relative gap 1e-2 after 50-65 s); PDHG iterates on
    ``M`` and the multipliers together and certifies the same instance
    in about 3 s.

    Attributes
    ----------
    maxiter : int
        Iterations of the PDHG solver.
    tol : float
        Target certified relative duality gap (of Eq. 7; the Qwise run is
        given ``tol / max(1, lam)``, which implies it).  Default ``1e-7``:
        ten times inside the package's certificate tolerance (``1e-6``),
        as Qwise's solver; ``1e-9`` doubled the iterations on digits PCA-30
        (5 248 against 2 560, 6.4 s against 3.2 s) for digits the
        certificate does not ask for.
    """

    _parameter_constraints = {**IterativeSolver._parameter_constraints}

    maxiter: int = 200_000
    tol: float = 1e-7

    name = "fast-pdhg"

    def check_data(self, data):
        if not AS_QWISE.accepts(data):
            raise ValueError(
                "data: FrobeniusPDHG solves Eq. 7 with a full matrix only "
                "(regularizer='frobenius', diagonal=False)."
            )

    def run(self, data, init=None, *, warn=True):
        """Solve Eq. 7 (``data.regularizer == "frobenius"``, full matrix).

        Not an iteration of its own but a chain: the reduction
        :data:`AS_QWISE` (a stage of the trace), Qwise's
        :class:`~cvxmetric.qwise.fast.QwiseDualSolver` on the reduced
        problem, the inverse, the certificate on ``data``; and
        :class:`RankDualSolver` where the reduction does not apply or its
        point is not certified at a raised ``lam``.
        """
        from ..qwise.fast import QwiseDualSolver

        self.check_data(data)
        t0 = time.perf_counter()
        lam = data.lam
        try:
            qdata, qinit, applied = apply_reductions([AS_QWISE], data, init)
        except _NoQwiseForm:
            return RankDualSolver(maxiter=min(self.maxiter, 500), tol=self.tol,
                                  max_time=self.max_time).run(data, init, warn=warn)
        factor = applied[0][1].factor
        # the Qwise gap is gap / max(lam, f): with lam > 1 a Qwise gap of
        # tol / lam implies the Eq. 7 gap tol
        solver = QwiseDualSolver(maxiter=self.maxiter,
                                 tol=self.tol / max(1.0, lam),
                                 max_time=self.max_time)
        res = solver.run(qdata, qinit, warn=False)
        M, alpha = invert_reductions(applied, res)
        cert = data.certificate(M, alpha, solver=self.name,
                                tolerances={"tol": self.tol, "maxiter": self.maxiter,
                                            "lam_factor": factor})
        if factor != 1.0 and not cert.passed:
            warm = SolverResult(M=M, status=Status.MAX_ITER, objective=cert.objective,
                                n_iter=res.n_iter, certificate=cert, method=self.name,
                                info={"alpha": alpha})
            rest = (None if self.max_time is None
                    else max(self.max_time - (time.perf_counter() - t0), 1e-3))
            # (non-separable at lam': in this almost linear regime the dual
            # Newton method rarely closes the gap -- measured: gap 0.2-1.0
            # after 500 iterations -- so it gets a short run, not 500)
            return RankDualSolver(maxiter=min(self.maxiter, 50), tol=self.tol,
                                  max_time=rest).run(data, warm, warn=warn)
        cert.times["total"] = time.perf_counter() - t0
        info = {"alpha": alpha, "qwise_status": res.raw_status}
        raw = res.raw_status
        if raw == Status.OPTIMAL and cert.rel_gap > self.tol:
            raw = Status.OPTIMAL_INACCURATE
        result = SolverResult(M=M, status=raw, objective=cert.objective,
                              n_iter=res.n_iter, certificate=cert, method=self.name,
                              info=info, time=cert.times["total"], raw_status=raw)
        if result.status != Status.OPTIMAL and warn:
            warnings.warn(stop_message(self.name, result, self.max_time),
                          ConvergenceWarning, stacklevel=2)
        return result


def solve_fast(data, *, tol=None, maxiter=None, max_time=None, init=None, warn=True):
    """The default fast solver of ``data``: :class:`DiagonalInteriorPoint` for
    diagonal problems, :class:`FrobeniusPDHG` for Eq. 7 with a full matrix,
    :class:`RankDualSolver` otherwise (Burg, LogDet).

    ``tol`` / ``maxiter`` (``None``: the solver's default) and ``max_time``
    are passed on.

    Returns
    -------
    SolverResult

    Raises
    ------
    ValueError
        ``lam = 0`` with a full matrix: without a strongly convex
        regulariser the dual is not smooth (and Eq. 7's Qwise form has
        ``C_q = 1 / lam``); the exact solver handles it.
    """
    if data.lam == 0 and not data.diagonal:
        raise ValueError(
            "lam: 0 with a full matrix is a linear SDP whose dual is not smooth; "
            "the fast solvers need lam > 0 -- use solver='exact' (or "
            "diagonal=True, whose interior point solves the LP).")
    if data.diagonal:
        cls = DiagonalInteriorPoint
    elif data.regularizer == "frobenius":
        cls = FrobeniusPDHG
    else:
        cls = RankDualSolver
    kw = {"max_time": max_time}
    if tol is not None:
        kw["tol"] = tol
    if maxiter is not None:
        kw["maxiter"] = maxiter
    return cls(**kw).run(data, init, warn=warn)


def warm_start(data):
    """:func:`solve_fast` at ``tol=1e-7``, silent when it stops short: the
    guess of the exact path's margin-set reduction
    (:func:`cvxmetric.rankdml.solve_exact`).

    Its point and multipliers say which hinges are inactive, on their
    margin or active; a wrong guess costs rounds, never accuracy, and a
    certified one is the exact path's last resort when both conic solvers
    fail.  ``Formulation.warm_start`` of ``"rankdml"`` names it, and
    :meth:`cvxmetric.formulations.Formulation.solve_exact` passes it to the
    exact path (which imports no fast solver).

    Parameters
    ----------
    data : RankData
        The problem the exact path solves (at unit scale when it rescales).

    Returns
    -------
    SolverResult
    """
    return solve_fast(data, tol=1e-7, warn=False)
