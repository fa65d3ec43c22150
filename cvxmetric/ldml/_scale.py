"""Units, the default regularisation and the point ``M = 0`` of LDML's Eq. 2.

Scaling.  Distances are invariant to translating ``X``, and scaling ``X``
by ``c`` scales every distance by ``c^2``: the problem on ``c X`` is the
problem on ``X`` with ``M -> M / c^2`` and ``lam -> lam / c^2`` (trace) or
``lam / c^4`` (Frobenius), ``b`` and ``F`` unchanged.  The estimators solve
on centred data scaled by a power of two (exact in binary floating point) to
unit spread (:func:`unit_scale`), and map the metric back.

The point ``M = 0``.  With ``n_+`` similar and ``n_-`` dissimilar pairs
(``P`` in all) the best threshold at ``M = 0`` is ``b_0 = log(n_+ / n_-)``,
``F(0, b_0) = n_+ log(P / n_+) + n_- log(P / n_-)``, and the slopes are
``n_- / P`` on the similar pairs and ``n_+ / P`` on the dissimilar ones,
so ``S_0 = S(alpha_0) = (n_- C_sim - n_+ C_dis) / P`` with ``C_sim``,
``C_dis`` the sums of the pairs' outer products ``(x_i - x_j)(x_i -
x_j)^T``.  ``M = 0`` is optimal with the trace regulariser exactly when
``lam >= lam_max = lambda_max(-S_0)`` (its dual point then has no PSD
deficit and the gap is 0), as the lasso's ``lambda_max``; with the
Frobenius regulariser its gap is ``||Pi_+(-S_0)||_F^2 / (2 lam)``.
"""

import math
from typing import NamedTuple

import numpy as np

from .._backend import Device, float64, is_numpy
from .._settings import _LDML_SCALE_CHUNK as _CHUNK
from .._settings import AUTO_RATIO
from ..result import Certificate, SolverResult, Status

__all__ = ["AUTO_RATIO", "unit_scale", "ZeroPoint", "zero_point", "auto_lam",
           "scaled_lam", "zero_result"]


def unit_scale(X, transfers=None):
    """``(X_u, k)``: ``X`` centred and multiplied by ``2^-k`` so that its
    root-mean-square spread is in ``[0.5, 1)`` (``k = 0`` when every row is
    the same).  Computed without squaring ``X`` (no overflow at any finite
    scale).  An array of another namespace (PyTorch, CuPy, ``array-api-strict``)
    is scaled where it is: only scalars come to the host, counted in
    ``transfers``."""
    if not is_numpy(X) and not isinstance(X, (list, tuple)):
        return _unit_scale_xp(X, Device.of(X, transfers))
    X = np.asarray(X, dtype=float)
    top = float(np.max(np.abs(X))) if X.size else 0.0
    if top == 0.0:
        return X.copy(), 0
    k0 = math.frexp(top)[1]
    Xc = np.ldexp(X, -k0)  # |entries| < 1: squares cannot overflow
    Xc = Xc - Xc.mean(axis=0)
    spread = math.sqrt(float(np.mean(np.sum(Xc * Xc, axis=1))))
    if spread == 0.0:
        return Xc, 0
    k1 = math.frexp(spread)[1]
    return np.ldexp(Xc, -k1), k0 + k1


def _unit_scale_xp(X, where):
    """:func:`unit_scale` on ``X``'s namespace, float64 on its device
    (``where``, a :class:`~cvxmetric._backend.Device`).  The powers of two
    are exact products (as ``ldexp``) unless a result is subnormal; the
    mean is the device's sum, equal to NumPy's to round-off (a
    translation, which no pair difference sees)."""
    xp = where.xp
    X = float64(X, xp)
    top = where.scalars(xp.max(xp.abs(X)))[0] if X.shape[0] * X.shape[1] else 0.0
    if top == 0.0:
        return xp.asarray(X, copy=True), 0
    k0 = math.frexp(top)[1]
    Xc = X * math.ldexp(1.0, -k0)
    Xc = Xc - xp.mean(Xc, axis=0)[None, :]
    spread = math.sqrt(where.scalars(xp.mean(xp.sum(Xc * Xc, axis=1)))[0])
    if spread == 0.0:
        return Xc, 0
    k1 = math.frexp(spread)[1]
    return Xc * math.ldexp(1.0, -k1), k0 + k1


def scaled_lam(lam, k, regularizer):
    """The weight on ``X_u = 2^-k X_c`` equivalent to ``lam`` on ``X``:
    ``lam / 4^k`` (trace) or ``lam / 16^k`` (Frobenius), as ``M_u = 4^k
    M``; ``inf`` beyond the float range (then ``M = 0`` to all
    precision)."""
    e = -2 * k if regularizer == "trace" else -4 * k
    try:
        return math.ldexp(float(lam), e)
    except OverflowError:
        return math.inf


