"""Qwise, fast: hand-written solvers of the problem in :mod:`.exact`.

Both solve Eq. 8 / Eq. 11 as declared in :class:`~cvxmetric.qwise.QwiseModel`
(canonical form and dual in :mod:`._problem`); neither builds a (d, d) matrix
per constraint.

:class:`ProjectedSubgradient`
    Algorithm 1 of the paper: ``M <- Pi_PSD(M - eta_t grad)`` with the
    subgradient of Eq. 15, the incremental update of ``h(N+)`` (Sec. 4.1) and
    the active-set strategy of Sec. 4.3 (a full re-check every
    ``recheck_every`` iterations, only the accumulated active list in
    between, and a final full check before stopping).  Stops on the paper's
    rule ``||M_t - M_{t-1}||_F^2 <= eps``.  It is faithful, and slow: a
    subgradient method converges like ``O(1/sqrt(t))``.

:class:`QwiseDualSolver` (the default fast solver)
    Restarted primal-dual hybrid gradient (Chambolle-Pock with the PDLP
    adaptive steps, restarts and primal-weight updates) on the saddle point
    ``min_{M PSD} max_{0 <= alpha <= c} Omega(M) + delta^T alpha -
    <S(alpha), M>``, with diagonal dual preconditioning and a ray warm start.
    It stops on the relative duality gap of the *original* problem, the same
    certificate the exact path uses, so "converged" means "certified to
    ``tol``".  Once the iterates have located the optimal face (partition
    of the hinges, rank of ``M``) an endgame solves that face's optimality
    conditions by Newton's method; its point is kept only when its
    certified gap is smaller.  Above ``working_set`` constraints it runs on a working set:
    at the optimum only a few percent of the hinges are not strictly
    inactive (measured: 1.6 % at ``N = 10^5``, 1.0 % at ``N = 10^6``), so
    the iterations run on the constraints that carry a multiplier, are
    violated or are near their margin; a full pass over all constraints
    between rounds moves the set with the current ``M`` (and, after
    ``follow_rounds`` rounds at the last tolerance, only adds to it), and
    the stop is the full problem's certified gap
    (constraints outside the set carry ``alpha = 0``, which is optimal for
    them exactly when they are inactive).
"""

import dataclasses
import logging
import math
import time
import warnings
from dataclasses import dataclass
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import scipy.linalg
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from .._backend import check_host_input
from .._face import polish_on_faces
from .._linalg import PairOperator, eigh_psd, project_psd
from .._reductions import Reduction, apply_reductions, invert_reductions
from .._settings import (
    _POLISH_MAX_UNKNOWNS,
    _SINGLE_TOL,
    QWISE_FACE_MAX_PRODUCTS,
    QWISE_FACE_MAX_UNKNOWNS,
    QWISE_FACE_REDUCED_FROM,
    QWISE_FACE_SLOW_CHECKS,
    QWISE_HOLD,
    QWISE_HOLD_BELOW,
    QWISE_KEEP_TOL_ROUNDS,
    QWISE_LOCATE_TOL,
    QWISE_RELEASE,
)
from .._settings import (
    QWISE_FACE_LADDER as FACE_LADDER,
)
from .._solver import Deadline, IterativeSolver, blas_threads, stop_message
from ..result import SolverResult, Status
from ._problem import QwiseData
from ._xp import norm, zeros_like

logger = logging.getLogger("cvxmetric")

__all__ = ["ProjectedSubgradient", "QwiseDualSolver", "warm_start"]


# ---------------------------------------------------------------------------
# Default fast solver: restarted primal-dual hybrid gradient
# ---------------------------------------------------------------------------


class PolishLog(NamedTuple):
    """The endgame's record within one run (see :meth:`QwiseDualSolver.update`)."""

    key: tuple = None  # the face last tried (see _polish)
    attempts: int = 0  # endgame solves so far
    seconds: float = 0.0  # time spent in them
    wait: int = 0  # gap checks to wait before the next attempt
    gaps: tuple = ()  # the run's best gap at its last gap checks (a few)


class PDState(NamedTuple):
    iter_num: int
    error: float  # relative duality gap of the original problem
    alpha: np.ndarray  # (n_constraints,) hinge multipliers in [0, c]
    aM: np.ndarray  # (n_constraints,) a(M) at the current iterate
    S: np.ndarray  # (d, d) S(alpha), updated with the changed multipliers
    sums: tuple  # running sums (M, alpha, a(M), S, count) since the restart
    omega: float  # primal weight: tau = eta / omega, sigma = eta * omega
    eta: float  # current step (adaptive)
    restart_error: float
    n_restart_iter: int
    restart: tuple  # (M, alpha) at the last restart
    best: tuple  # (M, alpha) with the smallest gap so far
    dscale: np.ndarray  # (n_constraints,) diagonal dual preconditioner
    row_scale: float  # the mean row norm dscale is relative to
    polish: PolishLog  # the endgame's attempts so far
    deadline: Deadline  # this run's budget (inner loops check it)
    held: "_Held"  # the hinges held at c between gap checks
    hold_below: float = None  # hinges are held at gaps up to this (None: any)


@dataclass(eq=False)
class _Held:
    """Hinges held at their upper bound between gap checks (one run's).

    A PDHG step moves ``alpha_q`` by a multiple of the hinge argument
    ``delta_q - a_q``; a multiplier at ``c_q`` whose hinge is violated
    stays there.  On the working sets of large problems half the
    constraints are such (measured at ``N = 10^6``: 6 082 of the final
    12 472 violated by more than 0.3), and reading their distances in every
    iteration is most of an iteration's cost.  So a hinge at ``c_q``
    violated by more than ``QWISE_HOLD`` (of the margin scale) is *held*:
    the steps reuse its last ``a_q`` (its multiplier stays ``c_q``) and
    read only the live pairs.  At each gap check the held values are
    recomputed exactly -- at the current point, and for the running sums
    from the sum of the iterates, ``a`` being linear -- so every gap, the
    restarts and the endgame see the exact ``a(M)``; a held hinge within
    ``QWISE_RELEASE`` of its margin is then released and any qualifying
    one held.  Between checks the iterations are PDHG on the problem with
    the held multipliers fixed at ``c``, whose hinge there is linear: its
    optimum is the problem's while those hinges stay violated, which the
    checks keep true.  From the ray start (no ``init``) nothing is held
    while the run's certified gap is above ``QWISE_HOLD_BELOW``: there
    ``M`` moves too far within one check for a held hinge to stay
    violated.  A warm start (a working-set round, a caller's ``init``)
    holds from its first block.  Nothing certified depends on it: the
    gaps are the problem's own.
    """

    mask: np.ndarray  # (n_constraints,) bool: held (None: none, on a device)
    live: object = None  # QwiseData over the live constraints (None: all live)
    held: object = None  # QwiseData over the held ones
    live_idx: np.ndarray = None
    held_idx: np.ndarray = None

    @classmethod
    def build(cls, data, mask):
        """Hold the constraints ``mask`` of ``data``."""
        if not mask.any():
            return cls(mask=mask)
        live_idx, held_idx = np.flatnonzero(~mask), np.flatnonzero(mask)
        dtype = data.op.dtype
        return cls(mask=mask, live=data.restrict(live_idx, dtype=dtype),
                   held=data.restrict(held_idx, dtype=dtype),
                   live_idx=live_idx, held_idx=held_idx)

    @classmethod
    def choose(cls, data, alpha, aM, previous=None, gap=0.0, below=QWISE_HOLD_BELOW):
        """The held set at a point with multipliers ``alpha`` and ``a(M) =
        aM``: violated by more than the hold and at ``c``, or held already
        and not yet within the release of the margin; none while the
        certified gap ``gap`` is above ``below`` (``None``: no such limit).
        On NumPy data only: on a device every hinge stays live (a step's
        pass there is one product over all pairs)."""
        if data.xp is not np:
            return previous or cls(mask=None)
        if below is not None and gap > below:
            return cls(mask=np.zeros(data.n_constraints, dtype=bool))
        scale = max(1.0, float(np.max(np.abs(data.delta_q), initial=0.0)))
        arg = data.delta_q - aM
        mask = (alpha >= data.c_q) & (arg > QWISE_HOLD * scale)
        if previous is not None:
            mask |= previous.mask & (alpha >= data.c_q) & (arg > QWISE_RELEASE * scale)
            if np.array_equal(mask, previous.mask):
                return previous
        return cls.build(data, mask)

    def a_step(self, data, G, aM):
        """``a(G G^T)`` for a step: exact on the live hinges, ``aM``'s
        values on the held ones."""
        if self.live is None:
            return data.a_of(data.op.sqdist(G=G))
        out = aM.copy()
        out[self.live_idx] = self.live.a_of(self.live.op.sqdist(G=G))
        return out

    def exact(self, M, aM, sums):
        """``aM`` and the running sums with the held entries recomputed at
        ``M`` and at the sum of the iterates (``sums[0]``)."""
        if self.live is None:
            return aM, sums
        aM = aM.copy()
        aM[self.held_idx] = self.held.a_of(self.held.op.sqdist(M))
        aM_sum = sums[2].copy()
        if sums[-1]:
            aM_sum[self.held_idx] = self.held.a_of(self.held.op.sqdist(sums[0]))
        return aM, (*sums[:2], aM_sum, *sums[3:])


