"""SLR, Algorithm 3: low-rank alternating regression ``M = L R^T``.

Qian, Baytas, Jin, Jain, Zhu (2015), Eq. 7 and Algorithm 3.  With ``X``
(n, d) (rows are samples; the paper's ``X^T``) and ``L, R`` (d, r)::

    min_{L, R, Y in B}  J(L, R, Y) = ||X L R^T X^T - Y||_F^2            (Eq. 7)

where ``B`` is the box of adaptive targets (``Y_ij >= delta1`` on
same-class pairs, ``<= delta2`` elsewhere; ``target="adaptive"``) or the
single Eq. 2 target (``target="fixed"``: ``Y_ij = delta1`` / ``delta2``,
SLR-Fixed).  ``min_Y J = f(L R^T)``, the Eq. 4 objective, because the best
``Y`` is the clip of ``K = X L R^T X^T`` entry by entry.

Algorithm 3 alternates three exact minimisations of ``J``:

* target (steps 5, 8): ``Y = clip(K)`` (adaptive) -- entry by entry;
* ``L`` (step 6): ``min_L ||A L Q^T - T||_F^2`` with ``A = S^T X`` (m, d),
  ``Q = X R`` (n, r) and ``T = S^T Y`` (m, n); the minimum-norm solution is
  ``L = A^+ T Q^{+T}``;
* ``R`` (step 9): the same problem transposed (``K^T = X R L^T X^T`` and
  ``clip(K)^T = clip(K^T)``: the class relation is symmetric), so the
  ``R``-step is the ``L``-step with the roles of ``L`` and ``R`` swapped.

Without compression (``n_sketch=None``, ``S = I``, ``A = X`` and ``X^+``
computed once by a thin SVD) each step minimises ``J`` exactly, so ``J`` --
and hence Eq. 4 at ``L_k R_k^T`` after each target step -- never increases:
``info["objective_history"]`` records it before every half step.  With a
sketch (``n_sketch=m``, a new random ``S`` per half step as in steps 4 and 7)
each half step solves a sampled problem and the decrease holds only on
average.

Cost, and nothing ``n x n``
---------------------------
``T Q^{+T} = S^T (Y W)`` with ``W = Q^{+T} = Q (Q^T Q)^+`` (n, r), and
``Y W = K W + Res W`` where ``K W = P (Q^T W)`` (``P = X L``) and
``Res = clip(K) - K`` is formed block by block over rows (as in
:mod:`.randomized`).  One half step costs ``O(n_rows n r)`` time (``n_rows
= n`` without sketch or with a Gaussian one, ``m`` with column sampling)
plus the pseudo-inverse of ``A``, and ``O((n + d) r + block)`` memory beyond
``X`` and its SVD.  With the fixed target, ``Y = delta2 1 1^T +
(delta1 - delta2) E E^T`` (``E`` the class indicator) and ``Y W`` is
``O(n r)`` from class sums: no pass over pairs at all.

Initialisation (step 2, "using a randomly sampled subset"): ``L_0 = R_0 =
V_r``, the top-``r`` right singular vectors of ``init_size`` random samples
(the Euclidean similarity restricted to their principal subspace, the
low-rank analogue of Algorithm 1's ``M_0 = I``); padded with random
orthonormal directions when the subset has rank below ``r``.
"""

import time

import numpy as np

from .._trace import recording
from .._validation import check_option
from ._problem import Expired
from .randomized import (
    DEFAULT_BLOCK,
    OBJECTIVE_MAX_N,
    SKETCHES,
    _Arrays,
    _check_int,
    _pair_residual,
    _Run,
    _thin_svd,
    single_blas_thread,
)

__all__ = ["TARGETS", "lowrank_slr"]

#: Target kinds: Eq. 4's adaptive box, or the fixed Eq. 2 target (SLR-Fixed).
TARGETS = ("adaptive", "fixed")


