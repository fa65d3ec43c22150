"""LMNN's passes over every impostor triplet off NumPy: on the namespace of
the input (PyTorch, CuPy, ``array-api-strict``) and as Dask tasks over the
row chunks of a ``dask.array``.

Two passes visit every triplet ``(i, j, l)`` block of anchors by block:
the certificate's (:func:`dual_rows`: the hinge sum, the dual matrix ``S``
and ``sum gamma`` of :meth:`LMNNData.certificate
<cvxmetric.lmnn.LMNNData.certificate>`) and the working set's screening
(:func:`scan_rows_xp`, the array-API twin of the NumPy kernel of
:func:`cvxmetric.lmnn.fast.scan`).  :func:`dual_rows` is written once for
any namespace, NumPy included; the given multipliers of a certificate
enter as corrections of the sign multipliers on their own triplets (a
gather, not a scatter, which the array API does not have).

:class:`XpSweeps` keeps the centred samples ``Xn``, the target neighbours
and the class codes on the input's device; per pass the ``(d, r)`` factor
of ``M`` goes there and ``d x d`` matrices and scalars come back (and, for
a screening, the triplets it keeps), each through the data's
:class:`~cvxmetric._backend.Device`, which counts it.  :class:`DaskSweeps`
keeps ``Xn`` persisted on the cluster as one block and runs each pass as
one task per row chunk, in NumPy inside the task; only the chunks' partial
sums (and kept triplets) are gathered.  The small algebra -- the ``d x d``
eigendecomposition of ``M``, the Loewner scale of the bound -- stays on the
host.  The working set's restricted solve (Qwise's dual solver) runs on the
device with :class:`XpSweeps` (:meth:`XpSweeps.qwise`) and on the host with
:class:`DaskSweeps`.
"""

import math
from typing import NamedTuple

import numpy as np

from .. import _backend
from .._settings import LMNN_HASH, MARGIN_TOL
from ..qwise._xp import QwiseXPData

__all__ = ["DaskSweeps", "XpSweeps", "dual_rows", "scan_rows_xp"]

#: :data:`~cvxmetric._settings.LMNN_HASH` as int64 (the same bits): device
#: integers are signed.
_HASH = LMNN_HASH - (1 << 64)


class Ctx(NamedTuple):
    """What a pass reads besides ``M``: centred samples ``Xn`` (n, d), target
    neighbours (n, k) (``-1``: none), class codes (n,), in one namespace."""

    Xn: object
    targets: object
    codes: object
    k: int

    @property
    def n_samples(self):
        return self.Xn.shape[0]


def _arange(xp, m, like):
    return xp.arange(m, device=_backend.device_of(like)) if xp is not np else np.arange(m)


def _astype(xp, x, dtype):
    """``x`` as ``dtype`` (NumPy's method: its declared minimum predates
    ``numpy.astype``)."""
    return x.astype(dtype) if xp is np else xp.astype(x, dtype)


def _take_rows(xp, D, t):
    """``D[a, t[a, s]]`` (b, k) for ``D`` (b, n), ``t`` (b, k) in ``[0, n)``."""
    if xp is np:
        return np.take_along_axis(D, t, axis=1)
    b, n = D.shape
    idx = _arange(xp, b, t)[:, None] * n + t
    return xp.reshape(xp.take(xp.reshape(D, (-1,)), xp.reshape(idx, (-1,))), t.shape)


def _cert_args(xp, ctx, Z, w, lo, hi):
    """``(b, k, n)`` hinge arguments ``1 + D_M(i, j) - D_M(i, l)`` of the
    anchors ``lo:hi`` (``-inf`` where ``(i, s, l)`` is no triplet), the
    distances from the differences themselves."""
    diff = Z[lo:hi, None, :] - Z[None, :, :]
    if xp is np:
        diff *= diff
    else:
        diff = diff * diff
    D = diff @ w
    t = ctx.targets[lo:hi, :]
    Dt = _take_rows(xp, D, xp.where(t >= 0, t, 0))
    arg = 1.0 + Dt[:, :, None] - D[:, None, :]
    none = xp.logical_or((ctx.codes[lo:hi, None] == ctx.codes[None, :])[:, None, :],
                         (t < 0)[:, :, None])
    return xp.where(none, -math.inf, arg)


