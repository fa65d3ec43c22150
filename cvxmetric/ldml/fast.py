"""LDML, fast: the full-rank projected gradient and the low-rank gradient
method of Eq. 4-6 (Guillaumin, Verbeek, Schmid 2010, Sec. 2.1).

Both solve the formulation of :mod:`cvxmetric.ldml.exact` (Eq. 2, the
negative log-likelihood minimised, with its optional regulariser)::

    F(M, b) = sum_p g(s_p (d_M(x_i, x_j) - b)) + lam R(M),   g(u) = log(1 + e^u)

:class:`ProjectedGradient` (full rank, ``method="fast"``)
    Accelerated projected gradient on ``f(M) = min_b F(M, b)`` -- convex,
    smooth, with gradient ``sum_p sigma(u_p) s_p C_p + lam R'(M)`` at the
    optimal ``b`` (one root, :meth:`LDMLData.best_b`) -- with backtracking
    and gradient restarts; each step projects onto the PSD cone by one
    eigendecomposition.  Certified by the same entropy dual as the exact
    path, at the package's tolerance.

:class:`LowRankLDML` (``method="lowrank"``)
    The paper's low-rank LDML: ``M = L^T L`` with ``L`` (d, D), descent on
    ``(L, b)`` along L-BFGS directions (``memory=0``: the paper's gradient
    descent) with an Armijo line search, several random starts
    (:func:`fit_lowrank`).  The
    gradient is Eq. 6, ``dF/dL = 2 L X^T H X`` (rows are samples here, the
    paper's ``X`` transposed) with ``H`` the weighted Laplacian of the pairs
    -- never one outer product per pair: with ``Z = X L^T`` (N, d) it is
    ``2 (H Z)^T X``, O(N (N + D) d) for all pairs of N instances.
    :class:`AllPairs` evaluates it over every pair of N labelled instances
    block by block (no N x N array), :class:`PairSet` over an explicit list
    of pairs (sparse ``H``).  Non-convex in ``L``; at full rank (d = D) a
    stationary point is the convex optimum, and the run is certified against
    it.  Replacing ``X`` by a kernel matrix ``K`` learns ``L = A X^T``
    (the kernel form; ``gram=K`` makes the regulariser that of ``M``).
"""

import math
import time
import warnings
from dataclasses import dataclass
from numbers import Integral
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval

from .._backend import (
    Cluster,
    Device,
    OnDevice,
    float64,
    is_dask,
    is_numpy,
    require,
    to_numpy,
)
from .._data import Samples
from .._linalg import project_psd, whitening_basis
from .._linesearch import backtracking
from .._settings import (
    _LDML_BLOCK as _BLOCK,
)
from .._settings import (
    _PAIR_BLOCK,
    CERTIFY_PAIRS,
    NEWTON_FROM,
    RIDGE,
)
from .._solver import IterativeSolver, stop_message
from .._trace import captured, emit, record
from .._validation import check_finite, check_option, check_scalar
from ..result import Certificate, NotAttainedError, SolverResult, Status
from ._budget import budget, expired
from ._polish import polish
from ._xp import (
    PairsXP,
    block_numpy,
    pairs_xp,
    sigmoid_xp,
    value_grad_dask,
)
from .exact import (
    LEVEL_SDP_MAX,
    LEVEL_SDP_PAIRS,
    REGULARIZERS,
    LDMLData,
    _sigmoid,
    bound_stages,
    staged_bound,
)

__all__ = ["solve_fast", "ProjectedGradient", "LowRankLDML", "AllPairs", "PairSet",
           "fit_lowrank",
           "certify_point", "CERTIFY_PAIRS"]


def _loss_and_slope(u):
    """``g(u) = log(1 + e^u)`` and ``g'(u) = sigma(u)`` with one ``exp``."""
    e = np.exp(-np.abs(u))
    loss = np.maximum(u, 0.0) + np.log1p(e)
    slope = np.where(u >= 0, 1.0, e) / (1.0 + e)
    return loss, slope


# ---------------------------------------------------------------------------
# Full rank: accelerated projected gradient on f(M) = min_b F(M, b)
# ---------------------------------------------------------------------------

class PGState(NamedTuple):
    iter_num: int
    error: float        # relative gradient-mapping norm (0 once certified)
    b: float
    f: float
    step: float
    Y: np.ndarray       # extrapolated point
    theta: float
    n_restarts: int


def certify_point(data, M, b, *, solver, tol=None, sharpen=True):
    """The certificate of :func:`~cvxmetric.ldml.solve_exact` at ``(M, b)``
    (``b`` re-optimised), for a hand-written solver.

    The dual point is the slopes at ``(M, b)``; the PSD deficit of its
    ``S(alpha)`` is removed along :meth:`LDMLData.strict_direction`, or
    charged at a bound ``tau >= tr(M*)`` (the trace regulariser: ``F(M) /
    lam``; without it the level-set SDP of :meth:`LDMLData.trace_bound`,
    up to ``LEVEL_SDP_PAIRS`` pairs, computed once per data and cached);
    when that does not pass, ``D <= LEVEL_SDP_MAX`` and there are at most
    ``LEVEL_SDP_PAIRS`` pairs, by the level-set SDP of
    :meth:`LDMLData.level_min` (every term of an optimum is at most ``F``
    here, so the level set ``{terms <= F(M, b)}`` holds it).  Before those
    SDPs, up to ``LEVEL_SDP_PAIRS`` pairs, the dual point is also taken
    at the Newton polish of ``(M, b)`` (:mod:`._polish`; ``M`` is kept).
    ``sharpen=False`` skips the polish and the SDP (the checks inside the
    iterations).  Each bound is the pure :meth:`LDMLData.bound` after the
    stages that improve it by solving (:func:`~cvxmetric.ldml.exact.bound_stages`:
    the Newton repair of the dual point, the strictly feasible direction,
    the level-set SDP), run here in this order.

    Returns
    -------
    (Certificate, b)
    """
    M = 0.5 * (M + M.T)
    dual = data.dual_point(M)  # the slopes at (M, b), b re-optimised
    b = dual.b
    f = data.objective(M, b)
    if data._dev is not None and not is_numpy(M):
        # on the device: its smallest eigenvalue there, and M on the host for
        # the Newton polish and the SDP stages
        min_eig = data._dev.scalars(data._dev.eigvalsh(M)[0])[0]
        M = data._dev.host(M)
    else:
        min_eig = float(np.linalg.eigvalsh(M)[0])
    opts = {} if tol is None else {"tol": tol}

    def cert(bound):
        return Certificate.from_bound(f, bound, max_violation=max(0.0, -min_eig),
                                      min_eig=min_eig, solver=solver, tolerances=opts)

    def bound(tau, f_upper=None):
        # the stages that improve the bound by solving, then the bound itself
        return data.bound(dual, tau, **bound_stages(data, dual, tau, f_upper))

    c = None
    if data.lam > 0 and data.regularizer == "trace":
        tau = f / data.lam
    elif data.lam > 0:
        tau = math.inf  # the Frobenius conjugate needs none
    else:
        # the trace bound's SDPs only when the repaired dual alone does not
        # pass (64 s on 2 000 pairs of the digits)
        tau = None
        c = cert(bound(None))
        if c.passed:
            return c, b
    if sharpen and data.n_pairs <= LEVEL_SDP_PAIRS and not expired():
        # a dual point from the slopes at the Newton polish of the point
        # (the exact path's, ._polish): any dual point bounds F*, and the
        # slopes at a point whose gradient is ~0 are an accurate one, where
        # those at an iterate 1e-16 from the optimum in F but not in its
        # gradient fell 1e-6 short (digits-pca30).  The point itself is
        # kept: the certificate is on F(M, b)
        if c is None:
            c = cert(bound(tau))
        for Mp, _ in ([] if c.passed else polish(data, M, b)):
            c = cert(max(c.dual_bound, staged_bound(data, Mp, tau)))
            if c.passed:
                break
        if c.passed:
            return c, b
    if tau is None:
        tau = data.trace_bound_at_zero()
    c = cert(bound(tau))
    if sharpen and not c.passed and data.d <= LEVEL_SDP_MAX \
            and data.n_pairs <= LEVEL_SDP_PAIRS and not expired():
        c = cert(bound(tau, f))
    return c, b


