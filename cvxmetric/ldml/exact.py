"""LDML, exact: Eq. 2-3 of Guillaumin, Verbeek, Schmid (2010) in CVXPY.

The formulation (the negative of Eq. 2's log-likelihood, minimised)::

    minimise_{M PSD, b}  sum_p g(s_p (d_M(x_i, x_j) - b)) + lam R(M)

with ``g(u) = log(1 + e^u)`` (``-log sigma(b - d)`` for a similar pair,
``s_p = +1``; ``-log(1 - sigma(b - d))`` for a dissimilar one,
``s_p = -1``), ``R(M) = tr(M)`` or ``0.5 ||M||_F^2``; ``lam = 0`` is the
paper's Eq. 2.  Changes from the paper: none (``lam`` is an optional
regulariser, a ``cp.Parameter``).

Certificate.  For multipliers ``alpha_p = sigma(u_p)`` (the slopes at the
point, with ``b`` re-optimised so that ``sum_p alpha_p s_p = 0``) the dual
value is ``sum_p H(alpha_p) - lam R*(...)``, ``H`` the binary entropy; the
PSD part needs ``S(alpha) = sum_p alpha_p s_p C_p + lam I >= 0`` (trace) --
near an optimum it holds up to round-off, and the deficit is charged at a
bound ``tau >= tr(M*)`` on the optimum's trace: ``tau = f / lam`` with the
trace regulariser, and with ``lam = 0`` a bound on the SDP
``max tr(M) s.t. the level set {F <= F(0, b_0)}`` from its multipliers
(weak duality; the SDP's value is not trusted).  That same SDP decides
attainment: if it is unbounded, a direction of ``(M, b)`` decreases every
term forever -- the infimum is not attained (a separable set of pairs) --
and :class:`~cvxmetric.result.NotAttainedError` is raised, never a point.

The bound is pure (:meth:`LDMLData.dual_point`, :meth:`LDMLData.bound`:
evaluation, no solver); what sharpens it by solving -- the Newton repair of
the dual point, the strictly feasible direction, the level-set SDP -- is a
separate stage the caller runs first (:func:`bound_stages`).

A solver's point whose certificate falls short (Clarabel's
"optimal_inaccurate" on nearly separated pairs) is finished by Newton's
method on the face it found (:mod:`._polish`) and kept only if the
polished point's own certificate passes.
"""

import copy
import logging
import math
import time
import warnings
from typing import NamedTuple

import cvxpy as cp
import numpy as np
from scipy.optimize import brentq
from scipy.special import expit

from .._backend import Device, is_dask, is_numpy
from .._exact import SOLVERS, _outcome, solve_certified
from .._linalg import PairOperator, project_psd, whitening_basis
from .._settings import (
    CONTINUATION,
    DIRECTION_PAIRS,
    DIRECTION_RANK,
    FALLBACK_ITER,
    FALLBACK_TOL,
    LEVEL_SDP_MAX,
    LEVEL_SDP_PAIRS,
)
from .._trace import record
from .._validation import (
    check_indices,
    check_instance,
    check_option,
    check_samples,
    check_scalar,
)
from ..constraints import _row_ids, _zero_length
from ..model import DeclaredProblem
from ..result import (
    Certificate,
    InfeasibleError,
    NotAttainedError,
    SolverError,
    SolverResult,
    Status,
    UnboundedError,
)
from ._budget import expired, remaining
from ._polish import polish
from ._xp import PairsXP, logistic_xp, sigmoid_xp

__all__ = ["LDMLData", "DualPoint", "bound_stages", "staged_bound", "solve_exact",
           "declared_problem", "PAPER", "REGULARIZERS",
           "LEVEL_SDP_PAIRS", "LEVEL_SDP_MAX", "DIRECTION_PAIRS", "DIRECTION_RANK"]

logger = logging.getLogger(__name__)

REGULARIZERS = ("trace", "frobenius")


class DualPoint(NamedTuple):
    """The certificate's dual point at a point ``(M, b)``
    (:meth:`LDMLData.dual_point`) and what its bound reads from it."""

    b: float             #: the threshold, re-optimised
    alpha: np.ndarray    #: the slopes, balanced (sum_p alpha_p s_p = 0)
    entropy: float       #: sum_p H(alpha_p)
    S: np.ndarray        #: S(alpha) = sum_p alpha_p s_p C_p, symmetrised
    lam: float           #: the weight of I beside S (the trace regulariser's)
    low: float           #: lambda_min(S + lam I)
    closed: float | None = None  #: the bound in closed form (Frobenius), else None
    SB: np.ndarray | None = None  #: B^T (S + lam I) B on the span, when low < 0
    low_B: float = math.inf  #: its smallest eigenvalue
    margin: float = 0.0  #: the round-off that repairs add to the deficit


def bound_stages(data, dual, tau=None, f_upper=None):
    """The stages that improve the certificate's bound at ``dual`` by
    solving, run in order when its ``B^T (S + lam I) B`` is not PSD and the
    fit's budget is not spent; their outputs, for :meth:`LDMLData.bound`.

    1. the Newton repair of the dual point (:meth:`LDMLData.repair`, no
       SDP);
    2. when it fails, the strictly feasible direction
       (:meth:`LDMLData.strict_direction`, a small SDP, found once);
    3. with ``f_upper`` given, up to ``LEVEL_SDP_PAIRS`` pairs and
       ``LEVEL_SDP_MAX`` dimensions, and only when the bound so far falls
       short of the entropy: the level-set SDP
       (:meth:`LDMLData.level_min`).

    The SDPs are traced as ``"bound"`` stages (``"direction SDP
    (<solver>)"``, ``"level-set SDP (<solver>)"``).

    Returns
    -------
    dict
        ``repaired``, ``direction``, ``level``: those that ran.
    """
    known = {}
    if dual.SB is None or dual.low_B >= 0 or expired():
        # nothing to improve, or past the fit's budget: no repair, no SDP
        return known
    known["repaired"] = data.repair(dual)
    if known["repaired"] is None:
        known["direction"] = data.strict_direction(dual.alpha)
    ent = dual.entropy
    if f_upper is not None and data.n_pairs <= LEVEL_SDP_PAIRS \
            and data.d <= LEVEL_SDP_MAX \
            and data.bound(dual, tau, **known) < ent - 1e-12 * abs(ent):
        # sharper: min <S + lam I, M> over the level set holding M*
        known["level"] = data.level_min(dual.S + dual.lam * np.eye(data.d), f_upper, tau)
    return known


def staged_bound(data, M, tau=None, f_upper=None):
    """The certificate's bound at ``M`` (``b`` re-optimised) after the stages of
    :func:`bound_stages`: the dual point, the stages, then the pure
    :meth:`LDMLData.bound`."""
    dual = data.dual_point(M)  # b re-optimised
    return data.bound(dual, tau, **bound_stages(data, dual, tau, f_upper))


def _time_limit():
    """Seconds left in the fit's budget for one conic solve (``None``:
    no budget).  The solvers take it as their own limit (Clarabel's
    ``time_limit``, SCS's ``time_limit_secs``); CVXPY's compilation is not
    interruptible, so within a budget it runs first (and is kept for the
    solve) and the limit is what is left after it."""
    left = remaining()
    return None if math.isinf(left) else max(left, 1e-3)


