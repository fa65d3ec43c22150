"""Qwise's fast solver on a ``dask.array``: the full passes as Dask tasks.

:meth:`QwiseData.on_device <cvxmetric.qwise.QwiseData.on_device>` of a
``dask.array`` gives a :class:`QwiseDaskData`: the same problem (validated,
canonicalised and scaled on the host, where the constraints' bookkeeping
lives) whose passes over every constraint run on the active Dask scheduler
(a ``distributed`` client when one is active).

Why split this way.  A constraint reads two pairs, i.e. four arbitrary rows
of ``X``, so chunks of rows of ``X`` do not split the constraints into
independent tasks.  The passes split by *pairs* instead: the difference
vectors ``z_p = x_i - x_j`` of the distinct pairs are built once, by one
task per chunk of pairs (each reads ``X``, persisted on the cluster as one
block, and gathers its rows there), and kept on the cluster as a
``dask.array`` chunked by pairs.  Then

* a distance pass is one task per chunk returning its squared distances
  ``z_p^T M z_p = ||G^T z_p||^2`` (from the factor ``G`` of ``M``, the
  negative part of an indefinite ``M`` subtracted, as on NumPy), gathered
  as one vector of ``P`` floats on the host, where the margins of every
  constraint -- a difference of two pairs' distances, from any two chunks
  -- are formed;
* ``S(alpha) = sum_p w_p z_p z_p^T`` (the certificate's dual bound, the
  start) is one task per chunk returning its ``(d, d)`` partial sum
  (chunks with no weight are skipped), the partial sums added on the host.

The iterations run on a working set of constraints (a few percent of them
at scale, every one for a problem within ``working_set``): its restricted
problem is NumPy data on the host, built from one gather of the rows of
``X`` its pairs use (at most two per pair), exactly as the array-API path
keeps its endgame on the host.  Between rounds one distance pass gives the
margins of every constraint; the stop is the full problem's certificate, in
float64 from the gathered distances and partial sums, and it passes only
when that computation passes.  Everything the host sends into a pass's
graph (factors, weights, the pair indices) is counted as ``to_device`` and
everything gathered (distances, partial sums, rows) as ``to_host`` in the
data's :class:`~cvxmetric._backend.Transfers`.

The scale-free twin (:meth:`QwiseData.normalized`) shares the persisted
difference vectors: its data are ``X / 2^k``, so its factors are scaled by
``2^-k`` on the host and its partial sums by ``2^-2k`` (exactly).
"""

import copy
import dataclasses
import sys
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

from .. import _backend
from .._linalg import PairOperator, signed_factors
from .._settings import _RESTRICTED_PHI, QWISE_DASK_CHUNK
from ._problem import QwiseData

__all__ = ["DaskPairs", "QwiseDaskData"]


# -- the tasks (NumPy, on the workers) ---------------------------------------------

def _differences(X, i, j):
    """The difference vectors ``X[i] - X[j]`` of one chunk of pairs."""
    return X[i] - X[j]


def _sqdist_task(Z, G, G_neg):
    """``||G^T z||^2 - ||G_neg^T z||^2`` for the rows ``z`` of ``Z``."""
    Y = Z @ G
    out = np.einsum("pr,pr->p", Y, Y)
    if G_neg is not None:
        Y = Z @ G_neg
        out = out - np.einsum("pr,pr->p", Y, Y)
    return out


def _gram_task(Z, w):
    """``sum_p w_p z_p z_p^T`` over the rows of ``Z``."""
    return Z.T @ (w[:, None] * Z)


def _wait(x):
    """Wait for the persisted ``x`` when a ``distributed`` client is active
    (elsewhere ``persist`` returns when done)."""
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return
    try:
        distributed.get_client()
    except ValueError:
        return
    distributed.wait(x)