@dataclass
class ProjectedGradient(IterativeSolver):
    """Accelerated projected gradient for LDML Eq. 2 at full rank.

    Solves the formulation of :func:`cvxmetric.ldml.solve_exact` (same
    objective, same certificate, :func:`certify_point`).  ``b`` is
    eliminated: ``f(M) = min_b F(M, b)`` is convex and smooth (a partial
    minimum of a jointly convex function, with a unique minimiser in ``b``
    when both labels occur); its gradient is ``S(alpha) + lam R'(M)`` at the
    optimal ``b``.  Steps backtrack until the quadratic upper bound holds;
    the momentum restarts whenever ``f`` increases.

    Attributes
    ----------
    maxiter, tol, max_time : see :class:`~cvxmetric._solver.IterativeSolver`
        ``error`` is the first-order measure ``||G|| max(1, ||M||) /
        max(1, |f|)`` with ``G`` the gradient mapping; it drops to 0 when a
        certificate with the trace bound passes (checked every
        ``check_every`` iterations).
    check_every : int
    """

    maxiter: int = 20000
    tol: float = 1e-10
    check_every: int = 25

    name = "fast"
    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "check_every": [Interval(Integral, 1, None, closed="left")],
    }

    def _value(self, data, M):
        dist = data.distances(M)
        b = data.best_b(dist)
        return data.objective(M, b), b, dist

    def _grad(self, data, M, b, dist):
        if data._dev is not None:
            # on the device: the slopes and S(alpha) as one product
            dev = data._dev
            S = dev.gram(dev.s * sigmoid_xp(dev.xp, dev.s * (dist - b)))
        else:
            a = _sigmoid(data.s * (dist - b))
            S = data.op.gram(a * data.s)
            S = 0.5 * (S + S.T)
        if data.lam > 0:
            S = S + data.lam * (_ops(data).eye(data.d) if data.regularizer == "trace"
                                else M)
        return S

    def init_state(self, data, init=None):
        if data.lam == 0:
            # attainment decided (NotAttainedError) before any iteration
            certify_point(data, np.zeros((data.d, data.d)), 0.0, solver=self.name)
        ops = _ops(data)
        if init is not None:
            M = ops.project_psd(ops.dev(np.asarray(init.M, dtype=float)))
        else:
            M = ops.dev(np.zeros((data.d, data.d)))
        f, b, _ = self._value(data, M)
        # first step: the inverse of a bound on the curvature along M,
        # sum_p sigma' phi_p^4 <= 1/4 sum ||phi_p||^4; backtracking corrects it
        dist = data.distances(ops.eye(data.d))
        curv = 0.25 * ops.inner(dist, dist) + data.lam
        return M, PGState(0, math.inf, b, f, 1.0 / max(curv, 1e-300), M + 0.0, 1.0, 0)

    def update(self, M, state, data):
        Y = state.Y
        ops = _ops(data)
        fY, bY, distY = self._value(data, Y)
        G = self._grad(data, Y, bY, distY)

        def trial(step):
            M_new = ops.project_psd(Y - step * G)
            return M_new, M_new - Y, *self._value(data, M_new)[:2]

        def accept(step, v):
            # the quadratic upper bound at the step (with a round-off
            # allowance); below the smallest step or past the budget the
            # trial point is taken as it is
            _, D, f_new, _ = v
            return f_new <= fY + ops.inner(G, D) + 0.5 / step * ops.inner(D, D) \
                + 1e-13 * abs(fY) or step < 1e-300 or self.deadline.expired()

        search = backtracking(trial, accept, step=state.step)
        step = search.step
        M_new, D, f_new, b_new = search.value
        theta, restarts = state.theta, state.n_restarts
        if ops.inner(Y - M_new, M_new - M) > 0:
            # gradient restart (O'Donoghue and Candes): the momentum points
            # uphill, drop it
            theta, Y_next, restarts = 1.0, M_new, restarts + 1
        else:
            theta_next = 0.5 * (1 + math.sqrt(1 + 4 * theta * theta))
            Y_next = M_new + ((theta - 1) / theta_next) * (M_new - M)
            theta = theta_next
        it = state.iter_num + 1
        error = math.sqrt(ops.inner(D, D)) / step \
            * max(1.0, math.sqrt(ops.inner(M_new, M_new))) / max(1.0, abs(f_new))
        if it % self.check_every == 0 and error < 1e-4:
            cert, _ = certify_point(data, M_new, b_new, solver=self.name, sharpen=False)
            if cert.passed:
                error = 0.0
        return M_new, PGState(it, error, b_new, f_new, step * 1.25, Y_next, theta,
                              restarts)

    def finalize(self, M, state, data):
        # the level-set SDP only for a run that met its stopping rule
        cert, b = certify_point(data, M, state.b, solver=self.name, tol=self.tol,
                                sharpen=self.converged(state))
        info = {"b": b, "n_restarts": state.n_restarts}
        if data._dev is not None:
            M = data._dev.host(M)
            info.update(data.backend_info())
        return M, cert, info


