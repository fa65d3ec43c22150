"""Constraint-based DML, fast: a working-set Newton method on the smooth dual.

Solves the problems of :mod:`._constraint` (Eq. 1, 4 = 6, 10 of Lee, Jin,
Jain 2008) for ``lam > 0``.  The regulariser ``(lam/2) ||A||_F^2`` is
strongly convex, so the Lagrangian dual (see :mod:`._constraint`)

    minimise_{u in box}  h(u) = ||Pi_+(Y(u))||_F^2 / (2 lam) - b^T u,
    box: theta_p >= 0 on cannot-links, beta_p in [0, 1] on must-links
         (beta_p = 1 fixed in Eq. 1),

is smooth: ``grad h(u) = s * d_{A(u)} - b`` with the primal map
``A(u) = Pi_+(Y(u)) / lam`` (a PSD projection; a clip ``max(., 0)`` in the
diagonal case), Lipschitz with constant ``||K||^2 / lam`` for
``K: u -> Y(u) = sum_p s_p u_p C_p``.  An evaluation is one weighted Gram
product (``Phi^T diag(s u) Phi`` or ``X^T L X``; never a matrix per pair),
one (d, d) eigendecomposition (a clip for diagonal problems) and one pass
of pair distances from the rank-r factor of ``A``.

A plain accelerated gradient method on this dual is slow: its Lipschitz
constant grows with the number of pairs while only a few dozen multipliers
are non-zero at the optimum (measured: 20,000 restarted FISTA steps left a
65% gap on 10,000 pairs in 12 dims).  The solver therefore works on a
*working set* ``W`` of pairs:

* outside ``W`` the multipliers are fixed at bound values: ``theta_p = 0``
  (a cannot-link assumed inactive), ``beta_p in {0, 1}`` (a must-link hinge
  assumed inactive / active), ``beta_p = 1`` in Eq. 1; their contribution
  is one constant matrix ``Y_0``.  The restricted dual is the dual of a
  relaxation (dropped constraints, hinges replaced by a lower linear
  piece), so every multiplier vector still gives a valid bound on the full
  problem;
* inside ``W`` the dual is minimised by a projected semismooth Newton-CG
  method (Bertsekas' projected Newton for box constraints; the generalised
  Hessian ``H = K^T DPi_+(Y) K / lam`` is applied matrix-free,
  ``DPi_+(Y)[T] = U (Omega o U^T T U) U^T`` with ``Omega`` the divided
  differences of ``max(., 0)`` at the eigenvalues of ``Y``; a
  Levenberg-Marquardt damping handles the degenerate directions; the step
  length minimises the dual along the projected arc), with blocks of FISTA
  (adaptive restarts, Jacobi-scaled steps ``D_p / L``, ``L`` a rigorous
  Collatz-Wielandt bound) as the fallback when a Newton step fails;
* after each inner solve one pass over *all* pairs certifies the point and
  updates ``W``: violated cannot-links and must-links whose fixed ``beta``
  contradicts the distances join it (the most violated first, at most
  ``dim + 10`` per round, ``dim = d(d+1)/2`` or ``d``); ``W`` never
  shrinks, so the method is a finite cutting-plane scheme.  Problems with
  at most ``full_below`` pairs use ``W`` = all pairs from the start.

**Primal recovery and certificate.**  ``A(u)`` is PSD but may violate a
cannot-link slightly; the constraints are homogeneous, so
``A' = A(u) / min(1, min_D d_{A(u)})`` is feasible, and ``f(A') - g(u)`` is a
certified duality gap.  At a degenerate optimum the dual *value* converges
much faster than the primal map (``||A(u) - A*||^2 <= 2 (h(u) - h*) / lam``
loses a square root), so every ``_CHECK_EVERY`` Newton steps and after each
round :func:`_polish` also solves the equality-constrained quadratic
program on the face and active set read off ``A(u)``: with the right
ones its solution is ``A*`` to round-off, and its multipliers (found by
bounded least squares, signs enforced) are usually an optimal dual point.  The solver stops when the
best primal and dual values so far are within ``tol`` (relative), the
certificate the exact path uses; "converged" means "certified to ``tol``".
The polish and the inner solves are heuristics for speed only: nothing is
accepted without that certificate.

Hardened on a randomised sweep of 400 tiny, degenerate, badly scaled
instances (rounded data of scale 0.1 to 10, duplicate pairs, ``lam`` from
1e-3 to 50): every one within 1e-7 of the exact optimum; the slowest ones
have ``lam`` near 0, where the dual is almost a linear program (thousands
of Newton steps on 32 pairs).
"""

import functools
from dataclasses import dataclass
from numbers import Integral
from typing import NamedTuple

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.optimize import lsq_linear
from sklearn.utils._param_validation import Interval

from .._face import polish_on_faces
from .._linalg import eigh_psd
from .._linesearch import backtracking
from .._reductions import Reduction
from .._settings import (
    _CHECK_EVERY,
    _CONT_BELOW,
    _CONT_FACTOR,
    _CONT_FLOOR,
    _CONT_START,
    _INNER_RTOL,
    _MU,
    _STAGE_HOLD,
    _STALL,
)
from .._settings import (
    CONSTRAINTDML_ARC_SLOPE as _ARC_SLOPE,
)
from .._settings import (
    CONSTRAINTDML_BVLS_FLOPS as _BVLS_FLOPS,
)
from .._settings import (
    CONSTRAINTDML_DAMPING_MAX as _DAMPING_MAX,
)
from .._settings import (
    CONSTRAINTDML_DIRECT_CG_STEPS as _DIRECT_CG_STEPS,
)
from .._settings import (
    CONSTRAINTDML_DIRECT_ENTRIES as _DIRECT_ENTRIES,
)
from .._settings import (
    CONSTRAINTDML_FACE_LADDER as FACE_LADDER,
)
from .._settings import (
    CONSTRAINTDML_POLISH_BACKOFF as _POLISH_BACKOFF,
)
from .._settings import (
    CONSTRAINTDML_POLISH_BELOW as _POLISH_BELOW,
)
from .._solver import IterativeSolver
from ..result import SolverResult
from ._problem import ConstraintData

__all__ = [
    "ConstraintDualSolver",
    "DualView",
    "DualPoint",
    "lipschitz_bound",
    "dual_objective",
]


class DualPoint(NamedTuple):
    """Everything known at one multiplier vector (restricted to a view)."""

    u: np.ndarray  # (|W|,) multipliers of the view
    h: float  # h = -g: the (negated) dual value of the full problem
    grad: np.ndarray  # (|W|,)
    A: np.ndarray  # (d, d) or (d,): the primal map A(u)
    G: np.ndarray  # (d, r) factor with A = G G^T (full problems) or None
    dist: np.ndarray  # (|W|,) distances d_{A(u)} of the view's pairs
    w: np.ndarray  # eigenvalues of Y(u) (full), or Y(u) itself (diagonal)
    V: np.ndarray  # eigenvectors of Y(u) (full) or None
    Y: np.ndarray = None  # Y(u) itself ((d, d), or (d,) diagonal)


