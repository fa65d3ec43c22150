"""OASIS: online passive-aggressive learning of a bilinear similarity.

Chechik, Sharma, Shalit, Bengio (JMLR 2010), the bilinear baseline of SLR's
experiments.  Similarity ``S_W(x, x') = x^T W x'`` with ``W`` (d, d)
general.  For a triplet ``(p, p+, p-)`` (``p+`` of ``p``'s class, ``p-`` of
another) the hinge loss is ::

    l_W = max(0, 1 - S_W(p, p+) + S_W(p, p-)) = max(0, 1 - p^T W (p+ - p-))

and each step is the PA-I update (the closed form of
``min_W 1/2 ||W - W_{i-1}||_F^2 + C xi  s.t.  l_W <= xi, xi >= 0``)::

    V = p (p+ - p-)^T,   tau = min(C, l / ||V||_F^2),   W <- W + tau V,

with ``||V||_F^2 = ||p||^2 ||p+ - p-||^2`` and ``W_0 = I``.  Triplets are
drawn uniformly with :func:`cvxmetric.triplets_from_labels` (anchor, a
different sample of its class, a sample of another class).

Cost ``O(d^2)`` per step (one vector-matrix product and, when the loss is
positive, one in-place rank-one update), ``O(d^2)`` memory.
"""

import numpy as np
from scipy.linalg import blas
from threadpoolctl import threadpool_limits

from .._validation import check_scalar
from ..constraints import triplets_from_labels
from .randomized import _check_dtype, _check_int, _check_problem

__all__ = ["oasis", "triplet_hinge_loss"]


def triplet_hinge_loss(M, X, triplets):
    """Mean OASIS loss ``max(0, 1 - x_i^T M x_j + x_i^T M x_k)`` over triplets.

    Parameters
    ----------
    M : ndarray of shape (d, d)
    X : ndarray of shape (n, d)
    triplets : ndarray of int, shape (n_triplets, 3)
        ``(i, j, k)`` with ``y_i == y_j != y_k``.

    Returns
    -------
    float
    """
    t = np.asarray(triplets)
    P = X[t[:, 0]] @ M  # (T, d)
    s = np.einsum("ij,ij->i", P, X[t[:, 1]] - X[t[:, 2]])
    return float(np.mean(np.maximum(0.0, 1.0 - s)))


def oasis(X, y, n_steps, C=0.1, random_state=None, *, dtype=np.float64,
          return_info=False):
    """OASIS: ``n_steps`` PA-I updates of ``W`` from ``W_0 = I``.

    Parameters
    ----------
    X : array_like of shape (n, d)
    y : array_like of int, shape (n,)
        Class labels (at least two classes, one with two samples).
    n_steps : int
        Number of sampled triplets (the paper's experiments use 10^6).
    C : float
        Aggressiveness, ``> 0``.
    random_state : int, RandomState or None
        Triplet sampling.
    dtype : float32 or float64
        Precision of ``W`` (float32 halves the memory traffic per step).
    return_info : bool
        Also return ``{"losses": (n_steps,) loss of each triplet before its
        update, "n_updates": int}``.

    Returns
    -------
    M : ndarray of shape (d, d)
        The learned ``W`` (float64).
    info : dict, only if ``return_info``
    """
    X, codes, _, _ = _check_problem(X, y, 1.0, 0.0, "OASIS")
    n_steps = _check_int(n_steps, "n_steps", 1)
    C = check_scalar(C, "C", low=0.0, low_inclusive=False)
    dtype = _check_dtype(dtype)
    triplets = triplets_from_labels(codes, n_steps, random_state=random_state)
    Xd = np.ascontiguousarray(X, dtype=dtype)
    d = Xd.shape[1]
    W = np.asfortranarray(np.eye(d, dtype=dtype))
    sqn = np.einsum("ij,ij->i", Xd, Xd, dtype=np.float64)  # ||x_i||^2
    losses = np.zeros(n_steps) if return_info else None
    # one step is a (d,) x (d, d) product and a rank-one update: threaded
    # BLAS only adds overhead there (measured 10-20x slower on 2 busy cores)
    with threadpool_limits(limits=1, user_api="blas"):
        W, n_updates = _pa_loop(Xd, triplets, W, sqn, C, losses, dtype)
    M = np.array(W, dtype=np.float64, order="C")
    if return_info:
        return M, {"losses": losses, "n_updates": n_updates}
    return M


def _pa_loop(Xd, triplets, W, sqn, C, losses, dtype):
    """The PA-I steps over ``triplets``; returns ``(W, n_updates)``."""
    ger = blas.dger if dtype == np.float64 else blas.sger
    n_updates = 0
    for t, (i, j, k) in enumerate(triplets.tolist()):
        p = Xd[i]
        v = Xd[j] - Xd[k]  # p+ - p-
        loss = 1.0 - float(p @ W @ v)
        if losses is not None:
            losses[t] = max(loss, 0.0)
        if loss <= 0.0:
            continue  # passive
        vv = float(v @ v)
        norm2 = sqn[i] * vv
        if norm2 == 0.0:
            continue  # x_i = 0 or x_j = x_k: no W changes this triplet's loss
        tau = min(C, loss / norm2)
        # in place W += tau p v^T (W is Fortran-ordered for BLAS ger)
        W = ger(tau, p, v, a=W, overwrite_a=True)
        n_updates += 1
    return W, n_updates