class _HostOps:
    """What :class:`ProjectedGradient` asks of its arrays, on NumPy
    (:class:`._xp.PairsXP` answers the same on a device)."""

    @staticmethod
    def dev(a):
        return a

    @staticmethod
    def eye(d):
        return np.eye(d)

    @staticmethod
    def inner(A, B):
        return float(np.sum(A * B))

    project_psd = staticmethod(project_psd)


def _ops(data):
    return _HostOps if data._dev is None else data._dev


# ---------------------------------------------------------------------------
# Low rank: the losses over pairs, in Z = X L^T coordinates
# ---------------------------------------------------------------------------

class _Loss(OnDevice, Samples):
    """Shared part of :class:`AllPairs` and :class:`PairSet`: the data,
    the regulariser on ``L`` and the chain rule back from ``Z``.

    After each evaluation ``worst_margin`` is ``max_p s_p (d_p - b)``: when
    it is negative every pair is on its side of ``b``, and scaling ``(M,
    b)`` up lowers every term forever (the infimum is not attained without
    a regulariser).
    """

    worst_margin = np.inf

    @property
    def _backend(self):
        """Where the passes run, read off ``where``: None (NumPy), ``"xp"``
        (another array-API namespace) or ``"dask"`` (a cluster)."""
        if isinstance(self.where, Cluster):
            return "dask"
        return None if self.where.on_host else "xp"

    def _init_common(self, X, lam, regularizer, gram):
        self.X = check_finite(X, "X", ndim=2)
        if self.X.shape[0] < 2:
            raise ValueError("X: at least two instances are needed.")
        self.lam = check_scalar(lam, "lam", low=0.0)
        self.regularizer = check_option(regularizer, "regularizer", REGULARIZERS)
        D = self.X.shape[1]
        if gram is not None:
            gram = check_finite(gram, "gram", shape=(D, D))
        self.gram = gram

    def _reg(self, L):
        """``lam R(M)`` at ``M = L^T L`` (``L Q L^T`` with the kernel's
        ``Q``) and its gradient in ``L``."""
        if self.lam == 0:
            return 0.0, 0.0
        LQ = L if self.gram is None else L @ self.gram  # (d, D)
        if self.regularizer == "trace":  # tr(L Q L^T)
            return self.lam * float(np.sum(L * LQ)), 2.0 * self.lam * LQ
        K = LQ @ L.T  # (d, d): ||L^T L||_F = ||L L^T||_F (Q = I)
        return 0.5 * self.lam * float(np.sum(K * K)), 2.0 * self.lam * (K @ LQ)

    def value_grad(self, L, b, grad=True, dist=None):
        """``F(L^T L, b)``, and ``(dF/dL, dF/db)`` when ``grad``.

        ``dist`` (:class:`PairSet` only): the pairs' squared distances at
        ``L`` when the caller already holds them (MildML's accepted trial
        point), instead of recomputing them."""
        Z = self.X @ L.T  # (N, d)
        out = self._pairs(Z, b, grad) if dist is None else self._pairs(Z, b, grad, dist)
        r, gr = self._reg(L)
        if not grad:
            return out + r
        f, HZ, gb = out
        # Eq. 6: dF/dL = 2 L X^T H X = 2 (H Z)^T X
        return f + r, 2.0 * (HZ.T @ self.X) + gr, gb


def _row_ids(X, host=to_numpy):
    """An id per row, equal exactly for identical rows.

    Two projections on fixed directions find the candidate duplicates in
    O(N D) (sorting the rows themselves costs seconds and gigabytes at
    15 000 x 3 456); candidates are then compared exactly.  ``host``
    brings the projections and the candidates' rows to the host (a
    Device's counted :meth:`~cvxmetric._backend.Device.host` for a
    ``dask.array``).
    """
    N, D = X.shape
    t = np.arange(D)
    keys = host(X @ np.column_stack([np.cos(0.7 * t + 0.3), np.sin(1.3 * t + 0.1)]))
    _, ids = np.unique(keys, axis=0, return_inverse=True)
    ids = ids.ravel()
    counts = np.bincount(ids)
    if np.all(counts == 1):
        return ids
    out = ids.copy()
    nxt = int(ids.max()) + 1
    for g in np.flatnonzero(counts > 1):
        members = np.flatnonzero(ids == g)
        _, sub = np.unique(host(X[members]), axis=0, return_inverse=True)
        sub = sub.ravel()
        # the first exact group keeps the id, the others (a projection
        # collision) get new ones
        out[members[sub > 0]] = nxt + sub[sub > 0] - 1
        nxt += int(sub.max())
    return out