def _attempts(prob, solvers, stage):
    """Solve ``prob`` with each solver in turn, yielding after each solve
    that did not fail; the caller judges the status and stops when it has
    what it needs.  CVXPY's "inaccurate" warning is silenced: the status is
    judged.  Within the fit's budget: each solve stops at what is left of
    it, and none starts once it is spent.  Each solve is traced as a
    ``"bound"`` stage called ``"<stage> (<solver>)"``: these auxiliary
    SDPs serve the certificate, not the problem."""
    for name in solvers:
        t0 = time.perf_counter()
        if expired():
            return
        if math.isfinite(remaining()):
            # compile first (kept for the solve): the solver's limit is then
            # what is left after the uninterruptible compilation
            try:
                prob.get_problem_data(name)
            except Exception as exc:  # noqa: BLE001 - the solve reports it
                logger.debug("%s: compilation failed: %s", name, exc)
            if expired():
                return
        limit = _time_limit()
        opts = {} if limit is None else \
            {"CLARABEL": {"time_limit": limit}, "SCS": {"time_limit_secs": limit}}.get(
                name, {})
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                prob.solve(solver=name, **opts)
        except cp.error.SolverError:
            record(f"{stage} ({name})", "bound", seconds=time.perf_counter() - t0,
                   status="error")
            continue
        status, n_iter, times = _outcome(prob, t0)
        record(f"{stage} ({name})", "bound", seconds=times["total"],
               iterations=n_iter, status=str(status))
        yield name


def _logistic(u):
    return np.logaddexp(0.0, u)


def _sigmoid(u):
    # scipy's expit: exact in both tails (1 - p would lose the small one)
    return expit(u)


