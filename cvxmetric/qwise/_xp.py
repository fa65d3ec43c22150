"""Qwise's fast solver off NumPy: the passes over pairs and constraints on
an array-API namespace (PyTorch, CuPy, ``array-api-strict``).

:meth:`QwiseData.on_device <cvxmetric.qwise.QwiseData.on_device>` gives a
:class:`QwiseXPData`: the same problem (validated, canonicalised and scaled
on the host, where the index bookkeeping lives) whose sample matrix, margins,
weights, constraint indices and regulariser sit on the device of the array
given.  Its passes -- pair distances from a factor of ``M``, the margins of
every constraint, ``S(alpha)`` as a sum of weighted outer products, the
``(d, d)`` eigendecompositions where the namespace has ``linalg.eigh``, the
float64 certificate -- run there; the solver's scalars (step sizes, gaps,
the certificate's assembly), the working-set bookkeeping (one float64 margin
per constraint per round comes to the host) and the face endgame (Newton's
method on the located face, on a host copy of the restricted problem) run
on the host, and every move is counted by
:class:`~cvxmetric._backend.Transfers`.

Pairs of pairs.  ``S(alpha) = sum_q alpha_q (phi_far phi_far^T - phi_near
phi_near^T)`` is summed here constraint by constraint, over the two gathered
difference vectors of each (the NumPy path first sums the weights per
distinct pair with ``bincount``, which the array API lacks): as many
products as the NumPy path when the constraints share few pairs, at most
twice as many when they share many.

A ``dask.array`` gets its own data (:mod:`cvxmetric.qwise._dask`): a
constraint reads four arbitrary rows of ``X``, so row chunks do not split
the constraints; the Dask path splits the pairs' difference vectors
instead, gathers each distance pass as one vector on the host and iterates
on host restrictions.
"""

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from .._backend import (
    Device,
    OnDevice,
    float64,
    is_numpy,
    namespace,
)
from .._linalg import eigenvalue_roundoff
from .._settings import QWISE_DEVICE_BLOCK, QWISE_DEVICE_PHI
from ._problem import QwiseData, loewner_scale

__all__ = ["QwiseXPData", "XPPairs", "device_samples", "norm", "zeros_like"]


def norm(x):
    """Frobenius / Euclidean norm of ``x`` as a float, on its device
    (``numpy.linalg.norm`` for NumPy)."""
    if is_numpy(x):
        return float(np.linalg.norm(x))
    xp, _ = namespace(x)
    return float(xp.sqrt(xp.sum(x * x)))


def zeros_like(x):
    """Zeros of the shape, type and device of ``x``."""
    if is_numpy(x):
        return np.zeros_like(x)
    xp, _ = namespace(x)
    return xp.zeros_like(x)


@dataclass(eq=False)
class _Device(Device):
    """Where a problem's arrays live (:class:`~cvxmetric._backend.Device`:
    the namespace, the device, the counted moves; host arrays go to the
    device as float64), and the ``(d, d)`` eigendecompositions (on the
    device where the namespace has ``linalg.eigh``, else on the host,
    counted)."""

    def __post_init__(self):
        linalg = getattr(self.xp, "linalg", None)
        self.has_eigh = linalg is not None and hasattr(linalg, "eigh")

    def dev(self, a, dtype=float):
        """:meth:`Device.dev <cvxmetric._backend.Device.dev>`, as float64 by
        default (every array of these data is)."""
        return super().dev(a, dtype)

    def eigh(self, A):
        """``(w, V)`` of the symmetric part of ``A`` (ascending)."""
        xp = self.xp
        A = 0.5 * (A + A.T)
        if self.has_eigh:
            return xp.linalg.eigh(A)
        w, V = np.linalg.eigh(self.host(A))
        return self.dev(w), self.dev(V)

    def eigvalsh(self, A):
        """Eigenvalues of the symmetric part of ``A`` (ascending)."""
        A = 0.5 * (A + A.T)
        if self.has_eigh:
            return self.xp.linalg.eigvalsh(A)
        return self.dev(np.linalg.eigvalsh(self.host(A)))

    def signed_factors(self, M):
        """:func:`~cvxmetric._linalg.signed_factors` on the device:
        ``(G+, G-)``, eigenvalues within ``d eps max|w|`` of zero taken as
        zero (the counts read on the host)."""
        xp = self.xp
        w, V = self.eigh(self.dev(M))
        d = w.shape[0]
        tiny = eigenvalue_roundoff(d, float(w[0]), float(w[-1]))
        pos, neg = int(xp.count_nonzero(w > tiny)), int(xp.count_nonzero(w < -tiny))
        return V[:, d - pos:] * xp.sqrt(w[d - pos:]), V[:, :neg] * xp.sqrt(-w[:neg])

    def project_psd(self, A, return_factor=False):
        """:func:`~cvxmetric._linalg.project_psd` on the device: ``G`` keeps
        the ``r`` positive eigenpairs (the last ``r``: ``eigh`` sorts
        ascending), ``r`` read on the host."""
        xp = self.xp
        w, V = self.eigh(A)
        d = w.shape[0]
        r = int(xp.count_nonzero(w > 0))
        G = V[:, d - r:] * xp.sqrt(w[d - r:])
        P = G @ G.T
        return (P, G) if return_factor else P