class AllPairs(_Loss):
    """Every pair ``i < j`` of N labelled instances, block by block.

    ``t_ij = 1`` when the labels agree.  Pairs of identical instances
    (duplicate rows) are left out, as :class:`~cvxmetric.ldml.LDMLData`
    refuses them: their distance is 0 under every metric.  One evaluation
    with the gradient
    costs about ``3 N^2 d`` flops for the pairs and ``2 N D d`` for ``Z``
    and Eq. 6; memory ``O(block N + N (D + d))``, no N x N array.

    Parameters
    ----------
    X : array_like (N, D)
        Instances (or the kernel matrix ``K``, N x N, for the kernel form).
    labels : array_like of int (N,)
    lam : float >= 0
    regularizer : {"trace", "frobenius"}
    gram : array_like (D, D), optional
        ``Q`` of the regulariser ``R(L Q L^T)`` (the kernel matrix in the
        kernel form; identity by default).
    block : int
        Rows per block.

    ``X`` of another array-API namespace stays where it is, and a
    ``dask.array`` in its cluster; ``where`` (a
    :class:`~cvxmetric._backend.Device`, the
    :class:`~cvxmetric._backend.Cluster` for Dask) counts the moves in
    ``transfers``.
    """

    def __init__(self, X, labels, *, lam=0.0, regularizer="trace", gram=None,
                 block=_BLOCK):
        # the namespace is chosen once, here, from the input; a dask X is
        # computed in its cluster, the host counting what comes back
        self.where = Device()
        if is_dask(X):
            self.where = Cluster()
            Xh = self._init_dask(X)
        elif not is_numpy(X):
            self.where = Device.of(X)
            Xh = self.where.host(X)  # once, for validation and row ids
        else:
            Xh = X
        self._init_common(Xh, lam, regularizer, gram)
        labels = np.asarray(labels) if is_numpy(labels) else to_numpy(labels)
        if labels.shape != (self.X.shape[0],):
            raise ValueError(f"labels: expected one label per instance "
                             f"({self.X.shape[0]}), got shape {labels.shape}.")
        _, self.labels = np.unique(labels, return_inverse=True)
        counts = np.bincount(self.labels)
        if counts.size < 2 or not np.any(counts > 1):
            raise ValueError("labels: all pairs must include both same-label and "
                             "different-label pairs.")
        self.block = int(block)
        N = self.X.shape[0]
        self._rows = _row_ids(self.X) if self._backend != "dask" else self._rows
        counts = np.bincount(self._rows)
        self._has_dups = bool(np.any(counts > 1))
        self.n_pairs = N * (N - 1) // 2 - int(np.sum(counts * (counts - 1) // 2))
        if self._backend is not None:
            self._to_backend(X)

    def _init_dask(self, X):
        """Validate a dask ``X`` in the cluster; only its row ids (N,) come
        to the host.  ``X`` (float64) is persisted there: every evaluation
        reads it, and its graph (an estimator's centring and scaling, a
        file read) runs once, not once per evaluation."""
        if X.ndim != 2:
            raise ValueError(f"X: expected a 2-d array, got {X.ndim} dimensions.")
        X = X.astype(float).persist()
        if not bool(np.isfinite(X).all().compute()):
            raise ValueError("X: contains NaN or infinite values.")
        self._rows = _row_ids(X, self.where.host)
        return X

    def _init_common(self, X, lam, regularizer, gram):
        if self._backend != "dask":
            return super()._init_common(X, lam, regularizer, gram)
        self.X = X  # validated in _init_dask
        self.lam = check_scalar(lam, "lam", low=0.0)
        self.regularizer = check_option(regularizer, "regularizer", REGULARIZERS)
        if gram is not None:
            gram = check_finite(gram, "gram", shape=(X.shape[1], X.shape[1]))
        self.gram = gram

    def _to_backend(self, X):
        """Keep the data where they were given: ``X`` (float64) and the
        label and row ids on its device, moved once."""
        if self._backend == "dask":
            return  # self.X: the persisted float64 X of _init_dask
        where = self.where
        self.X = float64(X, where.xp)
        self._y_dev = where.dev(self.labels)
        self._rows_dev = where.dev(self._rows) if self._has_dups else None

    def value_grad(self, L, b, grad=True, dist=None):
        if self._backend is None:
            return super().value_grad(L, b, grad, dist)
        r, gr = self._reg(L)
        b = float(b)  # a Python scalar: strict namespaces refuse NumPy scalars
        rows = self._rows if self._has_dups else None
        if self._backend == "dask":
            total, worst, G, gb = value_grad_dask(self.X, np.asarray(L, dtype=float), b,
                                                  self.labels, rows, self.block, grad,
                                                  self.transfers)
        else:
            where = self.where
            Z = self.X @ where.dev(L, float).T
            total, worst, HZ, gb = pairs_xp(where.xp, Z, self._y_dev, self._rows_dev, b,
                                            self.block, grad)
            if grad:
                G = where.host(2.0 * (HZ.T @ self.X))
                total, worst, gb = where.scalars(total, worst, gb)
            else:
                (total, worst), gb = where.scalars(total, worst), 0.0
        self.worst_margin = worst
        if not grad:
            return total + r
        return total + r, G + gr, gb

    def _pairs(self, Z, b, grad):
        N = Z.shape[0]
        q = np.einsum("nd,nd->n", Z, Z)
        total, worst = 0.0, -np.inf
        HZ = np.zeros_like(Z) if grad else None
        gb = 0.0
        rows = self._rows if self._has_dups else None
        for a in range(0, N, self.block):
            t, w, g, _ = block_numpy(Z, q, self.labels, rows, a, min(a + self.block, N),
                                     b, grad, out=None if HZ is None else HZ[a:])
            total += t
            worst = max(worst, w)
            gb += g
        self.worst_margin = worst
        if not grad:
            return total
        return total, HZ, gb

    def pair_data(self):
        """The same loss as explicit pairs (:class:`~cvxmetric.ldml.LDMLData`,
        for certificates and exact references; O(N^2) memory)."""
        data = getattr(self, "_data", None)
        if data is not None:
            return data
        i, j = np.triu_indices(self.X.shape[0], 1)
        keep = self._rows[i] != self._rows[j]
        i, j = i[keep], j[keep]
        y = np.where(self.labels[i] == self.labels[j], 1, -1)
        # on a namespace the pairs' passes and certificate stay on its device
        X = self.where.host(self.X) if self._backend == "dask" else self.X
        return _counted_with(self, LDMLData(X, np.column_stack([i, j]), y, lam=self.lam,
                                            regularizer=self.regularizer))


def _counted_with(loss, data):
    """``data``, built from a device ``loss``, counting its moves in the
    loss's ``transfers`` (one count for the run; the construction's moves
    added)."""
    if data.transfers is not None:
        loss.transfers.add(data.transfers)
        data._dev.transfers = loss.transfers
    return data