class DaskPairs:
    """The difference vectors of pairs ``(i, j)`` of a ``dask.array`` ``X``
    as a persisted ``dask.array`` chunked by pairs, and the passes over
    them (the part of :class:`~cvxmetric._linalg.PairOperator` the full
    problem uses).

    Parameters
    ----------
    X : dask.array of shape (n, d), float64
    i, j : ndarray of int, shape (n_pairs,)
    transfers : Transfers
    n_chunks : int, optional
        Chunks of pairs; default as many as ``X`` has row chunks, more when
        a chunk would exceed :data:`QWISE_DASK_CHUNK`.
    """

    def __init__(self, X, i, j, transfers, *, n_chunks=None):
        self.dask = _backend.require("dask")
        da = _backend.require("dask.array")
        self.X, self.t = X, transfers
        self.i, self.j = np.asarray(i), np.asarray(j)
        self.n_pairs = P = len(self.i)
        n, d = X.shape
        if n_chunks is None:
            n_chunks = max(len(X.chunks[0]), -(-P * d * 8 // QWISE_DASK_CHUNK))
        self.edges = np.unique(np.linspace(0, P, max(1, min(n_chunks, P)) + 1).astype(int))
        # X as one persisted block that every build task reads where it is
        # (a constraint's rows are anywhere in X); released once the
        # difference vectors are persisted
        Xb = X.rechunk((n, d)).persist()
        block = Xb.to_delayed().ravel()[0]
        build = self.dask.delayed(_differences, pure=True)
        parts = [da.from_delayed(build(block, self.i[s:e], self.j[s:e]), (e - s, d),
                                 dtype=np.float64) for s, e in pairwise(self.edges)]
        self.t.sent(self.i, self.j)
        self.Z = da.concatenate(parts, axis=0).persist()
        # a distributed client persists in the background: X's block is
        # released only after the vectors are built from it
        _wait(self.Z)
        del Xb
        self._blocks = list(self.Z.to_delayed().ravel())
        self.k = 0  # the twin's scale: its vectors are 2^k Z

    def scaled(self, k):
        """The same pairs of ``2^k X`` (sharing the persisted vectors)."""
        out = copy.copy(self)
        out.k = int(k)
        return out

    @property
    def n_chunks(self):
        return len(self._blocks)

    def _run(self, task, args, per_chunk=None):
        """One task per chunk of pairs, ``task(Z_chunk, *args,
        *per_chunk(s, e))`` (a chunk for which ``per_chunk`` returns None
        is skipped); the gathered results, counted."""
        delayed = self.dask.delayed(task, pure=True)
        parts = []
        for blk, (s, e) in zip(self._blocks, pairwise(self.edges)):
            extra = () if per_chunk is None else per_chunk(s, e)
            if extra is not None:
                parts.append(delayed(blk, *args, *extra))
        parts = self.dask.compute(*parts)
        self.t.gathered(*parts)
        return parts

    def sqdist(self, M=None, G=None):
        """``z_p^T M z_p`` of every pair (float64, on the host), from ``M``
        (its signed factors) or a factor ``G`` with ``M = G G^T``."""
        G_neg = None
        if G is None:
            G, G_neg = signed_factors(M)
            G_neg = G_neg if G_neg.shape[1] else None
        if G.shape[1] == 0:
            return np.zeros(self.n_pairs)
        # (2^k z)^T G = z^T (2^k G): the twin's scale on the factors, exactly
        G = np.ldexp(np.asarray(G, dtype=np.float64), self.k)
        if G_neg is not None:
            G_neg = np.ldexp(G_neg, self.k)
        self.t.sent(*(a for a in (G, G_neg) if a is not None))
        parts = self._run(_sqdist_task, (G, G_neg))
        return np.concatenate(parts) if parts else np.zeros(0)

    def gram(self, w, *, single=False):
        """``sum_p w_p z_p z_p^T`` (d, d), float64 (``single`` is ignored):
        one partial sum per chunk with weight, added on the host."""
        w = np.asarray(w, dtype=np.float64)
        d = self.X.shape[1]

        def chunk(s, e):
            ws = w[s:e]
            if not np.any(ws):
                return None
            self.t.sent(ws)
            return (ws,)

        parts = self._run(_gram_task, (), chunk)
        S = np.sum(parts, axis=0) if parts else np.zeros((d, d))
        return np.ldexp(S, 2 * self.k)

    def rows(self, idx, mean):
        """``2^k (X[idx] - mean)`` on the host (sorted ``idx``): one gather,
        counted."""
        (rows,) = self.dask.compute(self.X[idx])
        self.t.gathered(rows)
        return np.ldexp(rows - mean, self.k)


@dataclass(eq=False)
class QwiseDaskData(_backend.OnDevice, QwiseData):
    """:class:`~cvxmetric.qwise.QwiseData` whose full passes run as Dask
    tasks (see the module docstring).

    ``X`` is the ``dask.array`` of the samples (float64) and ``op`` a
    :class:`DaskPairs`; the constraints' arrays, ``R`` and everything the
    solver keeps are NumPy arrays on the host.  :meth:`restrict` gives NumPy
    data (the working set's rounds run on the host); :meth:`host` is the
    same problem with ``X`` on the host, from which it was built.
    ``where`` is the cluster (:class:`~cvxmetric._backend.Cluster`), whose
    transfers count what the tasks are sent and what is gathered.
    """

    host_data: object = field(default=None, repr=False)
    where: _backend.Cluster = field(default=None, repr=False)
    mean: np.ndarray = field(default=None, repr=False)  # column means of X

    host_iterations = True

    @classmethod
    def from_host(cls, host, X):
        """``host`` with its passes on the ``dask.array`` ``X``, whose values
        must be ``host.X`` (any floating type; cast to float64 there)."""
        da = _backend.require("dask.array")
        if tuple(X.shape) != tuple(host.X.shape):
            raise ValueError(f"X: expected the problem's samples, of shape "
                             f"{tuple(host.X.shape)}; got shape {tuple(X.shape)}.")
        where = _backend.Cluster()
        t = where.transfers
        X = X.astype(np.float64)
        Xh = np.asarray(host.X, dtype=np.float64)
        # once, n x d: the cluster's X must be the problem's samples (the
        # host's copy goes to the cluster in X's chunks, counted)
        finite, same, mean = da.compute(
            da.all(da.isfinite(X)), da.all(X == da.from_array(Xh, chunks=X.chunks)),
            da.mean(X, axis=0))
        t.sent(Xh)
        t.gathered(mean)
        if not bool(finite):
            raise ValueError("X: contains NaN or infinite values.")
        if not bool(same):
            raise ValueError("X: its values differ from the problem's samples.")
        op = DaskPairs(X, host.op.i, host.op.j, t)
        return cls._build(host, X, op, np.asarray(mean), where)

    @classmethod
    def _build(cls, host, X, op, mean, where):
        fields = {f.name: getattr(host, f.name) for f in dataclasses.fields(QwiseData)}
        fields.update(X=X, op=op)
        return cls(**fields, host_data=host, where=where, mean=mean)

    def host(self):
        """This problem with ``X`` on the host (the one it was built from)."""
        return self.host_data

    def backend_info(self):
        """The cluster's report (:meth:`Cluster.info
        <cvxmetric._backend.Cluster.info>`) and the chunks of pairs."""
        return {**self.where.info(), "pair_chunks": self.op.n_chunks}

    def sweep_operator(self):
        """The working set's full passes: the Dask pairs (float64)."""
        return self.op

    def normalized(self):
        """The scale-free twin: built on the host, its passes on the same
        persisted difference vectors, scaled by a power of two."""
        twin, sc = self.host_data.normalized()
        if twin is self.host_data:
            return self, sc
        # the twin is canonicalised from the same sets: the same pairs
        if not (np.array_equal(twin.op.i, self.op.i) and np.array_equal(twin.op.j, self.op.j)):
            raise RuntimeError("the scale-free twin's pairs differ from the problem's.")
        k = -sc.ks
        out = self._build(twin, self.X * np.ldexp(1.0, k), self.op.scaled(k), self.mean,
                          self.where)
        return out, sc

    def _restricted_operator(self, used, dtype):
        """The rows of ``X`` the pairs ``used`` read, gathered once to the
        host (centred with the cluster's column means, as the NumPy
        problem's samples are), and NumPy's operator over them."""
        i, j = self.op.i[used], self.op.j[used]
        rows, pos = np.unique(np.concatenate([i, j]), return_inverse=True)
        Xr = self.op.rows(rows, self.mean)
        pairs = pos.reshape(2, -1).T
        store = len(pairs) * self.n_features <= _RESTRICTED_PHI
        return Xr, PairOperator(Xr, pairs, materialize=True if store else None,
                                centered=True, dtype=dtype)
