"""SLR, fast: hand-written solvers of Eq. 4 (the problem of :mod:`.exact`).

Both work in the coordinates of ``range(X)`` set up once by
:class:`~cvxmetric.slr.SLRData` (thin SVD ``X = U S V^T``, i.e. the
pseudo-inverse ``X^+ = V S^{-1} U^T``, computed once, never in a loop):
``X M X^T = U Z U^T``.  Neither stores an ``n x n`` matrix; a pass over the
pairs runs over row blocks (see :mod:`._problem`).

:class:`AdaptiveRegression`
    Algorithm 1 of the paper: from ``M_0 = I``, ``Y_hat = X M X^T``, clip it
    to the box of targets (``max(Y_hat, delta1)`` on same-class,
    ``min(Y_hat, delta2)`` on different-class pairs), and refit Eq. 1,
    ``M = X^+ Y X^{+T}``.  In coordinates one step is
    ``Z <- U^T Pi_B(U Z U^T) U``: alternating projection between the
    subspace ``{X M X^T}`` and the box ``B``, which is gradient descent
    ``Z <- Z - grad f(Z) / 2`` with step ``1 / L`` on Eq. 4 (``L = 2``).
    It converges to the optimum of Eq. 4, linearly and, on ill-conditioned
    data, slowly.  The paper runs ``T = 10`` iterations; ``maxiter`` is
    ``T`` and the run stops early only when the certified relative gap
    (checked every ``check_every`` iterations) is below ``tol``.

:class:`SemismoothNewton` (method ``"newton"``, not in the paper)
    Eq. 4 is a convex, piecewise quadratic, ``C^1`` function of the
    symmetric ``Z`` (``p = r (r + 1) / 2`` coordinates; a symmetric
    minimiser exists, see :mod:`._problem`).  Each iteration forms the
    generalised Hessian of the active terms (one ``O(n^2 p)`` pass, BLAS-3),
    takes the regularised Newton direction ``-(H + lambda I)^{-1} g`` with
    ``lambda`` proportional to ``||g||`` (the exact Newton step as
    ``g -> 0``) and an Armijo backtracking line search.  Once the active set
    of the optimum is identified one step solves the problem exactly, so it
    stops after a handful of iterations, certified by
    :meth:`SLRData.certificate`.  Memory: ``O(n r + n p + p^2)`` plus one
    row block (``DEFAULT_BLOCK`` entries, 8 MB); no ``n x n`` array.
"""

import logging
import warnings
from dataclasses import dataclass
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import scipy.linalg
from sklearn.utils._param_validation import Interval

from .._solver import IterativeSolver
from ._problem import SLRData, blas_threads, newton_decrement, smat, svec

logger = logging.getLogger("cvxmetric")

__all__ = ["AdaptiveRegression", "SemismoothNewton"]


class _SLRSolver(IterativeSolver):
    """Shared plumbing: BLAS threads by the number of samples, checks, result."""

    # the base class limits BLAS threads by n_features; SLR's passes are
    # (b x n) x (n x r) products, so the limit goes by n (blas_threads)
    small_features = -1

    def run(self, data, init=None, *, warn=True):
        """Solve ``data`` (see :meth:`IterativeSolver.run`).

        Parameters
        ----------
        data : SLRData
        init : SolverResult, optional
            Warm start from its ``M``.
        warn : bool
        """
        if not isinstance(data, SLRData):
            raise TypeError("data: expected an SLRData instance.")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with blas_threads(data.n_samples):
                result = super().run(data, init, warn=warn)
        # re-emitted so that they point at the caller, not at this wrapper
        for w in caught:
            warnings.warn(w.message, w.category, stacklevel=2)
        return result

    def converged(self, state):
        return state.certified and state.error <= self.tol

    @staticmethod
    def _start(data, init, default):
        # a warm start is symmetrised: f((Z + Z^T) / 2) <= f(Z), and the
        # iterations keep Z symmetric (the Hessian is formed for those)
        if init is None:
            return default
        Z = data.Z_of_M(np.asarray(init.M, dtype=float))
        return 0.5 * (Z + Z.T)

    def _check(self, data, Z, evaluated=None):
        """``(error, certified, lower)`` at a symmetric ``Z``.

        The Newton decrement first (cheap); the certificate's lower bound
        only when the decrement is below ``tol``.
        """
        if evaluated is None:
            evaluated = data.evaluate(Z, grad=True, hessian=True)
        f, G, H, _ = evaluated
        # the zero lower bound gives the gap f: it certifies a (nearly)
        # separable instance, where H is singular and the decrement infinite
        est = min(newton_decrement(f, svec(G), H), f / max(1.0, f))
        if est > self.tol:
            return est, False, None
        bound, parts = data.lower_bound(Z, evaluated=evaluated)
        return max(0.0, f - bound) / max(1.0, f), True, (bound, parts)

    def _certificate(self, data, Z, lower=None):
        M = data.M_of_Z(Z)
        cert, parts = data.certificate(
            M, Z=Z, solver=self.name, tolerances={"tol": self.tol}, lower=lower, return_parts=True)
        return M, cert, parts