class PairSet(_Loss):
    """An explicit list of labelled pairs (sparse ``H``).

    Parameters
    ----------
    X : array_like (N, D)
    pairs : array_like of int (P, 2)
    s : array_like (P,)
        +1 same, -1 different.
    lam, regularizer, gram : as in :class:`AllPairs`

    ``X`` of another array-API namespace stays where it is: each
    evaluation moves ``L`` there and the gradient ``(d, D)`` and three
    scalars back (:class:`._xp.PairsXP`, counted in ``transfers``); ``X``
    comes to the host once, for validation and the whitening basis.
    """

    _pxp = None  # the pairs on a device (set from the input in __init__)

    def __init__(self, X, pairs, s, *, lam=0.0, regularizer="trace", gram=None):
        self.where, Xd = Device(), None
        if not is_numpy(X) and not isinstance(X, (list, tuple)):
            if is_dask(X):
                raise TypeError("X: PairSet runs on NumPy and array-API arrays; got a "
                                "dask array (AllPairs takes one). Compute it first.")
            self.where = Device.of(X)
            Xd, X = X, self.where.host(X)
        self._init_common(X, lam, regularizer, gram)
        if Xd is not None:
            self._Xh, self.X = self.X, float64(Xd, self.where.xp)
        self.set_pairs(pairs, s)

    def set_pairs(self, pairs, s):
        """Replace the pairs (MildML's selection step)."""
        self._data = None
        pairs = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
        self.i, self.j = pairs[:, 0], pairs[:, 1]
        self.s = np.asarray(s, dtype=float)
        self.n_pairs = len(self.s)
        self._n = self.X.shape[0]
        if self._backend is not None:
            self._pxp = PairsXP(self.where, self.X, self.i, self.j, self.s)

    def value_grad(self, L, b, grad=True, dist=None):
        if self._backend is None:
            return super().value_grad(L, b, grad, dist)
        r, gr = self._reg(L)
        p = self._pxp
        total, worst, G, gb = p.lowrank(p.dev(L, float), float(b), grad)
        if not grad:
            total, self.worst_margin = p.scalars(total, worst)
            return total + r
        G = p.host(G)
        total, self.worst_margin, gb = p.scalars(total, worst, gb)
        return total + r, G + gr, gb

    def _distances(self, Z):
        """``||z_i - z_j||^2`` of every pair at the coordinates ``Z = X L^T``,
        from the differences (exact to round-off for close pairs), in
        blocks of ``_PAIR_BLOCK`` pairs: the (P, d) differences at once
        are 130 MB for MildML's 258 000 bag pairs of the digits, and
        gathering them block by block in cache is several times faster."""
        dist = np.empty(self.n_pairs)
        for a in range(0, self.n_pairs, _PAIR_BLOCK):
            r = slice(a, a + _PAIR_BLOCK)
            diff = Z[self.i[r]] - Z[self.j[r]]
            dist[r] = np.einsum("pd,pd->p", diff, diff)
        return dist

    def _pairs(self, Z, b, grad, dist=None):
        if dist is None:
            dist = self._distances(Z)
        u = self.s * (dist - b)
        self.worst_margin = float(np.max(u)) if u.size else -np.inf
        loss, slope = _loss_and_slope(u)
        if not grad:
            return float(np.sum(loss))
        w = self.s * slope  # dF/dd_p
        # H Z with H = sum_p w_p (e_i - e_j)(e_i - e_j)^T = diag(W 1 + W^T 1) - W - W^T
        # (COO products: no conversion to CSR, whose duplicate summing sorts
        # the pairs at every evaluation)
        W = sp.coo_matrix((w, (self.i, self.j)), shape=(self._n, self._n))
        deg = np.bincount(self.i, w, self._n) + np.bincount(self.j, w, self._n)
        HZ = deg[:, None] * Z - W @ Z - W.T @ Z
        return float(np.sum(loss)), HZ, -float(np.sum(w))

    @classmethod
    def from_data(cls, data):
        """The loss of an :class:`~cvxmetric.ldml.LDMLData` (which
        :meth:`pair_data` then returns, with what it has computed); on the
        device of a device instance, sharing its pairs there and its
        transfer counts."""
        if data._dev is None:
            loss = cls(data.X, data.pairs, data.s, lam=data.lam,
                       regularizer=data.regularizer)
        else:
            loss = cls._device(data._dev, data.X, data.pairs, data.s, lam=data.lam,
                               regularizer=data.regularizer)
        loss._data = data
        return loss

    @classmethod
    def _device(cls, pxp, Xh, pairs, s, *, lam, regularizer, gram=None):
        """A device instance on the pairs ``pxp`` already there (its
        Device, sharing its transfer counts); ``Xh`` the host copy of its
        data when there is one (all already validated)."""
        loss = cls.__new__(cls)
        loss.where = pxp
        loss.lam, loss.regularizer, loss.gram = lam, regularizer, gram
        loss._Xh, loss.X, loss._data = Xh, pxp.X, None
        loss.i, loss.j = pairs[:, 0], pairs[:, 1]
        loss.s = np.asarray(s, dtype=float)
        loss.n_pairs, loss._n, loss._pxp = len(loss.s), pxp.X.shape[0], pxp
        return loss

    def pair_data(self):
        """The same loss as :class:`~cvxmetric.ldml.LDMLData` (on the
        same device, its moves counted in this loss's ``transfers``)."""
        data = getattr(self, "_data", None)
        if data is not None and data.n_pairs == self.n_pairs:
            return data
        data = _counted_with(self, LDMLData(self.X, np.column_stack([self.i, self.j]),
                                            self.s.astype(int), lam=self.lam,
                                            regularizer=self.regularizer))
        if data.transfers is not None:
            self._data = data  # kept: built on the device once
        return data


# ---------------------------------------------------------------------------
# Low rank: gradient descent on (L, b)
# ---------------------------------------------------------------------------

class LRState(NamedTuple):
    iter_num: int
    error: float        # ||grad|| / max(1, |F|) (stationarity)
    b: float
    f: float
    gL: np.ndarray
    gb: float
    step: float
    stalled: bool = False  # no step lowers F beyond round-off
    pairs: tuple = ()      # L-BFGS memory: (s, y) secant pairs, newest last


def _check_loss(loss):
    if not isinstance(loss, _Loss):
        raise TypeError(f"loss: expected AllPairs or PairSet, got {type(loss).__name__}.")


