"""SLR's passes over the pairs as Dask tasks, for a ``dask.array`` chunked by rows.

:class:`SLRDaskData` is :class:`~cvxmetric.slr._problem.SLRData` for a
``dask.array`` ``X``: ``X`` is factored on the cluster (a tall-and-skinny
SVD), the ``(n, r)`` factor ``U`` stays there (persisted, one block that
every task reads where it is), and each pass over the pairs -- value,
gradient, Hessian or Hessian products, the certificate's dual and ball
bounds, the objective at ``M`` -- is one task per row chunk on the active
scheduler (a ``distributed`` client when one is active), computed in
NumPy inside the task.  Only the partial sums (scalars, ``r x r``,
``p x p``) come back and are added on the host; they are counted as
``to_host`` in the data's :class:`~cvxmetric._backend.Transfers`.  The
generic array-API passes of :class:`SLRData` also run on a ``dask.array``,
but build one graph per row block: far slower.

The passes run over full row blocks (``b x n``), not the upper block
triangle of the NumPy path, in float64.  The active masks of the
matrix-free Newton mode are recomputed inside each Hessian product from the
point that defined them (one more block product per block, no state kept
on the workers between passes).
"""

from itertools import pairwise

import numpy as np

from .. import _backend
from .._settings import SLR_DEFAULT_BLOCK as DEFAULT_BLOCK
from .._tolerances import certificate_tolerance
from ._problem import (
    SLRData,
    _encode_labels,
    _power_of_two_scale,
    _rank_and_block,
    _tick,
    check_thresholds,
)

__all__ = ["SLRDaskData"]

_GAP, _ = certificate_tolerance("slr")


# -- one row range of a pass, in any namespace ------------------------------------
# ``ctx`` = (U, y, Q, delta1, delta2): full (n, r) U, (n,) class codes, (n, p)
# symmetric features (or None); ``lo, hi`` the rows, ``b`` rows per block.

def _args(xp, K, same, d1, d2):
    return xp.where(same, d1 - K, K - d2)


def _blocks(lo, hi, b):
    for start in range(lo, hi, b):
        yield start, min(hi, start + b)


def _same(xp, y, i0, i1):
    return y[i0:i1, None] == y[None, :]


def _sum(xp, x):
    return xp.sum(x)


def rows_value(xp, ctx, lo, hi, b, L, R):
    """``(f, n_active)`` of Eq. 4 at ``K = L R`` over rows ``lo:hi``."""
    _, y, _, d1, d2 = ctx
    f = n = 0.0
    for i0, i1 in _blocks(lo, hi, b):
        a = _args(xp, L[i0:i1, :] @ R, _same(xp, y, i0, i1), d1, d2)
        rho = xp.where(a > 0, a, xp.zeros_like(a))
        f = f + _sum(xp, rho * rho)
        n = n + xp.sum(xp.astype(a > 0, a.dtype))
    return f, n


def rows_grad_hess(xp, ctx, lo, hi, b, W, hessian):
    """``(f, n_active, G, Gq)`` over rows ``lo:hi`` at ``K = U W``."""
    U, y, Q, d1, d2 = ctx
    f = n = 0.0
    G = Gq = 0.0
    for i0, i1 in _blocks(lo, hi, b):
        same = _same(xp, y, i0, i1)
        a = _args(xp, U[i0:i1, :] @ W, same, d1, d2)
        act = xp.astype(a > 0, a.dtype)
        rho = a * act
        f = f + _sum(xp, rho * rho)
        n = n + xp.sum(act)
        lam = xp.where(same, -2.0 * rho, 2.0 * rho)
        G = G + U[i0:i1, :].T @ (lam @ U)
        if hessian:
            Gq = Gq + Q[i0:i1, :].T @ (act @ Q)
    return f, n, G, Gq


def rows_mask(xp, ctx, i0, i1, W0):
    """The active mask (float) of rows ``i0:i1`` at ``K = U W0``."""
    U, y, _, d1, d2 = ctx
    a = _args(xp, U[i0:i1, :] @ W0, _same(xp, y, i0, i1), d1, d2)
    return xp.astype(a > 0, a.dtype)


