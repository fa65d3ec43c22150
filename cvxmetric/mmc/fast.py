"""MMC, fast: Xing et al.'s own algorithms for the problem of :mod:`.exact`.

:class:`MMCProjectedGradient` (method ``"fast"``, full and diagonal)
    Xing's projected gradient ascent on the equivalent problem

        maximise g(M) = sum_D sqrt(D2_M)   s.t.  <A_S, M> <= 1,  M PSD

    (``w >= 0`` when diagonal), whose optimal points are multiples of
    those of (P) (:mod:`._problem`).  Three changes make it converge to the
    exact optimum, in a number of iterations that does not depend on the
    units or the correlations of the features:

    * **whitened coordinates** (full ``M``, ``precondition=True``, the
      default): the iteration runs on ``Mw = R M R^T`` with ``A_S = R^T R``
      computed from the SVD of the (Jacobi-scaled) similar differences
      (:class:`~cvxmetric.mmc.MMCData`, attributes ``Wt``, ``Rt``,
      ``psi``), where the constraint is ``tr(Mw) <= 1``.  The projection
      onto ``{Mw PSD, tr(Mw) <= 1}`` is then exact and cheap: one ``eigh``
      and the projection of the eigenvalues onto ``{lambda >= 0, sum
      lambda <= 1}`` (a threshold found by sorting).  Xing alternates
      projections onto the two sets (not the projection), and in the
      features' own coordinates the exact projection needs a root search
      (~23 ``eigh``); worse, ``A_S`` of correlated features (standardised
      breast_cancer) is ill-conditioned, and the iteration needed 5 000 to
      20 000 iterations there against ~40 whitened.  Directions outside
      the numerical range of ``A_S`` carry no dissimilar difference for
      non-degenerate data and are dropped;
    * **diagonal** ``M``: the same in Jacobi units (``w_k a_k``; the
      constraint's normal is then ``~1``), with the exact projection by
      sorting breakpoints;
    * **step sizes**: Barzilai-Borwein steps along the projection arc's
      chord with a nonmonotone Armijo line search (spectral projected
      gradient, Birgin, Martinez and Raydan 2000).  Every iterate is a
      convex combination of feasible points, hence feasible.

    ``grad g = sum_D C_ij / (2 sqrt D2)`` is one weighted Gram product of
    the dissimilar differences (never one (d, d) matrix per pair), and the
    line search costs no extra product: ``D2`` is linear in ``M``.  The
    line search checks the solver's deadline (``max_time``).

:class:`MMCNewton` (method ``"newton"``, diagonal only)
    Xing's Sec. 2.2 method for ``M = diag(w)``: Newton-Raphson on

        h(w) = sum_S ||x_i - x_j||_w^2 - log(sum_D ||x_i - x_j||_w)
             = a^T w - log g(w),                                w >= 0.

    *Equivalence with the diagonal MMC.*  ``h`` is convex (linear minus
    the log of a positive concave function).  Along a ray ``w = t v``,
    ``h(t v) = t a^T v - log t / 2 - log g(v)``, minimised at
    ``t = 1 / (2 a^T v)`` with value ``(1 + log 2 + log r(v)) / 2``, where
    ``r(v) = a^T v / g(v)^2`` is the scale-free MMC value.  So ``min h =
    (1 + log 2 + log r*) / 2``: the minimisers of ``h`` are exactly the
    minimisers of ``r``, i.e. the diagonal MMC solutions, scaled so that
    ``a^T w = 1 / 2``.  The Newton step handles the bound ``w >= 0`` by the
    projected Newton method of Bertsekas (1982): variables at (or within
    ``eps`` of) zero with a positive gradient are fixed and take a scaled
    gradient step, the others a Newton step on the reduced Hessian, and an
    Armijo search along the projection arc ``max(w + alpha d, 0)``; each
    iterate is then moved to the minimiser of ``h`` on its ray (closed form
    above), which only lowers ``h`` and keeps ``a^T w = 1/2``.  It works in
    Jacobi units (``w_k a_k``), where ``h`` does not depend on the features'
    units.

**Back ends.**  On data built from an ``X`` of another array namespace
(PyTorch, CuPy, ``array-api-strict``: :meth:`MMCData.create`) both run
their sweeps over the dissimilar pairs -- ``D2`` of a point, the weighted
Gram product of the gradient (and Newton's Hessian), the bound's Gram
product -- on that device in float64, and keep the distances there; the
iterate, the projection's ``eigh`` and the line search's bookkeeping stay
on the host.  Per iteration the point or direction goes to the device,
the ``(r, r)`` gradient and bound Gram come back, and each line-search
trial returns two scalars: nothing of the pairs' size crosses.

Both stop on the certified relative duality gap ``(r(M) - LB) / r(M)``
with the bound ``LB`` of :mod:`._problem`, evaluated at each iterate (and
the best bound seen is kept: every one of them is valid); the returned
point is scaled to ``g(M) = 1``, so ``objective = f(M) = r(M)`` in the
paper's units, and ``info["scale_free"] = r(M)``.
"""

