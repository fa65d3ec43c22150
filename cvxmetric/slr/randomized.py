"""SLR, Algorithm 2: adaptive regression on a randomly compressed problem.

Qian, Baytas, Jin, Jain, Zhu (2015), "Randomized Regression for Similarity
Learning".  The paper's ``X`` is ``d x n``; here ``X`` is ``(n, d)`` (rows
are samples), so the paper's ``X^T M X`` is ``K = X M X^T`` and its
regression (5) ``min_M ||A M B^T - Y||_F^2`` has ``A = B = X`` (n, d).

The compressed problem (Eq. 6)
------------------------------
With two random ``S1, S2`` (n, m), ``E[S S^T] = I_n``::

    min_M ||S1^T X M X^T S2 - S1^T Y S2||_F^2,     M_hat = A^+ (S1^T Y S2) B^{+T},

``A = S1^T X``, ``B = S2^T X`` (m, d).  Two sketches (Remark 3):

``"gaussian"``
    ``S = G / sqrt(m)``, ``G`` standard normal (Lemma 2's normalisation).
``"columns"``
    each column of ``S`` is ``sqrt(n/m) e_i`` with ``i`` uniform (with
    replacement, as in Lemma 1; ``replace=False`` draws distinct ``i``).
    Then ``S1^T Y S2 = (n/m) Y[I1, I2]`` and ``A = sqrt(n/m) X[I1]``: the
    scale cancels in ``M_hat = X[I1]^+ Y[I1, I2] X[I2]^{+T}``, so the
    compressed problem is Eq. 1 / Eq. 4 on the ``m x m`` sampled pairs.

Algorithm 2 (each iteration draws new sketches, as the paper's step 4; with
``resample=False`` they are drawn once and the iterations are Algorithm 1
on the compressed problem)::

    M_0 = I;  for k = 1..T:  Y = clip(X M_{k-1} X^T)   (step 6: max(., delta1)
                                                      on same-class pairs,
                                                      min(., delta2) elsewhere)
                             M_k = A^+ (S1^T Y S2) B^{+T}

How it is computed (nothing ``n x n``, nothing ``m x m`` stored)
---------------------------------------------------------------
With the thin SVDs ``A = U_A s_A V_A^T`` and ``B = U_B s_B V_B^T`` (rank
cut-off ``max(m, d) eps s_max``), ``M_k = V_A C V_B^T`` with ::

    C = s_A^{-1} (U_A^T S1^T Y S2 U_B) s_B^{-1},
    U_A^T S1^T Y S2 U_B = (F1^T P)(F2^T Q)^T + F1^T Res F2,

where ``K = P Q^T`` is the current similarity (``P = X_1 L``, ``Q = X_2 R``,
``M_{k-1} = L R^T`` kept as factors), ``Res = clip(K) - K`` the clipping
residual (``[delta1 - K]_+`` on same-class pairs, ``-[K - delta2]_+``
elsewhere) and ``F = S U`` the sketch lifted to the sample side:

* columns: the pairs are ``I1 x I2`` (``X_1 = X[I1]``), ``F = sqrt(n/m) U``
  (m, r).  A pass costs ``O(m^2 r)`` and never looks at the other samples.
* gaussian: the pairs are all ``n x n`` (the clip needs every ``K_ij``),
  ``F = S U`` (n, r).  A pass costs ``O(n^2 r)``: the compression saves the
  pseudo-inverse of ``X`` and the memory of ``Y``, not the pass over the
  pairs.  Memory is ``O((n + d) m)`` for the sketches.

``Res`` is built in row blocks of about ``block`` entries, with the samples
sorted by class so that the same-class pairs of a block are a few
rectangles.  ``r <= min(m, d)``, so memory is ``O((n + d) m + block)``.

Theorem 1 (the compressed solution is close)
--------------------------------------------
For the fixed-target regression, ``M = X^+ Y X^{+T}``, residual
``Res = Y - X M X^T``, Gaussian sketches and ``m >= (r_D + 1)
log(48 r_D / delta) / (c eps^2)`` (``c >= 1/4``, Corollary 3, ``eps <= 1/2``),
with probability ``1 - delta`` ::

    ||M - M_hat||_2 <= ||Res||_2 / s_min^2 * g(eps),
    g(eps) = eps^2 (1+eps)/(1-eps) + 2 eps (1+eps)^{3/2}/sqrt(1-eps)
             + 2 sqrt(2 eps) (1+eps)^{3/2}.

:func:`theorem1_check` evaluates both sides (``Y`` the Eq. 2 target, with
``Y S`` from class sums: ``Y = E E^T`` for the class indicator ``E``).
"""

import functools
import time
from dataclasses import dataclass, field

import numpy as np
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from .._backend import (
    Device,
    check_host_input,
    is_dask,
    is_numpy,
    namespace,
)
from .._settings import (
    ESTIMATE_ROWS,
    OBJECTIVE_MAX_N,
)
from .._settings import (
    SLR_RANDOMIZED_DEFAULT_BLOCK as DEFAULT_BLOCK,
)
from .._solver import Deadline
from .._trace import record, recording
from .._validation import check_int, check_option, check_samples
from ..result import Certificate, SolverResult, Status
from ._problem import (
    Expired,
    _encode_labels,
    check_device_samples,
    check_thresholds,
    m_in_units,
)

__all__ = [
    "SKETCHES",
    "randomized_slr",
    "sketch_matrix",
    "eq4_objective_factored",
    "theorem1_bound",
    "theorem1_check",
]

#: Sketch kinds of Remark 3.
SKETCHES = ("gaussian", "columns")


# ---------------------------------------------------------------------------
# Validation shared by the scalable SLR solvers
# ---------------------------------------------------------------------------


def _check_int(value, name, low, high=None):
    """``value`` as an int in ``[low, high]`` (:func:`~cvxmetric._validation.check_int`)."""
    return check_int(value, name, low=low, high=high)


def _check_problem(X, y, delta1, delta2, what):
    """``(X, codes, delta1, delta2)`` validated as :class:`~.SLRData` does,
    for ``what``, a method that runs on NumPy only (other namespaces are
    refused naming it)."""
    check_host_input(X, "X", what)
    X = check_samples(X, "X")
    codes, _ = _encode_labels(y, X.shape[0])
    delta1, delta2 = check_thresholds(delta1, delta2)
    return X, codes, delta1, delta2