class XPPairs:
    """:class:`~cvxmetric._linalg.PairOperator` on a namespace: squared
    distances and quadratic forms of the difference vectors of pairs, in
    row blocks, and weighted sums of their outer products by constraint.

    Parameters
    ----------
    where : _Device
    X : array of shape (n, d)
        Centred samples, float64, on the device.
    i, j : int arrays of shape (n_pairs,), on the device
    dtype : numpy.float64 or numpy.float32
        Precision of the products (results are float64).
    """

    def __init__(self, where, X, i, j, *, dtype=np.float64):
        xp = where.xp
        self.where, self.xp = where, xp
        self.dtype = xp.float32 if np.dtype(dtype) == np.float32 else xp.float64
        self.X = X if self.dtype == xp.float64 else xp.astype(X, self.dtype)
        self.i, self.j = i, j
        self.n_pairs = int(i.shape[0])
        d = X.shape[1]
        self.rows = max(1, QWISE_DEVICE_BLOCK // max(d, 1))
        # stored when the passes use it (no more pairs than samples: see
        # _times) and it fits
        keep = (self.n_pairs <= X.shape[0] and self.n_pairs * d
                * (4 if self.dtype == xp.float32 else 8) <= QWISE_DEVICE_PHI)
        self.Phi = (xp.take(self.X, i, axis=0) - xp.take(self.X, j, axis=0)) if keep else None

    def _diffs(self, idx):
        """Difference vectors of the pairs ``idx`` (device ints)."""
        xp = self.xp
        if self.Phi is not None:
            return xp.take(self.Phi, idx, axis=0)
        return (xp.take(self.X, xp.take(self.i, idx), axis=0)
                - xp.take(self.X, xp.take(self.j, idx), axis=0))

    def _block(self, s, e):
        if self.Phi is not None:
            return self.Phi[s:e, :]
        xp = self.xp
        return xp.take(self.X, self.i[s:e], axis=0) - xp.take(self.X, self.j[s:e], axis=0)

    def _times(self, B):
        """``Phi B`` as a function of a row block ``(s, e)``: with more
        pairs than samples, from ``Y = X B`` (n, k) computed once, each pair
        a difference of two rows of ``Y`` (k entries, not a product of d k);
        otherwise from the blocks of ``Phi``."""
        xp = self.xp
        if self.n_pairs > self.X.shape[0]:
            Y = self.X @ B
            return lambda s, e: (xp.take(Y, self.i[s:e], axis=0)
                                 - xp.take(Y, self.j[s:e], axis=0))
        return lambda s, e: self._block(s, e) @ B

    def _rowsums(self, fn):
        """``fn(s, e)`` (one value per pair of the block) over the row
        blocks, float64."""
        xp = self.xp
        parts = [fn(s, min(s + self.rows, self.n_pairs))
                 for s in range(0, self.n_pairs, self.rows)]
        if not parts:
            return xp.zeros((0,), dtype=xp.float64, device=self.where.device)
        out = parts[0] if len(parts) == 1 else xp.concat(parts)
        return xp.astype(out, xp.float64)

    def _norms(self, G):
        xp = self.xp
        Z = self._times(xp.astype(self.where.dev(G), self.dtype))

        def rows(s, e):
            Zb = Z(s, e)
            return xp.sum(Zb * Zb, axis=1)

        return self._rowsums(rows)

    def sqdist(self, M=None, G=None):
        """``phi_p^T M phi_p`` per pair from ``M`` (``eigh`` on the device,
        the negative part of an indefinite ``M`` subtracted) or from a
        factor ``G`` with ``M = G G^T``; host matrices are moved first."""
        if G is not None:
            return self._norms(G)
        G, G_neg = self.where.signed_factors(M)
        out = self._norms(G)
        if G_neg.shape[1]:
            out = out - self._norms(G_neg)
        return out

    def quadform(self, V):
        """``phi_p^T V phi_p`` for a symmetric, possibly indefinite ``V``."""
        xp = self.xp
        Y = self._times(xp.astype(self.where.dev(V), self.dtype))
        return self._rowsums(lambda s, e: xp.sum(Y(s, e) * self._block(s, e), axis=1))

    def constraint_gram(self, alpha, far, near):
        """``sum_q alpha_q (phi_far(q) phi_far(q)^T - phi_near(q) phi_near(q)^T)``
        (float64, ``(d, d)``), in blocks of constraints."""
        xp = self.xp
        d = self.X.shape[1]
        S = xp.zeros((d, d), dtype=xp.float64, device=self.where.device)
        a_all = xp.astype(alpha, self.dtype)
        for s in range(0, alpha.shape[0], self.rows):
            e = min(s + self.rows, alpha.shape[0])
            a = a_all[s:e][:, None]
            Pf, Pn = self._diffs(far[s:e]), self._diffs(near[s:e])
            S = S + xp.astype(Pf.T @ (a * Pf) - Pn.T @ (a * Pn), xp.float64)
        return S


def device_samples(X, samples, host_copy=None):
    """``(where, X)``: the :class:`_Device` of ``X`` and ``X`` as float64
    there, once checked to hold ``samples`` (the host problem's, NumPy).

    The check compares one host copy of ``X`` with ``samples``: the one
    ``host_copy`` a caller already made of ``X`` (an estimator, for its
    host bookkeeping), else a copy made here; either is counted once.

    Raises
    ------
    ValueError
        When ``X``'s shape or values differ from ``samples``, naming ``X``.
    """
    xp, _ = namespace(X)
    if tuple(X.shape) != tuple(samples.shape):
        raise ValueError(f"X: expected the problem's samples, of shape "
                         f"{tuple(samples.shape)}; got shape {tuple(X.shape)}.")
    where = _Device.of(X)
    X = float64(X, xp)
    if host_copy is None:
        host_copy = where.host(X)  # once, n x d
    elif not is_numpy(host_copy) or np.shape(host_copy) != tuple(samples.shape):
        raise ValueError(f"host_copy: expected a NumPy copy of X, of shape "
                         f"{tuple(samples.shape)}.")
    else:
        where.transfers.gathered(host_copy)
    if not np.array_equal(np.asarray(host_copy, dtype=float),
                          np.asarray(samples, dtype=float)):
        raise ValueError("X: its values differ from the problem's samples.")
    return where, X


class _OnDevice(OnDevice):
    """:class:`~cvxmetric._backend.OnDevice` for data whose arrays live on a
    :class:`_Device` (its ``where`` field), and the moves themselves under
    the names the NumPy data classes answer too (there: the arrays as they
    are)."""

    def dev(self, a):
        """A host array on the device, counted (device arrays as they are)."""
        return self.where.dev(a)

    def to_host(self, x):
        """A device array on the host, counted (host arrays as they are)."""
        return self.where.host(x)


@dataclass(eq=False)
class QwiseXPData(_OnDevice, QwiseData):
    """:class:`~cvxmetric.qwise.QwiseData` with its arrays on a namespace
    (see the module docstring).

    ``X``, ``R``, ``delta_q``, ``c_q``, ``near_q``, ``far_q`` are device
    arrays and ``op`` an :class:`XPPairs`; :meth:`host` is the same problem
    in NumPy (the original, or for a restricted problem the host
    restriction, built on first use).  Twins and restrictions share one
    :class:`~cvxmetric._backend.Transfers`.
    """

    where: _Device = None
    host_data: object = field(default=None, repr=False)
    # (parent host data, index, dtype) of a restriction, for host()
    _restriction: tuple = field(default=None, repr=False)

    @classmethod
    def from_host(cls, host, X, host_copy=None):
        """``host`` (NumPy) with its arrays on the namespace and device of
        ``X``, whose values must be ``host.X`` (any floating type; cast to
        float64 there; ``host_copy``: see :func:`device_samples`)."""
        where, X = device_samples(X, host.X, host_copy)
        return cls.over(host, X, where)

    @classmethod
    def over(cls, host, X, where):
        """``host`` (NumPy) with its arrays on ``where`` (a
        :class:`~cvxmetric._backend.Device`: the namespace, the device and
        the count its moves join), over the float64 device samples ``X``
        of a caller that computed them there from ``host.X``'s values
        (not checked here: :meth:`from_host` checks them; another family's
        problem restricted to a set of its constraints, whose samples are
        already there, is built directly)."""
        if not isinstance(where, _Device):
            where = _Device(where.xp, where.device, where.transfers)
        return cls._build(host, where, X, host.op.i, host.op.j,
                          host.near_q, host.far_q, host.delta_q, host.c_q)

    @classmethod
    def _build(cls, host, where, X, i, j, near, far, delta, c, *, dtype=np.float64,
               restriction=None, centered=False):
        """The device problem of ``host`` over the pairs ``(i, j)`` (host
        ints) with constraints ``near, far, delta, c`` (host arrays)."""
        xp, dev = where.xp, where.dev
        Xc = X if centered else X - xp.mean(X, axis=0)

        def ints(a):
            a = np.asarray(a, dtype=np.int64)
            return where.transfers.to_device(a, xp, where.device)

        op = XPPairs(where, Xc, ints(i), ints(j), dtype=dtype)
        fields = {f.name: getattr(host, f.name) for f in dataclasses.fields(QwiseData)}
        fields.update(X=X, R=dev(host.R), op=op, near_q=ints(near), far_q=ints(far),
                      delta_q=dev(delta), c_q=dev(c))
        return cls(**fields, where=where, host_data=host if restriction is None else None,
                   _restriction=restriction)

    # -- where the arrays are --------------------------------------------------

    def host(self):
        """The same problem in NumPy (built on first use for a restriction)."""
        if self.host_data is None:
            parent, index, dtype = self._restriction
            self.host_data = parent.restrict(index, dtype=dtype)
        return self.host_data

    def nonzero(self, x):
        return self.xp.nonzero(x)[0]

    def project_psd(self, A, return_factor=False):
        return self.where.project_psd(A, return_factor)

    def _eigvalsh(self, A, symmetrize=False):
        return self.where.eigvalsh(A)

    def _signed_factors(self, M):
        return self.where.signed_factors(M)

    def sweep_operator(self):
        """The full passes' operator: float32 products on the device."""
        return XPPairs(self.where, self.op.X, self.op.i, self.op.j, dtype=np.float32)

    # -- the passes ------------------------------------------------------------

    def margins(self, M=None, *, dist=None, G=None):
        return super().margins(self.dev(M), dist=dist, G=self.dev(G))

    def objective(self, M, *, dist=None, G=None, arg=None):
        return super().objective(self.dev(M), dist=dist, G=self.dev(G), arg=arg)

    def dual_pair_weights(self, alpha, index=None):
        raise NotImplementedError("QwiseXPData sums S(alpha) by constraint (S_of).")

    def S_of(self, alpha, index=None, *, single=False):
        """``S(alpha)`` on the device (``single`` is ignored: float64)."""
        alpha = self.dev(alpha)
        far, near = self.far_q, self.near_q
        if index is not None:
            index = self.dev_index(index)
            far, near = far[index], near[index]
        nz = self.nonzero(alpha)
        if nz.shape[0] < alpha.shape[0]:
            alpha, far, near = alpha[nz], far[nz], near[nz]
        S = self.op.constraint_gram(alpha, far, near)
        return 0.5 * (S + S.T)

    def dev_index(self, index):
        if is_numpy(index):
            return self.transfers.to_device(np.asarray(index, dtype=np.int64), self.xp,
                                            self.where.device)
        return index

    def dual_bound(self, alpha, upper=None, *, S=None):
        return super().dual_bound(self.dev(alpha), upper, S=S)

    def best_dual_bound(self, alpha, M, upper=None, *, arg=None, S=None):
        return super().best_dual_bound(self.dev(alpha), self.dev(M), upper, arg=arg, S=S)

    def _loewner_scale(self, S):
        if self.regularizer == "trace":
            return max(1.0, float(self._eigvalsh(S)[-1]))
        # a generalised (d, d) eigenproblem: on the host (SciPy)
        return loewner_scale(self.to_host(S), self.to_host(self.R))

    def certificate(self, M, alpha, **kwargs):
        return super().certificate(self.dev(M), self.dev(alpha), **kwargs)

    # -- twins and restrictions --------------------------------------------------

    def normalized(self):
        """The scale-free twin (built on the host, its samples moved)."""
        twin, sc = self.host().normalized()
        if twin is self.host():
            return self, sc
        out = self.over(twin, self.dev(twin.X), self.where)
        return out, sc

    def restrict(self, index, *, dtype=np.float64):
        """:meth:`QwiseData.restrict` on the device: the bookkeeping on the
        host, the kept constraints' indices, margins and weights moved."""
        host = self.host()
        index = np.asarray(index)
        near, far = host.near_q[index], host.far_q[index]
        used, inv = np.unique(np.concatenate([near, far]), return_inverse=True)
        k = len(index)
        sub = dataclasses.replace(host, n_quadruplets=int(np.sum(index < host.n_quadruplets)))
        # the samples centred once (this problem's float64 operator's)
        centered = self.op.dtype == self.xp.float64
        return self._build(sub, self.where, self.op.X if centered else self.X,
                           host.op.i[used], host.op.j[used], inv[:k], inv[k:],
                           host.delta_q[index], host.c_q[index], dtype=dtype,
                           restriction=(host, index, dtype), centered=centered)
