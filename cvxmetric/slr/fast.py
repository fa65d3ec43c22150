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

    The iteration in ``Z`` depends on ``X`` only through ``range(X)``: it is
    the same for ``X`` and ``X D`` (``D`` invertible), and so is Eq. 4's
    optimum.  Only the start is not: the paper's ``M_0 = I`` in ``X``'s
    units is ``Z_0 = S^2``, as large as the squared feature scales (``1e12``
    on raw wine, whose proline column is about ``1e3``), and from there the
    iteration does not reach the optimum in ``20 000`` steps.  The default
    ``start="whitened"`` takes ``M_0 = I`` in the whitened coordinates
    ``X V S^{-1} = U`` of the same problem: ``Z_0 = I``, i.e.
    ``M_0 = (X^T X)^+`` in ``X``'s units, for every invertible ``D`` the
    same start.  ``start="identity"`` is the paper's literal ``M_0 = I``.

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
    Where the optimum is zero with a small margin (minimisers far from the
    start, e.g. raw breast_cancer) active-set steps make slow progress; a
    run not certified after ``interior_after`` iterations then calls
    :func:`interior_point` once (``n^2 <= IPM_MAX_PAIRS``: it stores
    ``n x n`` arrays) and continues from its point.
"""

import logging
from dataclasses import dataclass
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import scipy.linalg
from sklearn.utils._param_validation import Interval, StrOptions

from .._linesearch import backtracking
from .._settings import HESS32_RTOL, IPM_MAX_PAIRS
from .._solver import IterativeSolver
from .._tolerances import certificate_tolerance
from .._validation import check_instance
from ._problem import (
    Expired,
    SLRData,
    _tick,
    cert_residual,
    cg,
    newton_decrement,
    smat,
    svec,
)

logger = logging.getLogger("cvxmetric")

__all__ = ["HESS32_RTOL", "HESSIAN_MODES", "IPM_MAX_PAIRS", "START_POINTS", "AdaptiveRegression",
           "SemismoothNewton", "interior_point", "warm_start"]

#: Values of :attr:`SemismoothNewton.hessian`.
HESSIAN_MODES = ("auto", "dense", "cg")

_GAP, _ = certificate_tolerance("slr")


class _SLRSolver(IterativeSolver):
    """Shared plumbing: BLAS threads by the number of samples, checks, result."""

    def blas_flops(self, data):
        # the passes are (b x r) @ (r x n) block products
        return data.pass_flops

    #: the warnings of a run (the data's, the solver's) point at the caller
    reemit_warnings = True

    def check_data(self, data):
        check_instance(data, SLRData, "data")

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

    def _lower(self, data, Z):
        """``data.lower_bound(Z)`` with the deadline checked inside."""
        if data.dense_hessian:
            evaluated = data.evaluate(Z, grad=True, hessian=True, deadline=self.deadline)
            return data.lower_bound(Z, evaluated=evaluated)
        bound, f, _, _, _ = data.dual_bound_cg(Z, deadline=self.deadline)
        return max(0.0, bound), {"zero": 0.0, "dual": float(bound), "ball": -np.inf,
                                 "objective_Z": float(f)}

    def _check(self, data, Z, evaluated=None):
        """``(error, certified, lower)`` at a symmetric ``Z``.

        The Newton decrement first (cheap); the certificate's lower bound
        only when the decrement is below ``tol``.  Without a dense Hessian
        the matrix-free lower bound directly.
        """
        if evaluated is None and not data.dense_hessian:
            lower = self._lower(data, Z)
            f = lower[1]["objective_Z"]
            return max(0.0, f - lower[0]) / max(1.0, f), True, lower
        if evaluated is None:
            evaluated = data.evaluate(Z, grad=True, hessian=True, deadline=self.deadline)
        f, G, H, _ = evaluated
        # the zero lower bound gives the gap f: it certifies a (nearly)
        # separable instance, where H is singular and the decrement infinite
        est = min(newton_decrement(f, svec(G), H), f / max(1.0, f))
        if est > self.tol:
            return est, False, None
        bound, parts = data.lower_bound(Z, evaluated=evaluated)
        return max(0.0, f - bound) / max(1.0, f), True, (bound, parts)

    def _certificate(self, data, Z, lower=None):
        if lower is None and self.deadline.hit:
            # out of time: only the zero bound (valid, costs nothing); the
            # objective is still recomputed from M
            lower = (0.0, {"zero": 0.0, "dual": -np.inf, "ball": -np.inf,
                           "objective_Z": data.objective_Z(Z)})
        M = data.M_of_Z(Z)
        cert, parts = data.certificate(
            M, Z=Z, solver=self.name, tolerances={"tol": self.tol}, lower=lower, return_parts=True)
        data.check_representable(parts)
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


#: Values of :attr:`AdaptiveRegression.start`.
START_POINTS = ("whitened", "identity")


@dataclass
class AdaptiveRegression(_SLRSolver):
    """Algorithm 1 (adaptive regression); ``maxiter`` is the paper's ``T``.

    Attributes
    ----------
    maxiter : int
        Iterations ``T`` (paper: 10).
    tol : float
        Stop early when the certified relative gap is below ``tol``.
    check_every : int, optional
        Iterations between checks of the gap (a check costs one Hessian
        pass, about ``(r + 1) / 2`` iterations; the certificate runs only
        when the Newton decrement is below ``tol``).  Default
        ``max(10, 4 (r + 1))``: the checks cost about an eighth of the
        iterations (every 10 iterations they took 40 % of a 6 000-iteration
        run on raw wine, ``r = 13``).  The last iterate is always
        certified, by :meth:`finalize`.
    max_time : float, optional
    start : {"whitened", "identity"}
        ``M_0`` when no warm start is given.  ``"whitened"`` (default):
        ``M_0 = I`` in the whitened coordinates ``X V S^{-1}`` of ``X``,
        i.e. ``M_0 = (X^T X)^+`` in ``X``'s units, ``X M_0 X^T`` the
        projection onto ``range(X)``; the run is then the same for ``X``
        and ``X D`` for every invertible ``D`` (feature scales, units),
        like Eq. 4's optimum.  ``"identity"``: the paper's ``M_0 = I`` in
        ``X``'s units, which on unscaled features starts the iteration
        orders of magnitude away from the optimum (see the module
        docstring).
    """

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "check_every": [Interval(Integral, 1, None, closed="left"), None],
        "start": [StrOptions(set(START_POINTS))],
    }

    maxiter: int = 10
    tol: float = 1e-8
    check_every: int = None
    max_time: float = None
    start: str = "whitened"

    name = "adaptive"

    def init_state(self, data, init=None):
        Z = self._start(data, init, None)
        if Z is None and self.start == "whitened":
            # X = U S V^T: in the coordinates X V S^{-1} = U the identity is
            # Z_0 = I (K_0 = U U^T, whatever the units of X's features)
            Z = np.eye(data.rank)
        if Z is None:
            # M_0 = I in X's units: Z_0 = S V^T V S = S^2 with S the singular
            # values of X = scale * (X / scale)
            with np.errstate(over="ignore"):
                Z = np.diag((data.s * data.scale) ** 2)
                f0 = data.objective_Z(Z) if np.all(np.isfinite(Z)) else np.inf
            if not np.isfinite(f0):
                top = 2.0 * np.log10(data.s[0]) + 2.0 * np.log10(data.scale)
                raise ValueError(
                    f"X: Algorithm 1 starts from M_0 = I, whose similarities "
                    f"x_i^T x_j (up to about 1e{top:.0f}) make the "
                    f"Eq. 4 objective overflow float64; scale X so that x_i^T x_j is "
                    f"on the scale of the thresholds (e.g. rows of unit norm).")
        return Z, AdaptiveState(0, np.inf, False, None, -1, [])

    def update(self, Z, state, data):
        try:
            f, Z_new = data.projection_step(Z, deadline=self.deadline)  # f = f(Z_{k-1})
        except Expired:
            return Z, state
        Z = Z_new
        k = state.iter_num + 1
        state = state._replace(iter_num=k, history=state.history + [f])
        every = self.check_every
        if every is None:
            every = max(10, 4 * (data.rank + 1))
        if k % every == 0 and k < self.maxiter:
            try:
                error, certified, lower = self._check(data, Z)
            except Expired:
                return Z, state
            state = state._replace(error=error, certified=certified, lower=lower,
                                   checked_at=k)
            logger.debug("%s iter %d: relative gap %.3e (%s)", self.name, k,
                         error, "certified" if certified else "estimate")
        elif k >= self.maxiter:
            # the last iterate is certified here, so that the status says it
            try:
                lower = self._lower(data, Z)
            except Expired:
                return Z, state
            f_k = lower[1]["objective_Z"]
            state = state._replace(
                error=max(0.0, f_k - lower[0]) / max(1.0, f_k), certified=True,
                lower=lower, checked_at=k)
        return Z, state

    def finalize(self, Z, state, data):
        lower = state.lower if state.checked_at == state.iter_num else None
        M, cert, parts = self._certificate(data, Z, lower=lower)
        info = {**data.backend_info(), "history": state.history + [cert.objective],
                "bounds": parts,
                "Z": Z}
        return M, cert, info


# ---------------------------------------------------------------------------
# Interior point (the fallback of the dense Newton method)
# ---------------------------------------------------------------------------


def _longest(x, dx):
    """Largest step in ``(0, 1]`` keeping ``x + step dx >= 0``."""
    neg = dx < 0.0
    return min(1.0, float(np.min(-x[neg] / dx[neg]))) if np.any(neg) else 1.0


def interior_point(data, Z, *, maxiter=100, deadline=None):
    """Primal-dual interior point on Eq. 4 as a QP; returns a symmetric ``Z``.

    Eq. 4 is ``min sum_ij t_ij^2`` subject to ``t_ij >= a_ij(Z)`` (hinge
    arguments ``a = B - S o (U Z U^T)``, ``S = +-1``, ``B = delta1`` or
    ``-delta2``); at the optimum ``t = [a]_+``.  Mehrotra's
    predictor-corrector on its KKT system, with slacks ``sigma = t - a``
    and multipliers ``lambda`` (``2 t = lambda`` at optimality).  The
    Newton system reduces to the symmetric coordinates ``z = svec(Z)``:

        A^T (w o A dz) = A^T (S o D o h) - r_z,   D = 1 / (lambda / 2 + sigma),
        w = D lambda,  A z = U smat(z) U^T,

    a weighted version of the generalised Hessian (one ``O(n^2 p)`` pass
    and a ``p x p`` Cholesky per iteration).  Unlike the semismooth Newton
    method it does not depend on identifying the active set: when the
    classes are separable by a bilinear form only with a small margin (the
    optimum is 0 and the minimisers are far from the start, e.g.
    ``||Z*|| ~ 2e5`` on raw breast_cancer), active-set Newton steps make
    slow progress, while the path of centres leads there in a few dozen
    iterations.  Used by :class:`SemismoothNewton` when ``n^2 <=
    IPM_MAX_PAIRS`` (it stores ``n x n`` arrays).

    Parameters
    ----------
    data : SLRData
    Z : ndarray of shape (r, r)
        Start (symmetric); any point (the slacks are made positive).
    maxiter : int
    deadline : Deadline, optional
        Checked every iteration (raises :class:`Expired`).

    Returns
    -------
    Z : ndarray of shape (r, r)
        The last iterate (the caller compares its objective).
    n_iter : int
    """
    U, r = data.U, data.rank
    same = data.y[:, None] == data.y[None, :]
    S = np.where(same, 1.0, -1.0)
    B = np.where(same, data.delta1, -data.delta2)
    Q = data._sym_features()
    p = Q.shape[1]

    def A(z):
        return U @ smat(z, r) @ U.T

    def At(V):  # adjoint of A on symmetric V
        return svec(U.T @ V @ U)

    def solve(r_c, factor, D, lam, r_t, r_z, r_p):
        # the reduced Newton system, then the eliminated variables
        h = r_c + 0.5 * lam * r_t - lam * r_p
        dz = scipy.linalg.cho_solve(factor, At(S * D * h) - r_z, check_finite=False)
        SAdz = S * A(dz)
        dl = D * (h - lam * SAdz)
        dt = 0.5 * (dl - r_t)
        return dz, dt, dl, dt + SAdz + r_p

    z = svec(Z)
    a = B - S * A(z)
    t = np.maximum(a, 0.0) + 1.0
    sig = t - a
    lam = np.ones_like(t)
    m = t.size
    k = 0
    for k in range(1, maxiter + 1):
        _tick(deadline)
        K = A(z)
        a = B - S * K
        f = float(np.sum(np.maximum(a, 0.0) ** 2))
        obj = float(np.sum(t * t))
        r_t = 2.0 * t - lam
        r_z = -At(S * lam)
        r_p = t - a - sig
        mu = float(np.sum(lam * sig)) / m
        if f <= 1e-14 or (mu <= 1e-14 * max(1.0, obj)
                          and np.linalg.norm(r_z) <= 1e-12 * max(1.0, np.sqrt(obj))):
            break  # a zero objective, or the QP solved
        D = 1.0 / (0.5 * lam + sig)
        w = D * lam
        # A^T (w o A .) = H_w / 2, H_w the Hessian formula with weights w
        Mw = 0.5 * data._hessian_from_gram(Q.T @ (w @ Q))
        reg = 1e-14 * max(1.0, float(np.max(np.diag(Mw))))
        factor = scipy.linalg.cho_factor(Mw + reg * np.eye(p), check_finite=False)
        kkt = (factor, D, lam, r_t, r_z, r_p)
        dz, dt, dl, ds = solve(-lam * sig, *kkt)  # predictor (affine scaling)
        al = min(_longest(lam, dl), _longest(sig, ds))
        mu_aff = float(np.sum((lam + al * dl) * (sig + al * ds))) / m
        centring = (mu_aff / mu) ** 3
        dz, dt, dl, ds = solve(-lam * sig - dl * ds + centring * mu, *kkt)  # corrector
        al = 0.99 * min(_longest(lam, dl), _longest(sig, ds))
        z = z + al * dz
        t += al * dt
        lam += al * dl
        sig += al * ds
        if not (np.all(np.isfinite(z)) and np.all(lam > 0) and np.all(sig > 0)):
            raise np.linalg.LinAlgError("interior point lost positivity")
    return smat(z, r), k


# ---------------------------------------------------------------------------
# Semismooth Newton
# ---------------------------------------------------------------------------


class NewtonState(NamedTuple):
    iter_num: int
    error: float  # certified relative gap, or the Newton-decrement estimate
    certified: bool  # whether ``error`` is the certificate's gap
    f: float
    g: np.ndarray  # (p,) gradient in svec coordinates (dense); (r, r) G (cg)
    direction: np.ndarray  # (p,) the next Newton direction (dense only)
    n_active: int
    step: float  # the last accepted step length (0: a gradient step)
    lower: tuple  # (bound, parts) at the current point, once certified
    history: list
    masks: list = None  # active masks per row block (cg)
    n_cg: int = 0  # Hessian products so far (cg)
    stalled: bool = False  # the last step did not decrease f (cg)
    interior: int = None  # iterations of the interior-point fallback, once run


@dataclass
class SemismoothNewton(_SLRSolver):
    """Regularised semismooth Newton method with line search on Eq. 4.

    Two ways of solving the Newton system (``hessian``):

    ``"dense"``
        The generalised Hessian in the ``p = r (r + 1) / 2`` symmetric
        coordinates, formed by one ``O(n^2 p)`` pass and factored
        (Cholesky): ``O(n p + p^2)`` memory.  The certificate also has the
        (rigorous) local strong-convexity bound.
    ``"cg"``
        Matrix-free: conjugate gradients on symmetric ``r x r`` matrices
        with ``H[D] = 2 U^T (m o (U D U^T)) U`` (``m`` the active mask, kept
        as ``n^2`` booleans), each product one ``O(n^2 r)`` pass over row
        blocks; an inexact Newton method (forcing term
        ``min(0.1, sqrt(||G|| / max(1, sqrt f)))``).  Memory ``O(n r + r^2)``
        plus the mask and one row block.  Every full step also yields the
        dual bound of :meth:`SLRData.dual_bound_from` (the best one so far
        is kept: each is a valid bound on the optimum).
    ``"auto"`` (default)
        ``"dense"`` while ``p <= DENSE_MAX_SYM`` (``r <= 64``) and the
        ``(n, p)`` feature matrix fits in 256 MB, else ``"cg"``.

    Attributes
    ----------
    maxiter : int
    tol : float
        Target certified relative gap ``(f - bound) / max(1, f)``.  Dense:
        the certificate is evaluated once the Newton decrement
        ``g^T H^{-1} g / 2`` (relative to ``max(1, f)``) is below ``tol``,
        and the run stops when it confirms it.  CG: the run stops when the
        best dual bound so far confirms it, or when a full Newton step no
        longer decreases ``f`` and the certificate passes at the package's
        tolerance (what float64 allows at that size).
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
        Checked before every row block of every pass, so a run ends within
        one block's work of the budget (then only the zero lower bound is
        used: status ``time_limit_reached``).
    hessian : {"auto", "dense", "cg"}
    cg_maxiter : int
        Hessian products per Newton system (``"cg"``).
    interior_after : int or None
        Dense mode with ``n^2 <= IPM_MAX_PAIRS``: when the run is not
        certified after this many Newton iterations, one call of
        :func:`interior_point` from the current point (counted as one
        iteration), then Newton again from its result if it is better.
        Where the optimum is zero or nearly so the minimisers can lie far
        away (a small margin) and the active set Newton sees is far from
        theirs; there Newton's steps shrink the objective by a few per
        cent each (raw breast_cancer: ``f = 20.7`` after 100 iterations,
        optimum 0), while the interior-point method reaches ``f = 0`` in
        about 55 iterations.  Elsewhere Newton certifies in fewer than 10
        iterations and the fallback never runs.  ``None`` disables it.
    """

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "reg": [Interval(Real, 0, None, closed="left")],
        "armijo": [Interval(Real, 0, 1, closed="neither")],
        "max_backtrack": [Interval(Integral, 1, None, closed="left")],
        "hessian": [StrOptions(set(HESSIAN_MODES))],
        "cg_maxiter": [Interval(Integral, 1, None, closed="left")],
        "interior_after": [Interval(Integral, 0, None, closed="left"), None],
    }

    maxiter: int = 100
    tol: float = 1e-10
    reg: float = 1e-3
    armijo: float = 1e-4
    max_backtrack: int = 30
    max_time: float = None
    hessian: str = "auto"
    cg_maxiter: int = 500
    interior_after: int = 15

    name = "newton"

    def _use_cg(self, data):
        if self.hessian == "auto":
            return not data.dense_hessian
        return self.hessian == "cg"

    def converged(self, state):
        if not state.certified:
            return False
        if state.error <= self.tol:
            return True
        return state.stalled and state.error <= _GAP

    # -- dense -----------------------------------------------------------------

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
        try:
            if Z is None:
                Z = data.least_squares_Z(deadline=self.deadline)
            if self._use_cg(data):
                return Z, self._cg_state(data, 0, Z, data.pass_masks(
                    Z, deadline=self.deadline), 0.0, [], 0, 0.0, None)
            evaluated = data.evaluate(Z, grad=True, hessian=True, deadline=self.deadline)
            return Z, self._state(data, 0, Z, evaluated, 0.0, [])
        except Expired:
            if Z is None:
                Z = np.zeros((data.rank, data.rank))
            return Z, NewtonState(0, np.inf, False, np.nan, None, None, 0, 0.0,
                                  None, [])

    def update(self, Z, state, data):
        try:
            if self._use_cg(data):
                return self._update_cg(Z, state, data)
            return self._update_dense(Z, state, data)
        except Expired:
            return Z, state

    def _interior(self, Z, state, data):
        """The interior-point fallback (see ``interior_after``).

        Returns ``None`` when it does not apply, else ``(Z_ip, n_ip)``:
        its point (``None`` when it failed) and iteration count.  Needs the
        ``p x p`` system (``data.dense_hessian``), ``n^2 <=
        IPM_MAX_PAIRS`` and NumPy data (it forms the pairs on the host).
        """
        if (self.interior_after is None or state.interior is not None
                or state.iter_num < self.interior_after
                or not data.dense_hessian or not data.on_host
                or data.n_samples ** 2 > IPM_MAX_PAIRS):
            return None
        try:
            Z_ip, n_ip = interior_point(data, Z, deadline=self.deadline)
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):
            logger.debug("%s: interior point failed", self.name)
            return None, 0
        logger.debug("%s: interior point, %d iterations", self.name, n_ip)
        return Z_ip, n_ip

    def _update_dense(self, Z, state, data):
        dl = self.deadline
        fallback = self._interior(Z, state, data)
        if fallback is not None:
            Z_ip, n_ip = fallback
            if Z_ip is not None:
                evaluated = data.evaluate(Z_ip, grad=True, hessian=True, deadline=dl)
                if evaluated[0] < state.f:
                    new = self._state(data, state.iter_num + 1, Z_ip, evaluated, 1.0,
                                      state.history)
                    return Z_ip, new._replace(interior=n_ip)
            return Z, state._replace(interior=n_ip)
        return self._newton_dense(Z, state, data)

    def _newton_dense(self, Z, state, data):
        dl = self.deadline
        dZ = smat(state.direction, data.rank)
        slope = float(state.g @ state.direction)  # < 0
        # the full step is evaluated with its derivatives (kept when accepted)
        full = data.evaluate(Z + dZ, grad=True, hessian=True, deadline=dl)
        search = backtracking(
            lambda t: full[0] if t == 1.0 else data.evaluate(Z + t * dZ, deadline=dl)[0],
            lambda t, f: f <= state.f + self.armijo * t * slope,
            max_backtracks=self.max_backtrack)
        t, accepted, evaluated = search.step, search.accepted, full
        if accepted:
            Z = Z + t * dZ
            if t < 1.0:
                evaluated = data.evaluate(Z, grad=True, hessian=True, deadline=dl)
        else:
            # round-off or a poor direction: one Algorithm 1 step
            logger.debug("%s: line search failed, gradient step", self.name)
            _, Z = data.projection_step(Z, deadline=dl)
            t = 0.0
            evaluated = data.evaluate(Z, grad=True, hessian=True, deadline=dl)
        logger.debug("%s iter %d: f %.12g, step %.3g, %d active", self.name,
                     state.iter_num + 1, evaluated[0], t, evaluated[3])
        return Z, self._state(data, state.iter_num + 1, Z, evaluated, t,
                              state.history)._replace(interior=state.interior)

    # -- matrix-free (cg) --------------------------------------------------------

    def _cg_state(self, data, k, Z, out, step, history, n_cg, bound, prev):
        f, G, n_active, masks, _ = out
        best = 0.0 if prev is None or prev.lower is None else prev.lower[0]
        best = max(best, bound)
        parts = {"zero": 0.0, "dual": float(bound), "ball": -np.inf,
                 "objective_Z": float(f), "n_active": int(n_active),
                 "grad_norm": float(np.linalg.norm(G)), "hessian_products": n_cg}
        error = max(0.0, f - best) / max(1.0, f)
        stalled = prev is not None and not (f < prev.f - 1e-14 * max(1.0, prev.f))
        return NewtonState(k, error, True, f, G, None, n_active, step,
                           (best, parts), history + [f], masks, n_cg, stalled)

    def _update_cg(self, Z, state, data):
        dl = self.deadline
        fallback = self._interior(Z, state, data)  # a forced "cg" on small data
        if fallback is not None:
            Z_ip, n_ip = fallback
            if Z_ip is not None:
                out = data.pass_masks(Z_ip, deadline=dl)
                if out[0] < state.f:
                    new = self._cg_state(data, state.iter_num + 1, Z_ip, out, 1.0,
                                         state.history, state.n_cg, 0.0, state)
                    return Z_ip, new._replace(interior=n_ip, stalled=False)
            return Z, state._replace(interior=n_ip)
        f, G, masks = state.f, state.g, state.masks
        gn = float(np.linalg.norm(G))
        lam = self.reg * min(1.0, gn / max(1.0, np.sqrt(f))) + 1e-12
        eta = min(0.1, np.sqrt(gn / max(1.0, np.sqrt(f))))
        tol = max(eta * gn, cert_residual(f, Z, 0.1 * self.tol))
        # single-precision products while the system is solved loosely
        # (their relative error, ~1e-6, is far below the residual asked for)
        dtype = np.float32 if tol >= HESS32_RTOL * gn else np.float64
        dZ, res, k = cg(lambda D: data.hess_vec(D, masks, deadline=dl, dtype=dtype)
                        + lam * D, -G, tol=tol, maxiter=self.cg_maxiter, deadline=dl)
        n_cg = state.n_cg + k
        slope = float(np.sum(G * dZ))
        if not slope < 0.0:  # CG broke down at once: steepest descent
            dZ, slope = -G, -gn * gn
        # the full step; near the optimum its dual quantities give the bound
        near = -slope / 2.0 <= 1e-3 * max(1.0, f)
        out = data.pass_masks(Z + dZ, dual_mask=masks if near else None, deadline=dl)
        bound = data.dual_bound_from(out[4], Z + dZ) if near else 0.0
        search = backtracking(
            lambda t: out[0] if t == 1.0 else data.evaluate(Z + t * dZ, deadline=dl)[0],
            lambda t, f_t: f_t <= f + self.armijo * t * slope,
            max_backtracks=self.max_backtrack)
        t, accepted = search.step, search.accepted
        if accepted:
            Z = Z + t * dZ
            if t < 1.0:
                out = data.pass_masks(Z, deadline=dl)
        else:
            logger.debug("%s: line search failed, gradient step", self.name)
            _, Z = data.projection_step(Z, deadline=dl)
            t = 0.0
            out = data.pass_masks(Z, deadline=dl)
        logger.debug("%s iter %d: f %.12g, step %.3g, %d CG products (%s), "
                     "bound %.12g", self.name, state.iter_num + 1, out[0], t, k,
                     np.dtype(dtype).name, bound)
        return Z, self._cg_state(data, state.iter_num + 1, Z, out, t,
                                 state.history, n_cg, bound, state)._replace(
                                     interior=state.interior)

    def finalize(self, Z, state, data):
        lower = state.lower
        if lower is not None and "objective_Z" not in lower[1]:
            lower = (lower[0], {**lower[1], "objective_Z": float(state.f)})
        M, cert, parts = self._certificate(data, Z, lower=lower)
        info = {**data.backend_info(), "history": state.history, "bounds": parts, "Z": Z,
                "n_active": state.n_active, "last_step": state.step,
                "hessian": "cg" if self._use_cg(data) else "dense"}
        if self._use_cg(data):
            info["hessian_products"] = state.n_cg
        info["interior_point_iterations"] = state.interior
        return M, cert, info


def warm_start(data):
    """The point at which the exact path's margin-set reduction partitions
    Eq. 4's terms.

    :class:`SemismoothNewton` with its defaults, without a warning when it
    stops short (:func:`cvxmetric.slr.solve_exact`, whose reduced model
    is a proximal step from this point; a wrong partition costs rounds,
    never accuracy).  The registry declares it (``Formulation.warm_start``)
    and :meth:`cvxmetric.formulations.Formulation.solve_exact` hands it to
    the exact path, which imports no fast solver itself.

    Parameters
    ----------
    data : SLRData

    Returns
    -------
    SolverResult
    """
    return SemismoothNewton().run(data, warn=False)