from dataclasses import dataclass
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from sklearn.utils._param_validation import Interval

from .._linesearch import backtracking
from .._reductions import Reduction
from .._solver import IterativeSolver
from .._validation import check_instance
from ..result import SolverResult
from ._problem import (
    DEGENERATE_MSG,
    MMCData,
    mmc_result,
    project_nonneg_halfspace,
    project_psd_halfspace,
)

__all__ = ["MMCProjectedGradient", "MMCNewton", "warm_start", "bound_polish"]


def _inner(a, b):
    return float(np.sum(a * b))


def _check_data(data):
    check_instance(data, MMCData, "data")


def project_spectraplex(Y):
    """Euclidean projection of symmetric ``Y`` onto ``{M PSD, tr(M) <= 1}``.

    ``Y = V diag(lam) V^T``: the projection is ``V diag(p) V^T`` with ``p``
    the projection of ``lam`` onto ``{p >= 0, sum p <= 1}``, i.e.
    ``max(lam, 0)`` or ``max(lam - theta, 0)`` with the threshold ``theta``
    that makes the sum 1 (sorting).
    """
    lam, V = np.linalg.eigh(0.5 * (Y + Y.T))
    p = np.maximum(lam, 0.0)
    total = float(np.sum(p))
    if total > 1.0:
        srt = np.sort(lam)[::-1]
        cums = np.cumsum(srt) - 1.0
        k = np.arange(1, lam.size + 1)
        ok = srt - cums / k > 0
        rho = int(k[ok][-1])
        theta = cums[rho - 1] / rho
        p = np.maximum(lam - theta, 0.0)
        total = float(np.sum(p))
        if total > 1.0:  # round-off of the threshold
            p = p / total
    V = V[:, p > 0]
    return (V * p[p > 0]) @ V.T


class _Space:
    """Coordinates in which the dissimilar differences are the rows of
    ``P`` (n_dissimilar, k): ``D2 = P X P`` per row and the gradient of
    ``sum sqrt(D2)``; subclasses give ``f``, the start and the projection.

    ``P`` and the distances stay on the data's device (the ``n``-sized
    work); the point ``X`` (k x k, or k) and the gradient are NumPy on the
    host, and the scalars the line search needs cross one transfer at a
    time (:class:`~cvxmetric.mmc._problem.MMCData`'s ``where``)."""

    P: np.ndarray
    data: MMCData

    def dist(self, X):
        where = self.data.where
        return where.rowdot(self.P @ where.dev(X), self.P)

    def grad(self, dist):
        G = self.data.where.host(self.P.T @ ((0.5 / self.data.xp.sqrt(dist))[:, None] * self.P))
        return 0.5 * (G + G.T)

    def g(self, dist):
        """``g = sum sqrt(D2)`` at positive distances."""
        return self.data.where.scalars(self.data.xp.sum(self.data.xp.sqrt(dist)))[0]

    def g_positive(self, dist):
        """``g``, or ``None`` unless every distance is positive."""
        return _g_positive(self.data, dist)

    def spread(self, dist):
        """Smallest and largest distance."""
        return _spread(self.data, dist)

    def bound(self, dist):
        """``(LB, allowance)`` at ``u = sqrt(D2)`` (:meth:`MMCData.dual_bound`)."""
        return self.data.dual_bound(self.data.xp.sqrt(dist), return_allowance=True)