class DualView:
    """The dual restricted to the pairs ``W``, the other multipliers fixed.

    Parameters
    ----------
    data : ConstraintData
    W : ndarray of int
        Rows of ``data.pairs`` whose multipliers are free.
    u : ndarray of shape (P,)
        Full multiplier vector; its entries outside ``W`` are the fixed
        values.

    Attributes
    ----------
    Y0 : ndarray
        ``sum_{p not in W} s_p u_p C_p`` ((d, d), or (d,) for diagonal
        problems).
    c0 : float
        ``sum_{p not in W} b_p u_p``.
    rows : ndarray of shape (|W|, d)
        Difference vectors ``phi_p`` (full) or ``psi_p`` (diagonal).
    """

    def __init__(self, data, W, u):
        self.data = data
        self.W = W
        self.lam = data.lam
        self.diagonal = data.diagonal
        self.sign = data.sign[W]
        self.b = data.b[W]
        self.lower = data.lower[W]
        self.upper = data.upper[W]
        fixed = u.copy()
        fixed[W] = 0.0
        self.c0 = float(data.b @ fixed)
        d = data.n_features
        if np.any(fixed):
            self.Y0 = data.Y_of(fixed)
        else:
            self.Y0 = np.zeros(d) if data.diagonal else np.zeros((d, d))
        if data.diagonal:
            self.rows = data.Psi[W]
            self.bdiag = np.einsum("pd,pd->p", self.rows, self.rows)
        else:
            p = data.pairs[W]
            self.rows = data.X[p[:, 0]] - data.X[p[:, 1]]  # (|W|, d)
            self.bdiag = np.einsum("pd,pd->p", self.rows, self.rows) ** 2
        self.must = np.flatnonzero(data.labels[W] == 1)
        self.cannot = np.flatnonzero(data.labels[W] == -1)
        self.free = self.upper > self.lower

    def __len__(self):
        return len(self.W)

    def gram(self, x, idx=None):
        """``sum_{p in W} x_p C_p`` ((d, d)) or ``rows^T x`` (diagonal);
        with ``idx``, the sum over the view's pairs ``idx`` (``x`` of
        length ``len(idx)``)."""
        R = self.rows if idx is None else self.rows[idx]
        if self.diagonal:
            return R.T @ x
        T = R.T @ (x[:, None] * R)
        return 0.5 * (T + T.T)

    def positive_part(self, Y):
        """``(||Pi_+(Y)||^2, A)`` with ``A = Pi_+(Y) / lam`` (a clip for
        diagonal problems): the primal map without the pair distances."""
        if self.diagonal:
            pos = np.maximum(Y, 0.0)
            return float(pos @ pos), pos / self.lam
        w, V = eigh_psd(Y)
        keep = w > 0
        Vk = V[:, keep]
        return float(np.sum(w[keep] ** 2)), (Vk * (w[keep] / self.lam)) @ Vk.T

    def quadform(self, T):
        """``<C_p, T>`` for the pairs of the view."""
        if self.diagonal:
            return self.rows @ T
        return np.einsum("pd,pd->p", self.rows @ T, self.rows)

    def evaluate(self, u):
        """:class:`DualPoint` at the view's multipliers ``u``."""
        Y = self.Y0 + self.gram(self.sign * u)
        lam = self.lam
        if self.diagonal:
            pos = np.maximum(Y, 0.0)
            A = pos / lam
            dist = self.rows @ A
            sq = float(pos @ pos)
            G, w, V = None, Y, None
        else:
            w, V = eigh_psd(Y)
            keep = w > 0
            G = V[:, keep] * np.sqrt(w[keep] / lam)  # A = G G^T
            A = G @ G.T
            Z = self.rows @ G
            dist = np.einsum("pr,pr->p", Z, Z)
            sq = float(np.sum(w[keep] ** 2))
        h = sq / (2.0 * lam) - float(self.b @ u) - self.c0
        grad = self.sign * dist - self.b
        return DualPoint(u, h, grad, A, G, dist, w, V, Y)

    def hess_operator(self, point, F=None):
        """``v -> H v``, the generalised Hessian of ``h`` at ``point``
        (``H_FF``, on vectors of length ``|F|``, for a mask ``F``: the
        products then cost ``|F| d^2``, not ``|W| d^2``).

        ``H = K^T DPi_+(Y) K / lam`` with ``DPi_+(Y)[T] = U (Omega o U^T T
        U) U^T``: ``Omega_ij = 1`` when both eigenvalues are positive, ``0``
        when neither is, ``w_i^+ / (w_i - w_j)`` otherwise (an element of
        Clarke's generalised Jacobian of the PSD projection); for diagonal
        problems ``DPi_+ = diag(Y > 0)``.  In the eigenbasis, with
        ``z_p = U^T phi_p``, ``(H v)_p = s_p z_p^T (Omega o Z^T diag(s v) Z)
        z_p / lam``: two (|W|, d) x (d, d) products per application.
        """
        sign, lam = self.sign, self.lam
        rows = self.rows
        if F is not None:
            sign, rows = sign[F], rows[F]
        if self.diagonal:
            R = rows[:, point.w > 0]  # (|F| or |W|, d_+)

            def apply(v):
                return sign * (R @ (R.T @ (sign * v))) / lam

            return apply
        Z = rows @ point.V  # (|F| or |W|, d): pairs in the eigenbasis of Y
        om = _omega(point.w)

        def apply(v):
            T = Z.T @ ((sign * v)[:, None] * Z)
            return sign * np.einsum("pd,pd->p", Z @ (om * T), Z) / lam

        return apply

    def hess_vec(self, point, v):
        """``H v`` at ``point`` (see :meth:`hess_operator`)."""
        return self.hess_operator(point)(v)

    def hess_width(self, point):
        """Columns of the factor :meth:`hess_matrix` forms (``r`` for
        diagonal problems, ``r (d - r) + r`` otherwise; ``r`` the positive
        eigenvalues of ``Y``)."""
        r = int(np.sum(point.w > 0))
        return r if self.diagonal else r * (len(point.w) - r) + r

    def hess_matrix(self, point, F):
        """``H_FF``, the generalised Hessian on the pairs of the mask ``F``,
        formed explicitly (see :meth:`hess_operator`).

        In the eigenbasis ``Omega`` is 1 on the positive eigenvalues ``P``,
        0 on the others ``N`` and ``omega_ij`` between them, so
        ``lam H_pq = s_p s_q [(z_pP . z_qP)^2 + 2 sum_{i in P, j in N}
        omega_ij z_pi z_pj z_qi z_qj]``: one ``(|F| x r)`` and one
        ``(|F| x r (d - r))`` Gram product (``r`` positive eigenvalues).
        """
        sign = self.sign[F]
        if self.diagonal:
            R = self.rows[F][:, point.w > 0] * sign[:, None]
            return (R @ R.T) / self.lam
        pos = point.w > 0
        Z = self.rows[F] @ point.V  # (|F|, d)
        Zp, Zn = Z[:, pos], Z[:, ~pos]
        S = Zp @ Zp.T
        H = S * S
        if Zn.shape[1] and Zp.shape[1]:
            om = _omega(point.w)[np.ix_(pos, ~pos)]  # (r, d - r), in [0, 1]
            K = (Zp[:, :, None] * Zn[:, None, :]) * np.sqrt(2.0 * om)
            K = K.reshape(len(Z), -1)
            H += K @ K.T
        return (sign[:, None] * H * sign[None, :]) / self.lam

    def restricted_gap(self, point):
        """``(f_W(A'), g)``: the restricted primal objective at the repaired
        ``A' = A(u) / min(1, min_{W cap D} d)`` and the dual value.

        ``f_W(A) = (lam/2)||A||^2 - <Y_0, A> + c_0 + sum_{W cap S} hinge``
        subject to the cannot-links of ``W``: the problem whose dual the
        view minimises.
        """
        s = 1.0
        if len(self.cannot):
            dmin = float(np.min(point.dist[self.cannot]))
            if dmin <= 0:
                return np.inf, -point.h
            s = max(1.0, 1.0 / dmin)
        A = point.A * s
        f = 0.5 * self.lam * float(np.sum(A * A)) - float(np.sum(self.Y0 * A)) + self.c0
        if len(self.must):
            dm = point.dist[self.must] * s
            f += float(np.sum(np.maximum(dm - 1.0, 0.0)))
        return f, -point.h


class _ArcPoint(NamedTuple):
    """A point of a projected arc: the multipliers and the dual value."""

    u: np.ndarray
    h: float