class LDMLData:
    """Pairs, their labels and the regulariser of Eq. 2.

    Parameters
    ----------
    X : array_like (n, D)
    pairs : array_like of int (P, 2)
    y : array_like (P,)
        +1 same class, -1 different.
    lam : float >= 0
    regularizer : {"trace", "frobenius"}

    ``X`` of another array-API namespace (a PyTorch or CuPy tensor) stays
    where it is: the passes over the pairs -- distances, the slopes, ``S(alpha)
    = sum_p w_p phi_p phi_p^T`` as one product, the certificate's dual point
    and its eigenvalues -- run there in float64 (:class:`._xp.PairsXP`).  A
    host copy, moved once, serves what runs on NumPy only (validation, the
    CVXPY models and SDP stages, the Newton polish); ``transfers`` counts
    every move.
    """

    _dev = None  # the pairs on the device of X (PairsXP, a Device), or None on NumPy

    def __init__(self, X, pairs, y, *, lam=0.0, regularizer="trace"):
        Xd = None
        if not is_numpy(X) and not isinstance(X, (list, tuple)):
            if is_dask(X):
                raise TypeError("X: LDMLData runs on NumPy and array-API arrays; got a "
                                "dask array (AllPairs takes one). Compute it first.")
            where = Device.of(X)
            Xd, X = X, where.host(X)  # once: validation, host stages
        self.X = check_samples(X)
        self.pairs = check_indices(pairs, "pairs", self.X.shape[0], width=2)
        y = np.asarray(y)
        if y.shape != (len(self.pairs),) or not np.all(np.isin(y, (-1, 1))):
            raise ValueError(f"y: expected +1 / -1, one per pair ({len(self.pairs)}).")
        # identical instances by row ids (no (P, D) array of comparisons)
        same = _zero_length(_row_ids(self.X), self.pairs[:, 0], self.pairs[:, 1])
        if np.any(same):
            raise ValueError(f"pairs: {int(same.sum())} pair(s) join identical "
                             f"instances (first at row {int(np.flatnonzero(same)[0])}).")
        self.s = y.astype(float)
        self.lam = check_scalar(lam, "lam", low=0.0)
        self.regularizer = check_option(regularizer, "regularizer", REGULARIZERS)
        # the difference vectors are stored only while small (the operator's
        # budget); beyond, distances and S(alpha) take sample-space forms
        self.op = PairOperator(self.X, self.pairs)
        self._Phi = self.op.Phi
        self._direction = None
        if Xd is not None:
            self._dev = PairsXP(where, Xd, self.pairs[:, 0], self.pairs[:, 1], self.s)

    @property
    def transfers(self):
        """The counted moves of a device instance
        (:class:`~cvxmetric._backend.Transfers`); None on NumPy."""
        return None if self._dev is None else self._dev.transfers

    def backend_info(self):
        """``{"backend", "device", "transfers"}`` of a device instance, for a
        result's ``info`` (empty on NumPy)."""
        return {} if self._dev is None else self._dev.info()

    def _on_device(self, M):
        """``(M on the device, whether it came from the host)``."""
        return self._dev.dev(M, float), is_numpy(M)

    @property
    def Phi(self):
        """The difference vectors ``x_i - x_j`` (P, D), built on first use
        (the CVXPY models need them)."""
        if self._Phi is None:
            self._Phi = self.X[self.pairs[:, 0]] - self.X[self.pairs[:, 1]]
        return self._Phi

    @property
    def d(self):
        return self.X.shape[1]

    @property
    def n_pairs(self):
        return len(self.s)

    def distances(self, M):
        """``phi_p^T M phi_p`` of every pair; on a device instance computed
        there, returned where ``M`` is (host or device)."""
        if self._dev is not None:
            Md, host = self._on_device(M)
            dist = self._dev.distances(Md)
            return self._dev.host(dist) if host else dist
        if self._Phi is not None:
            return np.sum((self._Phi @ M) * self._Phi, axis=1)
        return self.op.sqdist(M=0.5 * (M + M.T))

    def gram(self, w):
        """``sum_p w_p phi_p phi_p^T`` (D, D), symmetrised; on a device
        instance one product there, returned where ``w`` is."""
        if self._dev is not None:
            wd, host = self._on_device(w)
            S = self._dev.gram(wd)
            return self._dev.host(S) if host else S
        S = self.op.gram(w)
        return 0.5 * (S + S.T)

    def reg(self, M):
        if not is_numpy(M):  # on the device: one scalar moved
            xp = self._dev.xp
            r = xp.linalg.trace(M) if self.regularizer == "trace" \
                else 0.5 * xp.sum(M * M)
            return self._dev.scalars(r)[0]
        if self.regularizer == "trace":
            return float(np.trace(M))
        return 0.5 * float(np.sum(M * M))

    def objective(self, M, b):
        if self._dev is not None:
            xp, Md = self._dev.xp, self._on_device(M)[0]
            f = xp.sum(logistic_xp(xp, self._dev.s * (self._dev.distances(Md) - b)))
            return self._dev.scalars(f)[0] + self.lam * self.reg(Md)
        return float(np.sum(_logistic(self.s * (self.distances(M) - b)))) \
            + self.lam * self.reg(M)

    def best_b(self, dist):
        """The intercept minimising the loss at fixed distances (one root;
        on the device for device distances)."""
        if not is_numpy(dist):
            return self._dev.best_b(dist)
        s = self.s

        def grad(b):  # d/db of sum g(s (d - b)) = -sum s sigma(s (d - b))
            return -float(np.sum(s * _sigmoid(s * (dist - b))))

        lo, hi = float(dist.min()) - 50.0, float(dist.max()) + 50.0
        while grad(lo) > 0:
            lo -= 2 * (hi - lo)
        while grad(hi) < 0:
            hi += 2 * (hi - lo)
        return brentq(grad, lo, hi, xtol=1e-15, rtol=1e-15, maxiter=500)

    def level_min(self, S, f_upper, tau, solvers=SOLVERS):
        """A lower bound on ``min <S, M>`` over ``M`` PSD and ``b`` in the
        level set ``{s_p (d_p - b) <= kappa}`` that holds the optimum
        (module docstring), hence on ``<S, M*>``; ``-inf`` when none is
        found.

        The SDP's value is not trusted (an inaccurate solve answered above
        the true minimum on wine's pairs); its multipliers ``mu`` are:
        clipped at 0 and balanced (``sum_p mu_p s_p = 0``, so ``b`` drops
        out), weak duality gives ``<S, M> >= lambda_min(S + sum_p mu_p s_p
        C_p) tr M - kappa sum_p mu_p`` on the level set, and ``tr M* <=
        tau`` bounds the first term."""
        if tau is None or not math.isfinite(tau) or expired():
            return -math.inf
        kappa = math.log(math.expm1(f_upper)) if f_upper < 700 else f_upper
        cache = getattr(self, "_level", None)
        if cache is None or cache[0] != kappa:
            M = cp.Variable((self.d, self.d), PSD=True)
            b = cp.Variable()
            Sp = cp.Parameter((self.d, self.d), symmetric=True)
            dist = cp.sum(cp.multiply(self.Phi @ M, self.Phi), axis=1)
            prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(Sp, M))),
                              [cp.multiply(self.s, dist - b) <= kappa])
            cache = self._level = (kappa, prob, Sp)
        _, prob, Sp = cache
        Sp.value = 0.5 * (S + S.T)
        best = -math.inf
        for _ in _attempts(prob, solvers, "level-set SDP"):
            mu = prob.constraints[0].dual_value
            if prob.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or mu is None:
                continue
            mu = self._balanced(np.maximum(np.asarray(mu, dtype=float).ravel(), 0.0))
            S2 = Sp.value + self.gram(mu * self.s)
            low = float(np.linalg.eigvalsh(0.5 * (S2 + S2.T))[0])
            best = max(best, min(low, 0.0) * tau - kappa * float(mu.sum()))
            if prob.status == cp.OPTIMAL:
                break
        return best

    def _balanced(self, w):
        """``w >= 0`` with the larger label's side scaled down so that
        ``sum_p w_p s_p = 0`` (in place)."""
        pos = self.s > 0
        w_pos, w_neg = float(w[pos].sum()), float(w[~pos].sum())
        if w_pos > w_neg:
            w[pos] *= w_neg / w_pos
        elif w_neg > w_pos:
            w[~pos] *= w_pos / w_neg
        return w

    @staticmethod
    def _entropy(a):
        return -float(np.sum(a * np.log(np.where(a > 0, a, 1.0))
                             + (1 - a) * np.log(np.where(a < 1, 1 - a, 1.0))))

    def dual_point(self, M):
        """The certificate's dual point at ``M``: the slopes at ``(M, b)``
        with ``b`` the best threshold (module docstring), and what the
        bound reads from them.  Evaluation only (no solver; the threshold
        is one root).

        Returns
        -------
        DualPoint
        """
        if self._dev is not None:
            return self._dual_point_device(M)
        dist = self.distances(M)
        b = self.best_b(dist)
        # the slopes, balanced so that sum_p alpha_p s_p = 0 holds beyond the
        # root finder's precision (the dual's equality constraint)
        a = self._balanced(_sigmoid(self.s * (dist - b)))
        ent = self._entropy(a)
        S = self.gram(a * self.s)  # sum_p alpha_p s_p C_p
        if self.regularizer == "frobenius" and self.lam > 0:
            w = np.linalg.eigvalsh(-S)
            closed = ent - 0.5 / self.lam * float(np.sum(np.maximum(w, 0.0) ** 2))
            return DualPoint(b, a, ent, S, 0.0, 0.0, closed)
        lam = self.lam if self.regularizer == "trace" else 0.0
        low = float(np.linalg.eigvalsh(S)[0]) + lam
        return self._dual_on_span(b, a, ent, S, lam, low)

    def _dual_point_device(self, M):
        """:meth:`dual_point` with its passes and eigenvalues in float64 on
        the device: only the scalars, ``S`` (D, D) and the slopes (P,)
        come to the host."""
        dev = self._dev
        xp = dev.xp
        dist = dev.distances(self._on_device(M)[0])
        b = dev.best_b(dist)
        a = dev.balanced(sigmoid_xp(xp, dev.s * (dist - b)))
        S = dev.gram(a * dev.s)
        ent = dev.entropy(a)
        host = dev.host
        if self.regularizer == "frobenius" and self.lam > 0:
            w = xp.maximum(dev.eigvalsh(-S), 0.0)
            ent, sq = dev.scalars(ent, xp.sum(w * w))
            return DualPoint(b, host(a), ent, host(S), 0.0, 0.0,
                             ent - 0.5 / self.lam * sq)
        lam = self.lam if self.regularizer == "trace" else 0.0
        ent, low = dev.scalars(ent, dev.eigvalsh(S)[0])
        return self._dual_on_span(b, host(a), ent, host(S), lam, low + lam)

    def _dual_on_span(self, b, a, ent, S, lam, low):
        """The dual point, with ``B^T (S + lam I) B`` on the data's span
        when ``S + lam I`` is not PSD."""
        if low >= 0:
            return DualPoint(b, a, ent, S, lam, low)
        # the dual asks S + lam I >= 0 only on the data's span, where the
        # problem lives; in its whitened coordinates (Weyl: lambda_min(B^T
        # (S + eps S(v)) B) >= low_B + eps c; the margin covers the
        # round-off of the computed eigenvalues)
        B = self.basis()
        SB = B.T @ (S + lam * np.eye(self.d)) @ B
        margin = 1e-12 * max(1.0, float(np.abs(SB).max())) * len(SB)
        SB = 0.5 * (SB + SB.T)
        low_B = float(np.linalg.eigvalsh(SB)[0])
        return DualPoint(b, a, ent, S, lam, low, None, SB, low_B, margin)

    def bound(self, dual, tau=None, *, repaired=None, direction=None, level=None):
        """The certificate's lower bound on the optimum at a dual point, from
        what is known about it: pure evaluation, no solver runs.

        The entropy bound needs ``S(alpha) + lam I >= 0`` on the data's
        span.  Its deficit is charged at ``tau >= tr(M*)`` (when finite);
        the stages that remove or bound it by solving run before, at the
        caller's choice (:func:`bound_stages`), and their outputs are
        passed here: ``repaired``, the entropy at the Newton repair of the
        dual point (:meth:`repair`); ``direction``, that of
        :meth:`strict_direction`, along which ``alpha`` is made dual
        feasible; ``level``, the level-set SDP's bound on ``min <S + lam I,
        M>`` (:meth:`level_min`).  The best of these is returned (``-inf``
        when none applies).

        Parameters
        ----------
        dual : DualPoint
            From :meth:`dual_point`.
        tau : float, optional
        repaired, direction, level : optional

        Returns
        -------
        float
        """
        if dual.closed is not None:
            return dual.closed
        if dual.low >= 0 or dual.low_B >= 0:
            return dual.entropy
        bounds = [-math.inf]
        if tau is not None and math.isfinite(tau):
            bounds.append(dual.entropy + tau * dual.low)
        if repaired is not None:
            bounds.append(repaired)
        if direction is not None:
            idx, v, c = direction
            eps = (-dual.low_B + dual.margin) / c
            a2 = dual.alpha.copy()
            a2[idx] += eps * v
            if float(a2.max()) <= 1.0:
                bounds.append(self._entropy(a2))
        if level is not None:
            bounds.append(dual.entropy + level)
        return max(bounds)

    def dual_bound(self, M, b, tau=None, **known):
        """:meth:`bound` at the dual point of ``(M, b)`` (:meth:`dual_point`,
        ``b`` re-optimised): pure evaluation, no solver runs; ``known`` are
        the outputs of the stages already run (:func:`bound_stages`)."""
        return self.bound(self.dual_point(M), tau, **known)

    def repair(self, dual):
        """The Newton repair of a dual point whose ``B^T (S + lam I) B`` is
        not PSD: the entropy at a repaired dual point, or ``None`` (also
        when nothing is to repair).  A stage that solves (conjugate
        gradients), run by :func:`bound_stages`; see :meth:`_newton_repair`."""
        if dual.SB is None or dual.low_B >= 0:
            return None
        return self._newton_repair(dual.alpha, dual.SB, dual.margin)

    def known_direction(self):
        """The direction of :meth:`strict_direction` when already found,
        else ``None``; no solver runs."""
        return self._direction if isinstance(self._direction, tuple) else None

    def basis(self):
        """``B`` (D, r): the span of the centred samples, whitened (``X_c B``
        has orthonormal columns times ``sqrt(n)``); cached.

        Distances depend on ``M`` only through ``B^T``-coordinates, so the
        problem lives in ``r`` dimensions; whitening makes features of very
        different scales (wine's proline, ~1e3, beside ratios ~0.1) equally
        visible to the direction SDP and to the fast solvers."""
        B = getattr(self, "_B", None)
        if B is None:
            B = self._B = whitening_basis(self.X)
        return B

    def span(self):
        """``Q`` (D, r): an orthonormal basis of the same span as
        :meth:`basis` (its columns normalised); cached."""
        Q = getattr(self, "_Q", None)
        if Q is None:
            B = self.basis()
            Q = self._Q = B / np.linalg.norm(B, axis=0)
        return Q

    def value_at_zero(self):
        """``F(0, b_0) = min_b F(0, b)``, the value at ``M = 0`` (every
        term of an optimum is at most this); cached."""
        f0 = getattr(self, "_f0", None)
        if f0 is None:
            f0 = self._f0 = float(np.sum(_logistic(-self.s * self.best_b(
                np.zeros(self.n_pairs)))))
        return f0

    def _newton_repair(self, a, SB, margin, maxiter=50):
        """The entropy bound at a dual point near ``alpha`` whose ``B^T
        S B`` is PSD, or ``None``.

        A primal step ``(dM, db) = (B Y B^T, db)`` moves the slopes, to
        first order, by ``delta_p = s_p kappa_p (phi_p^T dM phi_p - db)``
        (``kappa = alpha (1 - alpha)``, ``db`` keeping ``sum_p delta_p s_p =
        0``), and ``S`` by ``H(Y)``, the Hessian of ``min_b F`` in ``Y``.
        ``alpha' = alpha + delta`` is taken *exactly linear*, so ``S(alpha')
        = S + H(Y)`` exactly: conjugate gradients on ``H(Y) = -N + eps I``
        (``N`` the negative part of ``B^T S B``, ``eps`` its size) until
        the residual is below ``eps / 2`` leave ``B^T S(alpha') B >= eps / 2
        I``.  The dual point is then checked as it is: ``0 <= alpha' <= 1``
        and ``B^T S(alpha') B`` PSD, recomputed from ``alpha'``.  A few
        passes over the pairs per iteration, no SDP."""
        B = self.basis()
        r = B.shape[1]
        kappa = a * (1.0 - a)
        k_sum = float(np.sum(kappa))
        if r == 0 or k_sum <= 0:
            return None

        def slopes(Y):  # delta_p s_p for the step Y
            d = self.distances(B @ Y @ B.T)
            d -= float(np.sum(kappa * d)) / k_sum
            return kappa * d

        def hess(Y):
            G = B.T @ self.gram(slopes(Y)) @ B
            return 0.5 * (G + G.T)

        w, V = np.linalg.eigh(SB)
        neg = w < 0
        eps = max(float(-w[0]), margin)
        R = -(V[:, neg] * w[neg]) @ V[:, neg].T + eps * np.eye(r)
        Y, res, P = np.zeros((r, r)), R.copy(), R.copy()
        rr = float(np.sum(res * res))
        for _ in range(maxiter):
            if float(np.abs(np.linalg.eigvalsh(res)).max()) <= 0.5 * eps:
                break
            if expired():
                return None
            HP = hess(P)
            pHp = float(np.sum(P * HP))
            if pHp <= 0:
                return None
            step = rr / pHp
            Y += step * P
            res -= step * HP
            rr_new = float(np.sum(res * res))
            P = res + (rr_new / rr) * P
            rr = rr_new
        a2 = a + self.s * slopes(Y)
        if float(a2.min()) < 0.0 or float(a2.max()) > 1.0:
            return None
        S2 = B.T @ self.gram(a2 * self.s) @ B
        if self.lam > 0 and self.regularizer == "trace":
            S2 = S2 + self.lam * (B.T @ B)
        if float(np.linalg.eigvalsh(0.5 * (S2 + S2.T))[0]) < 0:
            return None
        return self._entropy(a2)

    def strict_direction(self, alpha=None, solvers=SOLVERS, size=DIRECTION_PAIRS):
        """Weights that make the dual strictly feasible, from a small SDP.

        ``v >= 0`` on a subset of at most ``size`` pairs with
        ``sum v = 1``, ``sum_p v_p s_p = 0`` and ``B^T S(v) B >= c I`` for
        the largest ``c``, ``S(v) = sum_p v_p s_p C_p`` and ``B`` the
        whitened basis of the data's span (:meth:`basis`; an SDP over the
        subset, in ``r <= D <= LEVEL_SDP_MAX`` dimensions).  ``c > 0`` proves
        the optimum attained -- a recession direction ``(dM, db)`` of the
        whole set (``dM`` in the span: the rest moves no distance) would
        give ``0 >= sum_p v_p s_p (<dM, C_p> - db) = <S(v), dM> > 0`` -- and
        repairs any dual point: ``alpha + eps v`` with ``eps = deficit /
        c`` makes ``B^T S B`` PSD, which is all the dual asks on a problem
        that lives in the span.

        The subset: the pairs with the largest ``alpha`` of each label (the
        pairs on the wrong side of ``b``, which keep the problem from being
        separable) when ``alpha`` is given, else a fixed random sample of
        each label.  Found once and kept; ``None`` (also kept, after three
        subsets) when no subset gives ``c > 0`` or no solver answers.

        Returns
        -------
        (idx, v, c) or None
        """
        if self._direction is not None:
            return self._direction if isinstance(self._direction, tuple) else None
        if expired():
            return None  # not kept: the budget of another fit may allow it
        if self.d > LEVEL_SDP_MAX or np.all(self.s > 0) or np.all(self.s < 0) \
                or self.basis().shape[1] > DIRECTION_RANK:
            return None
        self._direction_tries = getattr(self, "_direction_tries", 0) + 1
        P, K = self.n_pairs, size
        if P <= K:
            idx = np.arange(P)
        else:
            groups = [np.flatnonzero(self.s > 0), np.flatnonzero(self.s < 0)]
            rng = np.random.default_rng(0)
            parts = []
            for g in groups:
                k = min(len(g), K // 2)
                if alpha is None:
                    parts.append(rng.choice(g, size=k, replace=False))
                else:
                    parts.append(g[np.argpartition(-alpha[g], k - 1)[:k]])
            idx = np.sort(np.concatenate(parts))
        s = self.s[idx]
        # in whitened coordinates of the data's span (where the problem lives)
        Phi = (self.X[self.pairs[idx, 0]] - self.X[self.pairs[idx, 1]]) @ self.basis()
        unit = Phi / math.sqrt(max(float(np.max(np.sum(Phi * Phi, axis=1))), 1e-300))
        D = Phi.shape[1]  # r
        A = np.einsum("pi,pj->ijp", unit, unit).reshape(D * D, len(idx)) * s
        v = cp.Variable(len(idx), nonneg=True)
        c = cp.Variable()
        G = cp.reshape(A @ v, (D, D), order="F")
        prob = cp.Problem(cp.Maximize(c), [cp.sum(v) == 1, s @ v == 0, c <= 1,
                                           0.5 * (G + G.T) - c * np.eye(D) >> 0])
        found = None
        for _ in _attempts(prob, solvers, "direction SDP"):
            if v.value is None or prob.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
                continue
            w = np.maximum(v.value, 0.0)
            pos = s > 0
            w_pos, w_neg = float(w[pos].sum()), float(w[~pos].sum())
            if w_pos <= 0 or w_neg <= 0:
                continue
            w[pos] /= w_pos  # sum_p w_p s_p = 0 up to round-off
            w[~pos] /= w_neg
            # judged on the weights themselves
            Sv = Phi.T @ ((w * s)[:, None] * Phi)
            c_true = float(np.linalg.eigvalsh(0.5 * (Sv + Sv.T))[0])
            if c_true > 1e-9 * float(np.abs(Sv).max()):
                found = (idx, w, c_true)
            break
        if found is None and expired():
            # stopped by the fit's budget: not a try (not kept)
            self._direction_tries -= 1
            return None
        if found is not None or self._direction_tries >= 3:
            self._direction = found if found is not None else False
        return found

    def attained(self, solvers=SOLVERS, exhaustive=True):
        """Decide whether Eq. 2's optimum is attained.

        True with a regulariser, or when :meth:`strict_direction` (on a
        sample of pairs, first, beyond ``LEVEL_SDP_PAIRS`` pairs) or the
        recession SDP over every pair (:meth:`recession`) proves it;
        :class:`~cvxmetric.result.NotAttainedError` when a direction lowers
        every term forever.  With ``exhaustive=False`` the recession SDP is
        not run on more than ``LEVEL_SDP_PAIRS`` pairs and ``None`` says
        "undecided" (the fast solvers then watch for separation).
        """
        if np.all(self.s > 0) or np.all(self.s < 0):
            raise NotAttainedError(
                "y: every pair has the same label; the intercept b runs to "
                "infinity and the likelihood has no maximiser.")
        if self.lam > 0:
            return True
        if getattr(self, "_attained", None):
            return True
        # a strictly feasible dual direction (a small SDP on at most
        # DIRECTION_PAIRS pairs) proves it first: the recession SDP over
        # 2 000 pairs in 30 dimensions takes minutes
        if self.strict_direction(solvers=solvers) is not None:
            self._attained = True
            return True
        if (self.n_pairs > LEVEL_SDP_PAIRS and not exhaustive) or expired():
            return None
        # a sample of half the pairs can miss those that keep the set from
        # being separable (digits-pca30's 2 000 pairs): once more on twice
        # as many, still cheaper than the recession SDP (15 s against
        # minutes there)
        if self.n_pairs > DIRECTION_PAIRS and self.strict_direction(
                solvers=solvers, size=2 * DIRECTION_PAIRS) is not None:
            self._attained = True
            return True
        gain = self.recession(solvers)
        if not math.isfinite(gain) and expired():
            return None  # past the fit's budget: undecided
        if not math.isfinite(gain):
            raise SolverError("pairs: attainment of Eq. 2 could not be decided "
                              "(no solver answered the recession problem).")
        if gain > 1e-6:
            raise NotAttainedError(
                "pairs: a metric separates the similar from the dissimilar "
                "pairs (a direction of (M, b) lowers every term of Eq. 2 "
                f"forever, relative decrease {gain:.3g}); without a "
                "regulariser the likelihood has no maximiser. Set lam > 0.")
        self._attained = True
        return True

    def recession(self, solvers=SOLVERS):
        """The best strictly decreasing direction of Eq. 2 at infinity:
        ``max -sum_p s_p (<dM, C_p> - db)`` over ``dM`` PSD with
        ``tr(dM) <= 1`` and ``s_p (<dM, C_p> - db) <= 0`` for every pair (no
        term increases along it).  A bounded SDP; a value above round-off
        means the infimum is not attained (every term keeps falling along
        the direction), 0 that no such direction exists.  Returns the value
        (``nan`` when no solver answers)."""
        dM = cp.Variable((self.d, self.d), PSD=True)
        db = cp.Variable()
        arg = cp.multiply(self.s, cp.sum(cp.multiply(self.Phi @ dM, self.Phi), axis=1)
                          - db)
        prob = cp.Problem(cp.Maximize(-cp.sum(arg)), [arg <= 0, cp.trace(dM) <= 1])
        for _ in _attempts(prob, solvers, "recession SDP"):
            if prob.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) and dM.value is not None:
                # judged on the returned direction itself, not on the status
                D = project_psd(dM.value)
                a = self.s * (self.distances(D) - float(db.value))
                scale = float(np.max(np.sum(self.Phi ** 2, axis=1)))
                if float(np.max(a)) <= 1e-7 * scale:
                    return float(-np.sum(np.minimum(a, 0.0))) / scale
        return math.nan

    def trace_bound_at_zero(self, solvers=SOLVERS):
        """:meth:`trace_bound` at ``F(0, b_0)`` (the value at ``M = 0``),
        computed once and kept: the bound the fast solvers charge the PSD
        deficit at without a regulariser."""
        if getattr(self, "_tau0", None) is None:
            self._tau0 = self.trace_bound(self.value_at_zero(), solvers, exhaustive=False)
        return self._tau0

    def trace_bound(self, f_upper, solvers=SOLVERS, exhaustive=True):
        """``tau >= tr(M*)`` (module docstring), or NotAttainedError.

        ``inf`` without a regulariser when :meth:`strict_direction` exists
        (it proves attainment and repairs the certificate's dual point, no
        bound needed) or beyond ``LEVEL_SDP_PAIRS`` pairs, and when :meth:`attained` with
        ``exhaustive=False`` leaves attainment undecided."""
        if self.attained(solvers, exhaustive=exhaustive) is None:
            return math.inf
        if expired() and not (self.lam > 0):
            return math.inf
        cap = math.inf  # what the regulariser alone bounds
        if self.lam > 0 and self.regularizer == "trace":
            cap = f_upper / self.lam
        elif self.lam > 0:
            cap = math.sqrt(self.d * 2.0 * f_upper / self.lam)
        if math.isfinite(cap) or self.n_pairs > LEVEL_SDP_PAIRS \
                or self.strict_direction(solvers=solvers) is not None:
            # the regulariser bounds the trace already; the certificate
            # sharpens a loose bound by its own level-set SDP when needed
            return cap
        kappa = math.log(math.expm1(f_upper)) if f_upper < 700 else f_upper
        # in the data's span (beyond it the trace would be unbounded, and an
        # optimum has nothing there)
        Q = self.span()
        Psi = self.Phi @ Q
        M = cp.Variable((Q.shape[1],) * 2, PSD=True)
        b = cp.Variable()
        dist = cp.sum(cp.multiply(Psi @ M, Psi), axis=1)
        # every term of an optimum is at most F(0, b_0): the level set
        # {s_p (d_p - b) <= kappa} holds M*, so its largest trace bounds tr(M*)
        prob = cp.Problem(cp.Maximize(cp.trace(M)),
                          [cp.multiply(self.s, dist - b) <= kappa])
        cons = prob.constraints[0]
        for _ in _attempts(prob, solvers, "trace-bound SDP"):
            if prob.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) \
                    or cons.dual_value is None:
                continue
            # not the SDP's value but weak duality on its multipliers: with
            # mu >= 0, sum_p mu_p s_p = 0 and Q^T S(mu) Q >= c I (c > 0), tr M
            # <= kappa sum(mu) / c on the level set within the span (where
            # an optimum lies: the rest moves no distance and only adds)
            mu = self._balanced(np.maximum(np.asarray(cons.dual_value, float).ravel(), 0.0))
            G = Q.T @ self.gram(mu * self.s) @ Q
            c = float(np.linalg.eigvalsh(0.5 * (G + G.T))[0])
            if c > 0:
                return (1.0 + 1e-9) * kappa * float(mu.sum()) / c
        if expired():
            return math.inf  # past the fit's budget: no bound (nothing certified)
        raise SolverError("pairs: the level set of Eq. 2 could not be bounded (no "
                          "solver answered); no certificate can be given.")