def _g_positive(data, dist):
    """``sum sqrt(D2)``, or ``None`` unless every ``D2 > 0`` (one transfer
    off NumPy)."""
    if data.on_host:
        return float(np.sum(np.sqrt(dist))) if np.all(dist > 0) else None
    xp = data.xp
    lo, g = data.where.scalars(xp.min(dist), xp.sum(xp.sqrt(xp.maximum(dist, 0.0))))
    return g if lo > 0 else None


def _spread(data, dist):
    """``(min, max)`` of the distances."""
    return data.where.scalars(data.xp.min(dist), data.xp.max(dist))


class _WhiteSpace(_Space):
    """Full ``M`` in whitened coordinates: ``f = tr(Mw)``, ``D2 = psi Mw psi``."""

    def __init__(self, data):
        self.data = data
        self.P = data.psi
        self.r = data.psi.shape[1]

    def start(self):
        return np.eye(self.r) / self.r

    def from_user(self, x):
        return self.project(self.data.to_white(x))

    def to_user(self, X):
        return self.data.from_white(X)

    def f(self, X):
        return float(np.trace(X))

    def project(self, Y):
        return project_spectraplex(Y)


class _JacobiSpace(_Space):
    """Full ``M`` in Jacobi units with the exact projection onto
    ``{PSD, <A, M> <= 1}`` (``precondition=False``: Xing's coordinates up
    to the features' units)."""

    def __init__(self, data):
        self.data = data
        self.P = data.Z_D
        A = data.where.host(data.Z_S.T @ data.Z_S)
        self.A = 0.5 * (A + A.T)

    def start(self):
        d = self.A.shape[0]
        return np.eye(d) / max(float(np.trace(self.A)), 1e-300)

    def from_user(self, x):
        return self.project(self.data.to_jacobi(x))

    def to_user(self, X):
        return self.data.from_jacobi(X)

    def f(self, X):
        return _inner(self.A, X)

    def project(self, Y):
        return project_psd_halfspace(Y, self.A)


class _DiagonalSpace(_Space):
    """Diagonal ``M = diag(w)`` in Jacobi units (``a ~ 1``)."""

    def __init__(self, data):
        self.data = data
        self.Z2 = data.Z_D * data.Z_D
        self.a = data.a_jacobi  # 1 on K, 0 off K

    def start(self):
        w = (self.a > 0).astype(float)
        return w / float(self.a @ w)

    def from_user(self, x):
        return self.project(self.data.to_jacobi(x))

    def to_user(self, X):
        return self.data.from_jacobi(X)

    def f(self, X):
        return float(self.a @ X)

    def dist(self, X):
        return self.Z2 @ self.data.where.dev(X)

    def grad(self, dist):
        return self.data.where.host(self.Z2.T @ (0.5 / self.data.xp.sqrt(dist)))

    def project(self, Y):
        return project_nonneg_halfspace(Y, self.a)


def _warm_point(data, init):
    """The user's warm start (a result) as a point of ``data``'s variable."""
    return data.as_variable(init.info.get("w", init.M) if data.diagonal else init.M,
                            "init")