class _Arc:
    """``h`` and its slope along the projected arc ``x(alpha) = clip(u +
    alpha d)`` of a view, without a pass over the view's pairs.

    ``Y`` is linear in the multipliers, so with ``t_p`` the step at which
    pair ``p`` reaches its bound (``0``: blocked at once)
    ``Y(x(alpha)) = Y(u) + alpha dY - sum_{0 < t_p < alpha} s_p (u_p +
    alpha d_p - x_p) C_p``, ``dY = sum_{t_p > 0} s_p d_p C_p``, and the
    slope of ``h`` along the arc (the pairs still moving) is
    ``<A(x), dY - sum_{0 < t_p < alpha} s_p d_p C_p> - b^T d`` over them:
    one ``(d, d)`` eigendecomposition per point and Gram products over the
    pairs clipped so far, where :meth:`DualView.evaluate` makes a Gram
    product and the distances over the whole view (measured: 17 points per
    Newton step on a 4 000-pair view, three quarters of a step's time).
    """

    def __init__(self, view, point, d):
        self.view, self.u, self.d = view, point.u, d
        u, lo, hi = point.u, view.lower, view.upper
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(d > 0, (hi - u) / d, np.where(d < 0, (lo - u) / d, np.inf))
        self.t = np.maximum(t, 0.0)
        self.sd = view.sign * d
        self.Y = point.Y
        self.dY = view.gram(np.where(self.t > 0, self.sd, 0.0))

    def at(self, alpha):
        """``(point, slope)`` at ``alpha``: an :class:`_ArcPoint` and the
        directional derivative of ``h`` along the arc there."""
        view, u, d, t = self.view, self.u, self.d, self.t
        x = np.clip(u + alpha * d, view.lower, view.upper)
        Y, dY = self.Y + alpha * self.dY, self.dY
        S = np.flatnonzero((t > 0) & (t < alpha))  # clipped on the way
        if len(S):
            Y = Y - view.gram(view.sign[S] * (u[S] + alpha * d[S] - x[S]), S)
            dY = dY - view.gram(self.sd[S], S)
        sq, A = view.positive_part(Y)
        moving = t >= alpha
        h = sq / (2.0 * view.lam) - float(view.b @ x) - view.c0
        slope = float(np.sum(A * dY)) - float(view.b[moving] @ d[moving])
        return _ArcPoint(x, h), slope


def _bracket_point(a_lo, a_hi, s_lo, s_hi):
    """The next step length in ``(a_lo, a_hi)`` where the arc's slope goes
    from ``s_lo <= 0`` to ``s_hi > 0``: the zero of the secant through the
    two slopes (regula falsi; the Illinois variant halves an end's slope when
    that end is kept twice, :meth:`ConstraintDualSolver._arc_search`), kept
    in the bracket's middle 98%; the midpoint when the slopes do not
    bracket a zero."""
    if not s_lo < 0 < s_hi:
        return 0.5 * (a_lo + a_hi)
    w = a_hi - a_lo
    mid = a_lo + w * (-s_lo) / (s_hi - s_lo)
    return min(max(mid, a_lo + 0.01 * w), a_hi - 0.01 * w)


def _newton_free_set(view, F, inside, r):
    """The free set ``F`` of a Newton step, with at most ``dim`` multipliers
    leaving a bound (``dim = d (d + 1) / 2``, ``d`` diagonal).

    ``H = K^T DPi_+(Y) K / lam`` has rank at most ``dim`` (``K`` maps into
    the symmetric matrices), so a system on more free multipliers than that
    is singular and only the damping decides the excess: those components
    are gradient steps.  On the first stage's restricted problems of 16 000
    pairs at ``d = 25`` (``dim = 325``) the free set swung between 450 and
    1 000 multipliers from one step to the next, hundreds of must-links
    freed from ``beta = 1`` and clipped back.  The multipliers strictly
    inside their box always stay free; of those at a bound whose gradient
    points inwards, the ones with the largest projected-gradient step
    ``r`` fill the free set up to ``dim``, and the others take the scaled
    gradient step of the bound multipliers (the two-metric projection
    method: they still move, so no multiplier is stuck at a wrong bound
    when more than ``dim`` are inside; measured at 16 000 pairs in
    ``d = 25``: as many Newton steps, 831 and 832, and 7.3 s of process
    time became 4.7-5.2 s, the direct systems smaller).
    """
    d = view.rows.shape[1]
    dim = d if view.diagonal else d * (d + 1) // 2
    leaving = np.flatnonzero(F & ~inside)
    room = max(dim - int(np.sum(F & inside)), 0)
    if len(leaving) <= room:
        return F
    order = np.argsort(-np.abs(r[leaving]), kind="stable")
    F = F.copy()
    F[leaving[order[room:]]] = False
    return F


class _Damping:
    """The factor on the Levenberg-Marquardt damping of the Newton steps of
    one inner solve, adapted to the step lengths the arc search accepts.

    The generalised Hessian on the free multipliers is singular whenever
    more of them are free than its rank (``r (r + 1) / 2 + r (d - r)``,
    ``r`` the positive eigenvalues of ``Y``), and its near-null directions
    then take ``1 / mu`` times a Jacobi-scaled gradient step: on the first
    stage at 16 000 pairs in ``d = 50`` (seed 1) hundreds of Newton steps
    of ``|d| ~ 150`` were cut to lengths ``1e-3``-``3e-3`` at the first
    bound, and the Newton part of each step with them.  A step shorter
    than 0.1 multiplies the factor by 10 (at most
    :data:`~cvxmetric._settings.CONSTRAINTDML_DAMPING_MAX`), one of at
    least 0.5 divides it by 10 (at least 1: the damping of a full step is
    the fixed rule's).
    """

    def __init__(self):
        self.factor = 1.0

    def update(self, alpha):
        """Learn from the accepted step length ``alpha``."""
        if alpha < 0.1:
            self.factor = min(10.0 * self.factor, _DAMPING_MAX)
        elif alpha >= 0.5:
            self.factor = max(0.1 * self.factor, 1.0)


def _direct_pays(view, point, F):
    """Whether :meth:`ConstraintDualSolver._direct` is cheaper than the
    conjugate gradients on the free pairs ``F`` (see :data:`_DIRECT_CG_STEPS`):
    ``|F|^2 width + |F|^3 / 3`` against ``_DIRECT_CG_STEPS`` Hessian products
    of ``4 |F| d^2`` flops (``4 |F| d`` diagonal), within
    :data:`_DIRECT_ENTRIES`."""
    n = int(np.sum(F))
    width = view.hess_width(point)
    d = view.rows.shape[1]
    cg = 4.0 * n * (d if view.diagonal else d * d) * _DIRECT_CG_STEPS
    return n * width <= _DIRECT_ENTRIES and n * n * (width + n / 3.0) <= cg