def solve_exact(data, *, solvers=SOLVERS, tol=1e-9, verbose=False):
    """Certified exact solution of Eq. 2 (with its optional regulariser).

    Returns
    -------
    SolverResult
        ``M``, ``info["b"]`` (the threshold).

    Raises
    ------
    NotAttainedError
        When the infimum is not attained (module docstring).

    Notes
    -----
    Within a fit's budget (``max_time``, :mod:`._budget`) every conic solve
    stops at what is left of it (the solver's own time limit; CVXPY's
    compilation is not interruptible), no attempt starts once it is spent,
    and the polish, the repair and the SDPs are skipped.  A solve that the
    budget stops uncertified returns, with status ``time_limit_reached``,
    the point of lowest ``F`` among those the attempts produced and ``M =
    0`` (at the best ``b``), with that point's certificate -- as the fast
    solvers return their last iterate (``optimal`` only if that
    certificate passes).
    """
    t0 = time.perf_counter()
    f0 = data.value_at_zero()
    tau = data.trace_bound(f0, solvers)  # raises before any solve
    # Attempts, first certified wins (the same problem each time; the
    # certificate is on F as given):
    # 1. the model as printed (B = I), Clarabel;
    # 2. scaled: M_input = B M B^T with B = diag(1 / std) on the features
    #    that vary (a constant feature moves no distance), the objective
    #    divided by the number of pairs (O(1) terms) -- Clarabel fails on
    #    the sum of iris's 7 140 standardised terms and converges on their
    #    mean; less accurate where the first converges;
    # 3. continuation: whitened features, the mean, plus CONTINUATION *
    #    tr(M) -- a nearby problem whose level sets are bounded, on which
    #    Clarabel converges where it fails on Eq. 2 (digits-pca30's 2 000
    #    pairs at lam = 0); its point is judged by Eq. 2's certificate like
    #    any other, so in practice only its Newton polish on Eq. 2 passes;
    # 4. as printed, the other solvers (SCS), at a tolerance the polish
    #    finishes from, in bounded time.
    # Every point is finished by the Newton polish when its own
    # certificate does not pass (._polish).
    error = None
    seen = []  # (certificate, M, b) of every point an attempt produced
    for model, B, divisor, delta, names, opts in _attempt_models(data, solvers, tol):
        if expired():
            return _time_limited(data, seen, tau, t0)
        try:
            cert, info, Mv, bv = _solve_scaled(data, B, divisor, tau, f0, names, verbose,
                                               delta=delta, seen=seen, **opts)
            break
        except (InfeasibleError, UnboundedError):
            raise
        except SolverError as exc:
            error = exc
    else:
        if expired():
            return _time_limited(data, seen, tau, t0)
        raise error
    return SolverResult(M=Mv, status=info["status"], objective=cert.objective,
                        n_iter=info["n_iter"], certificate=cert, method="exact",
                        info={"b": bv, "trace_bound": tau,
                              "attempts": info["attempts"],
                              "model": model, "polished": info["polished"]},
                        time=time.perf_counter() - t0)


