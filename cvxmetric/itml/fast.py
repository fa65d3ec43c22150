"""ITML, fast: a certified projected Newton method on the dual, and the
paper's cyclic Bregman projections (Algorithm 1).

Both work on the multipliers ``alpha`` (one per pair, the paper's
``lambda_ij``) of the dual of :mod:`cvxmetric.itml._problem`::

    maximise_{alpha >= 0}  g(alpha) = log det(M0^-1 + G(alpha)) + log det M0
                                      + gamma sum_p log(1 - s_p alpha_p xi0_p / gamma)

with ``G(alpha) = sum_p alpha_p s_p phi_p phi_p^T``; the metric of
``alpha`` is ``M(alpha) = (M0^-1 + G)^-1``, and ``F(M(alpha)) - g(alpha)``
is a certified gap at every iterate.

:class:`ITMLDualNewton` (method ``fast``, certified)
    Projected Newton (Bertsekas' two-metric method) on ``g``: the free
    multipliers are those above 0 or whose gradient points inside; the
    Newton direction on them solves ``(K o K + diag(xi^2 / gamma)) delta =
    grad`` (``K_pq = phi_p^T M phi_q``, signs folded in) by preconditioned
    conjugate gradients, each product costing two rank-k updates of ``d x
    d`` matrices and one pass over the pairs (``K`` is never formed); the
    step is projected on ``alpha >= 0`` and backtracked until ``g``
    increases enough (Armijo) inside the dual's domain (``M0^-1 + G``
    positive definite, every slack positive).  It stops when the
    certificate's relative gap is at most ``tol``: status ``optimal``
    exactly when that certificate passes at the package's tolerance.  From
    ``alpha = 0`` (the prior) it needs 15 (iris) to 25 (digits) Newton
    steps.

:class:`ITMLBregman` (method ``bregman``, the paper's)
    Algorithm 1 of the paper as metric-learn 0.7 runs it: passes over the
    similar pairs, then the dissimilar ones, each a Bregman projection onto
    one constraint -- the exact maximisation of ``g`` along ``alpha_p``
    clipped at 0 -- done as the rank-one update ``M <- M + beta M phi phi^T
    M`` with ``alpha = min(lambda_p, gamma/(gamma+1) (1/D - 1/xi_p))``
    (signs for a dissimilar pair), ``lambda_p <- lambda_p - alpha``, ``xi_p
    <- (1/xi_p + alpha/gamma)^-1``.  By default (``stop="lambda"``) it
    stops as metric-learn does, when ``|lambda - lambda_old|_1 /
    (|lambda|_2 + |lambda_old|_2) < tol`` (``tol = 1e-3``); its result then
    carries the certificate of its multipliers, which rarely passes (the
    status says so).  ``stop="gap"`` runs it until that certificate's gap
    is at most ``tol`` (checked every ``check_every`` passes): it converges
    to the optimum, but as coordinate ascent does, slowly (hundreds to
    thousands of passes where :class:`ITMLDualNewton` takes 20 steps).
"""

from dataclasses import dataclass
from numbers import Integral
from typing import NamedTuple

import numpy as np
from scipy.linalg.blas import dsymv as _symv
from scipy.linalg.blas import dsyr as _syr
from scipy.sparse.linalg import LinearOperator, cg
from sklearn.utils._param_validation import Interval, StrOptions

from .._settings import ITML_ARMIJO, ITML_CG_MAXITER
from .._solver import IterativeSolver
from .._validation import check_instance
from ._problem import ITMLData, signed_gram

__all__ = ["ITMLDualNewton", "ITMLBregman", "solve_fast", "solve_bregman"]


def _start(data, init):
    """The multipliers to start from: ``init``'s (a result with
    ``info["alpha"]`` of the right length, inside the dual's domain), else 0."""
    alpha = None if init is None else (getattr(init, "info", None) or {}).get("alpha")
    if alpha is not None:
        alpha = np.maximum(np.asarray(alpha, dtype=float).ravel(), 0.0)
        if alpha.shape == (data.n_pairs,) and np.isfinite(data.dual_value(alpha)):
            return alpha
    return np.zeros(data.n_pairs)