# ---------------------------------------------------------------------------
# Algorithm 1
# ---------------------------------------------------------------------------


class AdaptiveState(NamedTuple):
    iter_num: int
    error: float  # relative gap at the last check: certified, or estimated
    certified: bool  # whether ``error`` is the certificate's gap
    lower: tuple  # (bound, parts) of the last check, when certified
    checked_at: int  # iteration of the last check
    history: list  # f(Z_k), k = 0, 1, ...


@dataclass
class AdaptiveRegression(_SLRSolver):
    """Algorithm 1 (adaptive regression); ``maxiter`` is the paper's ``T``.

    Attributes
    ----------
    maxiter : int
        Iterations ``T`` (paper: 10).
    tol : float
        Stop early when the certified relative gap is below ``tol``.
    check_every : int
        Iterations between checks of the gap (a check costs one Hessian
        pass, about ``r / 2`` iterations; the certificate runs only when
        the Newton decrement is below ``tol``).  The last iterate is always
        certified, by :meth:`finalize`.
    max_time : float, optional
    """

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "check_every": [Interval(Integral, 1, None, closed="left")],
    }

    maxiter: int = 10
    tol: float = 1e-8
    check_every: int = 10
    max_time: float = None

    name = "adaptive"

    def init_state(self, data, init=None):
        # M_0 = I: Z_0 = S V^T V S = S^2
        Z = self._start(data, init, np.diag(data.s ** 2))
        return Z, AdaptiveState(0, np.inf, False, None, -1, [])

    def update(self, Z, state, data):
        f, Z = data.projection_step(Z)  # f = f(Z_{k-1})
        k = state.iter_num + 1
        state = state._replace(iter_num=k, history=state.history + [f])
        if k % self.check_every == 0 and k < self.maxiter:
            error, certified, lower = self._check(data, Z)
            state = state._replace(error=error, certified=certified, lower=lower,
                                   checked_at=k)
            logger.debug("%s iter %d: relative gap %.3e (%s)", self.name, k,
                         error, "certified" if certified else "estimate")
        elif k >= self.maxiter:
            # the last iterate is certified here, so that the status says it
            evaluated = data.evaluate(Z, grad=True, hessian=True)
            lower = data.lower_bound(Z, evaluated=evaluated)
            f_k = evaluated[0]
            state = state._replace(
                error=max(0.0, f_k - lower[0]) / max(1.0, f_k), certified=True,
                lower=lower, checked_at=k)
        return Z, state

    def finalize(self, Z, state, data):
        lower = state.lower if state.checked_at == state.iter_num else None
        M, cert, parts = self._certificate(data, Z, lower=lower)
        info = {"history": state.history + [cert.objective], "bounds": parts,
                "Z": Z}
        return M, cert, info


# ---------------------------------------------------------------------------
# Semismooth Newton
# ---------------------------------------------------------------------------


class NewtonState(NamedTuple):
    iter_num: int
    error: float  # certified relative gap, or the Newton-decrement estimate
    certified: bool  # whether ``error`` is the certificate's gap
    f: float
    g: np.ndarray  # (p,) gradient in svec coordinates
    direction: np.ndarray  # (p,) the next Newton direction
    n_active: int
    step: float  # the last accepted step length (0: a gradient step)
    lower: tuple  # (bound, parts) at the current point, once certified
    history: list