def _time_limited(data, seen, tau, t0):
    """The result of :func:`solve_exact` stopped by the fit's budget: the
    lowest ``F`` among the attempts' points and ``M = 0``, with its
    certificate (module docstring); status ``time_limit_reached`` unless
    that certificate passes."""
    M0 = np.zeros((data.d, data.d))
    b0 = data.best_b(np.zeros(data.n_pairs))
    f0 = data.objective(M0, b0)
    zero = Certificate.from_bound(f0, staged_bound(data, M0, tau), max_violation=0.0,
                                  min_eig=0.0, solver="zero")
    cert, Mv, bv = min(seen + [(zero, M0, b0)], key=lambda t: t[0].objective)
    status = Status.OPTIMAL if cert.passed else Status.TIME_LIMIT
    logger.info("exact: the budget (max_time) ran out after %d attempt point(s); "
                "returning F = %.10g (%s)", len(seen), cert.objective, status)
    return SolverResult(M=Mv, status=status, objective=cert.objective, n_iter=0,
                        certificate=cert, method="exact",
                        info={"b": float(bv), "trace_bound": tau, "attempts": [],
                              "model": "time_limit", "polished": False},
                        time=time.perf_counter() - t0, raw_status=Status.TIME_LIMIT)


def _attempt_models(data, solvers, tol):
    """``(name, B, divisor, delta, solvers, options)`` of the attempts of
    :func:`solve_exact` (``B`` None: the raw features)."""
    D = data.d
    sd = data.X.std(axis=0)
    keep = sd > 0
    exact = {"tol": tol}
    yield "printed", None, 1.0, 0.0, solvers[:1], exact
    yield ("scaled", np.eye(D)[:, keep] / sd[keep], float(data.n_pairs), 0.0, solvers[:1],
           exact)
    if data.basis().shape[1]:
        yield ("continuation", data.basis(), float(data.n_pairs), CONTINUATION,
               solvers[:1], exact)
    if len(solvers) > 1:
        yield "fallback", None, 1.0, 0.0, solvers[1:], {"tol": max(tol, FALLBACK_TOL),
                                                         "max_iter": FALLBACK_ITER}