def _device_problem(X, y, delta1, delta2):
    """``(X, codes, delta1, delta2, arrays)`` for a method whose passes run
    on the namespace of ``X``: NumPy input validated as
    :func:`_check_problem` does; an array of another namespace validated
    on its device and cast to float64 there, the labels on the host.
    ``arrays`` (:class:`_Arrays`) says where the run's arrays live."""
    if isinstance(X, (list, tuple)) or is_numpy(X):
        return (*_check_problem(X, y, delta1, delta2, "SLR"), _Arrays())
    if is_dask(X):
        raise TypeError("X: SLR's sketched algorithms have no Dask back end (their "
                        "passes are not row-separable tasks); compute X, or use "
                        "SemismoothNewton on the dask array (docs/backends.md).")
    try:
        xp, _ = namespace(X)
    except TypeError:
        raise TypeError(f"X: expected a NumPy array or an array of an array-API "
                        f"library (PyTorch, CuPy, array-api-strict), got "
                        f"{type(X).__module__}.{type(X).__name__}.") from None
    arrays = _Arrays.of(X)
    X, y = check_device_samples(X, y, xp, arrays.transfers)
    codes, _ = _encode_labels(y, X.shape[0])
    delta1, delta2 = check_thresholds(delta1, delta2)
    return X, codes, delta1, delta2, arrays


@dataclass(eq=False)
class _Arrays(Device):
    """Where the arrays of a run of Algorithm 2 or 3 live
    (:class:`~cvxmetric._backend.Device`), and the operations the run needs
    on either side.

    NumPy on the host (``xp = numpy``: the in-place NumPy kernels, nothing
    counted), or the namespace and device of the input ``X`` (PyTorch,
    CuPy, ``array-api-strict``): there the data, the factors ``L, R`` and
    every pass over pairs stay on the device; what the host keeps is the
    random draws (the same as NumPy's for the same ``random_state``: index
    arrays, or Gaussian sketches), the class codes, the rank decisions and
    the scalars of the report.  Every move between the two is counted in
    ``transfers``.
    """

    # device copies made once per run (see once)
    _cache: dict = field(default_factory=dict, repr=False)

    def take(self, x, idx, axis=0):
        """``x`` at the indices ``idx`` (on ``x``'s side) along ``axis``."""
        if self.on_host:
            return x[idx] if axis == 0 else x[:, idx]
        return self.xp.take(x, idx, axis=axis)

    def once(self, key, make):
        """``make()`` computed once per run (device copies of the class
        order or of the codes: moved once, not per iteration)."""
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def order(self, codes):
        """``(order, order on the device)``: the samples sorted by class
        (stable), the device copy moved once per run."""
        def make():
            order = np.argsort(codes, kind="stable")
            return order, self.dev(order)
        return self.once("order", make)

    def eye(self, d):
        """The float64 identity (d, d) on the run's device."""
        if self.on_host:
            return np.eye(d)
        return self.xp.eye(d, dtype=self.xp.float64, device=self.device)


def _unit_rows(X, arrays=None):
    """``(X / c, c)`` with ``c^2`` the mean squared row norm of ``X``.

    Algorithms 2 and 3 start from ``M_0 = I`` (or the projector onto a
    principal subspace), whose similarities ``x_i^T x_j`` are on the scale
    of the thresholds only when rows have about unit norm (the paper's
    L2-normalised descriptors).  Run on ``X / c``, the start is ``I / c^2``
    in ``X``'s units: on rows of unit norm (``c = 1``) the paper's start,
    and at ``s X`` the same run with ``M / s^2`` (scale-equivariant to
    round-off: ``c`` is computed as ``max|X|`` times the root mean square
    row norm of ``X / max|X|``, which neither overflows nor underflows for
    any finite ``X``).
    """
    if arrays is not None and not arrays.on_host:
        xp = arrays.xp
        top = arrays.scalars(xp.max(xp.abs(X)))[0]
    else:
        top = float(np.max(np.abs(X))) if X.size else 0.0
    if top == 0.0:
        raise ValueError("X: all samples are zero; x_i^T M x_j is 0 for every M.")
    Xt = X / top
    if arrays is not None and not arrays.on_host:
        ms = arrays.scalars(xp.mean(xp.sum(Xt * Xt, axis=1)))[0]
    else:
        ms = np.mean(np.einsum("ij,ij->i", Xt, Xt))
    c = top * float(np.sqrt(ms))
    return X / c, c


def _factors_in_units(Ln, Rn, c):
    """``(L, R, M)`` in ``X``'s units from factors on ``X / c``
    (:func:`_unit_rows`): ``L = Ln / c``, ``R = Rn / c``, ``M = L R^T``.

    Raises a ValueError naming ``X`` when ``M`` is not representable in
    float64 (:func:`~cvxmetric.slr._problem.m_in_units`).
    """
    M = m_in_units(Ln @ Rn.T, c, "the learned M")
    return Ln / c, Rn / c, M