class ChangeOfVariables(Reduction):
    """MMC in the coordinates of a space (:class:`_WhiteSpace`,
    :class:`_JacobiSpace`, :class:`_DiagonalSpace`).

    ``apply`` returns the space built on the data (the reduced problem the
    projected gradient iterates on: distances, gradient, constraint
    function and projection in its coordinates) and the warm start
    projected into it; ``invert`` maps a point of the space back to the
    user's units.  The space itself is the inverse data.

    Parameters
    ----------
    space : type
        One of the space classes above.
    name : str
        The stage's name in the trace.
    """

    def __init__(self, space, name):
        self.space = space
        self.name = name

    def accepts(self, data):
        return isinstance(data, MMCData) and data.diagonal == (self.space is _DiagonalSpace)

    def apply(self, data, init):
        sp = self.space(data)
        x0 = None if init is None else sp.from_user(_warm_point(data, init))
        return sp, x0, sp

    def invert(self, x, sp):
        return sp.to_user(x)


#: The change of variables of each kind of problem (``precondition`` picks
#: between the two of a full ``M``).
WHITEN = ChangeOfVariables(_WhiteSpace, "whiten")
JACOBI = ChangeOfVariables(_JacobiSpace, "jacobi")
JACOBI_DIAGONAL = ChangeOfVariables(_DiagonalSpace, "jacobi-diagonal")


class PGState(NamedTuple):
    iter_num: int
    error: float  # certified relative gap (r_best - LB_best) / r_best
    g: float  # g at the iterate
    dist: np.ndarray  # (n_D,) D2 at the iterate
    grad: np.ndarray  # grad g at the iterate
    step: float  # Barzilai-Borwein step
    history: tuple  # the last g values (nonmonotone line search)
    best_x: np.ndarray
    best_r: float
    best_lb: float
    n_backtracks: int
    floor: float  # relative round-off allowance of the bound: no gap below


