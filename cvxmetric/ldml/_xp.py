"""LDML's all-pairs loss and gradient off NumPy: on an array-API namespace
(PyTorch, CuPy, ``array-api-strict``) and on a ``dask.array`` chunked by
rows.

The pairs are visited in row blocks as in
:meth:`~cvxmetric.ldml.AllPairs._pairs`: block ``[a, end)`` against rows
``a:``, no N x N array.  On a namespace the blocks run where the data are;
the host sees only ``L`` (in), and the gradient ``(d, D)`` and three
scalars (out), all counted by the loss's :class:`~cvxmetric._backend.Device`.
On Dask each row block is one task returning its loss terms and its part
of ``H Z``; the parts are summed in the cluster, ``(H Z)^T X`` is a
blockwise product and only the ``(d, D)`` gradient and scalars come back.
"""

import math

import numpy as np

from .._backend import Device, float64


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


def value_grad_dask(X, L, b, y, rows, block, grad, transfers):
    """``(total, worst, G, gb)`` of the all pairs of the dask array ``X``
    (chunked by rows) at ``M = L^T L``: ``G = 2 (H Z)^T X``, without the
    regulariser.  One ``dask.compute``: the scalars and the ``(d, D)``
    ``G`` come back, nothing N-sized.  ``transfers`` counts what the
    tasks are sent (``L``, the labels and row ids, once each) and what
    comes back."""
    import dask
    import dask.array as da

    N = X.shape[0]
    transfers.sent(*(a for a in (L, y, rows) if a is not None))
    Z = X @ L.T  # (N, d), chunked as X
    Zd = dask.delayed(Z)  # computed once in the cluster, shared by the tasks
    qd = dask.delayed(lambda z: np.einsum("nd,nd->n", z, z), pure=True)(Zd)
    # the labels and row ids once in the graph, not once per task
    yd, rd = dask.delayed(y, pure=True), None if rows is None else dask.delayed(
        rows, pure=True)
    task = dask.delayed(block_numpy, pure=True, nout=4)
    outs = [task(Zd, qd, yd, rd, a, min(a + block, N), b, grad)
            for a in range(0, N, block)]
    totals = [o[0] for o in outs]
    worsts = [o[1] for o in outs]
    if not grad:
        total, worst = dask.compute(sum(totals), dask.delayed(max)(worsts))
        transfers.gathered(np.array([total, worst]))
        return total, worst, None, 0.0
    place = dask.delayed(_place, pure=True)
    HZ = _tree_sum([place(o[3], a, N) for o, a in zip(outs, range(0, N, block))],
                   dask.delayed)
    HZa = da.from_delayed(HZ, shape=(N, L.shape[0]), dtype=float)
    HZa = HZa.rechunk((X.chunks[0], L.shape[0]))
    G = 2.0 * (HZa.T @ X)
    total, worst, gb, G = dask.compute(sum(totals), dask.delayed(max)(worsts),
                                       sum(o[2] for o in outs), G)
    transfers.gathered(np.array([total, worst, gb]), G)
    return total, worst, np.asarray(G), gb


# ---------------------------------------------------------------------------
# Explicit pairs on a namespace: PairSet's loss and LDMLData's certificate
# ---------------------------------------------------------------------------

def sigmoid_xp(xp, u):
    """``sigma(u)`` exact in both tails (as scipy's ``expit``)."""
    e = xp.exp(-xp.abs(u))
    return xp.where(u >= 0, 1.0, e) / (1.0 + e)


def logistic_xp(xp, u):
    """``log(1 + e^u)`` without overflow."""
    return xp.maximum(u, 0.0) + xp.log1p(xp.exp(-xp.abs(u)))