def _gap(data, M, g):
    """The certificate's relative gap ``(F(M) - g) / max(1, |F(M)|)``."""
    f = data.objective(M)
    return (f - g) / max(1.0, abs(f)) if np.isfinite(f) else np.inf


class _OnITML:
    """What both solvers share: the data they accept, the certificate."""

    def check_data(self, data):
        check_instance(data, ITMLData, "data")

    def blas_flops(self, data):
        return float(data.n_pairs) * data.n_features ** 2

    def finalize(self, M, state, data):
        cert = data.certificate(M, state.alpha, solver=self.name)
        cert.tolerances = {"tol": self.tol, "maxiter": self.maxiter}
        info = {"alpha": state.alpha, "bounds": data.bounds.copy()}
        return M, cert, info


class NewtonState(NamedTuple):
    iter_num: int
    error: float      # the certificate's relative gap at M(alpha)
    alpha: np.ndarray
    g: float
    grad: np.ndarray
    M: np.ndarray
    n_cg: int         # conjugate-gradient iterations so far
    stalled: bool     # the line search found no increase (round-off)


@dataclass
class ITMLDualNewton(_OnITML, IterativeSolver):
    """Projected Newton on ITML's dual (module docstring).

    Attributes
    ----------
    maxiter : int
        Newton steps at most.
    tol : float
        Stop when the certified relative gap is at most ``tol``.
    max_time : float, optional
    """

    maxiter: int = 200
    tol: float = 1e-8
    max_time: float = None

    name = "dual-newton"

    def converged(self, state):
        return state.error <= self.tol or state.stalled

    def _state(self, data, alpha, it, n_cg, stalled=False):
        g, grad, M = data.dual_gradient(alpha)
        return NewtonState(it, _gap(data, M, g), alpha, g, grad, M, n_cg, stalled)

    def init_state(self, data, init=None):
        state = self._state(data, _start(data, init), 0, 0)
        return state.M, state

    def _direction(self, data, state):
        """The Newton direction on the free multipliers (zero elsewhere) and
        the conjugate-gradient iterations it took."""
        alpha, grad, M = state.alpha, state.grad, state.M
        free = np.flatnonzero((alpha > 0) | (grad > 0))
        delta = np.zeros_like(alpha)
        if free.size == 0:
            return delta, 0
        Phi, s = data.Phi[free], data.s[free]
        PM = Phi @ M
        D = np.einsum("pi,pi->p", PM, Phi)
        xi2 = (data.xi0[free] / (1.0 - s * alpha[free] * data.xi0[free] / data.gamma)) ** 2
        curv = xi2 / data.gamma

        def hess(v):  # (K o K) v + curv v, signs folded in (s_p^2 = 1)
            B = signed_gram(Phi, s * v)
            return s * np.einsum("pi,pi->p", PM @ B, PM) + curv * v

        n = free.size
        count = [0]

        def counted(_):
            count[0] += 1

        g_free = grad[free]
        rtol = min(0.1, float(np.sqrt(np.linalg.norm(g_free))))
        step, _ = cg(LinearOperator((n, n), matvec=hess), g_free,
                     M=LinearOperator((n, n), matvec=lambda v: v / (D * D + curv)),
                     rtol=rtol, maxiter=ITML_CG_MAXITER, callback=counted)
        delta[free] = step
        return delta, count[0]

    def update(self, M, state, data):
        delta, n_cg = self._direction(data, state)
        alpha, g, grad = state.alpha, state.g, state.grad
        t = 1.0
        for _ in range(60):
            new = np.maximum(alpha + t * delta, 0.0)
            value = data.dual_value(new)
            if value >= g + ITML_ARMIJO * float(grad @ (new - alpha)) and value > g:
                state = self._state(data, new, state.iter_num + 1, state.n_cg + n_cg)
                return state.M, state
            t *= 0.5
            if self.deadline.expired():
                break
        state = state._replace(iter_num=state.iter_num + 1, stalled=True)
        return M, state