def _solve_scaled(data, B, divisor, tau, f0, solvers, verbose, *, delta=0.0, tol=1e-9,
                  max_iter=None, seen=None):
    """One certified solve of Eq. 2 in the coordinates ``M_input = B M
    B^T``, the objective divided by ``divisor`` (plus ``delta tr(M)``, a
    continuation whose point only starts the polish): ``(certificate,
    info, M_input, b)``."""
    # B None: the model as printed, on the raw features
    Phi = data.Phi if B is None else data.Phi @ B  # (P, r)
    r = Phi.shape[1]
    M = cp.Variable((r, r), PSD=True, name="M")   # the metric on scaled features
    M_input = M if B is None else B @ M @ B.T      # (D, D)
    b = cp.Variable(name="b")
    lam = cp.Parameter(nonneg=True, value=data.lam, name="lam")
    dist = cp.sum(cp.multiply(Phi @ M, Phi), axis=1)   # (P,)
    loss = cp.sum(cp.logistic(cp.multiply(data.s, dist - b)))
    reg = cp.trace(M_input) if data.regularizer == "trace" else 0.5 * cp.sum_squares(M_input)
    problem = cp.Problem(cp.Minimize((loss + lam * reg) / divisor))
    if delta:
        problem = cp.Problem(problem.objective + cp.Minimize(delta * cp.trace(M)))

    polished = {}  # the certified polished point of the last solve, if any

    def value():
        Mv = M.value if B is None else B @ M.value @ B.T
        return 0.5 * (Mv + Mv.T)

    def certificate(Mv, bv, name, version, opts, times, sharpen=False):
        obj = data.objective(Mv, bv)
        # the stages that improve the bound by solving (the level-set SDP
        # only with sharpen), then the bound itself, which only evaluates
        dual = data.dual_point(Mv)  # b re-optimised
        known = bound_stages(data, dual, tau, f0 if sharpen else None)
        bound = data.bound(dual, tau, **known)
        min_eig = float(np.linalg.eigvalsh(Mv)[0])
        return Certificate.from_bound(obj, bound, max_violation=max(0.0, -min_eig),
                                      min_eig=min_eig, solver=name,
                                      solver_version=version, tolerances=opts,
                                      times=times)

    def certify(name, version, opts, times):
        polished.clear()
        Mv, bv = value(), float(b.value)
        # the cheap bounds first (no level-set SDP: tens of seconds on the
        # digits' 2 000 pairs)
        cert = certificate(Mv, bv, name, version, opts, times)
        if seen is not None:
            seen.append((cert, Mv, bv))  # a point to return if the budget ends
        if cert.passed:
            return cert
        # the solver's point, finished by Newton's method on its face
        # (._polish); kept only when its own certificate passes
        t0 = time.perf_counter()
        for Mp, bp in polish(data, Mv, bv):
            times = dict(times, polish=time.perf_counter() - t0)
            cert_p = certificate(Mp, bp, name, version, opts, times)
            if cert_p.passed:
                logger.info("%s: certified after the Newton polish (rel_gap %.2e -> "
                            "%.2e)", name, cert.rel_gap, cert_p.rel_gap)
                polished.update(M=Mp, b=bp)
                return cert_p
        # last, the level-set SDP's sharper bound at the solver's point
        return certificate(Mv, bv, name, version, opts, times, sharpen=True)

    if math.isfinite(remaining()):
        # within a budget, compile first (CVXPY keeps the compiled problem
        # for the solve): the solver's time limit is then what is left
        # after the compilation, which cannot be interrupted
        try:
            problem.get_problem_data(solvers[0])
        except Exception as exc:  # noqa: BLE001 - the solve reports it
            logger.debug("%s: compilation failed: %s", solvers[0], exc)
        if expired():
            raise SolverError("max_time: spent compiling the conic problem.")
    cert, info = solve_certified(problem, certify, solvers=solvers, tol=tol,
                                 max_iter=max_iter, verbose=verbose,
                                 time_limit=_time_limit())
    info["polished"] = bool(polished)
    if polished:
        return cert, info, polished["M"], polished["b"]
    return cert, info, value(), float(b.value)


