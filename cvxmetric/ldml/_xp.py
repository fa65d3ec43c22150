"""LDML's all-pairs loss and gradient off NumPy: on an array-API namespace
(PyTorch, CuPy, ``array-api-strict``) and on a ``dask.array`` chunked by
rows.

The pairs are visited in row blocks as in
:meth:`~cvxmetric.ldml.AllPairs._pairs`: block ``[a, end)`` against rows
``a:``, no N x N array.  On a namespace the blocks run where the data are;
the host sees only ``L`` (in), and the gradient ``(d, D)`` and three
scalars (out), all counted by :class:`~cvxmetric._backend.Transfers`.
On Dask each row block is one task returning its loss terms and its part
of ``H Z``; the parts are summed in the cluster, ``(H Z)^T X`` is a
blockwise product and only the ``(d, D)`` gradient and scalars come back.
"""

import math

import numpy as np


def block_numpy(Z, q, y, rows, a, end, b, grad, out=None):
    """Loss terms of the pairs of rows ``[a, end)`` with rows ``a:`` (j > i).

    Returns ``(total, worst, gb, part)`` with ``part`` the block's
    contribution to ``(H Z)[a:]`` (None without ``grad``), added into
    ``out`` (a view of ``(H Z)[a:]``) when given."""
    Zr, Zc = Z[a:end], Z[a:]
    u = Zr @ Zc.T
    u *= -2.0
    u += q[a:end, None]
    u += q[None, a:]
    np.maximum(u, 0.0, out=u)
    u -= b
    diff = y[a:end, None] != y[None, a:]  # s = -1
    np.negative(u, out=u, where=diff)
    keep = np.arange(u.shape[1])[None, :] > np.arange(u.shape[0])[:, None]
    if rows is not None:
        keep &= rows[a:end, None] != rows[None, a:]
    e = np.abs(u)
    np.negative(e, out=e)
    np.exp(e, out=e)  # exp(-|u|)
    total = float(np.sum(np.log1p(e), where=keep)) \
        + float(np.sum(np.maximum(u, 0.0), where=keep))
    worst = float(np.max(u, where=keep, initial=-np.inf))
    if not grad:
        return total, worst, 0.0, None
    # w = dF/dd = s sigma(u) = s (u >= 0 ? 1 : e) / (1 + e)
    w = np.where(u >= 0, 1.0, e)
    e += 1.0
    w /= e
    np.negative(w, out=w, where=diff)
    w[~keep] = 0.0
    part = np.zeros_like(Zc) if out is None else out
    part[: end - a] += w.sum(axis=1)[:, None] * Zr - w @ Zc
    part += w.sum(axis=0)[:, None] * Zc - w.T @ Zr
    return total, worst, -float(np.sum(w)), part


def pairs_xp(xp, Z, y, rows, b, block, grad):
    """:meth:`AllPairs._pairs` on namespace ``xp``: ``(total, worst, HZ,
    gb)`` with the scalars still on the device (0-d arrays)."""
    N = Z.shape[0]
    dev = getattr(Z, "device", None)
    q = xp.sum(Z * Z, axis=1)
    total = worst = gb = None
    HZ = xp.zeros_like(Z) if grad else None
    for a in range(0, N, block):
        end = min(a + block, N)
        Zr, Zc = Z[a:end, :], Z[a:, :]
        d = xp.maximum(q[a:end, None] + q[None, a:] - 2.0 * (Zr @ Zc.T), 0.0)
        diff = y[a:end, None] != y[None, a:]
        u = xp.where(diff, b - d, d - b)
        keep = xp.arange(N - a, device=dev)[None, :] > xp.arange(end - a, device=dev)[:, None]
        if rows is not None:
            keep = xp.logical_and(keep, rows[a:end, None] != rows[None, a:])
        e = xp.exp(-xp.abs(u))
        t = xp.sum(xp.where(keep, xp.log1p(e) + xp.maximum(u, 0.0), 0.0))
        m = xp.max(xp.where(keep, u, -math.inf))
        total = t if total is None else total + t
        worst = m if worst is None else xp.maximum(worst, m)
        if grad:
            w = xp.where(u >= 0, 1.0, e) / (1.0 + e)
            w = xp.where(keep, xp.where(diff, -w, w), 0.0)
            g = -xp.sum(w)
            gb = g if gb is None else gb + g
            HZ[a:end, :] = HZ[a:end, :] + xp.sum(w, axis=1)[:, None] * Zr - w @ Zc
            HZ[a:, :] = HZ[a:, :] + xp.sum(w, axis=0)[:, None] * Zc - w.T @ Zr
    return total, worst, HZ, gb


def _place(part, a, N):
    out = np.zeros((N, part.shape[1]))
    out[a:] = part
    return out


def _tree_sum(items, delayed):
    """Pairwise sums of dask delayed values (a tree of depth log n)."""
    add = delayed(np.add, pure=True)
    while len(items) > 1:
        items = [add(items[k], items[k + 1]) if k + 1 < len(items) else items[k]
                 for k in range(0, len(items), 2)]
    return items[0]


def value_grad_dask(X, L, b, y, rows, block, grad):
    """``(total, worst, G, gb)`` of the all pairs of the dask array ``X``
    (chunked by rows) at ``M = L^T L``: ``G = 2 (H Z)^T X``, without the
    regulariser.  One ``dask.compute``: the scalars and the ``(d, D)``
    ``G`` come back, nothing N-sized."""
    import dask
    import dask.array as da

    N = X.shape[0]
    Z = X @ L.T  # (N, d), chunked as X
    Zd = dask.delayed(Z)  # computed once in the cluster, shared by the tasks
    qd = dask.delayed(lambda z: np.einsum("nd,nd->n", z, z), pure=True)(Zd)
    task = dask.delayed(block_numpy, pure=True, nout=4)
    outs = [task(Zd, qd, y, rows, a, min(a + block, N), b, grad)
            for a in range(0, N, block)]
    totals = [o[0] for o in outs]
    worsts = [o[1] for o in outs]
    if not grad:
        total, worst = dask.compute(sum(totals), dask.delayed(max)(worsts))
        return total, worst, None, 0.0
    place = dask.delayed(_place, pure=True)
    HZ = _tree_sum([place(o[3], a, N) for o, a in zip(outs, range(0, N, block))],
                   dask.delayed)
    HZa = da.from_delayed(HZ, shape=(N, L.shape[0]), dtype=float)
    HZa = HZa.rechunk((X.chunks[0], L.shape[0]))
    G = 2.0 * (HZa.T @ X)
    total, worst, gb, G = dask.compute(sum(totals), dask.delayed(max)(worsts),
                                       sum(o[2] for o in outs), G)
    return total, worst, np.asarray(G), gb