def _ray_start(data, deadline=None):
    """Warm start: the best point on the ray ``t G``, ``G = Pi_PSD(-grad f(0))``.

    ``f(t G)`` is a convex function of one variable (linear or quadratic plus
    hinges), minimised here by golden-section search on a bracket; the
    multipliers ``c_q 1[violated]`` at that point start the dual.  Each
    search step is a pass over the constraints: the search stops early when
    ``deadline`` expires (the point is then a worse start, never wrong).
    """
    d = data.n_features
    xp = data.xp  # the data's namespace (NumPy, or a device's)
    alpha0 = xp.where(data.delta_q > 0, data.c_q, 0.0)
    G, F = data.project_psd(data.S_of(alpha0) - data.R, return_factor=True)
    if not xp.any(G):
        return data.dev(np.zeros((d, d))), data.dev(np.zeros(data.n_constraints))
    # from the factor (G = F F^T, rank of the positive part): cheaper than
    # the quadratic form of the full matrix
    a = data.a_of(data.op.sqdist(G=F))  # (n_constraints,) a_q(G)
    lin = float(xp.sum(data.R * G))
    quad = 0.5 * data.mu * float(xp.sum(G * G))

    def f(t):
        return lin * t + quad * t * t + float(data.c_q @ xp.maximum(data.delta_q - t * a, 0.0))

    pos = a > 0
    hi = float(xp.max(data.delta_q[pos] / a[pos])) if xp.any(pos) else 1.0
    hi = max(hi, 1e-300)
    lo = 0.0
    g = (5 ** 0.5 - 1) / 2  # a Python float: t stays one for any namespace
    x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1, f2 = f(x1), f(x2)
    for _ in range(80):
        if deadline is not None and deadline.expired():
            break
        if f1 <= f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - g * (hi - lo)
            f1 = f(x1)
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + g * (hi - lo)
            f2 = f(x2)
    t = 0.5 * (lo + hi)
    M0 = t * G
    alpha = xp.where(data.delta_q - t * a > 0, data.c_q, 0.0)
    return M0, alpha


def _row_norms(data):
    """``||A_q||_F = ||phi_f phi_f^T - phi_n phi_n^T||_F`` per constraint."""
    xp, nf, nn = data.xp, data.far_q, data.near_q
    sq = data.op.sqdist(G=np.eye(data.n_features))  # ||phi_p||^2
    Pf, Pn = data.op._diffs(nf), data.op._diffs(nn)
    cross = np.einsum("pd,pd->p", Pf, Pn) if xp is np else xp.sum(Pf * Pn, axis=1)
    val = sq[nf] ** 2 + sq[nn] ** 2 - 2 * cross ** 2
    return xp.sqrt(xp.maximum(val, 0.0))


def _primal_weight(data):
    """The default primal weight: the scale of the multipliers, ``max c_q``.

    The iterations run on the scale-free twin, whose data, margins and
    regulariser are of order one, so ``M`` is of order one there; the
    multipliers live in the box ``[0, c_q]``, and the scale-free weight
    ``C_n = C s^2 / rho`` (``C s^4 / t``: see
    :class:`~cvxmetric.qwise.Scaling`) is the one
    scale the twin cannot remove.  ``tau = eta / omega`` and ``sigma = eta
    omega`` with ``omega = C_n`` is the iteration of weight 1 on the
    multipliers ``alpha / C_n`` of the unit box, so the run does not depend
    on ``C_n`` through its start.  (A weight of 1 whatever ``C_n``: with
    ``X`` multiplied by 10^3 at fixed margins, ``C_n = 2^24``, the primal
    steps were ``2^24`` times too long, ``M`` overshot by 10^11 and the
    restarts first drove the weight the wrong way: 133 632 iterations on
    300 constraints instead of 3 328.  The ratio ``||alpha|| / ||M||`` of
    the ray start, the weight before 1, is 10-300 on standardised real data
    and cost up to twice the iterations: tiny primal steps until the
    restarts had brought it down.)  1 when no weight is positive.
    """
    if not data.n_constraints:
        return 1.0
    top = float(data.xp.max(data.c_q))
    return top if top > 0 else 1.0


def _op_norm(data, weights, n_iter=10, seed=0):
    """Power iteration for ``||W^(1/2) A||``, ``A: M -> (<A_q, M>)_q``."""
    rng = np.random.default_rng(seed)
    d = data.n_features
    V = rng.standard_normal((d, d))
    V = data.dev(0.5 * (V + V.T))
    nrm = 1.0
    for _ in range(n_iter):
        size = norm(V)
        if size == 0:  # A vanishes on this direction (e.g. A = 0)
            return 0.0
        V = V / size
        V = data.S_of(weights * data.a_of(data.op.quadform(V)))
        nrm = np.sqrt(norm(V))
    return float(nrm)


def _gap(data, M, alpha, aM, S):
    """Certified relative gap at a PSD ``M`` with ``a(M) = aM`` and
    ``S(alpha) = S`` known: no pass over the pairs."""
    arg = data.delta_q - aM
    obj = data.objective(M, arg=arg)
    bound = data.best_dual_bound(alpha, M, obj, arg=arg, S=S)
    return data.relative_gap(obj, bound)


def _newton_face(data, G, alpha, W, act, *, steps=8, deadline=None):
    """Gauss-Newton on the optimality conditions of one face.

    Unknowns: the factor ``G`` (d, r) of ``M = G G^T`` and the multipliers
    ``alpha_W`` of the margin set; ``alpha = c`` on ``act``, 0 elsewhere.
    Equations (as many as unknowns):

        F1 = (R + mu G G^T - S(alpha)) G = 0      (the dual slack annihilates M)
        F2_q = <A_q, G G^T> - delta_q = 0         (q in W: on the margin)

    The Jacobian is singular along the rotations ``G -> G Q`` (the factor
    is not unique); the least-squares step is the minimum-norm one, which
    keeps the quadratic convergence of Newton's method at a nondegenerate
    face.  Returns ``(G, alpha)`` after the last step that reduced
    ``||F||`` (steps stop when ``deadline`` expires).
    """
    d, r = G.shape
    face = _FaceEquations.of(data, alpha, W, act)
    phf, phn, k, mu = face.phf, face.phn, face.idx.size, data.mu
    aW = face.alpha[face.idx]

    def residual(G, aW):
        L, F1, F2, Pf, Pn = face.residual(G, aW)
        return np.concatenate([F1.ravel(), F2]), L, Pf, Pn

    F, L, Pf, Pn = residual(G, aW)
    norm = np.linalg.norm(F)
    I_r = np.eye(r)
    for _ in range(steps):
        if deadline is not None and deadline.expired():
            break
        # vec(A_q G), row-major (d, r)
        AG = (phf[:, :, None] * Pf[:, None, :] - phn[:, :, None] * Pn[:, None, :]).reshape(k, d * r)
        J11 = np.kron(L, I_r)
        if mu > 0:
            GtG = G.T @ G
            J11 += mu * np.kron(np.eye(d), GtG)
            # d(G dG^T G): output (a, b), input (e, c) -> G[a, c] G[e, b]
            J11 += mu * np.einsum("ac,eb->abec", G, G).reshape(d * r, d * r)
        J = np.zeros((d * r + k, d * r + k))
        J[:d * r, :d * r] = J11
        J[:d * r, d * r:] = -AG.T
        J[d * r:, :d * r] = 2 * AG
        try:
            step = scipy.linalg.lstsq(J, -F, cond=1e-12, lapack_driver="gelsy")[0]
        except (np.linalg.LinAlgError, ValueError):
            break
        G_new = G + step[:d * r].reshape(d, r)
        aW_new = aW + step[d * r:]
        F_new, L_new, Pf_new, Pn_new = residual(G_new, aW_new)
        norm_new = np.linalg.norm(F_new)
        if not norm_new < norm:
            break
        G, aW, F, L, Pf, Pn, norm = G_new, aW_new, F_new, L_new, Pf_new, Pn_new, norm_new
        if norm <= face.converged:
            break
    return G, face.with_margin(aW)