def single_blas_thread(func):
    """Run ``func`` on one BLAS thread, whatever the threading policy.

    Algorithms 2 and 3 run a fixed number of iterations and claim no lower
    bound, so no certificate absorbs round-off: a BLAS product computed on
    two threads splits its output among kernels differently and differs
    from the one-thread product in the last bits (measured: Eq. 4 of
    ``SLR(solver="randomized", n_sketch=20, random_state=0)`` at n = 1000,
    d = 80: ``...494`` on one thread, ``...501`` on two).  On one thread
    every product, and so the result, is the same whatever the thread
    count or the machine's load (the threading policy would change it with
    the load).  The cost: no BLAS threads for their passes (on the shared
    2-core machine, loaded, two threads were 2.4x slower in wall time
    anyway: n = 3000, d = 200, 20 classes).
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with threadpool_limits(limits=1, user_api="blas"):
            return func(*args, **kwargs)

    return wrapper


def _check_max_time(max_time):
    """``max_time`` (None or a finite number >= 0) as a :class:`Deadline`."""
    if max_time is not None:
        if isinstance(max_time, bool) or not isinstance(max_time, (int, float, np.number)) \
                or not np.isfinite(max_time) or max_time < 0:
            raise ValueError(f"max_time: expected None or a finite number >= 0, "
                             f"got {max_time!r}.")
        max_time = float(max_time)
    return Deadline(max_time)


def _check_dtype(dtype):
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype: expected float32 or float64, got {dtype}.")
    return dtype


# ---------------------------------------------------------------------------
# Pseudo-inverses through the small Gram matrix
# ---------------------------------------------------------------------------


def _thin_svd(A, *, need_u=True, arrays=None):
    """Thin SVD ``A = U diag(s) V^T`` from the eigenpairs of the smaller Gram.

    ``A^+ = V diag(1/s) U^T`` is all the solvers need, and for a tall ``A``
    (m, d) the Gram ``A^T A`` (d, d) plus ``eigh`` costs ``m d^2 + d^3``
    flops against about ``4 m d^2`` for an SVD (measured 0.9 s vs 3.7 s at
    6000 x 1000 on one core).  Eigenvalues ``lambda = s^2`` at or below
    ``max(m, d) eps lambda_max`` are treated as zero, i.e. singular values
    below ``sqrt(max(m, d) eps) s_max`` (about ``1e-6 s_max``) are dropped:
    the Gram route resolves no smaller ones.

    Parameters
    ----------
    A : ndarray of shape (m, d)
    need_u : bool
        Compute ``U`` (m, r) (``A V / s`` or from ``eigh``); else ``None``.
    arrays : _Arrays, optional
        Where ``A`` lives (default NumPy): on a device the Gram and its
        ``eigh`` run there, and only the eigenvalues come to the host (the
        rank decision).

    Returns
    -------
    U : ndarray of shape (m, r) or None
    s : ndarray of shape (r,)
        Decreasing.
    Vt : ndarray of shape (r, d)

    Raises
    ------
    ValueError
        When ``A`` is zero.
    """
    m, d = A.shape
    tall = m >= d
    G = A.T @ A if tall else A @ A.T
    device = arrays is not None and not arrays.on_host
    if device:
        xp = arrays.xp
        lam, W = xp.linalg.eigh(G)
        lam, W = xp.flip(lam), xp.flip(W, axis=1)
        r = _gram_rank(arrays.host(lam), m, d)
    else:
        xp = np
        lam, W = np.linalg.eigh(G)
        lam, W = lam[::-1], W[:, ::-1]
        r = _gram_rank(lam, m, d)
    s = xp.sqrt(lam[:r])
    W = W[:, :r]
    if tall:
        V = W
        U = (A @ V) / s if need_u else None
    else:
        U = W
        V = (A.T @ U) / s
    return U, s, (V.T if device else np.ascontiguousarray(V.T))


def _gram_rank(lam, m, d):
    """The numerical rank of decreasing Gram eigenvalues ``lam`` (host)."""
    if lam.size == 0 or lam[0] <= 0.0:
        raise ValueError("X: the (sampled or sketched) data are zero; no "
                         "similarity can be learned.")
    return int(np.sum(lam > max(m, d) * np.finfo(float).eps * lam[0]))


# ---------------------------------------------------------------------------
# One pass over a set of pairs: the clipping residual, never stored whole
# ---------------------------------------------------------------------------


def _class_ranges(codes_sorted, n_classes):
    """``(start, end)`` of each class in a sorted code array."""
    cls = np.arange(n_classes)
    return (np.searchsorted(codes_sorted, cls, side="left"),
            np.searchsorted(codes_sorted, cls, side="right"))


def _shifted_factors(P, Q, delta2, dtype):
    """``(Pa, Qa)`` with ``Pa @ Qa = delta2 - P Q^T``, in ``dtype``.

    ``delta2 - K`` straight from the product ``[-P, delta2 1] [Q, 1]^T``:
    one pass less over each block (elementwise passes dominate at small
    ``k``).

    Returns
    -------
    Pa : ndarray of shape (n_rows, k + 1)
    Qa : ndarray of shape (k + 1, n_cols)
    """
    Pa = np.empty((P.shape[0], P.shape[1] + 1), dtype=dtype)
    np.negative(P, out=Pa[:, :-1], casting="same_kind")
    Pa[:, -1] = delta2
    Qa = np.empty((P.shape[1] + 1, Q.shape[0]), dtype=dtype)
    Qa[:-1] = Q.T
    Qa[-1] = 1.0
    return Pa, Qa


def _clip_block(R, y_block, c_start, c_end, gap):
    """Turn one row block of ``delta2 - K`` into ``Res = clip(K) - K``, in place.

    Parameters
    ----------
    R : ndarray of shape (b, n_cols)
        ``delta2 - K`` on the block's pairs; overwritten with ``Res``.
    y_block : ndarray of int, shape (b,)
        The block's row codes, sorted: the same-class pairs of the block
        are the rectangles (rows of class ``c``) x ``[c_start[c], c_end[c])``.
    c_start, c_end : ndarray of int
        Each class's column range (:func:`_class_ranges`).
    gap : float
        ``delta1 - delta2``.
    """
    same = []
    for rs, re_, cs, ce in _class_rectangles(y_block, c_start, c_end):
        # delta1 - K = (delta2 - K) + (delta1 - delta2)
        blk = R[rs:re_, cs:ce] + gap
        np.maximum(blk, 0.0, out=blk)
        same.append((rs, re_, cs, ce, blk))
    np.minimum(R, 0.0, out=R)  # -[K - delta2]_+ on different-class pairs
    for rs, re_, cs, ce, blk in same:
        R[rs:re_, cs:ce] = blk


def _clip_block_xp(xp, R, y_block, c_start, c_end, gap):
    """:func:`_clip_block` in any namespace: returns ``Res`` (new arrays,
    the same-class rectangles written by slice assignment)."""
    rects = _class_rectangles(y_block, c_start, c_end)
    same = [xp.clip(R[rs:re_, cs:ce] + gap, min=0.0) for rs, re_, cs, ce in rects]
    R = xp.clip(R, max=0.0)
    for (rs, re_, cs, ce), blk in zip(rects, same):
        R[rs:re_, cs:ce] = blk
    return R


def _class_rectangles(y_block, c_start, c_end):
    """``(rs, re, cs, ce)``: the same-class pairs of a row block with sorted
    codes ``y_block`` (host), rows ``rs:re`` of class ``c`` against its
    columns ``c_start[c]:c_end[c]``."""
    cut = np.flatnonzero(np.diff(y_block)) + 1
    starts = np.concatenate(([0], cut))
    ends = np.concatenate((cut, [y_block.size]))
    out = []
    for rs, re_ in zip(starts, ends):
        c = y_block[rs]
        cs, ce = c_start[c], c_end[c]
        if ce > cs:
            out.append((int(rs), int(re_), int(cs), int(ce)))
    return out


def _pair_residual(P, Q, y_rows, y_cols, delta1, delta2, *, left=None,
                   right=None, block=DEFAULT_BLOCK, dtype=np.float64,
                   row_sums=False, count=True, deadline=None, arrays=None):
    """Blockwise pass over the pairs ``rows x cols`` with ``K = P Q^T``.

    ``Res = clip(K) - K``: ``[delta1 - K]_+`` on same-class pairs and
    ``-[K - delta2]_+`` elsewhere, so ``||Res||_F^2`` is Eq. 4 restricted to
    these pairs and ``clip(K) = K + Res`` is Algorithm 1's target.

    Parameters
    ----------
    P : ndarray of shape (n_rows, k)
    Q : ndarray of shape (n_cols, k)
    y_rows, y_cols : ndarray of int
        Class codes, each sorted ascending (same-class pairs of a row block
        are then a few rectangles, no (b, n_cols) mask is built).
    left : ndarray of shape (n_rows, k1), optional
    right : ndarray of shape (n_cols, k2), optional
    block : int
        Entries of one (b, n_cols) block.
    dtype : float32 or float64
        Precision of the block products; sums are accumulated in float64.
    row_sums : bool
        Also return the per-row sums of ``Res**2`` (n_rows,).
    count : bool
        Count the violated pairs (one more pass over each block).
    deadline : Deadline, optional
        Checked before every block (raises :class:`~._problem.Expired`).
    arrays : _Arrays, optional
        Where the arrays live (default NumPy): on a device the pass runs
        there (:func:`_pair_residual_xp`); ``y_rows``, ``y_cols`` stay on
        the host either way (they only say where the class rectangles are).

    Returns
    -------
    f : float
        ``||Res||_F^2``.
    n_active : int or None
        Number of nonzero entries of ``Res`` (violated pairs); None
        without ``count``.
    out : ndarray or None
        ``Res @ right`` (n_rows, k2) when ``left`` is None, else
        ``left^T Res right`` (k1, k2); None without ``right``.
    rows : ndarray of shape (n_rows,), only if ``row_sums``
    """
    if arrays is not None and not arrays.on_host:
        return _pair_residual_xp(arrays, P, Q, y_rows, y_cols, delta1, delta2,
                                 left=left, right=right, block=block, dtype=dtype,
                                 row_sums=row_sums, count=count, deadline=deadline)
    n_rows, n_cols = P.shape[0], Q.shape[0]
    n_classes = int(max(y_rows.max(), y_cols.max())) + 1
    c_start, c_end = _class_ranges(y_cols, n_classes)
    Pa, Qa = _shifted_factors(P, Q, delta2, dtype)
    Rt = None if right is None else np.ascontiguousarray(right, dtype=dtype)
    Lf = None if left is None else np.asarray(left, dtype=dtype)
    b = max(1, int(block) // max(1, n_cols))
    f, n_active = 0.0, (0 if count else None)
    out = None
    if right is not None:
        k2 = right.shape[1]
        out = (np.zeros((n_rows, k2)) if left is None
               else np.zeros((left.shape[1], k2)))
    sums = np.zeros(n_rows) if row_sums else None
    for s in range(0, n_rows, b):
        if deadline is not None and deadline.expired():
            raise Expired
        e = min(n_rows, s + b)
        R = Pa[s:e] @ Qa  # delta2 - K, block (b, n_cols)
        _clip_block(R, y_rows[s:e], c_start, c_end, delta1 - delta2)
        if row_sums:
            rs_ = np.einsum("ij,ij->i", R, R, dtype=np.float64)
            sums[s:e] = rs_
            f += float(rs_.sum())
        else:
            # one BLAS dot per block (float32 blocks: float32 partial sums,
            # accumulated across blocks in float64)
            flat = R.ravel()
            f += float(flat @ flat)
        if count:
            n_active += int(np.count_nonzero(R))
        if Rt is not None:
            RW = R @ Rt  # (b, k2)
            if left is None:
                out[s:e] = RW
            else:
                out += Lf[s:e].T @ RW
    if row_sums:
        return f, n_active, out, sums
    return f, n_active, out


def _pair_residual_xp(arrays, P, Q, y_rows, y_cols, delta1, delta2, *, left,
                      right, block, dtype, row_sums, count, deadline):
    """:func:`_pair_residual` on a device, written once for any namespace.

    The same pass (``delta2 - K`` from the shifted factors, the class
    rectangles of the sorted host codes ``y_rows``, ``y_cols``), with new
    arrays per block where NumPy works in place (the array API has no
    ``out=``); the sums accumulate on the device in float64 and cross to
    the host once per pass.  ``out`` and the row sums stay on the device.
    """
    xp = arrays.xp
    dt = xp.float32 if np.dtype(dtype) == np.float32 else xp.float64

    def f64(a):
        return a if dt == xp.float64 else xp.astype(a, xp.float64)

    n_rows, n_cols = P.shape[0], Q.shape[0]
    n_classes = int(max(y_rows.max(), y_cols.max())) + 1
    c_start, c_end = _class_ranges(y_cols, n_classes)
    # [-P, delta2 1] [Q, 1]^T = delta2 - P Q^T, in dtype
    ones = xp.ones((n_rows, 1), dtype=xp.float64, device=arrays.device)
    Pa = xp.astype(xp.concat([-P, delta2 * ones], axis=1), dt)
    Qa = xp.astype(xp.concat([Q, xp.ones((n_cols, 1), dtype=xp.float64,
                                         device=arrays.device)], axis=1), dt).T
    Rt = None if right is None else xp.astype(right, dt)
    Lf = None if left is None else xp.astype(left, dt)
    b = max(1, int(block) // max(1, n_cols))
    f, n_active, parts, sums, out = 0.0, 0, [], [], None
    if Lf is not None:
        out = xp.zeros((left.shape[1], right.shape[1]), dtype=xp.float64,
                       device=arrays.device)
    for s in range(0, n_rows, b):
        if deadline is not None and deadline.expired():
            raise Expired
        e = min(n_rows, s + b)
        R = _clip_block_xp(xp, Pa[s:e, :] @ Qa, y_rows[s:e], c_start, c_end,
                           delta1 - delta2)
        sq = f64(xp.vecdot(R, R, axis=-1))  # row sums of Res^2
        f = f + xp.sum(sq)
        if row_sums:
            sums.append(sq)
        if count:
            n_active = n_active + xp.count_nonzero(R)
        if Rt is not None:
            RW = R @ Rt  # (b, k2)
            if Lf is None:
                parts.append(f64(RW))
            else:
                out = out + f64(Lf[s:e, :].T @ RW)
    if Rt is not None and Lf is None:
        out = xp.concat(parts, axis=0)
    f = arrays.scalars(f)[0]
    n_active = int(arrays.host(n_active)) if count else None
    if row_sums:
        return f, n_active, out, xp.concat(sums)
    return f, n_active, out


def eq4_objective_factored(X, y, L, R, *, delta1=1.0, delta2=0.0,
                           block=DEFAULT_BLOCK, rows=None):
    """Eq. 4 at ``M = L R^T`` by one blockwise pass: ``O(n^2 k)`` time.

    Parameters
    ----------
    X : array_like of shape (n, d)
        NumPy, or an array of an array-API namespace (PyTorch, CuPy...):
        the pass then runs on its device, in float64.
    y : array_like of int, shape (n,)
    L, R : ndarray of shape (d, k)
        Factors of ``M`` (``L = M``, ``R = I`` for a dense ``M``); NumPy, or
        of ``X``'s namespace.
    rows : ndarray of int, optional
        Only the pairs with the first index in ``rows`` (all columns): the
        partial sum used by the sampled estimate.

    Returns
    -------
    float
    """
    X, codes, delta1, delta2, arrays = _device_problem(X, y, delta1, delta2)
    if not arrays.on_host:
        L, R = arrays.dev(L), arrays.dev(R)
    return _objective_factored(X, codes, L, R, delta1, delta2, block=block,
                               rows=rows, arrays=arrays)[0]


def _objective_factored(X, codes, L, R, delta1, delta2, *, block=DEFAULT_BLOCK,
                        rows=None, arrays=None):
    """``(f, row_sums)`` of Eq. 4 at ``L R^T`` (rows in their given order;
    the row sums on ``X``'s device)."""
    if arrays is not None and not arrays.on_host:
        order, order_d = arrays.order(codes)
    else:
        arrays = None
        order = order_d = np.argsort(codes, kind="stable")
    take = np.take if arrays is None else arrays.take
    Q = take(X @ R, order_d, axis=0)
    if rows is None:
        sel, P = order, take(X @ L, order_d, axis=0)
    else:
        rows = np.asarray(rows)
        sel = rows[np.argsort(codes[rows], kind="stable")]
        P = take(X, sel if arrays is None else arrays.dev(sel), axis=0) @ L
    f, _, _, sums = _pair_residual(P, Q, codes[sel], codes[order], delta1, delta2,
                                   block=block, row_sums=True, arrays=arrays)
    return f, sums


def _objective_report(X, codes, L, R, delta1, delta2, *, objective_max_n, rng,
                      block=DEFAULT_BLOCK, evaluate=True, arrays=None):
    """Eq. 4 at ``L R^T`` for the certificate, or NaN plus an estimate.

    The pass runs where ``X`` is (``arrays``), in float64; the estimate's
    row sums (``ESTIMATE_ROWS`` of them) come to the host.

    Returns ``(objective, info)``.
    """
    n = X.shape[0]
    info = {}
    if not evaluate:
        info["objective_skipped"] = "not evaluated (evaluate=False)"
        return float("nan"), info
    if objective_max_n is None or n <= objective_max_n:
        t0 = time.perf_counter()
        f, _ = _objective_factored(X, codes, L, R, delta1, delta2, block=block,
                                   arrays=arrays)
        info["objective_seconds"] = time.perf_counter() - t0
        return f, info
    # n^2 pairs are too many for the certificate: an unbiased row-sampled
    # estimate (rows without replacement, finite-population correction)
    s = min(n, ESTIMATE_ROWS)
    rows = rng.choice(n, size=s, replace=False)
    t0 = time.perf_counter()
    _, sums = _objective_factored(X, codes, L, R, delta1, delta2, block=block,
                                  rows=rows, arrays=arrays)
    if arrays is not None:
        sums = arrays.host(sums)
    est = n * float(sums.mean())
    se = n * float(sums.std(ddof=1)) / np.sqrt(s) * np.sqrt(1.0 - s / n) if s > 1 else np.inf
    info.update(
        objective_estimate=est, objective_estimate_se=se,
        objective_estimate_rows=int(s),
        objective_seconds=time.perf_counter() - t0,
        objective_skipped=(f"n = {n} > objective_max_n = {objective_max_n}: "
                           f"the exact Eq. 4 objective needs a pass over "
                           f"n^2 = {n * n:.3g} pairs; objective_estimate is an "
                           f"unbiased estimate from {s} random rows (all "
                           f"columns), objective_estimate_se its standard error."),
    )
    return float("nan"), info


def _heuristic_certificate(objective, solver, times):
    """A certificate with the objective and no lower bound.

    The scalable algorithms do not solve Eq. 4 (the compressed or low-rank
    problem is a different one): no dual bound is claimed, the gap is
    infinite, so ``passed`` is False.  ``min_eig`` is NaN: ``M`` is a
    general matrix.
    """
    from .. import __version__

    return Certificate(
        objective=float(objective), dual_bound=-np.inf, gap=np.inf,
        rel_gap=np.inf, max_violation=0.0, min_eig=float("nan"), solver=solver,
        solver_version=__version__, tolerances={}, times=dict(times),
    )


# ---------------------------------------------------------------------------
# The run shared by Algorithms 2 and 3: options, budget, stages, result
# ---------------------------------------------------------------------------


class _Run:
    """The options, budget and final report shared by Algorithms 2 and 3.

    Both run a fixed number of iterations (a stage ``"iterative"`` in the
    trace), then evaluate Eq. 4 at the result (a stage ``"evaluation"``),
    and return a result with a certificate that claims no lower bound.

    Parameters
    ----------
    t_start : float
        ``time.perf_counter()`` when the call began: the budget and the
        total time count from it.
    dtype, block, objective_max_n, evaluate, max_time, random_state
        As :func:`randomized_slr`; validated, and kept as attributes (the
        budget as ``deadline``, the random state as ``rng``).
    arrays : _Arrays
        Where the run's arrays live (:func:`_device_problem`).
    """

    def __init__(self, t_start, *, dtype, block, objective_max_n, evaluate,
                 max_time, random_state, arrays):
        self.t_start = t_start
        self.arrays = arrays
        self.dtype = _check_dtype(dtype)
        self.block = _check_int(block, "block", 1)
        if objective_max_n is not None:
            objective_max_n = _check_int(objective_max_n, "objective_max_n", 0)
        self.objective_max_n = objective_max_n
        self.evaluate = evaluate
        self.deadline = _check_max_time(max_time)
        self.deadline.start = t_start
        self.rng = check_random_state(random_state)

    @classmethod
    def start(cls, X, y, delta1, delta2, **options):
        """The validation and set-up that Algorithms 2 and 3 share.

        Returns
        -------
        X : array of shape (n, d)
            On its device, divided by ``c`` (:func:`_unit_rows`): the run
            is on rows of unit mean square norm, where ``M_0 = I`` (or a
            projector) is on the thresholds' scale at any scale of ``X``.
        c : float
        codes : ndarray of int
        delta1, delta2 : float
        run : _Run
            With ``options`` (see the class).
        """
        t_start = time.perf_counter()
        X, codes, delta1, delta2, arrays = _device_problem(X, y, delta1, delta2)
        run = cls(t_start, arrays=arrays, **options)
        X, c = _unit_rows(X, arrays)
        return X, c, codes, delta1, delta2, run

    @property
    def status(self):
        """``time_limit_reached`` once the budget ran out, else
        ``max_iter_reached`` (a fixed number of iterations)."""
        return Status.TIME_LIMIT if self.deadline.hit else Status.MAX_ITER

    def record_iterations(self, name, n_iter, since):
        """Record the iterations, begun at ``since``, as one stage of the
        trace; returns their seconds."""
        seconds = time.perf_counter() - since
        record(name, "iterative", iterations=n_iter, seconds=seconds,
               status=self.status)
        return seconds

    def eq4_report(self, X, codes, L, R, delta1, delta2):
        """Eq. 4 at ``L R^T`` (:func:`_objective_report`), recorded as a stage.

        Returns
        -------
        objective : float
            NaN when skipped or estimated.
        info : dict
        seconds : float
        """
        t0 = time.perf_counter()
        f, info = _objective_report(X, codes, L, R, delta1, delta2,
                                    objective_max_n=self.objective_max_n,
                                    rng=self.rng, block=self.block,
                                    evaluate=self.evaluate, arrays=self.arrays)
        seconds = time.perf_counter() - t0
        how = ("skipped" if not self.evaluate
               else "estimated" if "objective_estimate" in info else "exact")
        # the certificate it feeds claims no lower bound: an infinite gap
        record("eq4-objective", "evaluation", seconds=seconds, gap=np.inf,
               status=how)
        return f, info, seconds

    def result(self, name, objective, factors, n_iter, times, info, stages):
        """The :class:`SolverResult` of the run.

        Parameters
        ----------
        name : str
            The method.
        objective : float
        factors : tuple
            ``(L, R, c)``: the factors on ``X / c`` (:func:`_unit_rows`),
            on the run's device.
        n_iter : int
        times, info : dict
            The phases' seconds and the algorithm's own entries; ``total``,
            and ``L``, ``R`` (in ``X``'s units, NumPy), ``dtype``,
            ``row_scale``, ``stopping``, and ``backend``, ``device``,
            ``transfers`` are added.
        stages : list of Stage
        """
        Ln, Rn, c = factors
        L, R, M = _factors_in_units(self.arrays.host(Ln), self.arrays.host(Rn), c)
        info.update(dtype=self.dtype.name, L=L, R=R, row_scale=c,
                    stopping="fixed number of iterations (the paper's T)",
                    **self.arrays.info())
        total = time.perf_counter() - self.t_start
        times = dict(times, total=total)
        cert = _heuristic_certificate(objective, name, times)
        return SolverResult(M=M, status=self.status, objective=float(objective),
                            n_iter=n_iter, certificate=cert, method=name,
                            info=info, time=total, trace=tuple(stages))


# ---------------------------------------------------------------------------
# Sketches
# ---------------------------------------------------------------------------


class _Side:
    """One compressed side: ``A = S^T X`` (m, d), its SVD, the pairs it sees.

    Attributes
    ----------
    rows : ndarray of int or None
        Sample indices of the pairs' rows, sorted by class (columns: the
        sampled ``I``; Gaussian: all samples).
    codes : ndarray of int
        Their class codes (sorted).
    U, s, Vt : thin SVD of ``A`` truncated to its numerical rank.
    F : ndarray of shape (len(rows), r)
        ``S U`` restricted to ``rows`` (the lift of ``U`` to the samples).

    Everything but the draw lives where ``X`` does (``arrays``): the
    sampled indices (``m`` of them) or the Gaussian sketch (``n x m``) are
    drawn on the host, as NumPy draws them, and moved once.
    """

    def __init__(self, X, codes, m, kind, rng, replace, arrays):
        n = X.shape[0]
        self.arrays = arrays
        if kind == "columns":
            idx = (rng.randint(0, n, size=m) if replace
                   else rng.choice(n, size=m, replace=False))
            # sorting the sampled columns permutes S's columns: M_hat is
            # unchanged (S -> S Pi gives A^+ -> A^+ Pi ... Pi^T)
            idx = idx[np.argsort(codes[idx], kind="stable")]
            scale = float(np.sqrt(n / m))  # a Python float: any namespace
            self.rows = arrays.dev(idx)
            self.Xr = arrays.take(X, self.rows)  # (m, d)
            A = scale * self.Xr
            G = None
        else:
            # (n, m), E[S S^T] = I
            G = arrays.dev(rng.standard_normal((n, m)) / np.sqrt(m))
            A = G.T @ X
            idx, self.rows = arrays.order(codes)  # all samples, by class
            self.Xr = None
            scale = None
        self.codes = codes[idx]  # sorted, on the host
        self.U, self.s, self.Vt = _thin_svd(A, arrays=arrays)
        if kind == "columns":
            self.F = scale * self.U
        else:
            self.F = arrays.take(G, self.rows) @ self.U  # (n, r)

    def project(self, X, W):
        """``X[rows] @ W`` (W = None: identity)."""
        if self.Xr is not None:
            return self.Xr if W is None else self.Xr @ W
        take = self.arrays.take
        return take(X, self.rows) if W is None else take(X @ W, self.rows)


def _draw_sketch(n, m, kind, rng, replace=True):
    """Dense ``S`` (n, m) of kind ``kind`` (the definition of the sketches)."""
    if kind == "gaussian":
        return rng.standard_normal((n, m)) / np.sqrt(m)
    idx = (rng.randint(0, n, size=m) if replace
           else rng.choice(n, size=m, replace=False))
    S = np.zeros((n, m))
    S[idx, np.arange(m)] = np.sqrt(n / m)
    return S


def sketch_matrix(n, m, sketch="gaussian", random_state=None, *, replace=True):
    """A dense random sketch ``S`` (n, m) with ``E[S S^T] = I_n``.

    Parameters
    ----------
    n, m : int
    sketch : {"gaussian", "columns"}
        ``G / sqrt(m)`` with ``G`` standard normal, or columns
        ``sqrt(n / m) e_i`` with ``i`` uniform.
    random_state : int, RandomState or None
    replace : bool
        Column sampling with replacement (Lemma 1) or of distinct columns.

    Returns
    -------
    ndarray of shape (n, m)
    """
    n = _check_int(n, "n", 1)
    m = _check_int(m, "m", 1, None if replace or sketch == "gaussian" else n)
    check_option(sketch, "sketch", SKETCHES)
    return _draw_sketch(n, m, sketch, check_random_state(random_state), replace)


# ---------------------------------------------------------------------------
# Algorithm 2
# ---------------------------------------------------------------------------


@single_blas_thread
def randomized_slr(X, y, n_sketch, sketch="gaussian", n_iter=10, delta1=1.0,
                   delta2=0.0, random_state=None, *, resample=True, replace=True,
                   objective_max_n=OBJECTIVE_MAX_N, evaluate=True,
                   dtype=np.float64, block=DEFAULT_BLOCK, max_time=None):
    """Algorithm 2: adaptive regression on a randomly compressed problem.

    Parameters
    ----------
    X : array_like of shape (n, d)
        NumPy, or an array of an array-API library (PyTorch, CuPy): then
        the passes run on its device (see docs/backends.md).
    y : array_like of int, shape (n,)
        Class labels (at least two classes).
    n_sketch : int
        ``m``, the compressed size, ``1 <= m <= n``.
    sketch : {"gaussian", "columns"}
        See the module docstring.
    n_iter : int
        ``T``, the number of regressions (the paper uses 10, and 5 on
        ImageNet).
    delta1, delta2 : float
        Thresholds of Eq. 4, ``delta1 > delta2``.
    random_state : int, RandomState or None
    resample : bool
        Draw new sketches at every iteration (the paper's step 4).  With
        False the iterations are Algorithm 1 on one compressed problem.
    replace : bool
        Column sampling with replacement (Lemma 1).  ``replace=False`` with
        ``m = n`` makes ``S`` a permutation: Algorithm 1 exactly.
    objective_max_n : int or None
        Above this ``n`` the certificate's Eq. 4 objective (a pass over
        ``n^2`` pairs) is NaN and ``info`` holds a row-sampled estimate
        (``None``: always compute).
    evaluate : bool
        Compute the certificate's objective at all (False: NaN, no pass;
        for timing the algorithm alone).
    dtype : float32 or float64
        Precision of the pair-block products (float32 halves their time).
    block : int
        Entries of one row block of a pass.
    max_time : float, optional
        Wall-clock budget in seconds, checked before every iteration and
        every row block of a pass: a run that exhausts it keeps the last
        completed iterate (``M_0 = I`` if none) and has status
        ``time_limit_reached``; the final Eq. 4 pass still runs.

    Notes
    -----
    Runs on one BLAS thread (:func:`single_blas_thread`): the result
    depends on ``random_state`` only, never on the thread count.  The run
    is on ``X / c`` (:func:`_unit_rows`), so it is scale-equivariant.

    Returns
    -------
    SolverResult
        ``M`` (d, d) (general, not symmetric); ``objective`` is Eq. 4 at
        ``M`` over all ``n^2`` pairs (or NaN, see ``objective_max_n``);
        status ``max_iter_reached`` (a fixed number of iterations: ``M``
        is not claimed optimal, the certificate carries no lower bound).
        ``info``: ``L``, ``R`` (``M = L R^T``, rank ``<= min(m, d)``),
        ``sampled_objective`` (the compressed problem's squared hinge at
        ``M_{k-1}``, one per iteration, before the update; for columns
        rescaled by ``(n/m)^2``, an unbiased estimate of Eq. 4 at the
        iterate; for Gaussian sketches the exact Eq. 4),
        ``ranks``, timings.

    Raises
    ------
    ValueError
        Bad ``X``, ``y`` (NaN, one class, shape), ``n_sketch`` outside
        ``[1, n]``, unknown ``sketch``, ``n_iter < 1``, ``delta1 <= delta2``.
    """
    X, c, codes, delta1, delta2, run = _Run.start(
        X, y, delta1, delta2, dtype=dtype, block=block, objective_max_n=objective_max_n,
        evaluate=evaluate, max_time=max_time, random_state=random_state)
    m = _check_int(n_sketch, "n_sketch", 1, X.shape[0])
    check_option(sketch, "sketch", SKETCHES)
    n_iter = _check_int(n_iter, "n_iter", 1)
    name = f"slr-randomized-{sketch}"
    with recording() as stages:
        t0 = time.perf_counter()
        L, R, history, ranks, times, done = _compressed_iterations(
            X, codes, m, sketch, n_iter, delta1, delta2, run, resample=resample,
            replace=replace)
        run.record_iterations(name, done, since=t0)
        # Eq. 4 of (X / c, L R^T) is Eq. 4 of (X, L R^T / c^2): the same value
        objective, oinfo, times["objective"] = run.eq4_report(X, codes, L, R,
                                                              delta1, delta2)
        info = {
            "algorithm": "Algorithm 2 (randomized compression)",
            "sketch": sketch, "n_sketch": m, "resample": bool(resample),
            "replace": bool(replace), "sampled_objective": history,
            "sampled_objective_kind": ("(n/m)^2 * squared hinge on the m x m "
                                       "sampled pairs (unbiased estimate)"
                                       if sketch == "columns"
                                       else "exact Eq. 4 (all pairs)"),
            "ranks": ranks, **oinfo,
        }
        return run.result(name, objective, (L, R, c), done, times, info, stages)


def _compressed_step(X, side1, side2, L, R, delta1, delta2, run):
    """One regression of Algorithm 2 on drawn sketches (steps 6 and 7).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    side1, side2 : _Side
    L, R : ndarray of shape (d, k) or None
        ``M_{k-1} = L R^T`` (None: ``M_0 = I``).
    delta1, delta2 : float
    run : _Run

    Returns
    -------
    L, R : ndarray
        ``M_k = V_A C V_B^T = L R^T``.
    f : float
        The compressed problem's squared hinge at ``M_{k-1}``.

    Raises
    ------
    Expired
        When the budget runs out during the pass.
    """
    P = side1.project(X, L)  # (n_1, k): K = P Q^T on the sketch's pairs
    Q = side2.project(X, R)
    f, _, T = _pair_residual(P, Q, side1.codes, side2.codes, delta1, delta2,
                             left=side1.F, right=side2.F, block=run.block,
                             dtype=run.dtype, count=False, deadline=run.deadline,
                             arrays=run.arrays)
    # U_A^T S1^T clip(K) S2 U_B = F1^T K F2 + F1^T Res F2
    T = T + (side1.F.T @ P) @ (side2.F.T @ Q).T
    C = T / side1.s[:, None] / side2.s[None, :]
    R = side2.Vt.T
    return side1.Vt.T @ C, (np.ascontiguousarray(R) if run.arrays.on_host else R), f


def _compressed_iterations(X, codes, m, sketch, n_iter, delta1, delta2, run, *,
                           resample, replace):
    """Algorithm 2's iterations from ``M_0 = I``, within the budget.

    Returns
    -------
    L, R : ndarray
        The last completed iterate's factors (``I, I`` if none).
    history : list of float
        The sampled objective before each update (rescaled by ``(n/m)^2``
        for column sampling).
    ranks : list of tuple
        The numerical ranks of ``A`` and ``B`` at each iteration.
    times : dict
        ``sketch`` and ``iterations`` seconds.
    done : int
        Completed iterations.
    """
    n, d = X.shape
    arrays = run.arrays
    L = R = None  # M_0 = I (kept implicit: P = X_1, Q = X_2)
    history, ranks = [], []
    times = {"sketch": 0.0, "iterations": 0.0}
    sides = None
    scale = (n / m) ** 2 if sketch == "columns" else 1.0
    done = 0
    for _ in range(n_iter):
        if run.deadline.expired():
            break
        if sides is None or resample:
            t0 = time.perf_counter()
            sides = [_Side(X, codes, m, sketch, run.rng, replace, arrays)
                     for _side in range(2)]
            times["sketch"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        try:
            L, R, f = _compressed_step(X, *sides, L, R, delta1, delta2, run)
        except Expired:
            break
        done += 1
        times["iterations"] += time.perf_counter() - t0
        history.append(scale * f)
        ranks.append((sides[0].s.shape[0], sides[1].s.shape[0]))
    if L is None:  # out of time before the first iteration: M_0 = I
        L, R = arrays.eye(d), arrays.eye(d)
    return L, R, history, ranks, times, done


# ---------------------------------------------------------------------------
# Theorem 1
# ---------------------------------------------------------------------------


def _g_eps(eps):
    """The factor of Theorem 1's bound."""
    return (eps ** 2 * (1 + eps) / (1 - eps)
            + 2 * eps * (1 + eps) ** 1.5 / np.sqrt(1 - eps)
            + 2 * np.sqrt(2 * eps) * (1 + eps) ** 1.5)


def theorem1_bound(m, rank, resid_norm, s_min, *, delta=0.1, c=0.25):
    """Theorem 1's right-hand side for ``m`` Gaussian projections.

    ``eps`` solves ``m = (r_D + 1) log(48 r_D / delta) / (c eps^2)`` (the
    smallest ``eps`` the condition allows; ``c = 1/4``, the constant of
    Corollary 3, is the conservative choice).  The theorem needs
    ``eps <= 1/2``.

    Parameters
    ----------
    m : int
    rank : int
        ``r_D``, the rank of ``X``.
    resid_norm : float
        ``||Y - X M X^T||_2`` at the uncompressed solution.
    s_min : float
        Smallest nonzero singular value of ``X`` (``delta_min^A = delta_min^B``).
    delta : float
        Failure probability.
    c : float

    Returns
    -------
    dict
        ``eps``, ``valid`` (``eps <= 1/2``), ``m_required`` (the ``m`` giving
        ``eps = 1/2``), ``bound`` (inf when not valid).
    """
    r = int(rank)
    log_term = (r + 1) * np.log(48.0 * r / delta) / c
    eps = float(np.sqrt(log_term / m))
    valid = eps <= 0.5
    bound = resid_norm / s_min ** 2 * _g_eps(eps) if valid else np.inf
    return {"eps": eps, "valid": bool(valid),
            "m_required": int(np.ceil(log_term / 0.25)), "bound": float(bound)}


def theorem1_check(X, y, n_sketch, *, n_trials=5, delta=0.1, c=0.25,
                   random_state=None):
    """Numerical check of Theorem 1 on the fixed-target regression (Eq. 1).

    ``M = X^+ Y X^{+T}`` (Eq. 3) against ``M_hat = A^+ S1^T Y S2 B^{+T}``
    (Eq. 6) for ``n_trials`` pairs of Gaussian sketches, ``Y`` the Eq. 2
    target ``E E^T`` (``E`` the (n, c) class indicator, so ``S^T Y`` is
    ``(S^T E) E^T``; nothing ``n x n`` is formed).

    Parameters
    ----------
    X : array_like of shape (n, d)
    y : array_like of int, shape (n,)
    n_sketch : int
        ``m``.
    n_trials : int
    delta, c : float
        Failure probability and constant of :func:`theorem1_bound`.
    random_state : int, RandomState or None

    Returns
    -------
    dict
        ``m``, ``rank``, ``s_min``, ``s_max``, ``resid_norm``
        (``||Y - X M X^T||_2``), ``M_norm``, ``errors`` (``||M - M_hat||_2``
        per trial), ``max_error``, ``emp_eps`` (``||U^T S S^T U - I||_2``,
        worst side, per trial: the event of Lemma 2), and the fields of
        :func:`theorem1_bound`; ``holds`` is ``max_error <= bound``.
    """
    check_host_input(X, "X", "theorem1_check")
    X = check_samples(X, "X")
    codes, _ = _encode_labels(y, X.shape[0])
    n, d = X.shape
    m = _check_int(n_sketch, "n_sketch", 1, n)
    n_trials = _check_int(n_trials, "n_trials", 1)
    rng = check_random_state(random_state)
    E = np.zeros((n, codes.max() + 1))
    E[np.arange(n), codes] = 1.0
    U, s, Vt = np.linalg.svd(X, full_matrices=False)
    r = int(np.sum(s > max(n, d) * np.finfo(float).eps * s[0]))
    U, s, V = U[:, :r], s[:r], Vt[:r].T
    G = V @ ((U.T @ E) / s[:, None])  # (d, c) = X^+ E
    M = G @ G.T
    # residual Y - P Y P (P = U U^T) = [E, PE] diag(I, -I) [E, PE]^T
    PE = U @ (U.T @ E)
    Qz, Tz = np.linalg.qr(np.hstack([E, PE]))
    c_ = E.shape[1]
    D = np.concatenate([np.ones(c_), -np.ones(c_)])
    resid = float(np.max(np.abs(np.linalg.eigvalsh((Tz * D) @ Tz.T))))
    errors, emp = [], []
    for _ in range(n_trials):
        F = []
        worst = 0.0
        for _side in range(2):
            S = rng.standard_normal((n, m)) / np.sqrt(m)
            A = S.T @ X
            F.append(np.linalg.pinv(A) @ (S.T @ E))  # (d, c) = A^+ S^T E
            W = S.T @ U
            worst = max(worst, float(np.linalg.norm(W.T @ W - np.eye(r), 2)))
        Mh = F[0] @ F[1].T
        errors.append(float(np.linalg.norm(M - Mh, 2)))
        emp.append(worst)
    out = {"m": m, "rank": r, "s_min": float(s[-1]), "s_max": float(s[0]),
           "resid_norm": resid, "M_norm": float(np.linalg.norm(M, 2)),
           "errors": errors, "max_error": max(errors), "emp_eps": emp}
    out.update(theorem1_bound(m, r, resid, float(s[-1]), delta=delta, c=c))
    out["holds"] = bool(out["max_error"] <= out["bound"])
    return out