# ---------------------------------------------------------------------------
# The declared problem (cvxmetric.model's contract)
# ---------------------------------------------------------------------------

#: The paper, as :class:`~cvxmetric.model.DeclaredProblem` cites it.
PAPER = ("Guillaumin, Verbeek, Schmid: Multiple instance metric learning from "
         "automatically labeled bags of faces (ECCV 2010)")


class _LDMLDeclared(DeclaredProblem):
    """Eq. 2 as printed (with its optional regulariser), in the user's units.

    The objective and the certificate are functions of ``M`` alone: ``F(M,
    b)`` at the best threshold for ``M`` (:meth:`LDMLData.best_b`, one
    root), as the exact path's certificate re-optimises ``b``; an upper
    bound on the optimum at any ``M``, equal to it at an optimal one.
    """

    def _tau(self):
        """``tau >= tr(M*)`` of the current ``data`` (its trace bound at
        ``F(0, b_0)``, kept per weight); raises NotAttainedError when the
        optimum is not attained, as the exact path does before any solve
        (kept too: :meth:`_known_tau` raises it again)."""
        key = (self.data.lam, self.data.regularizer)
        cached = getattr(self, "_tau_cache", None)
        if cached is None or cached[0] != key:
            try:
                tau = self.data.trace_bound(self.data.value_at_zero())
            except NotAttainedError as exc:
                self._tau_cache = (key, exc)
                raise
            self._tau_cache = (key, tau)
        tau = self._tau_cache[1]
        if isinstance(tau, NotAttainedError):
            raise NotAttainedError(str(tau))
        return tau

    def _known_tau(self):
        """:meth:`_tau` where it needs no solver: kept from a certified
        solve at this weight, or with a regulariser (its closed form);
        otherwise ``None`` (without a regulariser the trace bound and
        attainment are decided by SDPs, which a certificate does not run)."""
        cached = getattr(self, "_tau_cache", None)
        if self.data.lam > 0 or (cached is not None
                                 and cached[0] == (self.data.lam, self.data.regularizer)):
            return self._tau()
        return None

    def _family_objective(self, M):
        data = self.data
        return data.objective(M, data.best_b(data.distances(M)))

    def _certificate_at(self, M, dual, bound):
        """The certificate of ``M`` with ``bound`` at its dual point."""
        min_eig = float(np.linalg.eigvalsh(M)[0])
        return Certificate.from_bound(self.data.objective(M, dual.b), bound,
                                      max_violation=max(0.0, -min_eig), min_eig=min_eig,
                                      **self._certificate_args())

    def _staged_certificate(self, M, sharpen=False):
        """The exact path's certificate of ``M`` (``b`` re-optimised): the
        stages of :func:`bound_stages` -- with ``sharpen``, the level-set
        SDP's too (small problems only) -- then the bound."""
        data = self.data
        tau = self._tau()
        dual = data.dual_point(M)
        known = bound_stages(data, dual, tau, data.value_at_zero() if sharpen else None)
        return self._certificate_at(M, dual, data.bound(dual, tau, **known))

    def _family_certificate(self, M):
        # the slopes at M are the dual point (no multipliers are read from
        # the constraints).  Pure, no solver runs: the certificate that the
        # certified solve established for this same point, else the bound
        # from what is known without solving (tau, a direction found)
        kept = getattr(self, "_last_cert", None)
        if kept is not None and kept[1] is self.data and np.array_equal(kept[0], M):
            return kept[2]
        data = self.data
        tau = self._known_tau()
        dual = data.dual_point(M)
        return self._certificate_at(M, dual, data.bound(dual, tau,
                                                        direction=data.known_direction()))

    def _family_repair(self, M):
        # an interior-point point of Eq. 2 on nearly separated pairs stops
        # short of its certificate (the dual point read from its slopes is
        # first-order away): Newton's method on the face it found finishes
        # it, as in the exact path (._polish); the polished point is kept
        # only when its own certificate passes, and b follows it.  The
        # certificate of the point returned is kept for _family_certificate:
        # the stages that sharpen it run here, in the certified solve
        self._last_cert = None
        cert = self._staged_certificate(M)
        if not cert.passed:
            b = self.variables["b"].value
            b = self.data.best_b(self.data.distances(M)) if b is None else float(b)
            for Mp, bp in polish(self.data, M, b):
                cert_p = self._staged_certificate(Mp)
                if cert_p.passed:
                    logger.info("declared: certified after the Newton polish (rel_gap "
                                "%.2e -> %.2e)", cert.rel_gap, cert_p.rel_gap)
                    self.variables["b"].value = float(bp)
                    self._last_cert = (Mp.copy(), self.data, cert_p)
                    return Mp
            # last, the level-set SDP's sharper bound at the solver's point
            cert = self._staged_certificate(M, sharpen=True)
        self._last_cert = (M.copy(), self.data, cert)
        return M

    def solve_certified(self, *, solvers=SOLVERS, tol=1e-9):
        """The package's certified path (:meth:`DeclaredProblem.solve_certified`),
        after attainment is decided: with ``lam = 0`` on pairs that a metric
        separates, :class:`~cvxmetric.result.NotAttainedError` is raised
        before any solve (the infimum has no minimiser, so no point can be
        returned as one)."""
        if not self._modified:
            self._sync_parameters()
            self._tau()
        return super().solve_certified(solvers=solvers, tol=tol)

    def _update_parameters(self, values):
        data = copy.copy(self.data)
        data.lam = check_scalar(values["lam"], "lam", low=0.0)
        data._tau0 = None  # the fast solvers' trace bound depends on lam
        self.data = data