class _Problem:
    """Sorted data and the pieces shared by the half steps.

    ``X`` (sorted) stays where the input was (``arrays``,
    :class:`~.randomized._Arrays`); ``y`` and the class counts are the
    host's (:meth:`codes_on_device` moves ``y`` once when needed).
    """

    def __init__(self, X, codes, delta1, delta2, target, dtype, block, arrays=None):
        self.arrays = arrays = _Arrays() if arrays is None else arrays
        order, order_d = arrays.order(codes)
        # sorted by class: same-class pairs are rectangles
        self.X = arrays.take(X, order_d)
        self.y = codes[order]
        self.order = order
        self.n, self.d = X.shape
        self.n_classes = int(codes.max()) + 1
        self.counts = np.bincount(self.y, minlength=self.n_classes)
        self.delta1, self.delta2 = delta1, delta2
        self.target = target
        self.dtype = dtype
        self.block = block
        self._svd = None

    def codes_on_device(self):
        """``y`` on the device (moved once): the fixed target's rows."""
        return self.arrays.once("y", lambda: self.arrays.dev(self.y))

    def full_svd(self):
        """``(None, s, Vt)`` of ``X``, computed once (``X^+ = V s^{-1} U^T``
        is applied as ``V s^{-2} V^T X^T``: no (n, r) ``U`` is stored)."""
        if self._svd is None:
            self._svd = _thin_svd(self.X, need_u=False, arrays=self.arrays)
        return self._svd

    def class_sums(self, Z):
        """``E^T Z`` (n_classes, k) for ``Z`` (n, k) in sorted order."""
        starts = np.concatenate(([0], np.cumsum(self.counts)[:-1]))
        if not self.arrays.on_host:
            # one sum per class over its rows (contiguous: X is sorted)
            xp = self.arrays.xp
            return xp.stack([xp.sum(Z[int(a):int(a + c), :], axis=0)
                             for a, c in zip(starts, self.counts)])
        out = np.zeros((self.n_classes, Z.shape[1]))
        present = self.counts > 0
        out[present] = np.add.reduceat(Z, starts[present], axis=0)
        return out

    def eq1_objective(self, P, Q):
        """``||P Q^T - D||_F^2`` with the fixed target ``D``, in ``O(n k^2)``."""
        d1, d2 = self.delta1, self.delta2
        xp, scalars = self.arrays.xp, self.arrays.scalars
        kk = scalars(xp.sum((P.T @ P) * (Q.T @ Q)))[0]  # ||P Q^T||_F^2
        EP, EQ = self.class_sums(P), self.class_sums(Q)
        # <P Q^T, D> = d2 (1^T P)(Q^T 1) + (d1 - d2) sum_c (E^T P)_c . (E^T Q)_c
        kd = (d2 * scalars(xp.sum(P, axis=0) @ xp.sum(Q, axis=0))[0]
              + (d1 - d2) * scalars(xp.sum(EP * EQ))[0])
        dd = d2 ** 2 * self.n ** 2 + (d1 ** 2 - d2 ** 2) * float(np.sum(self.counts ** 2.0))
        return max(0.0, kk - 2.0 * kd + dd)