def _given(xp, ctx, mu, arg, lo, local, gamma):
    """Corrections for the given multipliers ``gamma`` of the triplets at
    flat positions ``local`` of a block's ``arg`` (anchors from ``lo``):
    ``(dS, dlin, dS_alt, dlin_alt, n_bad)``, the change from the sign
    multipliers to ``gamma`` and to the consistent choice (``gamma``, or the
    sign of its hinge off the margin where they disagree)."""
    k, n, Xn = ctx.k, ctx.n_samples, ctx.Xn
    a = xp.take(xp.reshape(arg, (-1,)), local)
    sign = mu * _astype(xp, a > MARGIN_TOL, a.dtype)
    delta = gamma - sign
    change = xp.logical_and(xp.abs(a) > MARGIN_TOL, sign != gamma)
    alt = xp.where(change, 0.0, delta)
    i = lo + local // (k * n)
    j = xp.take(xp.reshape(ctx.targets, (-1,)), i * k + (local // n) % k)
    xi = xp.take(Xn, i, axis=0)
    far = xi - xp.take(Xn, local % n, axis=0)
    near = xi - xp.take(Xn, xp.where(j >= 0, j, 0), axis=0)

    def corr(c):
        return (far * c[:, None]).T @ far - (near * c[:, None]).T @ near

    bad = xp.sum(_astype(xp, xp.logical_not(xp.isfinite(a)), a.dtype))
    return corr(delta), xp.sum(delta), corr(alt), xp.sum(alt), bad


def dual_rows(xp, ctx, Z, w, mu, lo, hi, step, ids=None, gamma=None, cuts=None,
              hinge_only=False):
    """The certificate's pass over the anchors ``lo:hi``, in namespace ``xp``.

    Parameters
    ----------
    ctx : Ctx
    Z, w : arrays
        ``Xn V`` (n, d) and the eigenvalues ``w`` of ``M`` (units of ``Xn``).
    mu : float
    lo, hi, step : int
        Anchors, and anchors per block.
    ids, gamma : arrays, optional
        Given multipliers: ``ids`` the flat positions of their triplets
        counted from anchor ``lo`` (``((i - lo) k + s) n + l``), sorted.
    cuts : sequence of int, optional
        ``cuts[b]``: the first of ``ids`` in block ``b`` (one more entry
        than blocks).
    hinge_only : bool
        The hinge sum alone.

    Returns
    -------
    tuple of arrays in ``xp``
        ``hinge`` alone, or ``(hinge, S, lin, S_alt, lin_alt, n_bad)``:
        ``S = sum gamma (C_il - C_ij)`` (units of ``Xn``, not symmetrised)
        and ``lin = sum gamma`` with the given multipliers on their
        triplets and the sign of the hinge elsewhere; ``_alt`` with the
        consistent multipliers (:func:`_given`); ``n_bad`` the given ids
        that are no triplet.
    """
    k, n, Xn = ctx.k, ctx.n_samples, ctx.Xn
    d = Xn.shape[1]
    zero = xp.sum(Xn[:0, 0])  # a 0-d float64 on the device
    hinge = lin = dlin = dlin_alt = bad = zero
    S = dS = dS_alt = xp.zeros((d, d), dtype=Xn.dtype, **_dev(xp, Xn))
    col = xp.zeros((n,), dtype=Xn.dtype, **_dev(xp, Xn))
    for blk, s in enumerate(range(lo, hi, step)):
        e = min(hi, s + step)
        arg = _cert_args(xp, ctx, Z, w, s, e)
        hinge = hinge + xp.sum(xp.maximum(arg, 0.0))
        if hinge_only:
            continue
        G = mu * _astype(xp, arg > MARGIN_TOL, arg.dtype)
        lin = lin + xp.sum(G)
        # sum_l W_il C_il in the samples' space (Xn is centred, O(1))
        W = xp.sum(G, axis=1)
        Xb = Xn[s:e, :]
        P = Xb.T @ (W @ Xn)
        S = S + (Xb * xp.sum(W, axis=1)[:, None]).T @ Xb - P - P.T
        col = col + xp.sum(W, axis=0)
        # - sum_j (sum_l G_ijl) C_ij, from the target differences
        t = ctx.targets[s:e, :]
        tn = xp.where(t >= 0, t, 0)
        near = (Xb[:, None, :] - xp.reshape(xp.take(Xn, xp.reshape(tn, (-1,)), axis=0),
                                            (e - s, k, d))) \
            * xp.sqrt(xp.where(t >= 0, xp.sum(G, axis=2), 0.0))[:, :, None]
        near = xp.reshape(near, (-1, d))
        S = S - near.T @ near
        if cuts is not None and cuts[blk + 1] > cuts[blk]:
            a, b = cuts[blk], cuts[blk + 1]
            parts = _given(xp, ctx, mu, arg, s, ids[a:b] - (s - lo) * k * n, gamma[a:b])
            dS, dlin = dS + parts[0], dlin + parts[1]
            dS_alt, dlin_alt, bad = dS_alt + parts[2], dlin_alt + parts[3], bad + parts[4]
    if hinge_only:
        return hinge
    S = S + (Xn * col[:, None]).T @ Xn
    return hinge, S + dS, lin + dlin, S + dS_alt, lin + dlin_alt, bad


def _dev(xp, x):
    return {} if xp is np else {"device": _backend.device_of(x)}


def block_cuts(ids, lo, hi, step, k, n):
    """``cuts`` of :func:`dual_rows`: positions in the sorted (host) ``ids``
    of the first triplet of each block of anchors ``lo:hi``."""
    starts = np.append(np.arange(lo, hi, step), hi).astype(np.int64)
    return [int(c) for c in np.searchsorted(ids, starts * k * n)]


# ---------------------------------------------------------------------------
# The screening pass on a namespace
# ---------------------------------------------------------------------------


def _scan_args_xp(xp, ctx, Z, sq, s, e):
    """:func:`cvxmetric.lmnn.fast._block_args` in namespace ``xp``."""
    D = xp.maximum(sq[s:e, None] + sq[None, :] - 2.0 * (Z[s:e, :] @ Z.T), 0.0)
    t = ctx.targets[s:e, :]
    near = xp.where(t >= 0, 1.0 + _take_rows(xp, D, xp.where(t >= 0, t, 0)), -math.inf)
    D = xp.where(ctx.codes[s:e, None] == ctx.codes[None, :], math.inf, D)
    return near[:, :, None] - D[:, None, :]


def _top_xp(xp, ids, vals, cap, spread):
    """:func:`cvxmetric.lmnn.fast._top` in namespace ``xp`` (the same key)."""
    if ids.shape[0] <= cap:
        return ids, vals
    if spread:
        key = xp.bitwise_and(xp.bitwise_right_shift(ids * _HASH, 11), (1 << 53) - 1)
        order = xp.argsort(key, stable=True)[:cap]
    else:
        order = xp.argsort(vals, descending=True, stable=True)[:cap]
    return xp.take(ids, order), xp.take(vals, order)


def scan_rows_xp(xp, ctx, Z, step, band, cap, spread, exclude, deadline):
    """The screening pass of :func:`cvxmetric.lmnn.fast.scan` over every
    anchor, in namespace ``xp``: ``(ids, args, hinge, n_found, complete)``
    with ``ids``, ``args`` and ``hinge`` (0-d, float64) on the device;
    ``exclude`` on the device too (or None)."""
    k, n = ctx.k, ctx.n_samples
    sq = xp.sum(Z * Z, axis=1)
    hinge = xp.sum(ctx.Xn[:0, 0])
    ids = vals = None
    found, complete = 0, True
    for s in range(0, n, step):
        if deadline is not None and s and deadline.expired():
            complete = False
            break
        arg = xp.reshape(_scan_args_xp(xp, ctx, Z, sq, s, min(n, s + step)), (-1,))
        hinge = hinge + xp.sum(xp.where(arg > 0.0, arg, 0.0), dtype=xp.float64)
        local = xp.nonzero(arg > -band)[0]
        v = xp.take(arg, local)
        b_ids = xp.astype(local, xp.int64) + s * k * n
        if exclude is not None and exclude.shape[0] and b_ids.shape[0]:
            pos = xp.clip(xp.searchsorted(exclude, b_ids), max=exclude.shape[0] - 1)
            out = xp.take(exclude, pos) != b_ids
            b_ids, v = b_ids[out], v[out]
        found += int(b_ids.shape[0])
        ids = b_ids if ids is None else xp.concat([ids, b_ids])
        vals = v if vals is None else xp.concat([vals, v])
        if cap is not None and ids.shape[0] > 4 * cap:
            ids, vals = _top_xp(xp, ids, vals, cap, spread)
    if ids is None:
        return None, None, hinge, found, complete
    if cap is not None:
        ids, vals = _top_xp(xp, ids, vals, cap, spread)
    return ids, vals, hinge, found, complete


# ---------------------------------------------------------------------------
# Engines: where the passes run
# ---------------------------------------------------------------------------


def _unit_scale(xp, X, mean, e):
    """``(X - mean) / 2^e`` (exact: two power-of-two factors, neither of
    which overflows)."""
    h = e // 2
    return (X - mean) * (2.0 ** -h) * (2.0 ** -(e - h))


class XpSweeps:
    """The passes on the device of an array-API input ``X`` (module docstring).

    Parameters
    ----------
    X : array
        The samples, as given (any float type: cast to float64 there).
    mean : ndarray of shape (d,)
        Their mean (host); with ``e``, ``Xn = (X - mean) / 2^e``.
    e : int
    targets, codes : ndarray
        Host arrays, moved once.
    k : int
    where : Device
        ``X``'s namespace and device, and the counted moves to and from
        there (shared with the data).
    """

    def __init__(self, X, mean, e, targets, codes, k, where):
        self.where = where
        self.X = _backend.float64(X, where.xp)
        self.ctx = self._ctx(mean, e, targets, codes, k)

    def _ctx(self, mean, e, targets, codes, k):
        """The :class:`Ctx` of the device samples ``self.X``."""
        dev = self.where.dev
        return Ctx(_unit_scale(self.where.xp, self.X, dev(mean), e), dev(targets),
                   dev(codes), int(k))

    def derived(self, X, mean, e, targets, codes, k):
        """The sweeps of samples computed on this device from its ``X``
        (``X`` here a function of the device array)."""
        new = object.__new__(XpSweeps)
        new.where = self.where
        new.X = X(self.X, self.where.dev)
        new.ctx = new._ctx(mean, e, targets, codes, k)
        return new

    def qwise(self, host):
        """The restricted Qwise problem ``host`` (NumPy, over the host copy
        of this engine's samples: :func:`cvxmetric.lmnn.exact._as_qwise`)
        with its passes here, on the device samples ``self.X``, which hold
        the same values (scaled there as on the host, by powers of two, or
        to round-off by a span basis); its moves are counted with the
        data's."""
        return QwiseXPData.over(host, self.X, self.where)

    def dual(self, w, V, mu, step, ids, gamma, hinge_only=False):
        """:func:`dual_rows` over every anchor; results on the host."""
        where, ctx = self.where, self.ctx
        xp, n = where.xp, ctx.n_samples
        Z = ctx.Xn @ where.dev(V)
        wd = where.dev(w)
        if hinge_only:
            return float(where.host(dual_rows(xp, ctx, Z, wd, mu, 0, n, step,
                                              hinge_only=True)))
        cuts = block_cuts(ids, 0, n, step, ctx.k, n) if ids.size else None
        idd = where.dev(ids) if ids.size else None
        gd = where.dev(gamma) if ids.size else None
        hinge, S, lin, S_alt, lin_alt, bad = dual_rows(xp, ctx, Z, wd, mu, 0, n, step,
                                                       idd, gd, cuts)
        hinge, lin, lin_alt, bad = where.scalars(hinge, lin, lin_alt, bad)
        S2 = where.host(xp.stack([S, S_alt]))
        return hinge, S2[0], lin, S2[1], lin_alt, int(bad)

    def scan(self, F, step, band, cap, spread, exclude, deadline, single):
        """:func:`scan_rows_xp` at the factor ``F`` (d, r) of ``M``; the kept
        triplets and the hinge sum on the host."""
        where, ctx = self.where, self.ctx
        xp = where.xp
        Z = ctx.Xn @ where.dev(F)
        if single:
            Z = xp.astype(Z, xp.float32)
        exc = where.dev(exclude) if exclude is not None and exclude.size else None
        ids, vals, hinge, found, complete = scan_rows_xp(
            xp, ctx, Z, step, band, cap, spread, exc, deadline)
        hinge = float(where.host(hinge))
        if ids is None:
            return np.empty(0, np.int64), np.empty(0), hinge, found, complete
        return (where.host(ids).astype(np.int64), where.host(vals).astype(float),
                hinge, found, complete)


# ---------------------------------------------------------------------------
# Dask: one task per row chunk
# ---------------------------------------------------------------------------


def _dual_task(Xn, targets, codes, k, V, w, mu, lo, hi, step, ids, gamma, hinge_only):
    """One task: :func:`dual_rows` over the anchors ``lo:hi`` in NumPy."""
    ctx = Ctx(Xn, targets, codes, k)
    cuts = block_cuts(ids, 0, hi - lo, step, k, Xn.shape[0]) if ids.size else None
    return dual_rows(np, ctx, Xn @ V, w, mu, lo, hi, step, ids, gamma, cuts,
                     hinge_only=hinge_only)


def _scan_task(Xn, targets, codes, k, F, lo, hi, step, band, cap, spread, exclude,
               single):
    """One task: the NumPy screening kernel over the anchors ``lo:hi``."""
    from .fast import _scan_rows

    Z = Xn @ F
    if single:
        Z = Z.astype(np.float32)
    return _scan_rows(Ctx(Xn, targets, codes, k), Z, lo, hi, step, band, cap, spread,
                      exclude, None)


class DaskSweeps:
    """The passes as Dask tasks over the row chunks of a ``dask.array``
    ``X`` (module docstring); parameters as :class:`XpSweeps`, ``where``
    the cluster's :class:`~cvxmetric._backend.Device`, whose ``transfers``
    count the tasks' host arguments and their gathered results."""

    def __init__(self, X, mean, e, targets, codes, k, where):
        self.dask = _backend.require("dask")
        self.where = where
        self.X = X.astype(np.float64)
        self.k = int(k)
        self._setup(mean, e, targets, codes)

    def _setup(self, mean, e, targets, codes):
        n, d = self.X.shape
        self.chunks = [int(c) for c in np.cumsum((0,) + tuple(self.X.chunks[0]))]
        # Xn as one persisted block that every task reads where it is
        # (kept: the persisted array holds its result on the cluster)
        self._Xn_array = _unit_scale(np, self.X, mean, e).rechunk((n, d)).persist()
        self._Xn = self._Xn_array.to_delayed().ravel()[0]
        delayed = self.dask.delayed
        self._targets = delayed(np.asarray, pure=True)(targets).persist()
        self._codes = delayed(np.asarray, pure=True)(codes).persist()

    def derived(self, X, mean, e, targets, codes, k):
        new = object.__new__(DaskSweeps)
        new.dask, new.where, new.k = self.dask, self.where, int(k)
        new.X = X(self.X, np.asarray)
        new._setup(mean, e, targets, codes)
        return new

    def qwise(self, host):
        """The restricted Qwise problem ``host`` as it is: its iterations
        run on the host, as Qwise's own Dask data iterate on host
        restrictions (a working set is small)."""
        return host

    def _run(self, task, per_chunk, *args):
        """One task per row chunk: ``task(Xn, targets, codes, k, *args,
        lo, hi, *per_chunk(lo, hi))``; the gathered results (counted)."""
        t = self.dask.delayed(task, pure=True)
        parts = [t(self._Xn, self._targets, self._codes, self.k, *args, lo, hi,
                   *per_chunk(lo, hi))
                 for lo, hi in zip(self.chunks[:-1], self.chunks[1:])]
        parts = self.dask.compute(*parts)
        self.where.transfers.gathered(
            *[x for p in parts for x in (p if isinstance(p, tuple) else (p,))
              if x is not None])
        return parts

    def dual(self, w, V, mu, step, ids, gamma, hinge_only=False):
        """:func:`dual_rows` over each chunk; the partial sums added here."""
        n, k = self.chunks[-1], self.k

        def chunk(lo, hi):
            a, b = np.searchsorted(ids, [lo * k * n, hi * k * n])
            part = (ids[a:b] - lo * k * n, gamma[a:b])
            self.where.transfers.sent(*part)
            return step, *part, hinge_only

        parts = self._run(_dual_task, chunk, V, w, mu)
        if hinge_only:
            return float(sum(parts))
        hinge, S, lin, S_alt, lin_alt, bad = (sum(p[i] for p in parts) for i in range(6))
        return float(hinge), S, float(lin), S_alt, float(lin_alt), int(bad)

    def scan(self, F, step, band, cap, spread, exclude, deadline, single):
        """The NumPy screening kernel over each chunk (the deadline is not
        checked inside the tasks); each chunk keeps at most ``cap``."""
        n, k = self.chunks[-1], self.k

        def chunk(lo, hi):
            part = None
            if exclude is not None and exclude.size:
                a, b = np.searchsorted(exclude, [lo * k * n, hi * k * n])
                part = exclude[a:b]
                self.where.transfers.sent(part)
            return step, band, cap, spread, part, single

        parts = self._run(_scan_task, chunk, F)
        ids = np.concatenate([p[0] for p in parts])
        args = np.concatenate([p[1] for p in parts])
        return ids, args, float(sum(p[2] for p in parts)), int(sum(p[3] for p in parts)), True