@dataclass
class LowRankLDML(IterativeSolver):
    """Gradient descent on ``L`` (d, D) and ``b``: the paper's low-rank LDML.

    Each iteration steps along a direction built from the gradient (Eq. 6)
    and backtracks until Armijo's condition holds, so ``F`` never increases.
    The direction is L-BFGS's (``memory`` secant pairs; a change from the
    paper's plain gradient descent, which needs hundreds of times more
    iterations on all pairs of the digits); ``memory=0`` is the paper's
    gradient descent, with Barzilai-Borwein step lengths.  ``error`` is the stationarity ``||(dF/dL, dF/db)|| /
    max(1, |F|)``; the run also stops when no step lowers ``F`` by more than
    round-off (``1e-15 |F|``).  The result's ``M`` is ``L^T L``; ``info["L"]`` and
    ``info["b"]`` hold the factor and the threshold.

    At full rank (``rank == D``) a stationary point is the optimum of the
    convex problem, and the final iterate is certified against it (the
    certificate of :func:`~cvxmetric.ldml.solve_exact`, which holds the
    pairs' distances and slopes: up to :data:`CERTIFY_PAIRS` pairs, and,
    without a regulariser, solves one SDP bounding the trace).  Below full rank nothing bounds the
    rank-constrained optimum: the status is ``optimal_inaccurate`` at a
    stationary point (``raw_status`` ``optimal``).

    Attributes
    ----------
    rank : int
        ``d``, the number of rows of ``L``.
    maxiter, tol, max_time : see :class:`~cvxmetric._solver.IterativeSolver`
    certify : bool
        Certify at full rank (default).
    memory : int >= 0
        L-BFGS memory (0: steepest descent).
    """

    rank: int = 1
    maxiter: int = 5000
    tol: float = 1e-8
    certify: bool = True
    memory: int = 10

    name = "lowrank"
    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "rank": [Interval(Integral, 1, None, closed="left")],
        "certify": ["boolean"],
        "memory": [Interval(Integral, 0, None, closed="left")],
    }

    def blas_flops(self, loss):
        return 2.0 * _BLOCK * loss.X.shape[0] * self.rank

    def converged(self, state):
        return state.error <= self.tol or state.stalled

    def init_state(self, loss, init=None):
        _check_loss(loss)
        if self.rank > loss.n_features:
            raise ValueError(f"rank: {self.rank} exceeds the {loss.n_features} "
                             f"input dimensions.")
        if init is None or not isinstance(init, tuple):
            raise ValueError("init: expected (L0, b0) (see fit_lowrank).")
        L, b = np.array(init[0], dtype=float), float(init[1])
        if L.shape != (self.rank, loss.n_features):
            raise ValueError(f"init: L0 must have shape ({self.rank}, "
                             f"{loss.n_features}), got {L.shape}.")
        f, gL, gb = loss.value_grad(L, b)
        gnorm2 = float(np.sum(gL * gL)) + gb * gb
        step = 1.0 / max(math.sqrt(gnorm2), 1e-300) * max(1.0, float(np.linalg.norm(L)))
        err = math.sqrt(gnorm2) / max(1.0, abs(f))
        return L, LRState(0, err, b, f, gL, gb, step)

    def _direction(self, g, state):
        """``-H g`` by L-BFGS's two-loop recursion (``-step g`` without
        memory)."""
        if not state.pairs:
            return -state.step * g
        q = g.copy()
        alphas = []
        for s_, y_ in reversed(state.pairs):
            a = float(s_ @ q) / float(y_ @ s_)
            alphas.append(a)
            q -= a * y_
        s_, y_ = state.pairs[-1]
        q *= float(s_ @ y_) / float(y_ @ y_)
        for (s_, y_), a in zip(state.pairs, reversed(alphas)):
            q += (a - float(y_ @ q) / float(y_ @ s_)) * s_
        return -q

    def update(self, L, state, loss):
        f = state.f
        shape = L.shape
        x = np.append(L.ravel(), state.b)
        g = np.append(state.gL.ravel(), state.gb)
        d = self._direction(g, state)
        slope = float(g @ d)
        pairs = state.pairs
        if slope >= 0:  # not a descent direction: forget the memory
            pairs, d = (), -state.step * g
            slope = float(g @ d)
        d_norm, x_norm = float(np.linalg.norm(d)), float(np.linalg.norm(x))

        def trial(t):
            x_new = x + t * d
            return x_new, loss.value_grad(x_new[:-1].reshape(shape), x_new[-1], grad=False)

        def armijo(t, v):
            return v[1] <= f + 1e-4 * t * slope

        def stalled(t, v):
            # the step no longer moves F beyond round-off
            return v[1] >= f - 1e-15 * abs(f) and t * d_norm < 1e-12 * (1.0 + x_norm)

        # Armijo's test, or a stall (which ends the search too); past the
        # budget the last trial point is taken as it is
        search = backtracking(trial, lambda t, v: armijo(t, v) or stalled(t, v),
                              deadline=self.deadline)
        if search.accepted and not armijo(search.step, search.value):
            return L, state._replace(iter_num=state.iter_num + 1, stalled=True)
        x_new = search.value[0]
        L_new, b_new = x_new[:-1].reshape(shape), float(x_new[-1])
        f_new, gL_new, gb_new = loss.value_grad(L_new, b_new)
        if loss.lam == 0 and loss.worst_margin < 0:
            raise NotAttainedError(
                f"pairs: the rank-{self.rank} metric reached at iteration "
                f"{state.iter_num + 1} puts every pair on its side of b (largest "
                f"s (d - b) = {loss.worst_margin:.3g} < 0): scaling it up lowers "
                f"every term of Eq. 2 forever, so without a regulariser the "
                f"likelihood has no maximiser. Set lam > 0.")
        g_new = np.append(gL_new.ravel(), gb_new)
        s_, y_ = x_new - x, g_new - g
        curv = float(s_ @ y_)
        # Barzilai-Borwein length for a steepest step after a reset
        step = float(s_ @ s_) / curv if curv > 0 else 2.0 * state.step
        if self.memory and curv > 1e-12 * float(np.linalg.norm(s_) * np.linalg.norm(y_)):
            pairs = (pairs + ((s_, y_),))[-self.memory:]
        err = float(np.linalg.norm(g_new)) / max(1.0, abs(f_new))
        return L_new, LRState(state.iter_num + 1, err, b_new, f_new, gL_new, gb_new, step,
                              False, pairs)

    def finalize(self, L, state, loss):
        M = L.T @ L
        cert = Certificate.from_bound(state.f, -math.inf, max_violation=0.0, min_eig=0.0,
                                      solver=self.name, tolerances={"tol": self.tol})
        info = {"L": L, "b": state.b, "stationarity": state.error}
        if self.certify and self.rank == loss.n_features and loss.gram is None \
                and loss.n_pairs <= CERTIFY_PAIRS and not expired():
            cert, b = certify_point(loss.pair_data(), M, state.b, solver=self.name,
                                    tol=self.tol, sharpen=self.converged(state))
            if cert.objective <= state.f:  # b re-optimised: never worse
                info["b"] = b
        if getattr(loss, "_backend", None) is not None:
            # backend, device and the moves, the certificate's included
            info.update(loss.where.info())
        return M, cert, info


def _random_start(loss, rank, rng):
    """A random ``L`` scaled so that the mean squared distance of a sample
    of pairs is 1, and ``b = 1``."""
    N, D = loss.X.shape
    L = rng.standard_normal((rank, D))
    idx = rng.integers(0, N, size=(min(2000, N * N), 2))
    idx = idx[idx[:, 0] != idx[:, 1]]
    X = loss.X
    if getattr(loss, "_backend", None) is not None:
        # only the sampled rows come to the host
        rows, where = np.unique(idx), loss.where
        X = np.zeros((N, D))
        sampled = loss.X[rows] if loss._backend == "dask" else where.xp.take(
            loss.X, where.dev(rows), axis=0)
        X[rows] = where.host(sampled)
    diff = (X[idx[:, 0]] - X[idx[:, 1]]) @ L.T
    scale = float(np.mean(np.sum(diff * diff, axis=1))) if len(idx) else 1.0
    return L / math.sqrt(max(scale, 1e-300)), 1.0