def _half_step(prob, XL_old, XR, *, sketch=None, m=None, rng=None, deadline=None):
    """One exact (or sketched) minimisation over ``L`` with ``R`` fixed.

    The target is built from the current ``M = L_old R^T``.

    Parameters
    ----------
    prob : _Problem
    XL_old : ndarray of shape (n, r)
        ``X L_old`` (sorted samples).
    XR : ndarray of shape (n, r)
        ``X R``.  The products are passed in because each one serves two
        consecutive half steps (``X L_new`` is the next step's ``X R``).

    Returns
    -------
    L : ndarray of shape (d, r)
    f : float
        The objective before the step: Eq. 4 at ``L_old R_fix^T`` over the
        rows the step sees (all rows without sketch: exact), or Eq. 1 for
        the fixed target.
    """
    X, n = prob.X, prob.n
    Q = XR  # (n, r)
    arrays = prob.arrays
    xp, take = arrays.xp, arrays.take
    # W = Q^{+T} (n, r): min-norm solution of the right factor
    _, sq, Vqt = _thin_svd(Q, need_u=False, arrays=arrays)
    W = Q @ (Vqt.T / sq ** 2) @ Vqt  # (n, r) = Q (Q^T Q)^+
    rows = rows_d = None
    if sketch is None or sketch == "gaussian":
        Xr, yr, P = X, prob.y, XL_old
    else:  # columns: sampled rows, sorted (X is sorted by class)
        rows = np.sort(rng.randint(0, n, size=m))
        rows_d = arrays.dev(rows)
        Xr, yr, P = take(X, rows_d), prob.y[rows], take(XL_old, rows_d)
    # P (n_rows, r): K[rows] = P Q^T
    if prob.target == "fixed":
        d1, d2 = prob.delta1, prob.delta2
        EW = prob.class_sums(W)  # (c, r)
        if not arrays.on_host:
            yd = prob.codes_on_device()
            yr = yd if rows is None else take(yd, rows_d)
        YW = d2 * xp.sum(W, axis=0)[None, :] + (d1 - d2) * take(EW, yr)
        f = prob.eq1_objective(XL_old, Q) if sketch is None else np.nan
    else:
        f, _, RW = _pair_residual(P, Q, yr, prob.y, prob.delta1,
                                  prob.delta2, right=W, block=prob.block,
                                  dtype=prob.dtype, count=False, deadline=deadline,
                                  arrays=arrays)
        YW = P @ (Q.T @ W) + RW  # (n_rows, r) = clip(K)[rows] W
        if sketch is not None and sketch == "columns":
            f *= n / m  # unbiased estimate of the full sum
    if sketch is None:
        A, T = X, YW
    elif sketch == "columns":
        # A = sqrt(n/m) X[I], T = sqrt(n/m) Y[I] W: the scale cancels
        A, T = Xr, YW
    else:
        # (n, m), E[S S^T] = I: drawn on the host, as NumPy draws it
        S = arrays.dev(rng.standard_normal((n, m)) / np.sqrt(m))
        A, T = S.T @ X, S.T @ YW
    # L = A^+ T = V s^{-2} V^T (A^T T)
    _, s, Vt = (prob.full_svd() if sketch is None
                else _thin_svd(A, need_u=False, arrays=arrays))
    L = Vt.T @ ((Vt @ (A.T @ T)) / s[:, None] ** 2)
    return L, float(f)


def _initial_factors(X, rank, init_size, rng, arrays):
    """``V_r`` (d, r): principal directions of a random subset, padded
    (drawn on the host, computed where ``X`` is)."""
    n, d = X.shape
    idx = arrays.dev(rng.choice(n, size=min(n, init_size), replace=False))
    _, s, Vt = _thin_svd(arrays.take(X, idx), need_u=False, arrays=arrays)
    V = Vt[:min(s.shape[0], rank), :].T
    if V.shape[1] < rank:
        # complete with random directions orthogonal to V
        Z = arrays.dev(rng.standard_normal((d, rank - V.shape[1])))
        Z = Z - V @ (V.T @ Z)
        Qz, _ = arrays.xp.linalg.qr(Z)
        V = np.hstack([V, Qz]) if arrays.on_host else arrays.xp.concat([V, Qz], axis=1)
    return np.ascontiguousarray(V) if arrays.on_host else V