def rows_hess_vec(xp, ctx, lo, hi, b, WD, masks=None, W0=None):
    """``U^T (m o (U D U^T)) U`` over rows ``lo:hi`` (``WD = D U^T``); ``m``
    per block from ``masks`` or recomputed at ``W0``."""
    U = ctx[0]
    T = 0.0
    for k, (i0, i1) in enumerate(_blocks(lo, hi, b)):
        m = (xp.astype(masks[k], U.dtype) if masks is not None
             else rows_mask(xp, ctx, i0, i1, W0))
        T = T + U[i0:i1, :].T @ ((U[i0:i1, :] @ WD) * m @ U)
    return T


def rows_dual(xp, ctx, lo, hi, b, W0, W1):
    """``(sq, lin, E)`` of ``Lambda_1 = -2 s [a(Z1)]_+`` on ``a(Z0) > 0``."""
    U, y, _, d1, d2 = ctx
    sq = lin = 0.0
    E = 0.0
    for i0, i1 in _blocks(lo, hi, b):
        same = _same(xp, y, i0, i1)
        a0 = _args(xp, U[i0:i1, :] @ W0, same, d1, d2)
        a1 = _args(xp, U[i0:i1, :] @ W1, same, d1, d2)
        rho1 = xp.where((a0 > 0) & (a1 > 0), a1, xp.zeros_like(a1))
        lam = xp.where(same, -2.0 * rho1, 2.0 * rho1)
        D = xp.where(same, xp.full_like(lam, d1), xp.full_like(lam, d2))
        sq = sq + _sum(xp, lam * lam)
        lin = lin + _sum(xp, lam * D)
        E = E + U[i0:i1, :].T @ (lam @ U)
    return sq, lin, E


def rows_robust(xp, ctx, lo, hi, b, W, rho, un):
    """``Q^T m Q`` of the terms with ``a_ij > rho |u_i| |u_j|``."""
    U, y, Q, d1, d2 = ctx
    Gq = 0.0
    for i0, i1 in _blocks(lo, hi, b):
        a = _args(xp, U[i0:i1, :] @ W, _same(xp, y, i0, i1), d1, d2)
        keep = xp.astype(a > rho * un[i0:i1, None] * un[None, :], a.dtype)
        Gq = Gq + Q[i0:i1, :].T @ (keep @ Q)
    return Gq


def _sym_features(xp, U):
    r = U.shape[1]
    cols = [U[:, i] * U[:, j] for i in range(r) for j in range(i, r)]
    return xp.stack(cols, axis=1)


# -- engines: where the row ranges run -------------------------------------------

def _chunk_task(fn, U, y, Q, d1, d2, lo, hi, b, args, kw):
    """One Dask task: ``fn`` over rows ``lo:hi`` in NumPy (the partial sums
    of the chunk; the host adds them up)."""
    return fn(np, (U, y, Q, d1, d2), lo, hi, b, *args, **kw)


class _DaskEngine:
    """One task per row chunk of a ``dask.array`` on the active scheduler."""

    def __init__(self, U, y, d1, d2, b, transfers):
        dask = _backend.require("dask")
        self.dask = dask
        self.t = transfers
        n, r = U.shape
        self.chunks = list(np.cumsum((0,) + tuple(U.chunks[0])))
        # the full (n, r) factor as one persisted block: every task reads it
        # where it is (the cluster's memory), nothing goes through the host
        self.U = U.rechunk((n, r)).persist()
        self._Ud = self.U.to_delayed().ravel()[0]
        self.y = np.asarray(y)
        self._yd = dask.delayed(self.y)
        self.Q = None
        self.d1, self.d2, self.b = d1, d2, b

    def run(self, fn, *args, with_q=False, deadline=None, **kw):
        _tick(deadline)
        if with_q and self.Q is None:
            da = _backend.require("dask.array")
            Ua = da.from_delayed(self._Ud, self.U.shape, dtype=float)
            self.Q = self.dask.delayed(_sym_features)(np, Ua).persist()
        task = self.dask.delayed(_chunk_task, pure=True)
        parts = [task(fn, self._Ud, self._yd, self.Q if with_q else None,
                      self.d1, self.d2, lo, hi, self.b, args, kw)
                 for lo, hi in pairwise(self.chunks)]
        parts = self.dask.compute(*parts)
        self.t.gathered(*[np.asarray(x) for p in parts
                          for x in (p if isinstance(p, tuple) else (p,))])
        # the partial sums of each chunk (scalars, r x r, p x p) on the host
        return tuple(sum(p[i] for p in parts) for i in range(len(parts[0]))) \
            if isinstance(parts[0], tuple) else sum(parts)

    def masks(self, W0):
        return ("recompute", W0)