@dataclass
class MMCProjectedGradient(IterativeSolver):
    """Projected gradient ascent with the exact projection (method ``"fast"``).

    Attributes
    ----------
    maxiter : int
    tol : float
        Target certified relative gap ``(r - LB) / r``.  The result's
        status is ``optimal`` only when the certificate passes at the
        package's MMC tolerance, whatever ``tol``.
    memory : int
        Length of the nonmonotone line search's memory (1: monotone Armijo).
    sigma : float
        Armijo's sufficient-increase constant.
    precondition : bool
        Full ``M``: iterate in whitened coordinates (``tr(Mw) <= 1``, one
        ``eigh`` per projection); ``False`` iterates in Jacobi units with
        the exact projection onto ``{PSD, <A_S, M> <= 1}`` (a root search,
        ~23 ``eigh``), Xing's coordinates.  Diagonal ``M`` always runs in
        Jacobi units.
    max_time : float, optional
    """

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "memory": [Interval(Integral, 1, None, closed="left")],
        "sigma": [Interval(Real, 0, 1, closed="neither")],
        "precondition": ["boolean"],
    }

    maxiter: int = 5_000
    tol: float = 1e-8
    memory: int = 10
    sigma: float = 1e-4
    precondition: bool = True

    name = "fast"

    def check_data(self, data):
        _check_data(data)

    def trivial_result(self, data):
        """Degenerate data: :meth:`MMCData.degenerate_solution`, certified."""
        return _degenerate_result(data, self.name) if data.degenerate else None

    def reductions(self, data):
        """The change of variables the iterations run in (whitened
        coordinates, or Jacobi units: see ``precondition``)."""
        if data.diagonal:
            return [JACOBI_DIAGONAL]
        return [WHITEN if self.precondition else JACOBI]

    def init_state(self, sp, init=None):
        """The start in the space ``sp`` (the reduced problem): ``init``,
        a point of ``sp``, or the space's default start."""
        start = sp.start()
        x = start if init is None else init
        dist = sp.dist(x)
        lo, hi = sp.spread(dist)
        if not lo > 1e-12 * max(hi, 0.0):
            # a warm start that (nearly) zeroes a pair has a huge or
            # infinite gradient: blend in a little of the starting point
            x = (1 - 1e-6) * x + 1e-6 * start
            dist = sp.dist(x)
        gx = sp.g(dist)
        grad = sp.grad(dist)
        lb, allow = sp.bound(dist)
        r = sp.f(x) / gx ** 2
        # first step: a move of the size of x along the gradient
        step = np.sqrt(_inner(x, x) / max(_inner(grad, grad), 1e-300))
        err = (r - lb) / r
        return x, PGState(0, err, gx, dist, grad, step, (gx,), x, r, lb, 0,
                          2.0 * allow)

    def converged(self, state):
        # the certified gap cannot go below the bound's round-off allowance
        # (nearly dependent features): stop there instead of at maxiter
        return state.error <= max(self.tol, state.floor)

    def update(self, x, state, sp):
        grad = state.grad
        direction = sp.project(x + state.step * grad) - x
        slope = _inner(grad, direction)  # >= 0: the chord is an ascent direction
        d_dist = sp.dist(direction)  # D2 is linear: D2(x + a d) = D2 + a D2(d)
        g_ref = max(state.history)
        # near the optimum the increase of g falls below the round-off of
        # its evaluation while the iterate is still moving (the certificate
        # needs an accurate point, not only an accurate g): the test allows
        # that round-off, so steps continue where they would stall
        noise = 1e-14 * state.g

        def trial(alpha):
            dist = state.dist + float(alpha) * d_dist
            return dist, sp.g_positive(dist)

        search = backtracking(
            trial, lambda alpha, v: v[1] is not None
            and v[1] >= g_ref + self.sigma * alpha * slope - noise,
            min_step=1e-20, deadline=self.deadline)
        alpha, backtracks = search.step, search.backtracks
        dist, g_new = search.value
        if not search.accepted:
            # no increase possible (x is stationary), or out of time
            alpha, dist, g_new = 0.0, state.dist, state.g
        x_new = x + alpha * direction
        grad_new = sp.grad(dist) if alpha > 0 else grad
        # Barzilai-Borwein (BB1) step for the concave g: <s, s> / -<s, y>
        s = alpha * direction
        yv = grad_new - grad
        sy = -_inner(s, yv)
        ss = _inner(s, s)
        if sy > 0 and ss > 0:
            step = ss / sy
        else:
            step = 4.0 * state.step
        step = min(max(step, 1e-12 * state.step), 1e12 * state.step)
        history = (state.history + (g_new,))[-self.memory:]
        r = sp.f(x_new) / g_new ** 2
        lb_new, allow = sp.bound(dist)
        lb = max(state.best_lb, lb_new)
        best_x, best_r = state.best_x, state.best_r
        if r < best_r:
            best_x, best_r = x_new, r
        err = (best_r - lb) / best_r
        if alpha == 0.0:
            err = min(err, state.error)
        return x_new, PGState(state.iter_num + 1, err, g_new, dist, grad_new,
                              step, history, best_x, best_r, lb,
                              state.n_backtracks + backtracks,
                              min(state.floor, 2.0 * allow))

    def solution(self, x, state):
        # the best point seen, not the last one
        return state.best_x

    def finalize(self, x, state, data):
        x = data.normalize(x)
        cert = data.certificate(
            x, bound=state.best_lb, solver=self.name,
            tolerances={"tol": self.tol, "memory": self.memory,
                        "sigma": self.sigma, "precondition": self.precondition})
        res = mmc_result(data, x, cert, "", state.iter_num, self.name,
                      {"n_backtracks": state.n_backtracks}, 0.0)
        return res.M, cert, res.info