class _FaceEquations(NamedTuple):
    """:func:`_newton_face`'s equations on one face, for both Newton steps:
    the margin set's hinges ``idx`` and their differences ``phf``, ``phn``
    (k, d), ``S_V = S(c on the active set)`` and the starting multipliers
    ``alpha`` (``c`` on the active set, the given ones clipped to ``[0,
    c]`` on the margin set, 0 elsewhere)."""

    data: object
    idx: np.ndarray
    phf: np.ndarray
    phn: np.ndarray
    S_V: np.ndarray
    alpha: np.ndarray

    @classmethod
    def of(cls, data, alpha, W, act):
        idx, c = np.flatnonzero(W), data.c_q
        return cls(data, idx, data.op._diffs(data.far_q[idx]),
                   data.op._diffs(data.near_q[idx]), data.S_of(np.where(act, c, 0.0)),
                   np.where(act, c, 0.0) + np.where(W, np.clip(alpha, 0.0, c), 0.0))

    @property
    def converged(self):
        """The residual norm at which the steps stop (round-off)."""
        return 1e-14 * max(1.0, float(np.max(np.abs(self.data.delta_q))))

    def residual(self, G, alpha_W):
        """``(L, F1, F2, Pf, Pn)`` at ``(G, alpha_W)``: the dual slack ``L =
        R + mu G G^T - S(alpha)``, ``F1 = L G``, the margins ``F2`` of the
        hinges ``idx`` and their differences times ``G`` (k, r)."""
        data, idx = self.data, self.idx
        S = self.S_V + (data.S_of(alpha_W, idx) if idx.size else 0.0)
        L = data.R + data.mu * (G @ G.T) - S
        Pf, Pn = self.phf @ G, self.phn @ G  # (k, r)
        F2 = (np.einsum("kr,kr->k", Pf, Pf) - np.einsum("kr,kr->k", Pn, Pn)
              - data.delta_q[idx])
        return L, L @ G, F2, Pf, Pn

    def with_margin(self, alpha_W):
        """The multipliers with ``alpha_W`` on the margin set."""
        alpha = self.alpha.copy()
        alpha[self.idx] = alpha_W
        return alpha


def _face_gram(g, h, f, n, lam, y, mu):
    """``K`` of :func:`_newton_face_reduced`: ``K_qp = sum_ij Phi_q[i, j]
    Phi_p[i, j] y_j / (lam_i + mu y_j)`` with ``Phi_q = g_q f_q^T - h_q
    n_q^T`` (rows of ``g, h``: (k, d - r); of ``f, n``: (k, r)).  With ``mu
    = 0`` the weight is the product ``(1 / lam_i) y_j``, and ``K`` the
    sum of four Hadamard products of (k, k) Gram matrices: ``k^2 d``
    products instead of ``k^2 (d - r) r``."""
    if mu == 0:
        gl, hl = g / lam, h / lam
        fy, ny = f * y, n * y
        # in place: at most three (k, k) arrays at a time
        K = gl @ g.T
        K *= fy @ f.T
        for sign, a, b, u, v in ((-1, gl, h, fy, n), (-1, hl, g, ny, f),
                                 (1, hl, h, ny, n)):
            T = a @ b.T
            T *= u @ v.T
            if sign > 0:
                K += T
            else:
                K -= T
        return K
    k = g.shape[0]
    Psi = (g[:, :, None] * f[:, None, :] - h[:, :, None] * n[:, None, :])
    Psi *= np.sqrt(y[None, :] / (lam[:, None] + mu * y[None, :]))[None]
    Psi = Psi.reshape(k, lam.size * y.size)  # (k, (d - r) r)
    return Psi @ Psi.T