class ZeroPoint(NamedTuple):
    S0: np.ndarray   # (D, D): S(alpha_0) at M = 0, b = b_0
    n_pos: int       # similar pairs
    n_neg: int       # dissimilar pairs
    b0: float        # log(n_pos / n_neg)
    f0: float        # F(0, b_0)
    sigma2: float    # mean squared pair distance per dimension of the span

    @property
    def lam_max(self):
        """``lambda_max(-S_0)``, at least 0: the trace weight from which
        ``M = 0`` is optimal."""
        if not self.S0.size:
            return 0.0
        return max(0.0, float(np.linalg.eigvalsh(-self.S0)[-1]))


def _zero(C_sim, C_dis, n_pos, n_neg):
    P = n_pos + n_neg
    S0 = (n_neg * C_sim - n_pos * C_dis) / P
    S0 = 0.5 * (S0 + S0.T)
    b0 = math.log(n_pos / n_neg)
    f0 = n_pos * math.log(P / n_pos) + n_neg * math.log(P / n_neg)
    C = C_sim + C_dis
    w = np.linalg.eigvalsh(0.5 * (C + C.T)) if C.size else np.zeros(0)
    r = int(np.sum(w > (w[-1] if w.size else 0.0) * 1e-12 * max(1, len(w)))) if w.size else 0
    sigma2 = float(np.trace(C)) / P / max(r, 1)
    return ZeroPoint(S0, int(n_pos), int(n_neg), b0, f0, sigma2)


def zero_point(X, pairs, s, transfers=None):
    """:class:`ZeroPoint` of explicit pairs (``s`` = +1 / -1, both
    present).  On another namespace the outer products are summed on
    ``X``'s device, block by block; the (D, D) sums come to the host,
    counted in ``transfers``."""
    pairs = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
    s = np.asarray(s, dtype=float)
    if not is_numpy(X) and not isinstance(X, (list, tuple)):
        C_sim, C_dis = _pair_scatter_xp(X, pairs, s > 0, Device.of(X, transfers))
        return _zero(C_sim, C_dis, int(np.sum(s > 0)), int(np.sum(s < 0)))
    X = np.asarray(X, dtype=float)
    D = X.shape[1]
    C_sim, C_dis = np.zeros((D, D)), np.zeros((D, D))
    for a in range(0, len(s), _CHUNK):
        sl = slice(a, a + _CHUNK)
        Phi = X[pairs[sl, 0]] - X[pairs[sl, 1]]
        pos = s[sl] > 0
        C_sim += Phi[pos].T @ Phi[pos]
        C_dis += Phi[~pos].T @ Phi[~pos]
    return _zero(C_sim, C_dis, int(np.sum(s > 0)), int(np.sum(s < 0)))


def _pair_scatter_xp(X, pairs, pos, where):
    """``(C_sim, C_dis)`` of explicit pairs of a device ``X`` (on
    ``where``): blocks of differences gathered there, one (D, D) product of
    each kind per block."""
    xp = where.xp
    X = float64(X, xp)
    C_sim = C_dis = 0.0
    for a in range(0, len(pos), _CHUNK):
        sl = slice(a, a + _CHUNK)
        idx = where.dev(pairs[sl])
        w = where.dev(pos[sl], float)
        Phi = xp.take(X, idx[:, 0], axis=0) - xp.take(X, idx[:, 1], axis=0)
        C_sim = C_sim + Phi.T @ (w[:, None] * Phi)
        C_dis = C_dis + Phi.T @ ((1.0 - w)[:, None] * Phi)
    both = where.host(xp.stack([C_sim, C_dis]))
    return both[0], both[1]


def _class_scatter_xp(X, labels, where):
    """``(total, C_sim)`` of :func:`zero_point_labels` for a device ``X``
    (on ``where``): each class's rows gathered there (their indices moved
    once), the (D, D) scatter matrices summed there and brought to the
    host together."""
    xp = where.xp
    X = float64(X, xp)
    N = X.shape[0]
    Xc = X - xp.mean(X, axis=0)[None, :]
    C_sim = 0.0
    for c in np.unique(labels):
        Z = xp.take(X, where.dev(np.flatnonzero(labels == c)), axis=0)
        Zc = Z - xp.mean(Z, axis=0)[None, :]
        C_sim = C_sim + Z.shape[0] * (Zc.T @ Zc)
    both = where.host(xp.stack([N * (Xc.T @ Xc), C_sim]))
    return both[0], both[1]