class _NewtonProblem:
    """Xing's diagonal objective ``h`` in Jacobi units (``w_k a_k``: ``h``
    takes the same values whatever the features' units), on the
    coordinates ``K`` some dissimilar pair varies along: ``Psi`` (n_D, k)
    the squared dissimilar differences there, ``a`` (k,) the similar
    ones' sums."""

    def __init__(self, data):
        self.data = data
        where, xp = data.where, data.xp
        Z2 = data.Z_D * data.Z_D
        varies = where.host(xp.max(Z2, axis=0)) > 0
        self.K = np.flatnonzero(varies)
        self.Psi = where.columns(Z2, varies)  # (n_D, k), on the data's device
        self.a = data.a_jacobi[self.K]

    def dist(self, w):
        """``D2`` at ``w`` (on the data's device)."""
        return self.Psi @ self.data.where.dev(w)

    def h(self, w):
        """``h(w)`` and ``D2``; ``inf`` off the domain (a zero distance)."""
        dist = self.dist(w)
        g = _g_positive(self.data, dist)
        if g is None:
            return np.inf, dist
        return float(self.a @ w) - np.log(g), dist

    def derivatives(self, w, dist):
        """Gradient and Hessian of ``h`` at ``w`` (``D2 = dist > 0``)."""
        where, xp = self.data.where, self.data.xp
        root = xp.sqrt(dist)
        (g,) = where.scalars(xp.sum(root))
        grad_g = where.host(self.Psi.T @ (0.5 / root))  # (k,)
        grad = self.a - grad_g / g
        # Hessian of g: -sum_D psi psi^T / (4 D2^(3/2)), one weighted Gram
        H = where.host(self.Psi.T @ ((0.25 / (root * dist))[:, None] * self.Psi)) / g
        H += np.outer(grad_g, grad_g) / g ** 2
        return grad, 0.5 * (H + H.T)

    def user(self, w):
        """``w`` on every feature, in the user's units (0 off ``K``)."""
        out = np.zeros(self.data.n_features)
        out[self.K] = w
        return self.data.from_jacobi(out)

    def gap(self, w, lb):
        """The relative gap ``(r - lb) / r`` of the MMC value at ``w``."""
        r = self.data.scale_free(self.user(w))
        return (r - lb) / r


class RelevantCoordinates(Reduction):
    """Diagonal MMC to :class:`_NewtonProblem`: Jacobi units, restricted
    to the coordinates some dissimilar pair varies along (the others do
    not change ``g``; their optimal weight is 0).  The warm start is
    clipped at 0 and restricted; ``invert`` puts a point back on every
    feature, in the user's units.  The reduced problem is the inverse
    data."""

    name = "relevant-coordinates"

    def accepts(self, data):
        return isinstance(data, MMCData) and data.diagonal

    def apply(self, data, init):
        prob = _NewtonProblem(data)
        w0 = None
        if init is not None:
            w0 = data.to_jacobi(np.maximum(_warm_point(data, init), 0.0))[prob.K]
        return prob, w0, prob

    def invert(self, w, prob):
        return prob.user(w)


RELEVANT_COORDINATES = RelevantCoordinates()


class NewtonState(NamedTuple):
    iter_num: int
    error: float  # certified relative gap (r - LB) / r
    h: float
    grad: np.ndarray  # (k,) gradient of h on the relevant coordinates
    best_lb: float