def _newton_face_reduced(data, G, alpha, W, act, *, steps=4, deadline=None,
                         target=0.0):
    """:func:`_newton_face`'s equations, each step a reduced KKT system.

    The whole step has ``d r + |W|`` unknowns; this one ``r (r + 1) / 2 +
    |W|``.  With ``G = U diag(s)`` (``U`` an orthonormal basis of the range
    of ``M``, ``V`` of its complement) write the step ``dG = U X + V Z``.
    The ``V`` rows of the first equation, ``L_VV Z + mu Z diag(s)^2 - V^T
    S(d alpha) U diag(s) = -V^T F1`` (``L_VV = V^T L V`` positive definite
    on the face), give ``Z`` in closed form in the eigenbasis of ``L_VV``;
    the ``U`` rows, symmetrised, and the margins ``2 <A_q G, dG> = -F2_q``
    then read, in ``Xi = X diag(s)`` (symmetric: its antisymmetric part is
    a rotation of ``G``, which moves nothing) and ``d alpha``::

        [ K    B    ] [ d alpha ]   [ c - F2 / 2 ]
        [ B^T  -2 mu] [ svec Xi ] = [ svec H     ]

    ``B`` the margins' rows on the face (``svec(U^T A_q U)``), ``K`` the
    Gram matrix of their ``V``-``U`` blocks weighted by ``s_j^2 / (l_i + mu
    s_j^2)`` (``l`` the eigenvalues of ``L_VV``).  The blocks ``U^T L U``
    and ``U^T L V`` of ``L``, which vanish at the face's solution, are left
    out: a Newton step up to terms of the order of the residual, so it
    converges as fast (measured on a hard (100, 10^5) face, ``r = 48``,
    ``|W| = 2 529``: certified gap 1.7e-4, then 6.1e-8, then 2.0e-12).

    Returns ``(G, alpha)`` after the last step that reduced the residual
    (steps stop when ``deadline`` expires, and once the point's certified
    gap is at most ``target`` when it is positive).
    """
    face = _FaceEquations.of(data, alpha, W, act)
    phf, phn, mu = face.phf, face.phn, data.mu
    aW = face.alpha[face.idx]
    d, r = G.shape
    k = face.idx.size
    up, lo = np.triu_indices(r)
    sq2 = np.where(up == lo, 1.0, np.sqrt(2.0))  # svec: <A, B> = svec(A).svec(B)
    L, F1, F2, _, _ = face.residual(G, aW)
    norm = np.hypot(np.linalg.norm(F1), np.linalg.norm(F2))
    for _ in range(steps):
        if deadline is not None and deadline.expired():
            break
        Ufull, s, _ = np.linalg.svd(G)  # G = U diag(s) up to a rotation
        U, G, y = Ufull[:, :r], Ufull[:, :r] * s, s * s
        F1 = L @ G
        L_VV = Ufull[:, r:].T @ L @ Ufull[:, r:]
        lam, Q = np.linalg.eigh(0.5 * (L_VV + L_VV.T))
        # L_VV is positive definite at the face's solution; off it (a rank
        # read too low) its small eigenvalues are floored, and the
        # candidate is judged like any other
        lam = np.maximum(lam, 1e-12 * max(1.0, float(np.max(lam, initial=0.0))))
        VQ = Ufull[:, r:] @ Q  # (d, d - r)
        f, n = phf @ U, phn @ U  # (k, r)
        g, h = phf @ VQ, phn @ VQ  # (k, d - r)
        denom = lam[:, None] + mu * y[None, :]  # (d - r, r)
        B = (f[:, up] * f[:, lo] - n[:, up] * n[:, lo]) * sq2  # (k, r(r+1)/2)
        H = (U.T @ F1) / s[None, :]
        H = 0.5 * (H + H.T)
        E = (VQ.T @ F1) * s[None, :] / denom  # (d - r, r)
        rhs = np.concatenate([
            -0.5 * F2 + np.einsum("ki,ij,kj->k", g, E, f)
            - np.einsum("ki,ij,kj->k", h, E, n), H[up, lo] * sq2])
        m = B.shape[1]
        A = np.empty((k + m, k + m))
        A[:k, :k] = _face_gram(g, h, f, n, lam, y, mu)
        A[:k, k:] = B
        A[k:, :k] = B.T
        A[k:, k:] = -2.0 * mu * np.eye(m)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
                sol = scipy.linalg.solve(A, rhs, assume_a="sym", check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            break
        d_alpha = sol[:k]
        Xi = np.zeros((r, r))
        Xi[up, lo] = sol[k:] / sq2
        Xi[lo, up] = Xi[up, lo]
        # Z diag(s) in the eigenbasis of L_VV (see the docstring)
        P = g.T @ (d_alpha[:, None] * f) - h.T @ (d_alpha[:, None] * n)
        Zeta = (P * y[None, :]) / denom - E
        G_new = G + (U @ Xi + VQ @ Zeta) / s[None, :]
        aW_new = aW + d_alpha
        L_new, F1_new, F2_new, _, _ = face.residual(G_new, aW_new)
        norm_new = np.hypot(np.linalg.norm(F1_new), np.linalg.norm(F2_new))
        if not norm_new < norm:
            break
        slow = norm_new > 0.25 * norm
        G, aW, L, F2, norm = G_new, aW_new, L_new, F2_new, norm_new
        if slow or norm <= face.converged:
            # slow: no Newton convergence, so not this face's solution
            break
        # a step costs a dense factorisation; the certified gap of the
        # point (one pass over the problem's pairs, far cheaper) decides
        # whether another one is needed
        if target > 0 and _face_point(data, G, face.with_margin(aW))[-1] <= target:
            break
    return G, face.with_margin(aW)


def _slow(gaps, target):
    """Whether the best gaps ``gaps`` of the last checks (oldest first),
    continued at their geometric rate, reach ``target`` only after more
    than ``QWISE_FACE_SLOW_CHECKS`` further checks (False with fewer than
    four checks: no rate yet)."""
    if len(gaps) < 4 or gaps[-1] <= target:
        return False
    if not gaps[-1] < gaps[0]:
        return True  # no progress over the last checks
    per_check = math.log(gaps[0] / gaps[-1]) / (len(gaps) - 1)
    return math.log(gaps[-1] / target) / per_check > QWISE_FACE_SLOW_CHECKS


def _face_step(d, r, k):
    """The face solver for a face of rank ``r`` with ``k`` hinges on their
    margin in dimension ``d``: the whole Gauss-Newton step while small, the
    reduced one while its system is, else None."""
    if d * r + k <= _POLISH_MAX_UNKNOWNS:
        return _newton_face
    if (r * (r + 1) // 2 + k <= QWISE_FACE_MAX_UNKNOWNS
            and k * (d - r) * r <= QWISE_FACE_MAX_PRODUCTS):
        return _newton_face_reduced
    return None


def _polish(data, M, alpha, aM, *, target=0.0, last_key=None, rounds=3,
            deadline=None, reduced=True):
    """Endgame on the located face: Newton's method on its KKT system.

    At an optimum every hinge is inactive (multiplier 0), active (``c_q``)
    or on its margin (``a_q(M) = delta_q``), and the dual slack ``R + mu M
    - S(alpha)`` is PSD with ``(R + mu M - S(alpha)) M = 0``.  Given the
    partition read off ``M`` (margin set ``W``: ``|delta_q - a_q(M)| <=
    band``; active set: above the band) and the rank ``r`` of ``M``, these
    are smooth equations in ``(G, alpha_W)`` with ``M = G G^T``, solved by
    :func:`_newton_face` from the current point (by
    :func:`_newton_face_reduced` above ``_POLISH_MAX_UNKNOWNS`` unknowns,
    when ``reduced``).  The partition is then
    corrected (a margin multiplier below 0 / above ``c`` leaves ``W``; an
    outside hinge whose sign is wrong at the new ``M`` joins it) for up to
    ``rounds`` rounds, for each band of :data:`FACE_LADDER`, until a
    candidate's gap is at most ``target`` (the loop is
    :func:`~cvxmetric._face.polish_on_faces`).  Nothing here is trusted:
    each candidate is judged by the certified gap of the original problem,
    so a wrong guess (rank, band, a degenerate face) costs a small solve,
    never accuracy.

    Returns
    -------
    key : tuple
        The partitions and rank it started from; with ``last_key`` equal to
        it nothing is solved (that face was tried already).
    best : tuple or None
        ``(M, alpha, aM, S, gap)`` of the best candidate.
    """
    scale = max(1.0, float(np.max(np.abs(data.delta_q))))
    w, V_eig = eigh_psd(M)
    if w[-1] <= 0:
        return None, None
    keep = w > 1e-7 * w[-1]
    G0 = V_eig[:, keep] * np.sqrt(w[keep])  # (d, r)
    d, r = G0.shape
    arg = data.delta_q - aM
    tiny = 1e-9 * scale
    alpha = np.clip(alpha, 0.0, data.c_q)

    def face(W, act):
        return (r, np.packbits(W).tobytes() + np.packbits(act).tobytes()), (W, act)

    def read(band):
        return face(np.abs(arg) <= band * scale, arg > band * scale)

    def solve(partition):
        # a partition too large for either dense system is not solved
        W, act = partition
        step = _face_step(d, r, int(W.sum()))
        if step is None or (step is _newton_face_reduced and not reduced):
            return None
        extra = {"target": target} if step is _newton_face_reduced else {}
        G, alpha_n = step(data, G0, alpha, W, act, deadline=deadline, **extra)
        return _face_point(data, G, alpha_n), alpha_n

    def correct(partition, candidate):
        # from the solution: a margin multiplier out of [0, c] leaves W, an
        # outside hinge whose sign is wrong at the new M joins it
        (W, act), (point, alpha_n) = partition, candidate
        c, argp = data.c_q, data.delta_q - point[2]
        low = W & (alpha_n < -1e-9 * c)
        high = W & (alpha_n > c * (1 + 1e-9))
        wrong = ~W & ((act & (argp < -tiny)) | (~act & (argp > tiny)))
        if not (np.any(low) or np.any(high) or np.any(wrong)):
            return None
        if wrong.sum() > max(8, W.sum()):
            return None  # far from this face: a correction would not be local
        return face((W & ~low & ~high) | wrong, (act & ~wrong) | high)

    out = polish_on_faces(FACE_LADDER, read, solve, lambda cand: cand[0][-1],
                          correct=correct, rounds=rounds, target=target,
                          deadline=deadline, last_key=last_key)
    best = out.first()
    return out.key, None if best is None else best[0]


def _face_point(data, G, alpha):
    """``(M, alpha, aM, S, gap)`` of a face's solution: ``M = G G^T``,
    ``alpha`` clipped into the box, and its certified gap."""
    M = G @ G.T
    alpha = np.clip(alpha, 0.0, data.c_q)
    aM = data.a_of(data.op.sqdist(G=G))
    S = data.S_of(alpha)
    return M, alpha, aM, S, _gap(data, M, alpha, aM, S)


# ---------------------------------------------------------------------------
# Reductions: the units the iterations run in
# ---------------------------------------------------------------------------


class QwiseSolution(NamedTuple):
    """A solver's answer on its way back through the reductions (after
    CVXPY's ``Solution``).

    Attributes
    ----------
    x : ndarray
        The point in the units of the problem at hand: ``M`` (Eq. 8 /
        Eq. 11) or ``omega = [w; b]`` (the vector model).
    alpha : ndarray or None
        The hinge multipliers of Eq. 8 (``None`` for the vector model).
    certificate : Certificate or None
        Its certificate when one was computed already (on the problem the
        iterations ran on, mapped along with the point); ``None`` until
        then (:meth:`certified` computes it on the problem it is in).
    info : dict or None
        What the reductions report (``scaling``, ``feature_scale``).
    """

    x: np.ndarray
    alpha: np.ndarray = None
    certificate: object = None
    info: dict = None

    def certified(self, data, *, solver, tolerances):
        """The certificate of this Eq. 8 solution on ``data``: the one it
        carries (named after ``solver`` and its ``tolerances``), else one
        computed on ``data`` with the multipliers."""
        if self.certificate is None:
            return data.certificate(self.x, self.alpha, solver=solver,
                                    tolerances=tolerances)
        return dataclasses.replace(self.certificate, solver=solver,
                                   tolerances=dict(tolerances))

    def reported(self, info):
        """``info`` with what the reductions report added."""
        return {**info, **(self.info or {})}


def _as_solution(point, state, solver):
    """``point`` as :meth:`~IterativeSolver.finalize` gets it: the solution
    after the reductions, or (called directly on an iterate) the solver's
    :meth:`~IterativeSolver.solution` of it."""
    return point if isinstance(point, QwiseSolution) else solver.solution(point, state)


class Normalize(Reduction):
    """Eq. 8 / Eq. 11 on its scale-free twin (:meth:`QwiseData.normalized`).

    Eq. 8 is not invariant to the scale of ``X`` and of the margins
    (:class:`~cvxmetric.qwise.Scaling`); the iterations run on the twin,
    whose data, margins and regulariser are of order one.  ``apply`` gives
    the twin and the warm start in its units (:meth:`Scaling.init_in`);
    ``invert`` maps a :class:`QwiseSolution` of the twin back exactly
    (:meth:`Scaling.solution_out`: powers of two) and reports
    ``info["scaling"]``.  A solution arriving without a certificate is
    certified on the twin first: a Qwise solution is certified where it was
    found, its relative gap judged on the twin's scale (``rel_gap`` and
    ``max_violation`` are the twin's, the objective, bound and gap mapped
    exactly), as on the exact path.  The inverse data is ``(twin,
    scaling)``.  Declared only for data whose scaling is not the identity
    (:func:`_normalizing`): data within a few powers of two of unit scale
    is solved as given.
    """

    name = "normalize"

    def accepts(self, data):
        return isinstance(data, QwiseData)

    def apply(self, data, init):
        twin, scaling = data.normalized()
        return twin, scaling.init_in(init), (twin, scaling)

    def invert(self, solution, inverse):
        twin, scaling = inverse
        cert = solution.certificate
        if cert is None:
            cert = twin.certificate(solution.x, solution.alpha, solver="")
        M, cert, alpha = scaling.solution_out(twin.to_host(solution.x), cert,
                                              twin.to_host(solution.alpha))
        info = solution.info
        if not scaling.identity:
            info = {**(info or {}), "scaling": scaling.as_dict()}
        return QwiseSolution(M, alpha, cert, info)


#: The scale-free twin of an Eq. 8 problem (a stage ``normalize``).
NORMALIZE = Normalize()


def _normalizing(data):
    """The reductions of the Eq. 8 solvers: :data:`NORMALIZE` unless the
    scaling of ``data`` is the identity (then the twin is ``data``)."""
    return [] if data.scaling.identity else [NORMALIZE]


def _stop_warning(solver, result, warn):
    """The ``ConvergenceWarning`` of a result that is not ``optimal``
    (when ``warn``), pointing at the caller of ``solver.run``."""
    if result.status != Status.OPTIMAL and warn:
        warnings.warn(stop_message(solver.name, result, solver.max_time),
                      ConvergenceWarning, stacklevel=3)


@dataclass
class QwiseDualSolver(IterativeSolver):
    """Restarted primal-dual hybrid gradient (default "fast").

    The problem of :class:`~cvxmetric.qwise.QwiseModel` is the saddle point

        min_{M PSD} max_{0 <= alpha <= c}
            <R, M> + mu/2 ||M||_F^2 + delta^T alpha - <S(alpha), M>,

    ``S(alpha) = sum_q alpha_q (C_far - C_near)`` (see :mod:`._problem`).
    Each iteration (Chambolle-Pock) is

        M+     = Pi_PSD((M + tau (S(alpha) - R)) / (1 + tau mu))
        alpha+ = clip(alpha + sigma (delta - a(2 M+ - M)), 0, c)

    with ``a_q(M) = <A_q, M>``: one eigendecomposition of a (d, d) matrix,
    one pass of pair distances from the rank-r factor of ``M+``, and an
    update of ``S`` with the multipliers that moved (never a per-constraint
    matrix; most multipliers sit at 0 or ``c`` and do not move; on NumPy
    data the distances of hinges held at ``c`` are read only at gap
    checks, see :class:`_Held`).  Steps
    satisfy ``tau sigma ||A||^2 < 1``.  As in PDLP the iterates are averaged
    and the method restarts from the better of the current and averaged
    point when the relative duality gap has halved, re-balancing the primal
    weight; restarts give the fast (linear in practice) convergence on these
    sharp, piecewise-linear problems.  ``a`` and ``S`` are linear, so the
    averages of ``a(M)`` and ``S(alpha)`` are running sums too and the gap
    checks make no extra pass.  Below a certified gap of ``polish_from`` the
    gap checks also try the endgame of :func:`_polish`.  It stops on the
    certified relative duality gap of the original problem.

    The iterations run on the scale-free twin of the problem (the reduction
    :data:`NORMALIZE`).  :meth:`run` is overridden for the working set
    alone: above ``working_set`` constraints a solve is a sequence of
    restricted runs (rounds) whose stopping rules the loop of
    :meth:`IterativeSolver.run` does not express -- a round with nothing
    left to add or tighten ends the solve as ``max_iter_reached`` before
    ``maxiter``, a round that converges after the budget is spent ends it
    as ``time_limit_reached``, and the stop is the full problem's
    certificate, computed between rounds.  The override only dispatches:
    below ``working_set`` constraints it is :meth:`IterativeSolver.run`,
    and the working-set path applies and inverts the same reductions
    (its rounds run on restricted scale-free data, which need none).

    Attributes
    ----------
    maxiter : int
        Maximum number of iterations.
    tol : float
        Target certified relative duality gap (default 1e-7: ten times
        below the package's certificate tolerance, so a stop at ``tol``
        passes).
    check_every : int
        Iterations between gap evaluations (and restart decisions).
    omega0 : float, optional
        Initial primal weight (``tau = eta / omega``, ``sigma = eta
        omega``); default the largest hinge weight of the scale-free twin
        (the scale of its multipliers, whose ``M`` is of order one: the
        balance of the two blocks, 1 for unit weights).
    polish_from : float or None
        Certified relative gap below which the endgame (Newton's method on
        the face the iterates have located, see :func:`_polish`) is
        attempted at gap checks; ``None`` never does.
    working_set : int or None
        Above this many constraints, iterate on a working set (see the
        module docstring); ``None`` never does.  Data whose iterations run
        on host restrictions (a ``dask.array``'s) always do, on every
        constraint at first when there are no more than this (or
        ``None``).  ``maxiter`` then counts the iterations of all rounds
        together.
    follow_rounds : int
        Working-set rounds at the final tolerance in which the set still
        follows the current point (drops constraints far inside their
        margin) before it only grows.
    hold_below : float or None
        A run from the ray start (no ``init``) holds violated hinges at
        ``c`` between gap checks only once its certified gap is at most
        this (see :data:`~cvxmetric._settings.QWISE_HOLD_BELOW`); ``None``
        holds from the first block, as warm starts always do.
    locate_tol : float
        Tolerance of the first working-set rounds, which only locate the
        set (it tightens a hundredfold once the constraints a round adds
        carry little loss; see :data:`~cvxmetric._settings.QWISE_LOCATE_TOL`
        for the measurements behind the default).
    """

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "check_every": [Interval(Integral, 1, None, closed="left")],
        "omega0": [Interval(Real, 0, None, closed="neither"), None],
        "working_set": [Interval(Integral, 1, None, closed="left"), None],
        "follow_rounds": [Interval(Integral, 0, None, closed="left")],
        "polish_from": [Interval(Real, 0, None, closed="neither"), None],
        "locate_tol": [Interval(Real, 0, 1, closed="neither")],
        "hold_below": [Interval(Real, 0, None, closed="left"), None],
    }

    maxiter: int = 200_000
    tol: float = 1e-7
    check_every: int = 64
    omega0: float = None
    working_set: int = 10_000
    follow_rounds: int = 3
    polish_from: float = 1e-2
    locate_tol: float = QWISE_LOCATE_TOL
    hold_below: float = QWISE_HOLD_BELOW

    name = "fast"

    def blas_flops(self, data):
        # an iteration's largest products: (pairs x d) @ (d x r) distances
        # and the (d x pairs) @ (pairs x d) update of S, over the pairs of
        # the (working) set
        pairs = min(data.op.n_pairs, 2 * (self.working_set or data.n_constraints))
        return 2.0 * pairs * data.n_features ** 2

    def reductions(self, data):
        """:data:`NORMALIZE`: the iterations run on the scale-free twin of
        ``data`` (none when ``data`` is at unit scale already)."""
        return _normalizing(data)

    def solution(self, M, state):
        """The point with the smallest certified gap, with its multipliers."""
        return QwiseSolution(*state.best)

    def run(self, data, init=None, *, warn=True):
        """Solve ``data`` (see :meth:`IterativeSolver.run`); on a working set
        when ``data`` has more than ``working_set`` constraints, and always
        for data whose iterations run on host restrictions
        (``host_iterations``: the Dask data, whose first set is then every
        constraint when there are no more than ``working_set``).

        The iterations run on the scale-free twin of ``data``
        (:data:`NORMALIZE`); the result is in the user's units.  Only the
        working-set path needs this override (see the class docstring):
        below ``working_set`` constraints it is :meth:`IterativeSolver.run`.
        """
        if not getattr(data, "host_iterations", False) and (
                self.working_set is None or data.n_constraints <= self.working_set):
            result = super().run(data, init, warn=False)
        else:
            result = self._run_working_set(data, init)
        _stop_warning(self, result, warn)
        return result

    # -- the working set -------------------------------------------------------

    def _run_working_set(self, data, init):
        """Rounds of restricted solves (see the module docstring) on the
        reduced problem of :meth:`reductions`, mapped back through them; the
        stop is the full problem's certified gap."""
        t0 = time.perf_counter()
        reduced, init, applied = apply_reductions(self.reductions(data), data, init)
        t1 = time.perf_counter()
        deadline = Deadline(self.max_time, t1)
        # the full passes between rounds; each round decides its own threads
        with blas_threads(self.blas_flops(reduced)):
            ws = self._working_set_start(reduced, init, deadline)
            status, cert = self._working_set_rounds(ws, deadline)
            if cert is None:
                cert = reduced.certificate(ws.M, ws.alpha, solver=self.name)
        cert.tolerances = {"tol": self.tol, "check_every": self.check_every,
                           "working_set": self.working_set}
        cert.times = {"total": time.perf_counter() - t1}
        sol = invert_reductions(applied, QwiseSolution(ws.M, ws.alpha, cert))
        cert = sol.certificate
        return SolverResult(
            M=sol.x, status=status, objective=cert.objective, n_iter=ws.n_iter,
            certificate=cert, method=self.name,
            info=sol.reported({"alpha": sol.alpha, "working_set_rounds": ws.rounds,
                               "final_error": float(cert.rel_gap),
                               **reduced.backend_info()}),
            time=time.perf_counter() - t0, raw_status=status)

    def _working_set_start(self, data, init, deadline):
        """The first working set: the constraints that carry a multiplier or
        are violated or nearly so at the start, topped up with the most
        violated ones to ``working_set``."""
        N = data.n_constraints
        scale = max(1.0, float(data.xp.max(data.xp.abs(data.delta_q))))
        alpha = np.zeros(N)
        if init is None:
            M = data.to_host(_ray_start(data, deadline)[0])
        else:
            M = project_psd(init.M)
            if init.info.get("alpha") is not None:
                alpha = np.clip(init.info["alpha"], 0.0, data.host().c_q)
        # the loop reads the margins only against the band (0.1 of the
        # margin scale): single precision suffices and halves these full
        # passes; the stop is a float64 certificate
        ws = _WorkingSet(data=data, op32=data.sweep_operator(), band=0.1 * scale, M=M,
                         alpha=alpha,
                         # the first rounds only locate the set
                         inner_tol=max(self.tol, self.locate_tol))
        inW = (alpha > 0) | (ws.arg > -ws.band)
        k0 = min(N, self.working_set or N)
        if inW.sum() < k0:
            inW[np.argpartition(-ws.arg, k0 - 1)[:k0]] = True
        ws.inW = inW
        return ws

    def _working_set_rounds(self, ws, deadline):
        """Run rounds until a stop; ``(status, certificate or None)``."""
        while True:
            left = None
            if self.max_time is not None:
                left = deadline.remaining()
                if deadline.expired():
                    return Status.TIME_LIMIT, None
            if ws.n_iter >= self.maxiter:
                return Status.MAX_ITER, None
            res, near, new = self._working_set_round(ws, left)
            if deadline.expired():
                return Status.TIME_LIMIT, None
            stop = self._working_set_next(ws, res, near, new)
            if stop is not None:
                return stop

    def _working_set_round(self, ws, left):
        """One restricted solve on the set, warm-started from the last;
        ``(result, near, new)``: the constraints now near their margin and
        those of them to add."""
        t_round = time.perf_counter()
        data = ws.data
        idx = np.flatnonzero(ws.inW)
        # a round that only locates the set runs its products in single
        # precision (~1e-6 relative, far below its tolerance)
        sub = data.restrict(idx, dtype=np.float32 if ws.inner_tol >= _SINGLE_TOL
                            else np.float64)
        inner = dataclasses.replace(
            self, tol=ws.inner_tol, working_set=None, max_time=left,
            maxiter=self.maxiter - ws.n_iter)
        start = SolverResult(M=ws.M, status="", objective=np.nan, n_iter=0,
                             certificate=None, method="",
                             info=dict(ws.warm, alpha=ws.alpha[idx]))
        res = inner.run(sub, start, warn=False)
        ws.absorb(res, idx)
        near = (ws.alpha > 0) | (ws.arg > -ws.band)
        new, n_new = self._working_set_additions(near & ~ws.inW, ws.arg)
        ws.rounds.append({"size": int(idx.size), "tol": float(ws.inner_tol),
                          "iterations": int(res.n_iter),
                          "rel_gap": float(res.certificate.rel_gap),
                          "added": int(new.sum()), "candidates": n_new,
                          "seconds": time.perf_counter() - t_round})
        logger.info("%s working set %d: restricted gap %.2e, %d added",
                    self.name, idx.size, res.certificate.rel_gap, new.sum())
        return res, near, new

    def _working_set_additions(self, new, arg):
        """At most ``working_set`` of the candidates ``new`` (bool mask),
        the most violated; ``(mask, number of candidates)``."""
        n_new = int(new.sum())
        if self.working_set is not None and n_new > self.working_set:
            # far from the optimum the band holds many constraints that will
            # not matter (measured at N = 10^6: 147 000 added after round 1,
            # 12 400 kept at the end): add the ``working_set`` most
            # violated, the rest may join later
            cand = np.flatnonzero(new)
            top = np.argpartition(-arg[cand], self.working_set - 1)
            new = np.zeros(len(arg), dtype=bool)
            new[cand[top[:self.working_set]]] = True
        return new, n_new

    def _next_tolerance(self, ws, res, new):
        """The tolerance of the round after ``res``, which met its own.

        Precision pays only where the next round keeps it.  The constraints
        ``new`` that the round's point violates join the next round with
        multiplier 0 and restart its gap at about their hinge loss over the
        objective (measured at (100, 10^5): 0.5 after a round solved to
        7e-7, for 42 additions).  So while that loss exceeds the round's
        tolerance, the tolerance stays (at most ``QWISE_KEEP_TOL_ROUNDS``
        rounds in a row); with nothing to add, the next round is the last
        and runs at ``tol``; otherwise it tightens a hundredfold.
        """
        if not np.any(new):
            ws.n_kept = 0
            return self.tol
        c_q = ws.data.host().c_q
        loss = float(c_q[new] @ np.maximum(ws.arg[new], 0.0))
        ws.rounds[-1].update(added_loss=loss, objective=float(res.objective))
        if (loss > ws.inner_tol * abs(res.objective)
                and ws.n_kept < QWISE_KEEP_TOL_ROUNDS):
            ws.n_kept += 1
            return ws.inner_tol
        ws.n_kept = 0
        return max(self.tol, ws.inner_tol * 1e-2)

    def _working_set_next(self, ws, res, near, new):
        """After a round: ``(status, certificate or None)`` to stop, or None
        after moving the set (and tightening the round's tolerance)."""
        # with every outside hinge inactive, the outside multipliers 0 are
        # optimal for them and the full gap is the restricted one.  A few
        # outside hinges barely violated (the set moved a little) often
        # leave it below tol too: one full pass decides, cheaper than
        # another round.  Either way the stop is the full problem's
        # certificate.
        if res.certificate.rel_gap <= self.tol:
            cert = ws.data.certificate(ws.M, ws.alpha, solver=self.name)
            if cert.rel_gap <= self.tol:
                return Status.OPTIMAL, cert
        # the inner run's own stopping rule, at the round's tolerance
        if res.raw_status == Status.TIME_LIMIT:
            return Status.TIME_LIMIT, None
        if res.raw_status == Status.OPTIMAL:
            if ws.inner_tol <= self.tol and not np.any(new):
                return Status.MAX_ITER, None  # nothing to add or tighten: round-off
            ws.inner_tol = self._next_tolerance(ws, res, new)
        elif not np.any(new):
            return Status.MAX_ITER, None  # the inner solve ran out of iterations
        if ws.inner_tol > self.tol or ws.n_follow_final < self.follow_rounds:
            # while the set is still being located, it follows the current
            # point: constraints far inside their margin (three bands: a
            # hysteresis, so that a constraint near the edge does not leave
            # and return) with a zero multiplier leave it.  At the last
            # tolerance it does so ``follow_rounds`` more times and then
            # only grows, so the rounds end.
            ws.n_follow_final += ws.inner_tol <= self.tol
            ws.inW = (near & ws.inW) | new | (ws.inW & (ws.arg > -3 * ws.band))
        else:
            ws.inW |= new
        return None

    # -- one run of the iterations ---------------------------------------------

    def init_state(self, data, init=None):
        info = {} if init is None else init.info
        # the base class's run sets this run's budget; the state carries it
        deadline = self.deadline
        xp = data.xp  # the data's namespace; init (a result) is on the host
        if init is None:
            M, alpha = _ray_start(data, deadline)
        else:
            M = data.dev(project_psd(init.M))
            alpha = data.dev(info.get("alpha"))
            if alpha is None:
                alpha = xp.where(data.margins(M) > 0, data.c_q, 0.0)
            alpha = xp.clip(alpha, 0.0, data.c_q)
        # diagonal dual preconditioning (Pock & Chambolle 2011): per-row
        # steps proportional to 1 / ||A_q||_F; the primal step stays scalar
        # so that its prox remains the Euclidean PSD projection.  A warm
        # start keeps the scale, the step and the primal weight of the run
        # it continues (a working-set round), so they mean the same there.
        rn = _row_norms(data)
        rn = xp.where(rn > 0, rn, max(float(xp.max(rn)), 1.0))
        row_scale = info.get("row_scale") or float(xp.mean(rn))
        dscale = row_scale / rn  # (n_constraints,)
        eta = info.get("eta")
        if eta is None:
            norm = _op_norm(data, dscale) * 1.01
            # A = 0 (no constraint depends on M): any step is stable
            norm = norm if norm > 1e-12 * max(1.0, float(xp.max(rn))) else 1.0
            eta = 0.99 / norm
        # the primal weight balances the two blocks (see _primal_weight);
        # the restarts re-balance it from the movements.
        omega = info.get("omega") or self.omega0 or _primal_weight(data)
        aM = data.a_of(data.op.sqdist(M))
        S = data.S_of(alpha)
        gap = _gap(data, M, alpha, aM, S)
        # only a run from the ray start waits for a small gap to hold hinges
        # (see _Held); a warm start holds from its first block
        hold_below = self.hold_below if init is None else None
        return M, PDState(0, gap, alpha, aM, S, self._zero_sums(M, alpha), float(omega),
                          float(eta), gap, 0, (M, alpha), (M, alpha), dscale,
                          row_scale, PolishLog(), deadline,
                          _Held.choose(data, alpha, aM, gap=gap, below=hold_below),
                          hold_below)

    @staticmethod
    def _zero_sums(M, alpha):
        return (zeros_like(M), zeros_like(alpha), zeros_like(alpha), zeros_like(M), 0)

    def update(self, M, state, data):
        """``check_every`` iterations, then a gap check: the better of the
        current and the averaged point, the endgame, and a restart."""
        M, alpha, aM, S, sums, eta, it = self._pdhg_block(M, state, data)
        aM, sums = state.held.exact(M, aM, sums)
        current = (M, alpha, aM, S)
        n_sum = sums[-1]
        avg = tuple(total / n_sum for total in sums[:-1])
        gap_cur, gap_avg = _gap(data, *current), _gap(data, *avg)
        cand, cand_gap = (avg, gap_avg) if gap_avg < gap_cur else (current, gap_cur)
        best = cand[:2] if cand_gap <= state.error else state.best
        error = min(state.error, cand_gap)
        error, best, polish = self._endgame(data, state, cand, cand_gap, error, best)
        omega, restart = state.omega, (state.restart, state.restart_error,
                                       state.n_restart_iter)
        # restart when the gap has halved, or (artificial restart, as in
        # PDLP) when the current epoch is long relative to the whole run
        since = it - state.n_restart_iter
        if cand_gap <= 0.5 * state.restart_error or since >= 0.36 * it:
            omega = self._rebalanced(omega, cand, state.restart)
            M, alpha, aM, S = cand
            # S was accumulated move by move: recompute it exactly here
            S = data.S_of(alpha)
            restart = ((M, alpha), cand_gap, it)
            sums = self._zero_sums(M, alpha)
        return M, state._replace(
            iter_num=it, error=error, alpha=alpha, aM=aM, S=S, sums=sums, omega=omega,
            eta=eta, restart=restart[0], restart_error=restart[1],
            n_restart_iter=restart[2], best=best, polish=polish,
            held=_Held.choose(data, alpha, aM, state.held, gap=error,
                              below=state.hold_below))

    def _pdhg_block(self, M, state, data):
        """A block of ``check_every`` PDHG iterations (never past ``maxiter``:
        ``n_iter`` counts the iterations ``maxiter`` bounds, nor past the
        deadline); ``(M, alpha, aM, S, sums, eta, iter_num)`` after it."""
        eta, alpha, aM, S = state.eta, state.alpha, state.aM, state.S
        M_sum, alpha_sum, aM_sum, S_sum, n_sum = state.sums
        k = 0
        block = max(1, min(self.check_every, self.maxiter - state.iter_num))
        for k in range(1, block + 1):
            if k > 1 and state.deadline.expired():
                k -= 1
                break
            M_new, aM_new, alpha_new, eta = self._step(
                data, M, alpha, aM, S, eta, state.omega, state.dscale,
                state.iter_num + k, state.held)
            dA = alpha_new - alpha
            moved = data.nonzero(dA)
            if moved.shape[0]:
                # the increment in float32 (half the time of this, the
                # largest product of an iteration): S is recomputed in full
                # at every restart and the certificate never uses it
                S = S + data.S_of(dA[moved], moved, single=True)
            M, aM, alpha = M_new, aM_new, alpha_new
            M_sum = M_sum + M
            alpha_sum = alpha_sum + alpha
            aM_sum = aM_sum + aM
            S_sum = S_sum + S
            n_sum += 1
        return (M, alpha, aM, S, (M_sum, alpha_sum, aM_sum, S_sum, n_sum), eta,
                state.iter_num + k)

    @staticmethod
    def _step(data, M, alpha, aM, S, eta, omega, dscale, t, held):
        """Iteration ``t``: one Chambolle-Pock step with PDLP's adaptive step
        size; ``(M+, a(M+), alpha+, next eta)`` (``a`` of the hinges
        ``held`` not read: see :class:`_Held`)."""
        R, mu, c, delta = data.R, data.mu, data.c_q, data.delta_q
        xp = data.xp  # the data's namespace: NumPy, or a device's
        for _ in range(64):  # eta shrinks geometrically below the limit
            tau, sigma = eta / omega, eta * omega
            M_new, G = data.project_psd((M + tau * (S - R)) / (1 + tau * mu),
                                        return_factor=True)
            # distances from the rank-r factor of the PSD iterate;
            # a(2 M+ - M) = 2 a(M+) - a(M)
            aM_new = held.a_step(data, G, aM)
            alpha_new = xp.clip(alpha + (sigma * dscale)
                                * (delta - 2 * aM_new + aM), 0.0, c)
            # PDLP's adaptive step: the largest step the pair of moves
            # certifies, ||dz||_omega^2 / (2 |<d alpha, A dM>|)
            dM = M_new - M
            dA = alpha_new - alpha
            move = omega * float(xp.sum(dM * dM)) + float(dA @ (dA / dscale)) / omega
            cross = abs(float(dA @ (aM_new - aM)))
            limit = move / (2 * cross) if cross > 0 else np.inf
            eta_next = min((1 - (t + 1) ** -0.3) * limit,
                           (1 + (t + 1) ** -0.6) * eta)
            if eta <= limit or not np.isfinite(limit):
                return M_new, aM_new, alpha_new, eta_next
            eta = eta_next
        return M_new, aM_new, alpha_new, eta

    def _endgame(self, data, state, cand, cand_gap, error, best):
        """The endgame at a gap check: Newton's method on the face the
        iterates have located (:func:`_polish`, once per face); its point
        replaces ``best`` only when its certified gap is below ``error``.
        ``(error, best, PolishLog)``.

        After the k-th solved attempt the next waits k gap checks, so a face
        guessed too early costs at most O(sqrt(checks)) solves (a
        deterministic rule: the path of the iterates never depends on the
        clock).  A face too large for the whole Newton step takes the
        reduced one (:func:`_newton_face_reduced`, a dense factorisation
        that costs as much as hundreds of iterations) only where the
        iterations are slow: at a gap of at most
        ``QWISE_FACE_REDUCED_FROM``, and when the run's best gap over its
        last checks, continued at the same rate, would reach ``tol`` after
        more than ``QWISE_FACE_SLOW_CHECKS`` further checks.
        """
        gaps = (state.polish.gaps + (error,))[-4:]
        log = state.polish._replace(wait=state.polish.wait - 1, gaps=gaps)
        if (self.polish_from is None or not self.tol < cand_gap <= self.polish_from
                or log.wait > 0):
            return error, best, log
        t_pol = time.perf_counter()
        # Newton's method on the face runs on the host (NumPy, SciPy)
        key, pol = _polish(data.host(), *map(data.to_host, cand[:3]), target=self.tol,
                           last_key=log.key, deadline=state.deadline,
                           reduced=(cand_gap <= QWISE_FACE_REDUCED_FROM
                                    and _slow(gaps, self.tol)))
        log = log._replace(key=key, seconds=log.seconds + time.perf_counter() - t_pol)
        if pol is not None:
            log = log._replace(attempts=log.attempts + 1, wait=log.attempts + 1)
            if pol[-1] < error:
                error, best = pol[-1], tuple(map(data.dev, pol[:2]))
        return error, best, log

    @staticmethod
    def _rebalanced(omega, cand, restart):
        """PDLP's primal weight re-balancing at a restart: the geometric mean
        of the old weight and the ratio of dual to primal movement."""
        dM = norm(cand[0] - restart[0])
        da = norm(cand[1] - restart[1])
        if dM > 1e-300 and da > 1e-300:
            omega = float(np.exp(0.5 * np.log(da / dM) + 0.5 * np.log(omega)))
        return omega

    def finalize(self, M, state, data):
        """Certify :meth:`solution` (after the reductions: a
        :class:`QwiseSolution`; the state's best point when called on an
        iterate) on ``data``."""
        sol = _as_solution(M, state, self)
        cert = sol.certified(data, solver=self.name,
                             tolerances={"tol": self.tol, "check_every": self.check_every})
        info = {"alpha": data.to_host(sol.alpha), "omega": state.omega, "eta": state.eta,
                "row_scale": state.row_scale, "polish_attempts": state.polish.attempts,
                "polish_time": state.polish.seconds, **data.backend_info()}
        return data.to_host(sol.x), cert, sol.reported(info)