class _Masks(list):
    """Active masks of a pass: recomputed in each task, so only ``Z``, the
    point that defines them, is kept."""

    Z = None


def _at(Z):
    m = _Masks()
    m.Z = np.array(Z, dtype=float)
    return m


class SLRDaskData(SLRData):
    """:class:`SLRData` whose passes run as Dask tasks over row chunks.

    Built by :meth:`SLRData.from_labels` for a ``dask.array`` ``X``.  ``X``
    and ``U`` are dask arrays; ``s``, ``V``, ``y``, ``classes`` are on the
    host (small).  ``engine`` submits the tasks; ``transfers`` counts the
    partial results gathered to the host.
    """

    engine = None

    @classmethod
    def from_dask(cls, X, y, *, delta1=1.0, delta2=0.0, rank_tol=None,
                  block=DEFAULT_BLOCK):
        """Validate ``X`` and factor it on the cluster (see :meth:`from_labels`)."""
        da = _backend.require("dask.array")
        if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
            raise ValueError(f"X: expected a non-empty 2-D array, got shape "
                             f"{tuple(X.shape)}.")
        X = X.astype(np.float64)
        n, d = X.shape
        codes, classes = _encode_labels(np.asarray(y), n)
        delta1, delta2 = check_thresholds(delta1, delta2)
        top, finite = da.compute(da.max(da.abs(X)), da.all(da.isfinite(X)))
        if not bool(finite):
            raise ValueError("X: contains NaN or infinite values.")
        scale = _power_of_two_scale(float(top))
        Xs = (X / scale).rechunk({1: -1})  # tall and skinny: one column chunk
        # the factors in one graph: computing s and Vt, then U, in two would
        # resubmit the shared keys of the SVD (which the scheduler warns of)
        U, s, Vt = _backend.require("dask").persist(*da.linalg.svd(Xs))
        s, Vt = da.compute(s, Vt)
        r, block = _rank_and_block(s, n, d, rank_tol, block)
        b = max(1, block // n)
        U = U[:, :r].persist()
        data = cls(X=X, y=codes, classes=classes, delta1=delta1, delta2=delta2, U=U,
                   s=np.asarray(s[:r], dtype=float).copy(),
                   V=np.ascontiguousarray(Vt[:r].T), block_rows=b, scale=scale,
                   where=_backend.Cluster(), _cache={"Xs": Xs})
        # the engine counts the partial sums it gathers in the cluster's
        # transfers
        data.engine = _DaskEngine(U, codes, delta1, delta2, b, data.transfers)
        return data

    # -- passes: one task per row chunk ------------------------------------------

    def _run(self, fn, hosts, *, deadline=None, with_q=False):
        return self.engine.run(_dask_wrap, fn, list(hosts), deadline=deadline,
                               with_q=with_q)

    def evaluate(self, Z, *, grad=False, hessian=False, deadline=None):
        f, n, G, Gq = self._run(rows_grad_hess, [np.asarray(Z, dtype=float), hessian],
                                deadline=deadline, with_q=hessian)
        H = self._hessian_from_gram(np.asarray(Gq)) if hessian else None
        return float(f), (np.asarray(G) if grad else None), H, round(float(n))

    def _upper_value(self, left, right, deadline=None):
        raise NotImplementedError  # every value goes through evaluate

    def pass_masks(self, Z, *, dual_mask=None, deadline=None):
        f, G, _, n = self.evaluate(Z, grad=True, deadline=deadline)
        dual = None if dual_mask is None else self._dual_parts(dual_mask.Z, Z, deadline)
        return f, G, n, _at(Z), dual

    def _dual_parts(self, Z0, Z1, deadline=None):
        """``sq, lin, E`` of ``Lambda_1`` at ``Z1`` on the active set of ``Z0``."""
        sq, lin, E = self._run(rows_dual, [np.asarray(Z0, dtype=float),
                                           np.asarray(Z1, dtype=float)],
                               deadline=deadline)
        E = np.asarray(E)
        return {"sq": float(sq), "lin": float(lin), "E": 0.5 * (E + E.T)}

    def hess_vec(self, D, masks, *, deadline=None, dtype=np.float64):
        """``2 U^T (m o (U D U^T)) U``, float64 whatever ``dtype`` says."""
        T = self._run(rows_hess_vec, [np.asarray(D, dtype=float), masks.Z],
                      deadline=deadline)
        T = np.asarray(T)
        return T + T.T

    def projection_step(self, Z, *, deadline=None):
        f, G, _, _ = self.evaluate(Z, grad=True, deadline=deadline)
        return f, Z - 0.5 * G

    def least_squares_Z(self, Y=None, *, deadline=None):
        if Y is not None:
            raise NotImplementedError("least_squares_Z(Y) needs NumPy data.")
        _tick(deadline)
        C = np.asarray(self._run(_class_sums, [None, self.n_classes])[0])
        u = C.sum(axis=0)
        return self.delta2 * np.outer(u, u) + (self.delta1 - self.delta2) * (C.T @ C)

    def _dual_bound(self, Z, H, g):
        """Bound 2: the Newton step on the host, its dual quantities by one
        pass of tasks."""
        Z1 = self._newton_point(Z, H, g)
        if Z1 is None:
            return -np.inf
        return self.dual_bound_from(self._dual_parts(Z, Z1), Z1)

    def _hessian_robust(self, Z, H, rho):
        Gq = self._run(rows_robust, [np.asarray(Z, dtype=float), rho, "un"], with_q=True)
        return self._hessian_from_gram(np.asarray(Gq))

    def objective(self, M):
        """Eq. 4 at ``M``, recomputed from ``X M X^T`` by one task per chunk."""
        return float(_dask_objective(self.engine, self.Xs, self._internal_M(M), self.y,
                                     self.delta1, self.delta2, self.block_rows))

    def check_representable(self, parts):
        """As :meth:`SLRData.check_representable`, without the diagnosis of
        ``X`` (which would read all of it on the host)."""
        err = parts.get("representation_error", 0.0)
        if not err > _GAP:
            return
        raise ValueError(
            f"X: no matrix M in float64 represents this solution in X's units: "
            f"the objective recomputed from X M X^T differs from the solution's "
            f"({parts['objective_Z']:.10g}) by a relative {err:.2g}; remove nearly "
            f"collinear features (e.g. by PCA) or a common offset much larger "
            f"than the spread.")

    def _U32(self):  # pragma: no cover - the passes are float64
        raise NotImplementedError

    def pair_features(self, i, j):  # pragma: no cover - dense IPM is host-only
        raise NotImplementedError("SLR's interior-point fallback needs NumPy data.")


def _class_sums(xp, ctx, lo, hi, b, _W, n_classes):
    """``C`` (n_classes, r): the class sums of ``U``'s rows ``lo:hi``."""
    U, y = ctx[0], ctx[1]
    rows = [xp.sum(xp.where((y[lo:hi] == c)[:, None], U[lo:hi, :],
                            xp.zeros_like(U[lo:hi, :])), axis=0)
            for c in range(n_classes)]
    return (xp.stack(rows, axis=0),)


def _dask_wrap(xp, ctx, lo, hi, b, fn, hosts, **kw):
    """In a Dask task: turn host ``Z``'s into ``Z U^T`` and call ``fn``."""
    U = ctx[0]
    args = []
    for a in hosts:
        if isinstance(a, np.ndarray) and a.ndim == 2 and a.shape == (U.shape[1],) * 2:
            args.append(a @ U.T)
        elif isinstance(a, str) and a == "un":
            args.append(np.linalg.norm(U, axis=1))
        else:
            args.append(a)
    if fn is rows_hess_vec:
        WD, W0 = args
        return fn(xp, ctx, lo, hi, b, WD, W0=W0)
    return fn(xp, ctx, lo, hi, b, *args, **kw)


def _dask_objective(e, Xs, Mi, y, d1, d2, b):
    """Eq. 4 at ``Xs Mi Xs^T`` by one task per row chunk of ``Xs``."""
    dask = e.dask
    if getattr(e, "Xs", None) is None:
        # one persisted block, referenced (kept alive) by the engine
        e.Xs = Xs.rechunk((Xs.shape[0], Xs.shape[1])).persist()
    Xd = e.Xs.to_delayed().ravel()[0]
    edges = e.chunks

    def task(X, lo, hi):
        ctx = (None, np.asarray(y), None, d1, d2)
        return rows_value(np, ctx, lo, hi, b, X @ Mi, X.T)[0]

    parts = [dask.delayed(task)(Xd, lo, hi) for lo, hi in pairwise(edges)]
    return sum(dask.compute(*parts))