@dataclass
class MMCNewton(IterativeSolver):
    """Projected Newton on Xing's diagonal objective ``h`` (method ``"newton"``).

    Only for diagonal problems (``data.diagonal``).  Coordinates that no
    dissimilar pair varies along do not change ``g``; their optimal weight
    is 0 (``a_k > 0``) or irrelevant (``a_k = 0``), and they are fixed at 0.

    Attributes
    ----------
    maxiter : int
    tol : float
        Target certified relative gap ``(r - LB) / r``.
    sigma : float
        Armijo constant of the projected line search.
    eps : float
        Bertsekas' ``epsilon`` of the active set, relative to ``max(w)``.
    max_time : float, optional
    """

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "sigma": [Interval(Real, 0, 1, closed="neither")],
        "eps": [Interval(Real, 0, None, closed="neither")],
    }

    maxiter: int = 200
    tol: float = 1e-10
    sigma: float = 1e-4
    eps: float = 1e-3

    name = "newton"

    def check_data(self, data):
        _check_data(data)
        if not data.diagonal:
            raise ValueError(
                "data: the Newton method of Xing et al. (Sec. 2.2) is for the "
                "diagonal problem; build MMCData with diagonal=True or use "
                "MMCProjectedGradient.")

    def trivial_result(self, data):
        """Degenerate data: ``h`` is unbounded below (``w_k -> inf`` along a
        coordinate with ``a_k = 0``); the certified optimum 0 instead."""
        return _degenerate_result(data, self.name) if data.degenerate else None

    def reductions(self, data):
        """Jacobi units, on the coordinates some dissimilar pair varies along."""
        return [RELEVANT_COORDINATES]

    def init_state(self, prob, init=None):
        """The start on the ray through ``init`` (a point of the reduced
        problem ``prob``) or through ``1``, at its minimiser of ``h``."""
        k = len(prob.K)
        if init is not None:
            w0 = init / max(float(prob.a @ init), 1e-300)
            lo, hi = _spread(prob.data, prob.dist(w0))
            if not lo > 1e-12 * max(hi, 0.0):
                # keep every distance positive (h is finite, its Hessian too)
                w0 = (1 - 1e-6) * w0 + 1e-6 * np.ones(k) / float(np.sum(prob.a))
        else:
            w0 = np.ones(k)
        # the minimiser of h along the ray through w0: a^T w = 1/2
        w = w0 / (2.0 * float(prob.a @ w0))
        h, dist = prob.h(w)
        grad, _ = prob.derivatives(w, dist)
        lb = prob.data.bound_at(prob.user(w))
        err = prob.gap(w, lb)
        return w, NewtonState(0, err, h, grad, lb)

    def update(self, w, state, prob):
        h, dist = prob.h(w)
        grad, H = prob.derivatives(w, dist)
        # Bertsekas' active set: at (or near) the bound and pushing against it
        eps = min(self.eps * float(np.max(w)),
                  float(np.linalg.norm(w - np.maximum(w - grad, 0.0))))
        fixed = (w <= eps) & (grad > 0)
        free = ~fixed
        d = np.zeros_like(w)
        if np.any(free):
            Hf = H[np.ix_(free, free)]
            # a tiny ridge keeps the solve defined when psi_D is rank
            # deficient (h is then flat along some directions)
            ridge = 1e-12 * max(float(np.trace(Hf)) / Hf.shape[0], 1e-300)
            try:
                L = np.linalg.cholesky(Hf + ridge * np.eye(Hf.shape[0]))
                d[free] = -np.linalg.solve(L.T, np.linalg.solve(L, grad[free]))
            except np.linalg.LinAlgError:
                d[free] = -grad[free] / np.maximum(np.diag(Hf), 1e-300)
        if np.any(fixed):
            diagH = np.maximum(np.diag(H)[fixed], 1e-300)
            d[fixed] = -grad[fixed] / diagH
        # near the optimum a Newton step lowers h by less than the round-off
        # of evaluating it (its terms are O(1)); the test allows that
        # round-off, so the quadratic convergence of w is not cut short
        noise = 1e-14 * (1.0 + abs(float(prob.a @ w)) + abs(h - float(prob.a @ w)))

        def trial(alpha):
            w_new = np.maximum(w + alpha * d, 0.0)
            return (w_new, *prob.h(w_new))

        def accept(alpha, v):
            # sufficient decrease along the projection arc
            decrease = (alpha * float(-grad[free] @ d[free])
                        + float(grad[fixed] @ (w[fixed] - v[0][fixed])))
            return v[1] <= h - self.sigma * decrease + noise

        search = backtracking(trial, accept, min_step=1e-20, deadline=self.deadline)
        w_new, h_new, dist_new = search.value if search.accepted else (w, h, dist)
        # exact minimisation along the ray through w_new (closed form,
        # t = 1 / (2 a^T v)): h can only decrease, and the iterate stays on
        # the set a^T w = 1/2 where every minimiser of h lies
        t = 0.5 / float(prob.a @ w_new)
        w_new = t * w_new
        h_new, dist_new = prob.h(w_new)
        grad_new, _ = prob.derivatives(w_new, dist_new)
        lb = max(state.best_lb, prob.data.bound_at(prob.user(w_new)))
        err = prob.gap(w_new, lb)
        return w_new, NewtonState(state.iter_num + 1, err, h_new, grad_new, lb)

    def finalize(self, w, state, data):
        # the minimiser of h has a^T w = 1/2; the certificate rescales to g = 1
        # (``w``: the last iterate in the user's units; ``state.h``: h there)
        h = state.h
        cert = data.certificate(
            w, bound=state.best_lb, solver=self.name,
            tolerances={"tol": self.tol, "sigma": self.sigma, "eps": self.eps})
        res = mmc_result(data, data.normalize(w), cert, "", state.iter_num,
                      self.name, {"h": h, "w_newton": w}, 0.0)
        return res.M, cert, res.info