def zero_point_labels(X, labels, rows, transfers=None):
    """:class:`ZeroPoint` of every pair of labelled samples, from the
    classes' scatter matrices (``sum_{i<j} C_ij = N sum_i (x_i -
    mean)(x_i - mean)^T`` over a set of ``N``), without forming the pairs.
    ``rows`` are the row ids of :func:`~cvxmetric.ldml.fast._row_ids`:
    pairs of identical rows are left out (as :class:`AllPairs` does; their
    outer product is 0, only the counts change).  On another namespace
    the scatter matrices are summed on ``X``'s device; the (D, D) results
    come to the host, counted in ``transfers``."""
    labels = np.asarray(labels)
    N = len(labels)
    if not is_numpy(X) and not isinstance(X, (list, tuple)):
        total, C_sim = _class_scatter_xp(X, labels, Device.of(X, transfers))
    else:
        X = np.asarray(X, dtype=float)
        Xc = X - X.mean(axis=0)
        total = N * (Xc.T @ Xc)
        C_sim = np.zeros_like(total)
        for c in np.unique(labels):
            Z = X[labels == c]
            Zc = Z - Z.mean(axis=0)
            C_sim += len(Z) * (Zc.T @ Zc)
    _, counts = np.unique(labels, return_counts=True)
    n_same = int(np.sum(counts * (counts - 1) // 2))
    # identical rows: pairs with the same label, and all of them
    _, grp = np.unique(np.column_stack([rows, labels]), axis=0, return_counts=True)
    dup_same = int(np.sum(grp * (grp - 1) // 2))
    dup_all = int(np.sum((c := np.bincount(rows)) * (c - 1) // 2))
    n_pos = n_same - dup_same
    n_neg = N * (N - 1) // 2 - n_same - (dup_all - dup_same)
    return _zero(C_sim, total - C_sim, n_pos, n_neg)


def _lam_max_gram(S0, K):
    """``max <-S_0, A^T A> / tr(A K A^T)`` over ``A``: the ``lam_max`` of the
    kernel form (features the rows of ``K``, regulariser ``tr(A K A^T)``),
    ``lambda_max`` of ``-S_0`` in the coordinates where ``K`` is the
    identity, on the range of ``K``."""
    w, U = np.linalg.eigh(0.5 * (K + K.T))
    keep = w > w[-1] * 1e-12 * len(w) if w.size and w[-1] > 0 else np.zeros(len(w), bool)
    if not np.any(keep):
        return 0.0
    T = U[:, keep] / np.sqrt(w[keep])
    G = T.T @ (-S0) @ T
    return max(0.0, float(np.linalg.eigvalsh(0.5 * (G + G.T))[-1]))


def auto_lam(zp, regularizer, ratio=AUTO_RATIO, gram=None):
    """``lam="auto"``: ``ratio lam_max`` for the trace; for the Frobenius
    regulariser the weight whose gradient at ``M = I / sigma^2`` (isotropic,
    unit mean distance per dimension) equals that trace weight's,
    ``ratio lam_max sigma^2``.  When ``lam_max = 0`` (``M = 0`` is optimal
    for every ``lam``) the scale ``n_+ lambda_max(C_dis) / P`` of the
    dissimilar pairs' part stands in for it.  ``gram``: the kernel form's
    ``K`` (``zp`` computed on its rows), ``lam_max`` taken against
    ``tr(A K A^T)``."""
    lam = zp.lam_max if gram is None else _lam_max_gram(zp.S0, gram)
    if lam <= 0.0:
        P = zp.n_pos + zp.n_neg
        lam = float(np.linalg.eigvalsh(-zp.S0)[-1]) if zp.S0.size else 0.0
        lam = max(lam, zp.sigma2 * zp.n_pos / P * max(1, zp.n_neg))
    lam *= ratio
    if regularizer != "trace":
        lam *= zp.sigma2
    return lam


def zero_result(zp, lam, regularizer, *, tol=None):
    """The certified point ``M = 0``, ``b = b_0`` when it is optimal to the
    package's tolerance (trace: ``lam >= lam_max``; Frobenius: the gap
    ``||Pi_+(-S_0)||_F^2 / (2 lam)`` passes), else ``None``."""
    if not lam > 0:
        return None
    f0 = zp.f0
    w = np.linalg.eigvalsh(-zp.S0) if zp.S0.size else np.zeros(0)
    top = float(w[-1]) if w.size else 0.0
    if regularizer == "trace":
        # a margin for the round-off of the computed eigenvalue
        if lam < top + 1e-12 * max(abs(top), 1e-300) * max(1, len(w)):
            return None
        bound = f0
    elif math.isinf(lam):
        bound = f0
    else:
        bound = f0 - 0.5 / lam * float(np.sum(np.maximum(w, 0.0) ** 2))
    opts = {} if tol is None else {"tol": tol}
    cert = Certificate.from_bound(f0, bound, max_violation=0.0, min_eig=0.0,
                                  solver="zero", tolerances=opts)
    if not cert.passed:
        return None
    D = zp.S0.shape[0]
    return SolverResult(M=np.zeros((D, D)), status=Status.OPTIMAL, objective=f0,
                        n_iter=0, certificate=cert, method="zero",
                        info={"b": zp.b0, "L": np.zeros((1, D))},
                        raw_status=Status.OPTIMAL)