def _whitened(loss):
    """The same loss on ``X_c B`` (``B`` :func:`whitening_basis`, D x r):
    ``M = B M' B^T`` gives the same distances, and the regulariser of ``M``
    is that of ``M'`` with ``Q = B^T B`` (the ``gram`` of :class:`_Loss`).
    Returns ``(loss', B)``.  The data stay where they are: on a device or a
    cluster ``B`` comes from the triangular factor of a QR decomposition
    of ``X_c`` computed there (D x D, to the host), and ``X_c B`` is
    formed there."""
    where, X = loss.where, loss.X
    # the centred rows, once, where the data are (on Dask the column means
    # come to the host once: the QR and X B below both read them)
    if loss._backend == "xp":
        Xc = X - where.xp.mean(X, axis=0)
    elif loss._backend == "dask":
        Xc = X - where.transfers.gathered(np.asarray(X.mean(axis=0).compute()))[0]
    else:
        Xc = X - X.mean(axis=0)
    if loss._backend is None:
        B = whitening_basis(X, Xc)
    elif isinstance(loss, PairSet):
        B = whitening_basis(loss._Xh)
    else:
        B = whitening_basis(X, _centred_r(loss, Xc))
    if loss.lam > 0 and loss.regularizer == "trace" and B.shape[1]:
        # the trace weighs a whitened direction of variance v by lam / v:
        # full whitening makes the directions of small variance stiff (raw
        # digits: L-BFGS took 4 700 iterations).  Directions are whitened
        # only down to the variance RIDGE * lam / P at which that weight
        # matches the pairs' curvature (about P / 4 per unit variance)
        v = 1.0 / np.sum(B * B, axis=0)  # the variance along each column
        nu = RIDGE * loss.lam / max(loss.n_pairs, 1)
        B = B * np.sqrt(v / (v + nu))
    gram = B.T @ B if loss.lam > 0 else None
    if loss._backend == "xp":  # X B on the device, B moved there
        Xw = Xc @ where.dev(B, float)
    elif loss._backend == "dask":  # X B on the cluster, persisted once
        Xw = (Xc @ where.transfers.sent(B)[0]).persist()
    else:
        Xw = Xc @ B  # (N, r)
    if isinstance(loss, PairSet):
        if loss._backend is None:
            out = PairSet(Xw, np.column_stack([loss.i, loss.j]), loss.s, lam=loss.lam,
                          regularizer=loss.regularizer, gram=gram)
        else:
            pxp = PairsXP(where, Xw, loss.i, loss.j, loss.s)
            out = PairSet._device(pxp, None, np.column_stack([loss.i, loss.j]), loss.s,
                                  lam=loss.lam, regularizer=loss.regularizer, gram=gram)
        return out, B
    # the same pairs, where the data are: the row ids of the data as given
    out = AllPairs.__new__(AllPairs)
    out.where = where
    if loss._backend is None:
        out._init_common(Xw, loss.lam, loss.regularizer, gram)
    else:  # validated already; the labels and row ids on the device shared
        out.X, out.lam, out.regularizer, out.gram = Xw, loss.lam, loss.regularizer, gram
        out._y_dev = getattr(loss, "_y_dev", None)
        out._rows_dev = getattr(loss, "_rows_dev", None)
    out.labels, out.block = loss.labels, loss.block
    out._rows, out._has_dups, out.n_pairs = loss._rows, loss._has_dups, loss.n_pairs
    return out, B


def _centred_r(loss, Xc):
    """``R`` (D, D, on the host) of a QR decomposition of the centred rows
    ``Xc`` of an :class:`AllPairs` on a device or a cluster, computed
    there (a tall-and-skinny QR over the row chunks on Dask)."""
    where = loss.where
    if loss._backend == "dask":
        da = require("dask.array")
        Xc = Xc.rechunk({1: -1})  # one column chunk: tsqr
        (R,) = where.transfers.gathered(np.asarray(da.linalg.qr(Xc)[1].compute()))
        return R
    return where.host(where.xp.linalg.qr(Xc)[1])


def fit_lowrank(loss, rank, *, n_init=3, random_state=None, maxiter=5000, tol=1e-8,
                max_time=None, certify=True, warn=True):
    """Low-rank LDML from ``n_init`` random starts; the lowest ``F`` is kept.

    Parameters
    ----------
    loss : AllPairs or PairSet
    rank : int
        ``d``; at most ``D``.
    n_init : int >= 1
        Random starts (the paper's "multiple random initializations");
        one at full rank, where the problem is convex in ``M``.
    random_state : int, RandomState instance or None
    maxiter, tol, max_time, certify : as in :class:`LowRankLDML`
        ``max_time`` is shared by all the starts.
    warn : bool
        ``ConvergenceWarning`` when the kept run is not stationary.

    Returns
    -------
    SolverResult
        ``info["L"]``, ``info["b"]``, ``info["objectives"]`` (each start's
        final ``F``), ``info["best_init"]``.
    """
    with budget(max_time):
        _check_loss(loss)
        if isinstance(n_init, bool) or not isinstance(n_init, Integral) or n_init < 1:
            raise ValueError(f"n_init: expected an integer >= 1, got {n_init!r}.")
        if isinstance(rank, bool) or not isinstance(rank, Integral) or rank < 1:
            raise ValueError(f"rank: expected an integer >= 1, got {rank!r}.")
        if rank > loss.n_features:
            raise ValueError(f"rank: {rank} exceeds the {loss.n_features} input dimensions.")
        rng = check_random_state(random_state)
        gen = np.random.default_rng(rng.randint(2 ** 31 - 1))
        t0 = time.perf_counter()
        best, objectives = None, []
        work, B = loss, None
        if rank == loss.n_features:
            # full rank: the problem is convex in M, and the descent from a
            # random start ends at its optimum -- one start is enough.  It runs
            # in the whitened coordinates of the data's span (the same problem,
            # preconditioned: features of scales 1e3 and 1e-1 side by side
            # otherwise take L-BFGS thousands of iterations)
            n_init = 1
            if loss.gram is None:
                work, B = _whitened(loss)
        run_rank = int(rank) if B is None else B.shape[1]
        for k in range(int(n_init)):
            left = None if max_time is None \
                else max(0.0, max_time - (time.perf_counter() - t0))
            solver = LowRankLDML(rank=run_rank, maxiter=maxiter, tol=tol, max_time=left,
                                 certify=False)
            res = solver.run(work, _random_start(work, run_rank, gen), warn=False)
            if B is not None:
                # back to the input's coordinates: L = L' B^T, zero rows below
                # the span's dimension
                L = np.zeros((int(rank), loss.n_features))
                L[:run_rank] = res.info["L"] @ B.T
                res.info["L"], res.M = L, L.T @ L
            res.info["init"] = k
            objectives.append(res.objective)
            if best is None or res.objective < best.objective:
                best = res
            if left is not None and time.perf_counter() - t0 >= max_time:
                break
        if certify:
            M, cert, info = LowRankLDML(rank=int(rank), certify=True).finalize(
                best.info["L"], _final_state(best), loss)
            best = SolverResult(M=M, status=best.raw_status, objective=cert.objective,
                                n_iter=best.n_iter, certificate=cert, method="lowrank",
                                info={**best.info, **info}, raw_status=best.raw_status)
        best.info["objectives"] = objectives
        best.info["best_init"] = best.info.pop("init", 0)
        if getattr(loss, "_backend", None) is not None:
            # the moves of every start and of the certificate
            best.info.update(loss.where.info())
        best.time = time.perf_counter() - t0
        if warn and best.raw_status != Status.OPTIMAL and best.status != Status.OPTIMAL:
            warnings.warn(stop_message("lowrank LDML", best, max_time), ConvergenceWarning,
                          stacklevel=2)
        return best