def _degenerate_result(data, name):
    """The certified optimum 0 of degenerate data, as a solver result."""
    from ..result import CertificateError, Status

    x = data.degenerate_solution()
    cert = data.certificate(x, solver=name)
    if not cert.passed:
        raise CertificateError(
            f"{DEGENERATE_MSG} The projector's objective "
            f"{cert.objective:.3g} is not negligible (the data are only "
            f"numerically degenerate); solve with the exact path.")
    return mmc_result(data, x, cert, Status.OPTIMAL, 0, name,
                   {"degenerate": DEGENERATE_MSG}, 0.0)


# ---------------------------------------------------------------------------
# What the exact path takes from the fast solvers (the registry's ``mmc``
# entry names these; cvxmetric.formulations.Formulation.solve_exact hands
# them over, so that the exact path never imports this module)
# ---------------------------------------------------------------------------


def warm_start(data):
    """The fast solution whose face the exact path's face reduction solves on.

    :class:`MMCProjectedGradient` with its defaults, run to completion
    (its ``maxiter`` reached is no warning: only the face of its point is
    used, and the exact path certifies its own point on the declared
    problem).

    Parameters
    ----------
    data : MMCData

    Returns
    -------
    SolverResult
    """
    return MMCProjectedGradient().run(data, warn=False)


def bound_polish(data, x, maxiter=500):
    """A dual bound ``LB(u)`` with ``u`` from a short fast run started at
    ``x``, and the run's iterations.

    ``LB(u)`` is a valid lower bound for *every* ``u > 0`` (see
    :mod:`._problem`); ``u = sqrt(D2_x)`` at a conic solver's point carries
    the point's error to first order, while the fast solvers' iterates,
    started at ``x``, approach the optimum's ``u`` in a few steps.  Only the
    bound is taken: the certified point is still ``x``.  The run is
    :class:`MMCNewton` (``maxiter=50``) for a diagonal problem,
    :class:`MMCProjectedGradient` (``maxiter``) for a full one, both with
    ``tol=1e-12``.

    Parameters
    ----------
    data : MMCData
    x : ndarray
        The point, ``M`` (d, d) or, diagonal, ``w`` (d,), in the paper's
        units.
    maxiter : int
        Iterations of the full problem's run.

    Returns
    -------
    bound : float
        ``-inf`` when the run fails (the plain certificate then stands).
    iterations : int
    """
    solver = (MMCNewton(tol=1e-12, maxiter=50) if data.diagonal
              else MMCProjectedGradient(tol=1e-12, maxiter=maxiter))
    warm = SolverResult(M=data.as_matrix(x), status="", objective=np.nan,
                        n_iter=0, certificate=None, method="",
                        info={"w": x} if data.diagonal else {})
    try:
        res = solver.run(data, warm, warn=False)
    except (ArithmeticError, np.linalg.LinAlgError, RuntimeError, ValueError):
        # opportunistic: without a better bound the plain certificate stands
        return -np.inf, 0
    return float(res.certificate.dual_bound), res.n_iter