class PairsXP(Device):
    """Explicit pairs ``(i, j)`` with labels ``s`` of the rows of ``X`` on
    a device: the hot loops of :class:`~cvxmetric.ldml.PairSet` and of
    :class:`~cvxmetric.ldml.LDMLData`'s certificate, in float64 on the
    device holding ``X``.

    The difference vectors ``phi_p = x_i - x_j`` are stored on the device
    up to ``_LDML_DEVICE_PHI`` entries, else gathered block by block;
    ``sum_p w_p phi_p phi_p^T`` is one product ``Phi^T (w Phi)`` per block.
    Arrays in and out stay on the device; the caller moves what it needs
    through the :class:`~cvxmetric._backend.Device` methods (``dev``,
    ``host``, ``scalars``), which count every move in ``transfers``.

    Parameters
    ----------
    where : Device
        The namespace and device of ``X``, and the count its moves join.
    X : array (N, D) of ``where.xp``
    i, j : ndarray of int (P,)
    s : ndarray (P,)
    block : int
        Pairs per block.
    """

    def __init__(self, where, X, i, j, s, block=None):
        from .._settings import _LDML_DEVICE_PHI, _PAIR_BLOCK

        super().__init__(where.xp, where.device, where.transfers)
        self.X = float64(X, self.xp)
        self.n_pairs = len(s)
        self.block = int(block or _PAIR_BLOCK)
        self.i, self.j = self.dev(i, np.int64), self.dev(j, np.int64)
        self.s = self.dev(s, float)
        self.Phi = None
        if self.n_pairs * X.shape[1] <= _LDML_DEVICE_PHI:
            self.Phi = self._gather(0, self.n_pairs)
            self.block = max(self.n_pairs, 1)  # one product: nothing to gather

    def _gather(self, a, end):
        xp = self.xp
        return xp.take(self.X, self.i[a:end], axis=0) - xp.take(self.X, self.j[a:end], axis=0)

    def blocks(self):
        """``(a, end, Phi[a:end])`` over the pairs."""
        for a in range(0, self.n_pairs, self.block):
            end = min(a + self.block, self.n_pairs)
            yield a, end, (self.Phi[a:end, :] if self.Phi is not None
                           else self._gather(a, end))

    def distances(self, M):
        """``phi_p^T M phi_p`` of every pair, (P,) on the device."""
        xp = self.xp
        parts = [xp.sum((Phi @ M) * Phi, axis=1) for _, _, Phi in self.blocks()]
        return parts[0] if len(parts) == 1 else xp.concat(parts)

    def gram(self, w):
        """``sum_p w_p phi_p phi_p^T`` (D, D) on the device, ``w`` (P,) there."""
        S = None
        for a, end, Phi in self.blocks():
            part = Phi.T @ (w[a:end, None] * Phi)
            S = part if S is None else S + part
        return 0.5 * (S + S.T)

    def lowrank(self, L, b, grad):
        """The pairs' terms at ``M = L^T L`` (``L`` (d, D) on the device):
        ``(total, worst, G, gb)`` with ``G = 2 sum_p w_p (L phi_p)
        phi_p^T`` the gradient in ``L`` as one product per block and ``w_p
        = s_p sigma(u_p)``, ``u_p = s_p (|L phi_p|^2 - b)``; the scalars are
        0-d device arrays."""
        xp = self.xp
        total = worst = gb = G = None
        for a, end, Phi in self.blocks():
            Zd = Phi @ L.T  # (block, d)
            s = self.s[a:end]
            u = s * (xp.sum(Zd * Zd, axis=1) - b)
            t, m = xp.sum(logistic_xp(xp, u)), xp.max(u)
            total = t if total is None else total + t
            worst = m if worst is None else xp.maximum(worst, m)
            if grad:
                w = s * sigmoid_xp(xp, u)
                g, part = -xp.sum(w), (Zd * w[:, None]).T @ Phi
                gb = g if gb is None else gb + g
                G = part if G is None else G + part
        return total, worst, (None if G is None else 2.0 * G), gb

    def best_b(self, dist):
        """The threshold minimising the loss at the distances ``dist`` (on
        the device): the same root as :meth:`LDMLData.best_b`, each
        evaluation of the slope a device reduction (one scalar moved)."""
        from scipy.optimize import brentq

        xp, s = self.xp, self.s

        def grad(b):
            return -self.scalars(xp.sum(s * sigmoid_xp(xp, s * (dist - b))))[0]

        lo, hi = self.scalars(xp.min(dist), xp.max(dist))
        lo, hi = lo - 50.0, hi + 50.0
        while grad(lo) > 0:
            lo -= 2 * (hi - lo)
        while grad(hi) < 0:
            hi += 2 * (hi - lo)
        return brentq(grad, lo, hi, xtol=1e-15, rtol=1e-15, maxiter=500)

    def balanced(self, w):
        """:meth:`LDMLData._balanced` on the device (a new array)."""
        xp = self.xp
        pos = self.s > 0
        w_pos, w_neg = self.scalars(xp.sum(xp.where(pos, w, 0.0)),
                                    xp.sum(xp.where(pos, 0.0, w)))
        if w_pos > w_neg:
            return xp.where(pos, w * (w_neg / w_pos), w)
        if w_neg > w_pos:
            return xp.where(pos, w, w * (w_pos / w_neg))
        return w

    def entropy(self, a):
        """``sum_p H(alpha_p)`` (0-d, on the device)."""
        xp = self.xp
        return -xp.sum(a * xp.log(xp.where(a > 0, a, 1.0))
                       + (1 - a) * xp.log(xp.where(a < 1, 1 - a, 1.0)))

    def eigvalsh(self, A):
        """The eigenvalues of the symmetric ``A`` (on the device), ascending."""
        return self.xp.linalg.eigvalsh(0.5 * (A + A.T))

    def project_psd(self, A):
        """The projection of the symmetric part of ``A`` onto the PSD cone,
        by one ``eigh`` on the device."""
        xp = self.xp
        w, V = xp.linalg.eigh(0.5 * (A + A.T))
        G = V * xp.sqrt(xp.maximum(w, 0.0))[None, :]
        return G @ G.T

    def eye(self, d):
        return self.xp.eye(d, dtype=self.xp.float64, device=self.device)

    def inner(self, A, B):
        """``sum(A * B)`` as a float (one scalar moved)."""
        return self.scalars(self.xp.sum(A * B))[0]