@single_blas_thread
def lowrank_slr(X, y, rank, n_iter=10, delta1=1.0, delta2=0.0, random_state=None,
                *, target="adaptive", n_sketch=None, sketch="columns",
                init_size=1000, objective_max_n=OBJECTIVE_MAX_N, evaluate=True,
                dtype=np.float64, block=DEFAULT_BLOCK, max_time=None):
    """Algorithm 3: alternating closed-form regression for ``M = L R^T``.

    Parameters
    ----------
    X : array_like of shape (n, d)
        NumPy, or an array of an array-API library (PyTorch, CuPy): then
        the passes run on its device (see docs/backends.md).
    y : array_like of int, shape (n,)
        Class labels (at least two classes).
    rank : int
        ``r``, ``1 <= r <= d``.
    n_iter : int
        ``T``: each iteration updates ``L`` then ``R``.
    delta1, delta2 : float
        Thresholds, ``delta1 > delta2``.
    random_state : int, RandomState or None
        The initial subset and the sketches.
    target : {"adaptive", "fixed"}
        Eq. 4's adaptive targets (SLR) or the fixed Eq. 2 target
        (SLR-Fixed, Eq. 1 with ``M = L R^T``).
    n_sketch : int, optional
        ``m``: compress each half step with a new random ``S`` (n, m)
        (Algorithm 3 as printed).  Default: no compression (exact steps,
        monotone objective).
    sketch : {"columns", "gaussian"}
        Kind of ``S`` when ``n_sketch`` is given.
    init_size : int
        Samples in the initial subset.
    objective_max_n : int or None
        Above this ``n`` the certificate's Eq. 4 objective is NaN and a
        row-sampled estimate is in ``info`` (see
        :func:`~cvxmetric.slr.randomized.randomized_slr`).
    evaluate : bool
        Compute Eq. 4 at the result at all (False: NaN, no pass).
    dtype : float32 or float64
        Precision of the pair-block products.
    block : int
        Entries of one row block.
    max_time : float, optional
        Wall-clock budget in seconds, checked before every half step and
        every row block of a pass: a run that exhausts it keeps the last
        completed factors and has status ``time_limit_reached``; the final
        Eq. 4 pass still runs.

    Notes
    -----
    Runs on one BLAS thread (:func:`~cvxmetric.slr.randomized.single_blas_thread`):
    the result depends on ``random_state`` only, never on the thread count.
    The run is on ``X / c`` (rows of unit mean square norm), so it is
    scale-equivariant.

    Returns
    -------
    SolverResult
        ``M = L R^T`` (d, d); ``objective`` is the minimised problem's
        objective at ``M``: Eq. 4 over all pairs for the adaptive target
        (NaN above ``objective_max_n``), Eq. 1 for the fixed target;
        status ``max_iter_reached`` (a fixed number of iterations; no lower
        bound is claimed).  ``info``: ``L``, ``R``, ``eq4_objective``
        (Eq. 4 at ``M`` either way, or NaN plus an estimate),
        ``objective_history`` (the minimised objective before each half
        step and at the end; estimates with column sampling), ``problem``.

    Raises
    ------
    ValueError
        Bad ``X``, ``y``, ``rank`` outside ``[1, d]``, ``n_sketch`` outside
        ``[1, n]``, unknown ``target`` or ``sketch``, ``n_iter < 1``,
        ``delta1 <= delta2``.
    """
    # on rows of unit mean square norm (L_0 = R_0 = V_r on the thresholds' scale)
    X, c, codes, delta1, delta2, run = _Run.start(
        X, y, delta1, delta2, dtype=dtype, block=block, objective_max_n=objective_max_n,
        evaluate=evaluate, max_time=max_time, random_state=random_state)
    rank, n_iter, n_sketch, init_size = _check_lowrank(
        X.shape, rank, n_iter, target, n_sketch, sketch, init_size)
    arrays = run.arrays
    prob = _Problem(X, codes, delta1, delta2, target, run.dtype, run.block, arrays)
    kind = None if n_sketch is None else sketch
    name = "slr-lowrank" if target == "adaptive" else "slr-fixed"
    with recording() as stages:
        L0 = _initial_factors(prob.X, rank, init_size, run.rng, arrays)
        t0 = time.perf_counter()
        (L, R), (XL, XR), history, done = _alternate(
            prob, L0, n_iter, sketch=kind, m=n_sketch, rng=run.rng,
            deadline=run.deadline)
        t_iter = run.record_iterations(name, done, since=t0)
        eq4, oinfo, t_obj = run.eq4_report(X, codes, L, R, delta1, delta2)
        # SLR-Fixed minimises Eq. 1: that is its objective (O(n r^2), exact)
        objective = prob.eq1_objective(XL, XR) if target == "fixed" else eq4
        info = {"algorithm": "Algorithm 3 (low-rank alternating regression)",
                "target": target, "rank": rank, "n_sketch": n_sketch,
                "sketch": kind, "eq4_objective": eq4,
                **_history_report(target, kind, history, objective), **oinfo}
        return run.result(name, objective, (L, R, c), done,
                          {"iterations": t_iter, "objective": t_obj}, info, stages)