def declared_problem(data):
    """Eq. 2 exactly as printed (with its optional regulariser), in the
    user's units, unsolved::

        minimise_{M, b}  sum_p log(1 + exp(s_p (d_M(x_i, x_j) - b))) + lam R(M)
        subject to       M PSD

    with ``d_M`` the squared distance ``phi_p^T M phi_p`` of every pair's
    difference ``phi_p = x_i - x_j`` (all pairs at once), the logistic terms
    vectorised (``cp.logistic``: one exponential cone per pair), ``R(M) =
    tr(M)`` or ``0.5 ||M||_F^2`` (``data.regularizer``) and ``lam`` a
    nonnegative ``cp.Parameter`` (``lam = 0``: Eq. 2 as printed).  The
    variables ``M`` (symmetric, the metric) and ``b`` (the threshold of
    Eq. 3); the constraint ``psd`` (``M >> 0``).  The problem is DPP.

    Unlike the exact solver (:func:`solve_exact`), nothing is scaled: its
    attempts on rescaled features and on the objective per pair exist
    because Clarabel fails on the printed sum of thousands of terms (iris's
    7 140 standardised pairs); here the printed problem is the one solved.

    Parameters
    ----------
    data : LDMLData
        In the user's units; ``data.lam`` is the weight (the estimators
        pass their ``lam_``: ``lam="auto"`` resolved to a number).

    Returns
    -------
    DeclaredProblem
        See :mod:`cvxmetric.model`.  ``objective(M)`` and ``certificate(M)``
        are those of ``M`` at its best threshold ``b`` (one root), by
        :class:`LDMLData`'s code: the duality gap of the slopes at ``M``,
        no multipliers of the constraints needed.  ``solve()`` (the
        certified path) runs the stages of :func:`bound_stages` and
        finishes a solver's point by the exact path's Newton polish when
        its certificate falls short (``b`` follows).  ``certificate(M)``
        runs no solver: the certificate the certified solve established for
        its point, else the bound from what is known without solving.  With
        ``lam = 0`` on pairs that a metric separates the optimum is not
        attained: ``solve()`` raises
        :class:`~cvxmetric.result.NotAttainedError`, as the exact path does,
        and ``certificate()`` raises it again afterwards.
    """
    check_instance(data, LDMLData, "data")
    # [declare:ldml-eq2]
    Phi, s = data.Phi, data.s                              # (P, D), (P,) of +1 / -1
    M = cp.Variable((data.d, data.d), symmetric=True, name="M")
    b = cp.Variable(name="b")
    lam = cp.Parameter(nonneg=True, value=data.lam, name="lam")
    dist = cp.sum(cp.multiply(Phi @ M, Phi), axis=1)       # d_M of every pair
    loss = cp.sum(cp.logistic(cp.multiply(s, dist - b)))
    reg = cp.trace(M) if data.regularizer == "trace" else 0.5 * cp.sum_squares(M)
    constraints = {"psd": M >> 0}
    problem = cp.Problem(cp.Minimize(loss + lam * reg), list(constraints.values()))
    # [/declare]
    return _LDMLDeclared(
        family="ldml", paper=PAPER,
        equation="Eq. 2",
        problem=problem, variables={"M": M, "b": b}, parameters={"lam": lam},
        constraints=constraints, metric_key="M", data=data)