def _newton_finish(data, res):
    """The certified Newton polish of a rough L-BFGS result, or ``None``;
    traced as one stage (``"newton polish"``, its iterations the candidate
    faces certified)."""
    t0 = time.perf_counter()
    gap, tried, found = math.inf, 0, None
    with captured() as certifying:  # the bound's auxiliary SDPs, traced after
        for M, b in polish(data, res.M, res.info["b"]):
            tried += 1
            cert, b = certify_point(data, M, b, solver="fast", sharpen=False)
            gap = min(gap, cert.rel_gap)
            if cert.passed:
                info = {**res.info, "b": b, "lbfgs_iter": res.n_iter}
                info.pop("L", None)
                found = SolverResult(M=M, status=Status.OPTIMAL,
                                     objective=cert.objective, n_iter=res.n_iter,
                                     certificate=cert, method="fast", info=info,
                                     raw_status=Status.OPTIMAL)
                break
    record("newton polish", "iterative", iterations=tried,
           seconds=time.perf_counter() - t0, gap=gap,
           status=Status.OPTIMAL if found is not None else "not certified")
    emit(certifying, why="certifying newton polish's point")
    return found


def _final_state(res):
    """The parts of a finished run's state :meth:`LowRankLDML.finalize` reads."""
    return LRState(res.n_iter, res.info["stationarity"], res.info["b"], res.objective,
                   None, 0.0, 0.0, stalled=res.raw_status == Status.OPTIMAL)


def solve_fast(data, *, loss=None, maxiter=None, tol=None, max_time=None, warn=True):
    """LDML Eq. 2 at full rank, certified: the package's fast path.

    L-BFGS on the square factor (:func:`fit_lowrank` at ``rank = D``, one
    start, a fixed seed), which reaches the optimum in tens to hundreds of
    iterations -- up to ``LEVEL_SDP_PAIRS`` pairs only to a stationarity of
    ``NEWTON_FROM``, Newton's method on the face of its point finishing
    (:mod:`._polish`; a rank-deficient optimum takes the square factor
    thousands of iterations); when its certificate does not pass, the accelerated
    projected gradient (:class:`ProjectedGradient`) continues from that
    point until it does.  Without a regulariser, attainment is decided
    first (:class:`~cvxmetric.result.NotAttainedError`).

    Parameters
    ----------
    data : LDMLData
    loss : AllPairs or PairSet, optional
        The same pairs as ``data`` for the L-BFGS phase (every pair of
        labelled samples: :class:`AllPairs`, block by block); by default
        ``PairSet.from_data(data)``.
    maxiter, tol, max_time : optional
        Of both phases (``max_time`` is shared).
    warn : bool
        ``ConvergenceWarning`` when the result is not certified.

    Returns
    -------
    SolverResult
        Method ``"fast"``; ``info["phases"]`` names the phases run.
    """
    with budget(max_time):
        if not isinstance(data, LDMLData):
            raise TypeError(f"data: expected LDMLData, got {type(data).__name__}.")
        t0 = time.perf_counter()
        if loss is None:
            loss = PairSet.from_data(data)
        else:
            _check_loss(loss)
            if loss.n_pairs != data.n_pairs or loss.lam != data.lam \
                    or loss.regularizer != data.regularizer or loss.gram is not None:
                raise ValueError("loss: expected the pairs and regulariser of data.")
            loss._data = data
        # Without a regulariser, separable pairs are refused by the iterations
        # (an iterate that puts every pair on its side of b proves it, within a
        # second on the digits where the recession SDP takes a minute); a
        # certificate that passes proves the point optimal
        if np.all(data.s > 0) or np.all(data.s < 0):
            data.attained()  # NotAttainedError: one label only
        opts = {k: v for k, v in (("maxiter", maxiter), ("tol", tol)) if v is not None}
        res = None
        if data.n_pairs <= LEVEL_SDP_PAIRS:
            # up to 5 000 pairs: L-BFGS to a loose stationarity, then Newton's
            # method on the face of its point (._polish, exact second
            # derivatives); on a rank-deficient optimum the square factor's
            # iterations crawl (breast cancer's 80 pairs: 4 500 iterations, 3.8
            # s, against 1 100 and a polish, 1.1 s, certified at 3e-15)
            rough = fit_lowrank(loss, data.d, n_init=1, random_state=0, max_time=max_time,
                                warn=False, certify=False,
                                **{**opts, "tol": max(opts.get("tol", 0.0), NEWTON_FROM)})
            res = _newton_finish(data, rough)
            if res is None and expired():
                # the budget is spent: L-BFGS's point, certified as it is
                cert, b = certify_point(data, rough.M, rough.info["b"], solver="fast",
                                        sharpen=False)
                res = SolverResult(M=rough.M, status=rough.raw_status,
                                   objective=cert.objective, n_iter=rough.n_iter,
                                   certificate=cert, method="fast",
                                   info={**rough.info, "b": b},
                                   raw_status=rough.raw_status)
        phases = ["lbfgs", "newton"] if res is not None else ["lbfgs"]
        if res is None:
            left = None if max_time is None \
                else max(1e-3, max_time - (time.perf_counter() - t0))
            res = fit_lowrank(loss, data.d, n_init=1, random_state=0,
                              max_time=left, warn=False, **opts)
        if not res.certificate.passed and not expired():
            left = None if max_time is None \
                else max(1e-3, max_time - (time.perf_counter() - t0))
            res = ProjectedGradient(max_time=left, **opts).run(data, res, warn=False)
            phases.append("projected_gradient")
        res.method = "fast"
        res.info["phases"] = phases
        res.info.update(data.backend_info())
        res.time = time.perf_counter() - t0
        if warn and res.status != Status.OPTIMAL:
            warnings.warn(stop_message("LDML fast", res, max_time), ConvergenceWarning,
                          stacklevel=2)
        return res