@dataclass
class SemismoothNewton(_SLRSolver):
    """Regularised semismooth Newton method with line search on Eq. 4.

    Attributes
    ----------
    maxiter : int
    tol : float
        Target certified relative gap ``(f - bound) / max(1, f)``.  The
        certificate is evaluated once the Newton decrement
        ``g^T H^{-1} g / 2``, relative to ``max(1, f)``, is below ``tol``;
        the run stops when the certificate confirms it.
    reg : float
        ``lambda = reg * min(1, ||g|| / max(1, sqrt(f))) + 1e-12``: keeps
        ``H + lambda I`` definite when few terms are active, and vanishes at
        the optimum.
    armijo : float
        Sufficient-decrease constant of the backtracking line search.
    max_backtrack : int
        Halvings before the iteration falls back to one Algorithm 1 step
        (a gradient step ``1 / L``, which never increases ``f``).
    max_time : float, optional
    """

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "reg": [Interval(Real, 0, None, closed="left")],
        "armijo": [Interval(Real, 0, 1, closed="neither")],
        "max_backtrack": [Interval(Integral, 1, None, closed="left")],
    }

    maxiter: int = 100
    tol: float = 1e-10
    reg: float = 1e-3
    armijo: float = 1e-4
    max_backtrack: int = 30
    max_time: float = None

    name = "newton"

    def _direction(self, f, g, H):
        gn = float(np.linalg.norm(g))
        lam = self.reg * min(1.0, gn / max(1.0, np.sqrt(f))) + 1e-12
        eye = np.eye(H.shape[0])
        for _ in range(8):
            try:
                c = scipy.linalg.cho_factor(H + lam * eye, check_finite=False)
                return -scipy.linalg.cho_solve(c, g, check_finite=False)
            except np.linalg.LinAlgError:  # round-off: H is PSD in exact arithmetic
                lam = max(10.0 * lam, 1e-10)
        return -g / max(lam, 1.0)

    def _state(self, data, k, Z, evaluated, step, history):
        f, G, H, n_active = evaluated
        g = svec(G)
        direction = self._direction(f, g, H)
        error, certified, lower = self._check(data, Z, evaluated)
        return NewtonState(k, error, certified, f, g, direction, n_active, step,
                           lower, history + [f])

    def init_state(self, data, init=None):
        # Eq. 3 with the target D (delta1 / delta2): the least-squares fit
        Z = self._start(data, init, None)
        if Z is None:
            Z = data.least_squares_Z()
        evaluated = data.evaluate(Z, grad=True, hessian=True)
        return Z, self._state(data, 0, Z, evaluated, 0.0, [])

    def update(self, Z, state, data):
        dZ = smat(state.direction, data.rank)
        slope = float(state.g @ state.direction)  # < 0
        t = 1.0
        evaluated = data.evaluate(Z + dZ, grad=True, hessian=True)
        accepted = evaluated[0] <= state.f + self.armijo * slope
        for _ in range(self.max_backtrack):
            if accepted:
                break
            t *= 0.5
            f = data.evaluate(Z + t * dZ)[0]
            accepted = f <= state.f + self.armijo * t * slope
        if accepted:
            Z = Z + t * dZ
            if t < 1.0:
                evaluated = data.evaluate(Z, grad=True, hessian=True)
        else:
            # round-off or a poor direction: one Algorithm 1 step
            logger.debug("%s: line search failed, gradient step", self.name)
            _, Z = data.projection_step(Z)
            t = 0.0
            evaluated = data.evaluate(Z, grad=True, hessian=True)
        logger.debug("%s iter %d: f %.12g, step %.3g, %d active", self.name,
                     state.iter_num + 1, evaluated[0], t, evaluated[3])
        return Z, self._state(data, state.iter_num + 1, Z, evaluated, t,
                              state.history)

    def finalize(self, Z, state, data):
        M, cert, parts = self._certificate(data, Z, lower=state.lower)
        info = {"history": state.history, "bounds": parts, "Z": Z,
                "n_active": state.n_active, "last_step": state.step}
        return M, cert, info