@dataclass(eq=False)
class _WorkingSet:
    """One working-set solve's data (a run's own, never the solver's).

    ``M`` and ``alpha`` (all constraints; 0 outside the set) are the last
    round's point, ``arg`` the margins there (float32 products: read only
    against the band), ``inW`` the set, ``inner_tol`` the next round's
    tolerance and ``warm`` the step, primal weight and row scale the next
    round continues from.
    """

    data: object
    op32: PairOperator
    band: float  # "near the margin": kept with the violated ones
    M: np.ndarray
    alpha: np.ndarray
    inner_tol: float
    inW: np.ndarray = None
    arg: np.ndarray = None
    warm: dict = dataclasses.field(default_factory=dict)
    n_iter: int = 0
    rounds: list = dataclasses.field(default_factory=list)
    n_follow_final: int = 0  # rounds at the last tolerance that moved the set
    n_kept: int = 0  # rounds in a row that kept their tolerance

    def __post_init__(self):
        self.arg = self.margins(self.M)

    def margins(self, M):
        """Hinge arguments at ``M`` over every constraint (float32 pairs)."""
        return self.data.to_host(self.data.margins(M, dist=self.op32.sqdist(M)))

    def absorb(self, res, idx):
        """Take a round's result (a solve over the constraints ``idx``)."""
        self.n_iter += res.n_iter
        self.M = res.M
        self.warm = {k: res.info[k] for k in ("omega", "eta", "row_scale")}
        self.alpha = np.zeros(self.data.n_constraints)
        self.alpha[idx] = res.info["alpha"]
        self.arg = self.margins(self.M)