class BregmanState(NamedTuple):
    iter_num: int
    error: float
    alpha: np.ndarray   # the paper's lambda
    A: np.ndarray       # the metric, updated by rank-one steps
    xi: np.ndarray      # the slacks (metric-learn's bhat)
    alpha_old: np.ndarray


@dataclass
class ITMLBregman(_OnITML, IterativeSolver):
    """The paper's Algorithm 1, as metric-learn runs it (module docstring).

    Attributes
    ----------
    maxiter : int
        Passes over the pairs at most (metric-learn's ``max_iter``).
    tol : float
        ``stop="lambda"``: metric-learn's threshold on the multipliers'
        relative change; ``stop="gap"``: the certified relative gap.
    max_time : float, optional
    stop : {"lambda", "gap"}
    check_every : int
        Passes between two certificates with ``stop="gap"``.
    """

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "stop": [StrOptions({"lambda", "gap"})],
        "check_every": [Interval(Integral, 1, None, closed="left")],
    }

    maxiter: int = 1000
    tol: float = 1e-3
    max_time: float = None
    stop: str = "lambda"
    check_every: int = 10

    name = "bregman"

    def init_state(self, data, init=None):
        alpha = _start(data, init)
        M = data.dual_metric(alpha)
        # metric-learn's slacks: its bhat starts at the bounds
        c = 1.0 - data.s * alpha * data.xi0 / data.gamma
        state = BregmanState(0, np.inf, alpha.copy(), np.asfortranarray(M), data.xi0 / c,
                             alpha.copy())
        return M, state

    def _pass(self, data, A, alpha, xi):
        """One cycle of projections, similar pairs first (metric-learn's
        order); ``A`` (its upper triangle, Fortran order), ``alpha`` and
        ``xi`` are updated in place by BLAS's symmetric rank-one update."""
        gamma = data.gamma
        gp = gamma / (gamma + 1.0)
        Phi, s = data.Phi, data.s
        for p in np.concatenate([np.flatnonzero(s > 0), np.flatnonzero(s < 0)]):
            v = Phi[p]
            Av = _symv(1.0, A, v)
            w = float(v @ Av)
            if w <= 0.0:  # a pair of identical points: nothing to project
                continue
            if s[p] > 0:
                a = min(alpha[p], gp * (1.0 / w - 1.0 / xi[p]))
                beta = a / (1.0 - a * w)
                xi[p] = 1.0 / (1.0 / xi[p] + a / gamma)
            else:
                a = min(alpha[p], gp * (1.0 / xi[p] - 1.0 / w))
                beta = -a / (1.0 + a * w)
                xi[p] = 1.0 / (1.0 / xi[p] - a / gamma)
            alpha[p] -= a
            if beta != 0.0:
                _syr(beta, Av, a=A, overwrite_a=True)

    def update(self, M, state, data):
        A, alpha, xi = state.A, state.alpha, state.xi
        old = alpha.copy()
        self._pass(data, A, alpha, xi)
        it = state.iter_num + 1
        if self.stop == "lambda":
            norms = np.linalg.norm(alpha) + np.linalg.norm(old)
            # metric-learn stops at once when every multiplier is 0
            error = np.abs(old - alpha).sum() / norms if norms > 0 else 0.0
        elif it % self.check_every == 0 or it == self.maxiter:
            Ma = data.dual_metric(alpha)
            error = np.inf if Ma is None else _gap(data, Ma, data.dual_value(alpha))
        else:
            error = np.inf
        return A, BregmanState(it, float(error), alpha, A, xi, old)

    def finalize(self, M, state, data):
        # the metric of the multipliers (the tracked one up to round-off;
        # the tracked one holds its upper triangle)
        Ma = data.dual_metric(state.alpha)
        if Ma is None:
            Ma = np.triu(M) + np.triu(M, 1).T
        return super().finalize(Ma, state, data)


# ---------------------------------------------------------------------------
# The collection's solves (the registry's Method.collection)
# ---------------------------------------------------------------------------


def solve_fast(data):
    """:class:`ITMLDualNewton` at its defaults."""
    return ITMLDualNewton().run(data)


def solve_bregman(data):
    """:class:`ITMLBregman` at metric-learn's defaults (reported)."""
    return ITMLBregman().run(data, warn=False)