def _omega(w):
    """Divided differences of ``max(., 0)`` at the eigenvalues ``w``."""
    pos = np.maximum(w, 0.0)
    num = pos[:, None] - pos[None, :]
    den = w[:, None] - w[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        om = np.where(den != 0, num / np.where(den != 0, den, 1.0), 0.0)
    both = (w[:, None] > 0) & (w[None, :] > 0)
    return np.where(both, 1.0, om)


def lipschitz_bound(view, scale=None, n_iter=60, rtol=1e-3, deadline=None):
    """Rigorous upper bound on ``||K D^{1/2}||^2`` over a view's free pairs.

    Power iteration on ``B = D^{1/2} [<C_p, C_q>] D^{1/2}`` (non-negative,
    positive diagonal) from ``v = 1``; every iterate ``v > 0`` gives the
    Collatz-Wielandt bound ``lambda_max(B) <= max_p (B v)_p / v_p`` and the
    Rayleigh quotient a lower bound; iteration stops when they agree to
    ``rtol``.

    Parameters
    ----------
    view : DualView
    scale : ndarray of shape (|W|,), optional
        The diagonal ``D`` (default: ones).
    deadline : Deadline, optional
        Checked every iteration; the bound is valid whenever it stops.

    Returns
    -------
    upper : float
        The smallest Collatz-Wielandt bound seen.
    lower : float
        The largest Rayleigh quotient seen.
    """
    free = view.free
    if not np.any(free):
        return 0.0, 0.0
    r = np.ones(len(view)) if scale is None else np.sqrt(scale)
    v = free.astype(float)
    upper, lower = np.inf, 0.0
    for it in range(n_iter):
        if it and deadline is not None and deadline.expired():
            break
        Bv = np.where(free, r * view.quadform(view.gram(v * r)), 0.0)
        upper = min(upper, float(np.max(Bv[free] / v[free])))
        lower = max(lower, float(v @ Bv) / float(v @ v))
        if upper - lower <= rtol * upper:
            break
        v = Bv / np.max(Bv)
        # keep v strictly positive on the free set (round-off)
        v = np.where(free, np.maximum(v, 1e-300), 0.0)
    return upper, lower


def dual_objective(data, u):
    """``(h(u), grad h(u), A(u))`` of the full dual, ``h = -g``.

    ``A(u)`` is a (d, d) matrix, or the vector ``a`` for diagonal problems.
    """
    Y = data.Y_of(u)
    A, sq, G = data.primal_of(Y)
    dist = data.Psi @ A if data.diagonal else data.op.sqdist(G=G)
    h = sq / (2.0 * data.lam) - float(data.b @ u)
    return h, data.sign * dist - data.b, A


def _repaired(data, A, dist):
    """``(f(A'), A')`` for the feasible ``A' = A / min(1, min_D d_A)``, or
    ``(inf, None)`` when a cannot-link has ``d_A <= 0``."""
    dmin = float(np.min(dist[data.cannot]))
    if not dmin > 0:
        return np.inf, None
    s = max(1.0, 1.0 / dmin)
    return data.objective(A * s, dist=dist * s), A * s


def _rel_gap(f, g):
    """Certified relative gap ``(f - g) / max(1, |f|)`` (``inf`` without a
    feasible point or a bound)."""
    if not (np.isfinite(f) and np.isfinite(g)):
        return np.inf
    return max(0.0, (f - g) / max(1.0, abs(f)))


def _target_pair(data, A, u):
    """``(f, g)`` of ``data``'s problem at a feasible ``A`` (``inf`` if
    ``None``) and multipliers ``u`` (the better of the plain and repaired
    dual bounds, both valid)."""
    f = np.inf if A is None else data.objective(A)
    g = -np.inf if u is None else data.best_dual_bound(u, A) if A is not None \
        else data.dual_bound(u)
    return f, g


def _bounded_lstsq(G, rhs, sign):
    """``nu`` minimising ``||G nu - rhs||`` with the multipliers' signs:
    ``nu_e >= 0`` for cannot-links (``sign = +1``), ``nu_e in [-1, 0]`` for
    must-links on their margin (``nu_e = -beta_e``).  Bounded-variable least
    squares (SciPy's BVLS): among the many solutions of a degenerate system
    it returns one that is a dual point."""
    lb = np.where(sign > 0, 0.0, -1.0)
    ub = np.where(sign > 0, np.inf, 0.0)
    scale = max(float(np.abs(G).max()), 1e-300)
    # BVLS starts from the clipped least-squares solution, and its every
    # iterate is within the bounds: a capped run is still a candidate (a
    # face read off a point far from the optimum can have thousands of
    # constraints, where BVLS ran hundreds of |E|^3 solves per polish)
    n = len(rhs)
    max_iter = min(n, max(5, int(_BVLS_FLOPS / max(n, 1) ** 3)))
    try:
        return lsq_linear(G / scale, rhs / scale, bounds=(lb, ub), method="bvls",
                          tol=1e-14, max_iter=max_iter).x
    except (ValueError, np.linalg.LinAlgError):  # pragma: no cover - degenerate
        return np.clip(np.linalg.lstsq(G, rhs, rcond=None)[0], lb, ub)


class _LeastSquares:
    """``res -> delta``, the minimum-norm least-squares solution of ``G delta
    = res`` for a symmetric positive semidefinite ``G`` (a face's Gram
    matrix): its eigendecomposition, formed at the first call and reused by
    the refinement steps (each ``np.linalg.lstsq`` had its own SVD: 4.8 of
    36 s at 16 000 pairs in d = 50), cut where ``lstsq``'s default ``rcond``
    cuts the singular values (``eps * |E|`` times the largest)."""

    def __init__(self, G):
        self.G, self.basis = G, None

    def __call__(self, res):
        if self.basis is None:
            w, V = np.linalg.eigh(self.G)
            keep = np.abs(w) > np.finfo(float).eps * len(w) * float(np.abs(w).max())
            self.basis = (V[:, keep], w[keep])
        V, w = self.basis
        return V @ ((V.T @ res) / w)


def _polish(data, u, point, dist, deadline=None, target=-np.inf):
    """Primal and dual candidates from the face and active set of ``A(u)``.

    At the optimum ``A*`` let ``E`` be the constraints holding with equality
    (cannot-links with ``d = 1`` and, for the hinge, must-links on their
    margin ``d = 1``), ``Lin`` the must-links whose hinge is active
    (``d > 1``; all must-links in Eq. 1) and ``U`` a basis of the range of
    ``A*`` (its support for diagonal problems).  ``A*`` then solves the
    equality-constrained quadratic program on that face,

        min (lam/2) ||B||^2 + <U^T C_Lin U, B>   s.t.  <U^T C_e U, B> = 1 (e in E),

    (its KKT conditions are those of the full problem restricted to the
    face), whose solution is ``B = (sum_e nu_e z_e z_e^T - U^T C_Lin U) /
    lam``, ``z_e = U^T phi_e``, with ``G nu = lam 1 + c``,
    ``G_ef = (z_e . z_f)^2``, ``c_e = z_e^T U^T C_Lin U z_e`` (a small
    linear system; no matrix per pair).  ``E``, ``Lin`` and ``U`` are read
    off ``A(u)`` at each threshold of :data:`FACE_LADDER`; with the right ones ``B`` is ``A*``
    to round-off however degenerate the optimum -- whereas ``A(u)`` only
    converges like the square root of the dual gap there.  Every candidate
    is checked like any other point: ``B`` is projected on the PSD cone and
    repaired into feasibility, and ``nu`` (signs restored) replaces the
    multipliers of ``E`` in a dual candidate; the best primal and the best
    dual candidate are kept apart (the loop is
    :func:`~cvxmetric._face.polish_on_faces`, which skips a face read at two
    thresholds).  The thresholds stop early when ``deadline`` (a
    :class:`~cvxmetric._solver.Deadline`) expires, or once a primal
    candidate's objective is at most ``target`` (one that certifies with the
    best dual value known).

    Returns
    -------
    f, A, g, u2
        Best feasible objective and point (``inf, None`` if none), best
        dual value and its multipliers (``-inf, None`` if none).
    """
    if data.diagonal:
        spectrum = None
        scale = max(float(point.A.max()), 1e-300)
    else:
        spectrum = np.linalg.eigh(0.5 * (point.A + point.A.T))
        scale = max(float(spectrum[0][-1]), 1e-300)
    values = point.A if data.diagonal else spectrum[0]

    def read(tau):
        lin, E, sign_E = _face_sets(data, dist, tau)
        if not len(E):
            return None
        # the support (diagonal) or the range (eigenvalues) above the cut
        kept = values > tau * scale
        key = (E.tobytes(), lin.tobytes(), np.packbits(kept).tobytes())
        return key, (kept, lin, E, sign_E)

    def candidate(face):
        kept, lin, E, sign_E = face
        out = (_diagonal_face_point(data, kept, lin, E, sign_E) if data.diagonal
               else _full_face_point(data, spectrum[1], kept, lin, E, sign_E))
        if out is None:
            return None
        A, dist_A, nu = out
        f, As = _repaired(data, A, dist_A)
        # multipliers consistent with the face: E from nu (nu_e = s_e u_e),
        # active hinges 1, every other pair 0
        u2 = data.clip(lin.copy())
        u2[E] = sign_E * nu
        u2 = data.clip(u2)
        return f, As, data.dual_value(u2), u2

    # the best primal (lowest f) and the best dual (highest g) separately;
    # NaN ranks last
    out = polish_on_faces(FACE_LADDER, read, candidate,
                          lambda c: (_ranked(c[0]), _ranked(-c[2])), target=target,
                          deadline=deadline)
    f, As, _, _ = out.first(0) or (np.inf, None, None, None)
    _, _, g, u2 = out.first(1) or (None, None, -np.inf, None)
    primal = (f, As) if f < np.inf else (np.inf, None)
    return primal + ((g, u2) if g > -np.inf else (-np.inf, None))


def _ranked(score):
    """``score``, with NaN ranked last (never kept over a number)."""
    return np.inf if np.isnan(score) else score


def _face_sets(data, dist, tau):
    """``(lin, E, sign_E)`` read off the distances with threshold ``tau``:
    ``lin`` (P,) 1 on the must-links whose hinge is active (all in Eq. 1),
    ``E`` the constraints on their margin (cannot-links, then must-links
    for the hinge) and ``sign_E`` their signs ``s_e``."""
    c, m = data.cannot, data.must
    lin = np.zeros(data.n_pairs)
    E = c[dist[c] <= 1.0 + tau]
    if data.hard:
        lin[m] = 1.0
        return lin, E, np.ones(len(E))
    dm = dist[m]
    lin[m] = (dm > 1.0 + tau).astype(float)
    margin = m[np.abs(dm - 1.0) <= tau]
    sign_E = np.concatenate([np.ones(len(E)), -np.ones(len(margin))])
    return lin, np.concatenate([E, margin]), sign_E


def _diagonal_face_point(data, support, lin, E, sign_E):
    """``(A, d_A, nu)``: the face's quadratic program (see :func:`_polish`)
    on the ``support`` (a mask) of a diagonal metric; ``None`` if empty."""
    lam = data.lam
    face = np.flatnonzero(support)
    if not len(face):
        return None
    Z = data.Psi[np.ix_(E, face)]  # (|E|, r)
    cl = data.Psi[:, face].T @ lin  # (r,)
    G = Z @ Z.T
    nu = _bounded_lstsq(G, lam + Z @ cl, sign_E)
    af = (Z.T @ nu - cl) / lam  # (r,)
    solve = _LeastSquares(G)
    for _ in range(3):
        # iterative refinement of the point itself: forming it from
        # nu cancels (Z^T nu ~ cl when lam is small), so corrections
        # in span{z_e} are added to it directly
        res = 1.0 - Z @ af
        if np.max(np.abs(res)) <= 1e-15:
            break
        delta = solve(res)
        af = af + Z.T @ delta
        nu = nu + lam * delta
    A = np.zeros(data.n_features)
    A[face] = np.maximum(af, 0.0)
    return A, data.Psi @ A, nu


def _full_face_point(data, Va, kept, lin, E, sign_E):
    """``(A, d_A, nu)``: the face's quadratic program (see :func:`_polish`)
    on the range of ``A(u)`` (its eigenvectors ``Va``, those of ``kept``
    eigenvalues); ``None`` if empty."""
    lam, X = data.lam, data.X
    U = Va[:, kept]  # (d, r)
    if not U.shape[1]:
        return None
    Z = (X[data.pairs[E, 0]] - X[data.pairs[E, 1]]) @ U  # (|E|, r)
    Cl = data.op.gram(lin)
    Clr = U.T @ (0.5 * (Cl + Cl.T)) @ U  # (r, r)
    ZZ = Z @ Z.T
    rhs = lam + np.einsum("er,rs,es->e", Z, Clr, Z)
    G = ZZ * ZZ
    nu = _bounded_lstsq(G, rhs, sign_E)
    B = (Z.T @ (nu[:, None] * Z) - Clr) / lam
    solve = _LeastSquares(G)
    for _ in range(3):
        # iterative refinement of B itself (see the diagonal case)
        res = 1.0 - np.einsum("er,rs,es->e", Z, B, Z)
        if np.max(np.abs(res)) <= 1e-15:
            break
        delta = solve(res)
        B = B + Z.T @ (delta[:, None] * Z)
        nu = nu + lam * delta
    wb, Vb = np.linalg.eigh(0.5 * (B + B.T))
    Gf = U @ (Vb * np.sqrt(np.maximum(wb, 0.0)))  # A = Gf Gf^T
    A = Gf @ Gf.T
    return A, data.op.sqdist(G=Gf), nu


class _Best:
    """Best feasible primal point and best dual bound seen in a run."""

    def __init__(self, f, A, g, u):
        self.f, self.A, self.g, self.u = f, A, g, u

    def primal(self, f, A):
        if f < self.f:
            self.f, self.A = f, A

    def dual(self, g, u):
        if g > self.g:
            self.g, self.u = g, u

    def error(self):
        """Certified relative gap ``(f - g) / max(1, |f|)``."""
        if not np.isfinite(self.f):
            return np.inf
        return max(0.0, (self.f - self.g) / max(1.0, abs(self.f)))


class _State(NamedTuple):
    iter_num: int  # working-set rounds (the IterativeSolver count)
    error: float  # certified relative duality gap of the best primal / dual pair
    u: np.ndarray  # (P,) current multipliers (in the box)
    W: np.ndarray  # working set (rows of data.pairs)
    best_f: float  # best feasible primal objective so far
    best_g: float  # best dual value so far
    best_u: np.ndarray
    n_rounds: int  # working-set rounds
    n_newton: int
    n_fista: int
    n_hessvec: int
    n_stall: int  # consecutive rounds without progress
    lam: float  # lam of the current continuation stage
    stage_error: float  # certified gap of the current stage's problem
    n_stages: int
    fresh: bool = False  # the first round of a continuation stage
    polish_below: float = _POLISH_BELOW  # a point's own gap at which it is polished


#: The solver's name in its certificates.
_CERT_NAME = "constraintdml-fast"


class ConstraintSolution(NamedTuple):
    """A solution on its way back through the reductions: the primal point
    ``A`` in the units of the problem at hand (``None``: the primal map of
    ``u``, computed where it is certified), the multipliers ``u`` (unit
    free), its certificate once computed, and what the reductions report
    (``info["scale_exponent"]``)."""

    A: object
    u: np.ndarray
    certificate: object = None
    info: dict = None


class Normalize(Reduction):
    """The problem in units where the pair lengths are O(1)
    (:meth:`ConstraintData.normalized`: ``X / 2^k``, ``lam / 2^{4k}``).

    ``apply`` gives that problem (the warm start's multipliers are unit
    free: it passes as it is); ``invert`` certifies a
    :class:`ConstraintSolution` there (the objective, the certificate and
    the multipliers are the same in both units) and maps its ``A`` back by
    :meth:`ConstraintData.restore_units` (``A / 2^{2k}``, exact), reporting
    ``info["scale_exponent"] = k``.  The inverse data is ``(problem, k)``;
    with ``k = 0`` both ways are the identity.  Declared for every problem:
    ``k`` is known only once computed.
    """

    name = "normalize"

    def accepts(self, data):
        return isinstance(data, ConstraintData)

    def apply(self, data, init):
        data_n, k = data.normalized()
        return data_n, init, (data_n, k)

    def invert(self, solution, inverse):
        data_n, k = inverse
        if k == 0:
            return solution
        A = _primal(data_n, solution)
        cert = solution.certificate
        if cert is None:
            cert = data_n.certificate(A, solution.u, solver=_CERT_NAME)
        # restore_units maps a result's M (here A itself: the matrix or,
        # diagonal, its vector) and refuses one not representable in X's units
        out = data_n.restore_units(
            SolverResult(M=A, status="", objective=cert.objective, n_iter=0,
                         certificate=cert, method=_CERT_NAME, info={}), k)
        return ConstraintSolution(out.M, solution.u, cert,
                                  {**(solution.info or {}), **out.info})


#: The O(1) units of the iterations (a stage ``normalize``).
NORMALIZE = Normalize()


def _primal(data, solution):
    """The solution's ``A``, or (none found feasible) the primal map of its
    multipliers on ``data``."""
    if solution.A is None:
        return data.primal_of(data.Y_of(solution.u))[0]
    return solution.A


@dataclass
class ConstraintDualSolver(IterativeSolver):
    """Working-set projected Newton-CG on the dual (the estimators' ``"fast"``).

    One ``update`` is one working-set round: an inner solve on ``W`` and a
    certified pass over all pairs (see the module docstring).

    Attributes
    ----------
    maxiter : int
        Maximum number of working-set rounds.  A run whose certified gap
        has not improved by 1% for five rounds (with an unchanged working
        set) has reached the round-off floor of its data and stops early,
        reported like a run that reached ``maxiter`` (status
        ``max_iter_reached``, a ``ConvergenceWarning`` quoting the gap;
        ``info["n_rounds"]`` has the rounds actually run).
    tol : float
        Target certified relative duality gap (default ``1e-7``, ten times
        below the ``1e-6`` the collection requires).
    max_inner : int
        Inner iterations (Newton steps and FISTA steps) per round.
    full_below : int
        Problems with at most this many pairs are solved without screening.
    cg_maxiter : int
        Conjugate-gradient iterations per Newton step.
    fista_block : int
        FISTA steps taken when a Newton step fails.
    max_time : float, optional
        Wall-clock budget in seconds.
    """

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "max_inner": [Interval(Integral, 1, None, closed="left")],
        "full_below": [Interval(Integral, 0, None, closed="left")],
        "cg_maxiter": [Interval(Integral, 1, None, closed="left")],
        "fista_block": [Interval(Integral, 1, None, closed="left")],
    }

    maxiter: int = 200
    tol: float = 1e-7
    max_inner: int = 5000
    full_below: int = 2000
    cg_maxiter: int = 200
    fista_block: int = 20

    name = "fast"

    # -- setup -----------------------------------------------------------------

    def blas_flops(self, data):
        # the Newton-CG products are Gram-type (d x pairs) @ (pairs x d)
        # products over the working set, at most all pairs
        return 2.0 * data.n_pairs * data.n_features ** 2

    def check_data(self, data):
        """Refuse ``lam = 0`` (naming ``lam``) and infeasible data.

        The iterations run on :meth:`ConstraintData.normalized`'s problem
        (pair lengths O(1), ``lam / s^4``: the reduction :data:`NORMALIZE`)
        and the result is reported in ``X``'s units
        (:meth:`ConstraintData.restore_units`); the multipliers, the
        objective and the certificate are the same in both.  Data at a scale
        where the problem or its metric is not representable raises a
        ``ValueError`` naming ``X`` (from the reduction).
        """
        if not data.lam > 0:
            raise ValueError(
                f"lam: the fast solver needs lam > 0 (its dual is smooth with "
                f"Lipschitz constant ||K||^2 / lam), got lam={data.lam}; use the "
                f"exact solver for lam = 0."
            )
        data.check_feasible()

    def reductions(self, data):
        """:data:`NORMALIZE`: the iterations run where the pair lengths are O(1)."""
        return [NORMALIZE]

    def solution(self, M, state):
        """The last primal point with the best multipliers."""
        return ConstraintSolution(M, state.best_u)

    def init_state(self, data, init=None):
        # data.lam may have underflowed to 0 in normalised units (a lam
        # below 2^-1074 times s^4): the stages then stop at _CONT_FLOOR and
        # the certificate is the lam = 0 one (ConstraintData.dual_bound)
        data.check_feasible()
        free = data.upper > data.lower
        if init is not None and init.info.get("u") is not None:
            u = data.clip(np.asarray(init.info["u"], dtype=float))
        else:
            u = data.clip(np.zeros(data.n_pairs))
        if data.n_pairs <= self.full_below:
            W = np.flatnonzero(free)
        elif init is not None and init.info.get("u") is not None:
            W = np.flatnonzero(free & (u > 0) & (u < data.upper))
        else:
            W = self._initial_set(data, free)
        lam = data.lam
        if init is None and lam < _CONT_BELOW:
            lam = _CONT_START
        state = _State(0, np.inf, u, W, np.inf, -np.inf, u, 0, 0, 0, 0, 0,
                       lam, np.inf, 1)
        return None, state

    def _initial_set(self, data, free):
        """The cannot-links hardest to separate under an isotropic metric.

        Under ``A = t I`` the binding cannot-link is the shortest; the
        ``n0`` shortest start the working set (must-link hinges start fixed
        at ``beta = 0`` and join when contradicted).
        """
        d = data.n_features
        dim = d if data.diagonal else d * (d + 1) // 2
        n0 = min(len(data.cannot), 2 * dim + 10)
        sq = data.op.sqdist(G=np.eye(d))[data.cannot]
        return np.sort(data.cannot[np.argsort(sq, kind="stable")[:n0]])

    # -- rounds ----------------------------------------------------------------

    def update(self, M, state, data):
        # the problem of the current continuation stage (data itself at the
        # last stage); constraints do not depend on lam, so a feasible point
        # of one stage is feasible for every other
        stage = data if state.lam == data.lam else data.with_lam(state.lam)
        W = state.W
        view = DualView(stage, W, state.u)
        best = _Best(state.best_f, M, state.best_g, state.best_u)
        tol = self.tol

        certified = {}
        # the gap below which a point is polished: lowered after a polish
        # that did not certify, back at _POLISH_BELOW after a stalled round
        polish = {"below": state.polish_below if state.n_stall == 0 else _POLISH_BELOW}

        def certify(point):
            """Certify ``point`` on all pairs (one O(P d^2) pass) and polish."""
            if certified.get("point") is point:
                # the inner solve's last check was on this very point (its
                # best one): the pass and the polish would repeat (0.28 s of
                # 2.2 s at 4 000 pairs in d = 100)
                return certified["out"]
            u = state.u.copy()
            u[W] = point.u
            dist = stage.Psi @ point.A if stage.diagonal else stage.op.sqdist(G=point.G)
            f, A = _repaired(stage, point.A, dist)
            best.dual(-point.h, u)
            best.primal(f, A)
            gap_point = _rel_gap(f, -point.h)
            if (best.error() > tol and gap_point <= polish["below"]
                    and not self.deadline.expired()):
                # the dual value converges faster than the primal map (a
                # degenerate optimum loses a square root): polish on the face
                # (only near the optimum, where the face read off A(u) can
                # be the optimal one: see _POLISH_BELOW); its thresholds stop
                # at a primal candidate that certifies (within half of tol)
                # with the best dual value so far
                target = best.g + 0.5 * tol * max(1.0, abs(best.g))
                f2, A2, g2, u2 = _polish(stage, u, point, dist, self.deadline, target)
                best.primal(f2, A2)
                best.dual(g2, u2)
                if best.error() > tol:
                    # the face read off A(u) was not the optimal one: the
                    # next polish waits for a point this much nearer the
                    # optimum (see _POLISH_BACKOFF)
                    polish["below"] = min(polish["below"], _POLISH_BACKOFF * gap_point)
            certified.update(point=point, out=(u, dist))
            return u, dist

        # inexact inner solves while W may still be wrong: a hundredfold
        # reduction of the last certified gap, down to tol / 10
        inner_tol = min(_INNER_RTOL, max(0.1 * tol, _INNER_RTOL * state.stage_error))
        point, counts = self._inner(view, state.u[W], inner_tol, self.max_inner,
                                    lambda p: certify(p) and best.error() <= tol,
                                    hold=state.fresh)
        u, dist = certify(point)
        err = best.error()
        W = self._grow(stage, W, u, dist)
        # rounds without a 1% better certificate and without a new pair
        stall = state.n_stall + 1 if (len(W) == len(state.W)
                                      and err > 0.99 * state.stage_error) else 0
        iter_num = state.iter_num + 1
        lam, n_stages = state.lam, state.n_stages
        best_f, best_g, best_u = best.f, best.g, best.u
        error = err
        if stage is not data:
            # the certificate of the declared problem from this stage's best
            # pair (the repaired dual bound makes it tight once lam is small)
            f_t, g_t = _target_pair(data, best.A, best.u)
            error = _rel_gap(f_t, g_t)
            if err <= tol or stall >= _STALL:
                # next stage, warm-started; its best pair is re-evaluated
                lam = state.lam / _CONT_FACTOR
                if lam < 0.99 * _CONT_FLOOR:
                    # below the floor only the declared lam itself is tried
                    # (lam = 0 after an underflow: stay at the floor, where
                    # the lam = 0 bound of dual_bound certifies)
                    lam = data.lam if data.lam > 0 else state.lam
                lam = max(lam, data.lam)
                if lam != state.lam:
                    nxt = data if lam == data.lam else data.with_lam(lam)
                    best_f, best_g = _target_pair(nxt, best.A, best.u)
                    err, stall, n_stages = _rel_gap(best_f, best_g), 0, n_stages + 1
                    if nxt is data:
                        error = err
        if stall >= _STALL and error > self.tol:
            # nothing left to gain (round-off): end the run now; it reports
            # max_iter_reached and warns with the gap reached
            iter_num = max(iter_num, self.maxiter)
        state = state._replace(
            iter_num=iter_num, error=error, stage_error=err, u=u, W=W, best_f=best_f,
            n_stall=stall, best_g=best_g, best_u=best_u, n_rounds=state.n_rounds + 1,
            n_newton=state.n_newton + counts[0], n_fista=state.n_fista + counts[1],
            n_hessvec=state.n_hessvec + counts[2], lam=lam, n_stages=n_stages,
            fresh=lam != state.lam, polish_below=polish["below"])
        return best.A, state

    def _grow(self, data, W, u, dist):
        """Add contradicted pairs to ``W`` (the most violated first).

        Cannot-links violated by ``A(u)`` join, and must-links whose fixed
        ``beta`` contradicts the hinge at ``A(u)`` *or* at its feasible
        rescaling ``A'`` (the point that is certified: when ``A(u)`` is far
        from feasible, ``A'`` can activate hinges ``A(u)`` leaves inactive).
        """
        inW = np.zeros(data.n_pairs, bool)
        inW[W] = True
        viol = np.zeros(data.n_pairs)
        c, m = data.cannot, data.must
        viol[c] = 1.0 - dist[c]  # > 0: a violated cannot-link
        if not data.hard:
            dmin = float(np.min(dist[c]))
            scale = max(1.0, 1.0 / dmin) if dmin > 0 else 1.0
            dm = dist[m] - 1.0
            dm_s = scale * dist[m] - 1.0
            # beta fixed at 1 while the hinge is inactive, or at 0 while active
            viol[m] = np.where(u[m] >= 1.0, -dm, np.maximum(dm, dm_s))
        cand = np.flatnonzero(~inW & (viol > 0) & (data.upper > data.lower))
        if not len(cand):
            return W
        d = data.n_features
        cap = (d if data.diagonal else d * (d + 1) // 2) + 10
        # violated cannot-links first (they decide feasibility, hence the
        # rescaling), then contradicted hinges; most violated first in each
        order = np.lexsort((-viol[cand], data.labels[cand] == 1))
        cand = cand[order[:cap]]
        return np.sort(np.concatenate([W, cand]))

    # -- inner solve on a view ---------------------------------------------------

    def _inner(self, view, u, tol, budget, done, hold=False):
        """Minimise the view's dual; return ``(point, (newton, fista, hv))``.

        ``done(point)`` is called every ``_CHECK_EVERY`` Newton steps: it
        certifies the point on the whole problem and ends the solve when the
        global certificate already meets ``tol``.  ``hold`` (the first
        round of a continuation stage): the first ``_STAGE_HOLD`` Newton
        steps keep the multipliers at a bound there (see
        :meth:`_newton_step`).
        """
        n_newton = n_fista = n_hv = 0
        damping = _Damping()
        point = view.evaluate(u)
        if not np.any(view.free):
            return point, (0, 0, 0)
        D = 1.0 / view.bdiag

        @functools.cache
        def L():
            # the Lipschitz bound (a power iteration over the view), once and
            # only for the steps that use it: FISTA and a Newton step without
            # curvature; a round without them skips it (0.04 of 0.39 s at
            # 4 000 pairs in d = 50)
            bound = lipschitz_bound(view, D, deadline=self.deadline)[0]
            return max(bound, 1e-300) / view.lam

        best = point
        stalled = 0
        # every inner step checks the clock (the base class only checks
        # between rounds): max_time holds within one Newton step's cost
        while n_newton + n_fista < budget and not self.deadline.expired():
            f, g = view.restricted_gap(point)
            if np.isfinite(f) and (f - g) <= tol * max(1.0, abs(f)):
                break
            new, ok, hv = self._newton_step(view, point, D, L,
                                            hold and n_newton < _STAGE_HOLD, damping)
            n_hv += hv
            n_newton += 1
            if not ok:
                new = self._fista(view, point.u, D, L(), self.fista_block)
                n_fista += self.fista_block
            point = new
            # no decrease beyond round-off: the dual is solved as far as
            # floating point allows (the outer round certifies what it got)
            if best.h - point.h <= 1e-15 * max(1.0, abs(best.h)):
                stalled += 1
                if stalled >= _STALL:
                    break
            else:
                stalled = 0
            if point.h < best.h:
                best = point
            if n_newton % _CHECK_EVERY == 0 and done(best):
                break
        return best, (n_newton, n_fista, n_hv)

    def _newton_step(self, view, point, D, L, hold=False, damping=None):
        """One projected Newton-CG step; ``(point, accepted, n_hessvec)``.

        ``L``: the Lipschitz bound of :meth:`_fista`'s steps, or a callable
        that returns it (called only when a step needs it).  ``damping`` (a
        :class:`_Damping`, kept over an inner solve) scales the
        Levenberg-Marquardt damping and learns from the step length the arc
        search accepts.

        ``hold``: a step on the face of ``u``, the multipliers at a bound
        kept there and the others free (the first steps of a continuation
        stage).  The stages' optimal faces are close, but the new stage's
        gradient at the last stage's multipliers is not a guide to it: the
        primal map grew with ``1 / lam``, so every must-link hinge with
        ``d > lam_new / lam_old`` looks active (the free set grew from 182
        to 456 multipliers at ``d = 25``) and the projected step switched
        those hinges on, cut the rank of ``Y``'s positive part (14 to 4) and
        left 60-70 steps of length ``1e-3``-``1e-4`` per stage to restore
        it.  On the old face Newton's method converges in 2-3 full steps.
        """
        u, g = point.u, point.grad
        free = view.free
        lo, hi = view.lower, view.upper
        scaled = view.lam * D  # ~ 1 / H_pp
        r = u - np.clip(u - scaled * g, lo, hi)
        res = float(np.max(np.abs(r[free])))
        eps = min(1e-3 * max(1.0, float(np.max(u[free]))), res)
        bind = free & (((u <= lo + eps) & (g > 0)) | ((u >= hi - eps) & (g < 0)))
        inside = free & (u > lo) & (u < hi)
        hold = hold and bool(np.any(inside))
        if hold:
            bind = free & ~inside
        F = free & ~bind
        d = np.zeros_like(u)
        if not hold:
            F = _newton_free_set(view, F, inside, r)
            bind = free & ~F  # the held-back multipliers: a scaled gradient step
            d[bind] = -scaled[bind] * g[bind]
        n_hv = 0
        if np.any(F):
            # Levenberg-Marquardt damping (relative to the diagonal scale)
            mu = min(_MU, max(1e-10, _MU * res))
            if damping is not None:
                mu *= damping.factor
            x = None
            if _direct_pays(view, point, F):
                x = self._direct(view, point, F, -g[F], mu)
            if x is None:
                x, n_hv = self._pcg(view, point, F, -g[F], mu, D, L, res)
            d[F] = x
        new, ok, alpha = self._arc_search(view, point, d, F, bind)
        if damping is not None:
            damping.update(alpha if ok else 0.0)
        return new, ok, n_hv

    def _arc_search(self, view, point, d, F, bind):
        """Minimise ``h`` along the projected arc ``clip(u + alpha d)``.

        Take ``alpha = 1`` when ``h`` still decreases there; otherwise
        find a zero of the arc's directional derivative in ``(0, 1)`` (a
        Newton step on a piecewise quadratic overshoots its kinks, and
        Armijo backtracking alone would accept the overshoot) by a
        safeguarded regula falsi on the bracket (:func:`_bracket_point`),
        stopping at the first point with an Armijo decrease whose slope is
        at most :data:`~cvxmetric._settings.CONSTRAINTDML_ARC_SLOPE` times
        the slope at 0 (the strong Wolfe curvature condition: bisecting the
        bracket to 1e-3 of its length took 7-18 arc points per Newton step
        on the bench's problems, this 2-4, with as many Newton steps to a
        few), and backtrack when the search finds no decrease (clipping can
        make the arc non-convex).  A point is accepted only with an Armijo
        decrease.  Returns ``(point, accepted, alpha)``, ``alpha`` the step
        length taken (0 when none is accepted).
        """
        u, g, h0 = point.u, point.grad, point.h
        lo, hi = view.lower, view.upper
        arc = _Arc(view, point, d)
        at = arc.at

        def decrease(p):
            pred = float(-g[F] @ (p.u - u)[F]) + float(g[bind] @ (u - p.u)[bind])
            return pred > 0 and h0 - p.h >= 1e-4 * pred

        p1, slope1 = at(1.0)
        ok1 = decrease(p1)
        if slope1 <= 0 and ok1:
            return view.evaluate(p1.u), True, 1.0
        # the slope at 0+ (the pairs that move at once): < 0 for a descent
        # direction; a bisection when it is not
        moving = arc.t > 0
        slope0 = min(float(g[moving] @ d[moving]), 0.0)
        a_lo, a_hi, best = 0.0, 1.0, p1 if ok1 else None
        alpha = 1.0
        s_lo, s_hi = slope0, slope1
        side = 0
        for _ in range(30):
            if self.deadline.expired():
                break
            mid = _bracket_point(a_lo, a_hi, s_lo, s_hi)
            p, slope = at(mid)
            if decrease(p) and (best is None or p.h < best.h):
                best, alpha = p, mid
            if slope > 0:
                a_hi, s_hi = mid, slope
                if side == 1:
                    s_lo *= 0.5
                side = 1
            else:
                a_lo, s_lo = mid, slope
                if side == -1:
                    s_hi *= 0.5
                side = -1
            if best is not None and (a_hi - a_lo < 1e-3 * a_hi
                                     or (best is p and abs(slope) <= _ARC_SLOPE * -slope0)):
                break
        if best is None:
            # the projected arc need not be convex (clipping bends it):
            # Armijo backtracking from alpha = 1 as the fallback
            if self.deadline.expired():
                return point, False, 0.0
            search = backtracking(lambda a: view.evaluate(np.clip(u + a * d, lo, hi)),
                                  lambda a, p: decrease(p), step=0.5,
                                  max_backtracks=59, deadline=self.deadline)
            if not search.accepted:
                return point, False, 0.0
            return search.value, True, search.step
        return view.evaluate(best.u), True, alpha

    def _direct(self, view, point, F, rhs, mu):
        """Solve ``(H_FF + mu diag(B)_F / lam) x = rhs`` by Cholesky on the
        explicit :meth:`DualView.hess_matrix`; ``None`` if it fails.

        Near a degenerate optimum (the dual almost a linear program at a
        small ``lam``) the damped Hessian is too ill-conditioned for the
        conjugate gradients to converge: they ran to ``cg_maxiter = 200``
        on every one of 270 Newton steps on a 1 078-pair working set in
        ``d = 25`` (0.06 s a step, 18 of 41 s in Hessian products), where
        the explicit ``H_FF`` (200-450 free pairs) and its Cholesky factor
        take a few milliseconds and give the exact direction.
        """
        H = view.hess_matrix(point, F)
        H[np.diag_indices_from(H)] += mu * view.bdiag[F] / view.lam
        try:
            x = cho_solve(cho_factor(H, lower=True, check_finite=False), rhs,
                          check_finite=False)
        except (np.linalg.LinAlgError, ValueError):  # pragma: no cover - round-off
            return None
        return x if np.all(np.isfinite(x)) else None

    def _pcg(self, view, point, F, rhs, mu, D, L, res):
        """Solve ``(H_FF + mu diag(B)_F / lam) x = rhs`` by preconditioned CG."""
        diag = view.bdiag[F] / view.lam
        prec = 1.0 / ((1.0 + mu) * diag)
        hess = view.hess_operator(point, F)

        def apply(x):
            return hess(x) + mu * diag * x

        x = np.zeros_like(rhs)
        r = rhs.copy()
        z = prec * r
        p = z.copy()
        rz = float(r @ z)
        nb = float(np.linalg.norm(rhs))
        # inexact Newton: a loose solve far from the optimum, tight near it
        eta = min(0.1, max(1e-8, res))
        n = 0
        for n in range(1, min(self.cg_maxiter, 2 * len(rhs) + 10) + 1):
            if self.deadline.expired():
                break
            Ap = apply(p)
            pAp = float(p @ Ap)
            if not pAp > 0:
                break
            a = rz / pAp
            x += a * p
            r -= a * Ap
            if np.linalg.norm(r) <= eta * nb:
                break
            z = prec * r
            rz_new = float(r @ z)
            if not rz_new > 0:  # exact solve (or round-off): nothing left
                break
            p = z + (rz_new / rz) * p
            rz = rz_new
        if not np.any(x):  # no curvature at all: a safe gradient step
            x = rhs * D[F] / (L() if callable(L) else L)
        return x, n

    def _fista(self, view, u, D, L, n_steps):
        """``n_steps`` of FISTA with adaptive restarts from ``u``."""
        step = D / L
        lo, hi = view.lower, view.upper
        y, t = u.copy(), 1.0
        for _ in range(n_steps):
            if self.deadline.expired():
                break
            u_new = np.clip(y - step * view.evaluate(y).grad, lo, hi)
            # restart when the momentum points uphill (gradient-mapping test)
            if float((y - u_new) @ (u_new - u)) > 0:
                t_new, y = 1.0, u_new
            else:
                t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
                y = u_new + ((t - 1.0) / t_new) * (u_new - u)
            u, t = u_new, t_new
        return view.evaluate(u)

    def finalize(self, M, state, data):
        """Certify :meth:`solution` (after the reductions: a
        :class:`ConstraintSolution`; called on an iterate, that iterate with
        the best multipliers) on ``data``."""
        sol = M if isinstance(M, ConstraintSolution) else self.solution(M, state)
        M = _primal(data, sol)
        cert = sol.certificate
        if cert is None:
            cert = data.certificate(M, sol.u, solver=_CERT_NAME)
        u = sol.u
        info = {"u": u, "theta": u[data.cannot].copy(), "n_rounds": state.n_rounds,
                "n_newton": state.n_newton, "n_fista": state.n_fista,
                "n_hessvec": state.n_hessvec, "working_set": len(state.W)}
        if not data.hard:
            info["beta"] = u[data.must].copy()
        if data.diagonal:
            info["a"] = np.asarray(M, dtype=float).copy()
        return data.to_matrix(M), cert, {**info, **(sol.info or {})}