def _check_lowrank(shape, rank, n_iter, target, n_sketch, sketch, init_size):
    """The arguments proper to Algorithm 3, validated (see :func:`lowrank_slr`).

    Returns
    -------
    rank, n_iter, n_sketch, init_size
        As integers (``n_sketch`` None without compression).
    """
    n, d = shape
    rank = _check_int(rank, "rank", 1, d)
    n_iter = _check_int(n_iter, "n_iter", 1)
    check_option(target, "target", TARGETS)
    if n_sketch is not None:
        n_sketch = _check_int(n_sketch, "n_sketch", 1, n)
        check_option(sketch, "sketch", SKETCHES)
    init_size = _check_int(init_size, "init_size", 1)
    return rank, n_iter, n_sketch, init_size


def _alternate(prob, L0, n_iter, *, sketch, m, rng, deadline):
    """Algorithm 3's iterations from ``L_0 = R_0``: an ``L`` step, then an
    ``R`` step (the ``L`` step of the transposed problem), within the budget.

    Parameters
    ----------
    prob : _Problem
    L0 : ndarray of shape (d, r)
    n_iter : int
    sketch, m, rng, deadline
        As :func:`_half_step`.

    Returns
    -------
    factors : list
        ``[L, R]``, the last completed half steps'.
    products : list
        ``[X L, X R]`` (sorted samples).
    history : list of float
        The objective before each half step (:func:`_half_step`).
    done : int
        Completed iterations (both half steps).
    """
    factors = [L0, L0]
    products = [prob.X @ L0] * 2  # (n, r)
    history = []
    for it in range(n_iter):
        for side in (0, 1):
            if deadline.expired():
                return factors, products, history, it
            try:
                new, f = _half_step(prob, products[side], products[1 - side],
                                    sketch=sketch, m=m, rng=rng, deadline=deadline)
            except Expired:
                return factors, products, history, it
            factors[side], products[side] = new, prob.X @ new
            history.append(f)
    return factors, products, history, n_iter


def _history_report(target, kind, history, objective):
    """``problem``, ``objective_history`` and its kind, for ``info``.

    Parameters
    ----------
    target : {"adaptive", "fixed"}
    kind : {None, "columns", "gaussian"}
        The sketch (None: exact steps).
    history : list of float
        The objective before each half step (NaN for a sketched fixed-target
        step, which computes none).
    objective : float
        The minimised objective at the result (appended).
    """
    if target == "fixed":
        problem = "Eq. 1 (fixed Eq. 2 target)"
        history = [h for h in history if np.isfinite(h)] + [objective]
    else:
        problem = "Eq. 4"
        history = history + [objective]
    return {
        "problem": problem,
        "objective_history": history,
        "objective_history_kind": (
            "exact, before each half step and at the end" if kind is None
            else "on the sampled rows, rescaled (estimates)" if kind == "columns"
            else "exact Eq. 4 before each half step (the sketch compresses only "
                 "the regression)" if target == "adaptive"
            else "final value only"),
    }