# ---------------------------------------------------------------------------
# Algorithm 1: projected subgradient with active sets
# ---------------------------------------------------------------------------


class SubgradientState(NamedTuple):
    iter_num: int
    error: float
    h: np.ndarray  # (d, d) h(N+) = sum_{N+} c_q (C_near - C_far)
    violated: np.ndarray  # (n_constraints,) bool, the current N+
    active: np.ndarray  # (n_constraints,) bool, the accumulated active list
    full_check: bool  # whether N+ was computed over all constraints
    converged: bool
    best_M: np.ndarray
    best_obj: float
    alpha_sum: np.ndarray  # running sum of c_q 1[q in N+] (dual estimate)
    n_avg: int
    eta0: float


@dataclass
class ProjectedSubgradient(IterativeSolver):
    """Algorithm 1 of Law et al. (2016) with Sec. 4.1 / 4.3 speed-ups.

    It runs on the scale-free twin of the problem (the reduction
    :data:`NORMALIZE`, a stage ``normalize`` of the trace when the data is
    not at unit scale); the result is in the user's units.

    Attributes
    ----------
    maxiter : int
    tol : float
        ``eps`` of the stopping rule ``||M_t - M_{t-1}||_F^2 <= eps``, taken
        relative to ``max(1, ||M_t||_F^2)``.
    eta0 : float, optional
        Initial step (a length for ``step="length"``); default: the step
        that brings the mean distance of the far pairs to the mean margin
        after the first iteration.
    step : {"length", "sqrt", "constant"}
        ``"length"``: step length ``eta0 / sqrt(t + 1)`` in Frobenius norm,
        i.e. ``eta_t = eta0 / (sqrt(t + 1) ||grad_t||)`` (the classical
        rule, converges); ``"sqrt"``: ``eta_t = eta0 / sqrt(t + 1)``;
        ``"constant"``: ``eta_t = eta0`` (the paper's example).
    recheck_every : int
        Full re-check period of the active-set strategy (the paper: 10-20).
    active_set : bool
        Use the active-set strategy; otherwise every iteration checks all.
    """

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "eta0": [Interval(Real, 0, None, closed="neither"), None],
        "step": [StrOptions({"length", "sqrt", "constant"})],
        "recheck_every": [Interval(Integral, 1, None, closed="left")],
        "active_set": ["boolean"],
    }

    maxiter: int = 20000
    tol: float = 1e-12
    eta0: float = None
    step: str = "length"
    recheck_every: int = 10
    active_set: bool = True

    name = "subgradient"

    def check_data(self, data):
        """Refuse data on another namespace (:meth:`QwiseData.on_device`):
        Algorithm 1 runs on NumPy only."""
        check_host_input(data.X, "X", "Qwise's projected subgradient (Algorithm 1)")

    def reductions(self, data):
        """:data:`NORMALIZE`: Algorithm 1 runs on the scale-free twin of
        ``data`` (none when ``data`` is at unit scale already); the result
        is in the user's units."""
        return _normalizing(data)

    def solution(self, M, state):
        """The iterate with the smallest objective at a full check, with the
        ergodic average of the subgradient multipliers."""
        return QwiseSolution(state.best_M, state.alpha_sum / max(state.n_avg, 1))

    def _check(self, data, G, candidates):
        """Violation flags of ``candidates`` (bool mask) under ``M = G G^T``."""
        idx = np.flatnonzero(candidates)
        if len(idx) == data.n_constraints:
            dist = data.op.sqdist(G=G)
        else:
            pairs = np.unique(np.concatenate([data.near_q[idx], data.far_q[idx]]))
            dist = np.zeros(data.op.n_pairs)
            dist[pairs] = data.op.sqdist(G=G, subset=pairs)
        arg = data.delta_q[idx] + dist[data.near_q[idx]] - dist[data.far_q[idx]]
        viol = np.zeros(data.n_constraints, dtype=bool)
        viol[idx] = arg > 0
        return viol, arg, idx

    def _h(self, data, mask):
        """``h(mask) = sum_mask c_q (C_near - C_far)`` as a (d, d) matrix."""
        return -data.op.gram(data.dual_pair_weights(np.where(mask, data.c_q, 0.0)))

    def init_state(self, data, init=None):
        d = data.n_features
        M = np.zeros((d, d)) if init is None else project_psd(init.M)
        G = project_psd(M, return_factor=True)[1]
        everything = np.ones(data.n_constraints, dtype=bool)
        viol, arg, _ = self._check(data, G, everything)
        h = self._h(data, viol)
        obj = data.regularizer_value(M) + float(data.c_q @ np.maximum(arg, 0))
        eta0 = self.eta0
        if eta0 is None:
            # scale the first step so that far-pair distances reach the margins
            grad = h + data.R + data.mu * M
            _, G1 = project_psd(-grad, return_factor=True)
            far = data.op.sqdist(G=G1)[data.far_q]
            eta0 = (float(np.mean(np.abs(data.delta_q))) / float(np.mean(far))
                    if np.any(far > 0) else 1.0 / max(np.linalg.norm(grad), 1e-300))
            if self.step == "length":
                # the length of that first step: the scale of a good M
                eta0 *= np.linalg.norm(G1 @ G1.T)
        state = SubgradientState(
            iter_num=0, error=np.inf, h=h, violated=viol, active=viol.copy(),
            full_check=True, converged=False, best_M=M, best_obj=obj,
            alpha_sum=np.zeros(data.n_constraints), n_avg=0, eta0=float(eta0),
        )
        return M, state

    def converged(self, state):
        return state.converged

    def update(self, M, state, data):
        t = state.iter_num
        grad = state.h + data.R + data.mu * M  # Eq. 15
        if self.step == "length":
            # step *length* r0 / sqrt(t + 1) in Frobenius norm
            eta = state.eta0 / (np.sqrt(t + 1) * max(np.linalg.norm(grad), 1e-300))
        elif self.step == "sqrt":
            eta = state.eta0 / np.sqrt(t + 1)
        else:
            eta = state.eta0
        M_new, G = project_psd(M - eta * grad, return_factor=True)
        err = float(np.sum((M_new - M) ** 2)) / max(1.0, float(np.sum(M_new ** 2)))
        small = err <= self.tol
        full = (not self.active_set or (t + 1) % self.recheck_every == 0
                or small or t + 1 >= self.maxiter)
        candidates = np.ones(data.n_constraints, bool) if full else state.active
        viol, arg, idx = self._check(data, G, candidates)
        # incremental h(N+): only the constraints that entered or left N+
        changed = viol != state.violated
        h = state.h
        if np.any(changed):
            added = changed & viol
            removed = changed & state.violated
            h = h + self._h(data, added) - self._h(data, removed)
        # between full checks the list accumulates; a full check rebuilds it
        # from the violations it finds (at M_0 = 0 every constraint with a
        # positive margin is violated, so accumulating from the start would
        # keep all of them forever)
        active = viol.copy() if full else state.active | viol
        best_M, best_obj = state.best_M, state.best_obj
        new_outside = False
        if full:
            obj = data.regularizer_value(M_new) + float(
                data.c_q[idx] @ np.maximum(arg, 0))
            if obj < best_obj:
                best_M, best_obj = M_new, obj
            new_outside = bool(np.any(viol & ~state.active))
        # ergodic average of the subgradient multipliers, second half of the run
        alpha_sum, n_avg = state.alpha_sum, state.n_avg
        if t >= self.maxiter // 2 or small:
            alpha_sum = alpha_sum + np.where(viol, data.c_q, 0.0)
            n_avg += 1
        converged = small and full and not new_outside
        return M_new, SubgradientState(
            iter_num=t + 1, error=err, h=h, violated=viol, active=active,
            full_check=full, converged=converged, best_M=best_M,
            best_obj=best_obj, alpha_sum=alpha_sum, n_avg=n_avg, eta0=state.eta0,
        )

    def finalize(self, M, state, data):
        """Certify :meth:`solution` (a :class:`QwiseSolution` after the
        reductions) on ``data``."""
        sol = _as_solution(M, state, self)
        cert = sol.certified(data, solver=self.name,
                             tolerances={"eps": self.tol, "eta0": state.eta0,
                                         "step": self.step})
        info = {"alpha": sol.alpha, "eta0": state.eta0,
                "n_active": int(state.active.sum())}
        return sol.x, cert, sol.reported(info)


# ---------------------------------------------------------------------------
# The exact path's starting guess
# ---------------------------------------------------------------------------


def warm_start(data):
    """The starting guess of the exact path's margin-set reduction.

    A moderately accurate run of :class:`QwiseDualSolver` (``tol=1e-5``,
    ``maxiter=20_000``, no warning when it stops short): its point and
    multipliers guess which hinges are inactive, on their margin or
    active (:func:`cvxmetric.qwise.solve_exact`); accuracy here only saves
    rounds, the exact path's answer is certified either way.  The registry
    declares it (``Formulation.warm_start``) and
    :meth:`cvxmetric.formulations.Formulation.solve_exact` hands it to the
    exact path, which imports no fast solver itself.

    Parameters
    ----------
    data : QwiseData

    Returns
    -------
    SolverResult
    """
    return QwiseDualSolver(tol=1e-5, maxiter=20_000).run(data, warn=False)
