"""The SLR problem in the coordinates of ``range(X)``, shared by every solver.

Qian, Baytas, Jin, Jain, Zhu (2015).  The paper's data matrix is ``d x n``
(columns are samples); here ``X`` is ``(n, d)`` with one sample per row, so
the paper's ``X^T M X`` is ``K = X M X^T`` (n, n) with ``K_ij = x_i^T M x_j``,
the bilinear similarity.  ``M`` (d, d) is a general matrix: neither
symmetric nor PSD.

The two problems
----------------
**Eq. 1** (least squares onto a fixed target ``Y``, Eq. 2 by default)::

    min_M ||X M X^T - Y||_F^2,      closed form (Eq. 3)  M = X^+ Y X^{+T}

(the paper's ``(X_p^+)^T Y X_p^+`` with ``X_p = X^T``).

**Eq. 4** (squared hinge, thresholds ``delta1 > delta2``, every ordered
pair ``(i, j)`` including ``i = j``, as Eq. 2 does)::

    f(M) = sum_{y_i = y_j} [delta1 - K_ij]_+^2 + sum_{y_i != y_j} [K_ij - delta2]_+^2

Equivalently ``min_{M, T in B} ||X M X^T - T||_F^2`` with the box of
targets ``B = {T : T_ij >= delta1 if y_i = y_j, T_ij <= delta2 otherwise}``
(minimising over ``T`` entry by entry gives the squared hinge); Algorithm 1
alternates between the two sets.  Write ``s_ij = +1`` for same-class and
``-1`` for different-class pairs and ``b_ij = delta1`` or ``-delta2``: every
term is ``[b_ij - s_ij K_ij]_+^2`` and ``a_ij = b_ij - s_ij K_ij`` is its
*hinge argument* (``> 0``: active).

Coordinates of ``range(X)`` (the Gram rewrite)
----------------------------------------------
With the thin SVD ``X = U S V^T`` (rank ``r``, ``U`` (n, r) orthonormal),
``K = X M X^T = U Z U^T`` with ``Z = S V^T M V S`` (r, r), and every ``Z``
comes from some ``M`` (``M = V S^{-1} Z S^{-1} V^T``, the minimum-norm one;
components of ``M`` outside ``range(V) x range(V)`` do not change ``K``).
So Eq. 1 and Eq. 4 are problems in ``Z``: the set ``{X M X^T}`` is the
subspace ``L = {U Z U^T}`` and its orthogonal projection is
``T -> U (U^T T U) U^T``.  Eq. 1 splits as

    ||U Z U^T - Y||^2 = ||Z - U^T Y U||^2 + (||Y||^2 - ||U^T Y U||^2),

the first part fitted exactly by ``Z = U^T Y U`` (this is Eq. 3), the
second the part of ``Y`` no ``M`` can reach.  Eq. 4 becomes
``f(Z) = sum_ij [b_ij - s_ij u_i^T Z u_j]_+^2`` (``u_i`` the rows of ``U``),
a convex, piecewise quadratic, continuously differentiable function of
``r^2`` variables.  With ``Lambda_ij = -2 s_ij [a_ij]_+``,

    grad f(Z) = U^T Lambda U,   and   ||grad f(Z) - grad f(Z')|| <= 2 ||Z - Z'||

(the map ``Z -> U Z U^T`` is an isometry).

Symmetry.  ``f(Z^T) = f(Z)`` (the class relation and the thresholds are
symmetric), so by convexity ``f((Z + Z^T)/2) <= f(Z)``: Eq. 4 has a
symmetric minimiser, and the solvers work in the ``p = r(r+1)/2``
orthonormal coordinates ``svec(Z)`` of symmetric matrices (off-diagonal
entries scaled by ``sqrt(2)``).  There the (generalised) Hessian is

    H(Z) = 2 sum_{ij : a_ij > 0} phi_ij phi_ij^T,   phi_ij = svec(sym(u_i u_j^T)),

with ``0 <= H <= 2 I`` (``H = 2 I`` when every term is active).

Dual and certificate
--------------------
For ``min_{Z, T in B} ||U Z U^T - T||^2`` the Lagrangian dual is

    g(Lambda) = -||Lambda||_F^2 / 4 - <Lambda, D>,   D_ij = s_ij b_ij (= delta1 or delta2),

over ``Lambda`` with ``U^T Lambda U = 0``, ``Lambda_ij <= 0`` on same-class
and ``>= 0`` on different-class pairs; strong duality holds and the optimal
``Lambda`` is the gradient ``-2 s [a]_+`` at any minimiser (unique).  The
certificate of a point (:meth:`SLRData.certificate`) takes the largest of
three valid lower bounds on the optimum:

1. ``0`` (the loss is nonnegative; tight when the classes are separable by a
   bilinear form, e.g. ``n <= d`` with ``X`` of full row rank).
2. The dual bound ``g(Lambda_1)``: one Newton step on the active set of the
   (symmetrised) point gives ``Z_1`` where the quadratic model's gradient
   ``Lambda_1`` (the hinge residuals of the active terms at ``Z_1``)
   satisfies ``U^T Lambda_1 U = 0``; when every active term is still active
   at ``Z_1``, ``Lambda_1`` is dual feasible.  Exact once the active set has
   been identified.
3. A local strong-convexity (KKT residual) bound: terms with
   ``a_ij > rho ||u_i|| ||u_j||`` stay active on the ball ``||Z' - Z||_F <= rho``,
   so there ``f >= f(Z) + <g, dZ> + dZ^T H_rho dZ / 2`` with ``H_rho`` their
   Hessian (the other terms are convex).  If ``lambda_min(H_rho) rho > 2 ||g||``
   the minimum over the ball is interior, hence global, and
   ``f* >= f(Z) - g^T H_rho^{-1} g / 2``.  Robust to terms that sit exactly on
   their threshold at the optimum.

``gap = f(M) - bound`` with ``f(M)`` recomputed from ``X M X^T``.

Memory: nothing of size ``n x n`` is stored.  Every pass runs over blocks of
rows (``block_rows x n``, about ``2^20`` entries, 8 MB), so a pass costs
``O(n^2 r)`` time (``O(n^2 p)`` with the Hessian) and ``O(n r + n p + p^2)``
memory.
"""

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from .._backend import Device, OnDevice, float64, is_dask, namespace
from .._data import Samples
from .._settings import (
    _FEW_TERMS,
    _TINY_CURVATURE,
    DENSE_MAX_FEATURES,
    DENSE_MAX_SYM,
    DUAL_RADIUS,
)
from .._settings import (
    SLR_DEFAULT_BLOCK as DEFAULT_BLOCK,
)
from .._solver import blas_threads
from .._tolerances import certificate_tolerance
from .._validation import check_samples, check_scalar
from ..result import Certificate

_GAP, _FEAS = certificate_tolerance("slr")

__all__ = ["SLRData", "eq3_closed_form", "check_thresholds", "svec", "smat",
           "newton_decrement", "DEFAULT_BLOCK", "DENSE_MAX_SYM",
           "Expired", "cg", "m_in_units"]


class Expired(Exception):
    """Raised inside a pass when the solver's deadline has passed."""


def _tick(deadline):
    if deadline is not None and deadline.expired():
        raise Expired


def cg(apply, b, *, tol, maxiter, deadline=None):
    """Conjugate gradients on symmetric matrices: ``apply(X) = b``.

    ``apply`` is positive definite on symmetric (r, r) matrices; the inner
    product is the trace inner product.  Stops when ``||b - apply(X)||_F <=
    tol`` or after ``maxiter`` products.

    Returns
    -------
    X : ndarray
    res : float
        ``||b - apply(X)||_F`` of the recurrence.
    n_products : int

    Raises
    ------
    Expired
        When ``deadline`` expires (checked before every product).
    """
    X = np.zeros_like(b)
    R = b.copy()
    P = R.copy()
    rr = float(np.sum(R * R))
    k = 0
    while np.sqrt(rr) > tol and k < maxiter:
        _tick(deadline)
        AP = apply(P)
        k += 1
        pap = float(np.sum(P * AP))
        if not pap > 0.0:  # round-off: the operator is PSD in exact arithmetic
            break
        alpha = rr / pap
        X += alpha * P
        R -= alpha * AP
        rr_new = float(np.sum(R * R))
        P *= rr_new / rr
        P += R
        rr = rr_new
    return X, float(np.sqrt(rr)), k

_SQRT2 = np.sqrt(2.0)


def svec(Z):
    """Orthonormal coordinates of the symmetric part of ``Z`` (r, r) -> (p,).

    Upper triangle row by row, off-diagonal entries times ``sqrt(2)``, so that
    ``svec(A) @ svec(B) = <A, B>`` for symmetric ``A``, ``B``.
    """
    Z = np.asarray(Z, dtype=float)
    r = Z.shape[0]
    iu = np.triu_indices(r)
    S = 0.5 * (Z + Z.T)
    return S[iu] * np.where(iu[0] == iu[1], 1.0, _SQRT2)


def smat(z, r):
    """Inverse of :func:`svec`: the symmetric (r, r) matrix of ``z`` (p,)."""
    iu = np.triu_indices(r)
    vals = np.asarray(z, dtype=float) / np.where(iu[0] == iu[1], 1.0, _SQRT2)
    Z = np.zeros((r, r))
    Z[iu] = vals
    Z[(iu[1], iu[0])] = vals
    return Z


def newton_decrement(f, g, H):
    """``g^T H^{-1} g / 2`` relative to ``max(1, f)`` (``inf`` if ``H`` is singular).

    Estimates ``f - min f`` once the active set is the optimum's (then the
    quadratic model is exact); the certificate makes it rigorous.
    """
    if not np.any(g):
        return 0.0
    try:
        c = scipy.linalg.cho_factor(H, check_finite=False)
    except np.linalg.LinAlgError:
        # a singular H (directions no active term constrains, e.g. constant
        # pixels): the estimate on its regularised form; it only decides
        # whether the (rigorous) certificate is computed
        try:
            c = scipy.linalg.cho_factor(H + _singular_shift(H), check_finite=False)
        except np.linalg.LinAlgError:
            return np.inf
    val = 0.5 * float(g @ scipy.linalg.cho_solve(c, g, check_finite=False))
    return max(0.0, val) / max(1.0, f)


def _singular_shift(H):
    """``eps I`` making a PSD-in-exact-arithmetic ``H`` numerically definite."""
    scale = max(1.0, float(np.max(np.abs(np.diag(H))))) if H.size else 1.0
    return 1e-12 * scale * np.eye(H.shape[0])


def cert_residual(f, Z, rel=1e-10):
    """Newton-system residual making the dual bound's residual term
    ``DUAL_RADIUS max(1, ||Z||) ||E||`` at most ``rel max(1, f)``."""
    return rel * max(1.0, f) / (DUAL_RADIUS * max(1.0, float(np.linalg.norm(Z))))


def eq3_closed_form(X, Y):
    """Eq. 3: the minimum-norm minimiser ``M = X^+ Y X^{+T}`` of Eq. 1.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    Y : ndarray of shape (n, n)
        Target similarities.

    Returns
    -------
    M : ndarray of shape (d, d)
    """
    X = check_samples(X, "X")
    n = X.shape[0]
    Y = np.asarray(Y, dtype=float)
    if Y.shape != (n, n):
        raise ValueError(f"Y: expected shape ({n}, {n}), got {Y.shape}.")
    if not np.all(np.isfinite(Y)):
        raise ValueError("Y: contains NaN or infinite values.")
    P = np.linalg.pinv(X)  # (d, n)
    return P @ Y @ P.T


def check_thresholds(delta1, delta2):
    """Validate ``delta1 > delta2`` (finite reals); return them as floats."""
    delta1 = check_scalar(delta1, "delta1")
    delta2 = check_scalar(delta2, "delta2")
    if not delta1 > delta2:
        raise ValueError(
            f"delta1, delta2: need delta1 > delta2 (same-class similarities "
            f"above different-class ones), got delta1={delta1}, delta2={delta2}."
        )
    return delta1, delta2


def _encode_labels(y, n):
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y: expected shape ({n},), got {y.shape}.")
    if y.dtype == object or y.dtype.kind not in "iub":
        if y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y)):
            pass  # integral floats are class labels
        else:
            raise ValueError(
                f"y: expected integer class labels, got dtype {y.dtype}."
            )
    classes, codes = np.unique(y, return_inverse=True)
    if classes.size < 2:
        raise ValueError(
            f"y: SLR needs at least 2 classes, got {classes.size} class; with "
            "one class every pair is similar and Eq. 4 has no different-class "
            "term."
        )
    return codes.reshape(-1).astype(np.intp), classes


def m_in_units(Mi, scale, what):
    """``Mi / scale^2``: a matrix ``M`` learned on ``X / scale``, in ``X``'s units.

    Raises a ValueError naming ``X`` when that ``M`` is not representable
    in float64: its entries overflow, or underflow so far that it no longer
    gives the same similarities (data scaled far from 1, e.g. by
    ``1e+-200``: the minimiser of Eq. 4 at ``s X`` is the one at ``X``
    divided by ``s^2``).  ``what`` names the matrix in the message.
    """
    with np.errstate(over="ignore", under="ignore"):
        M = (Mi / scale) / scale
    big = float(np.max(np.abs(Mi))) if Mi.size else 0.0
    if not np.all(np.isfinite(M)):
        raise ValueError(
            f"X: {what} has entries of order {big:.3g} / {scale:.3g}^2, beyond "
            f"float64's range (Eq. 4 at s X is minimised by M / s^2, so data of "
            f"scale {scale:.3g} need an M that overflows); rescale X, e.g. divide "
            f"it by {scale:.3g}.")
    with np.errstate(over="ignore"):
        back = (M * scale) * scale
    if float(np.linalg.norm(back - Mi)) > 1e-12 * float(np.linalg.norm(Mi)):
        raise ValueError(
            f"X: {what} has entries of order {big:.3g} / {scale:.3g}^2, below "
            f"float64's range (Eq. 4 at s X is minimised by M / s^2, so data of "
            f"scale {scale:.3g} need an M that underflows); rescale X, e.g. divide "
            f"it by {scale:.3g}.")
    return M


def check_device_samples(X, y, xp, transfers):
    """``(X, y)``: ``X`` of namespace ``xp`` validated on its device (2-D,
    non-empty, finite) and cast to float64 there; ``y`` on the host
    (counted in ``transfers`` when it came from a device).

    Raises
    ------
    ValueError
        Naming ``X``.
    """
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X: expected a non-empty 2-D array, got shape "
                         f"{tuple(X.shape)}.")
    X = float64(X, xp)
    if not bool(xp.all(xp.isfinite(X))):
        raise ValueError("X: contains NaN or infinite values.")
    if not isinstance(y, np.ndarray) and not isinstance(y, (list, tuple)):
        y = transfers.to_host(y)
    return X, y


def _power_of_two_scale(top):
    """The power of two at or below ``top = max |X_ij|`` that SLR divides
    ``X`` by.  Eq. 4 at ``sX`` equals Eq. 4 at ``X`` with ``M -> s^2 M``:
    the problem is solved on ``X / scale`` (a power of two: exact) and ``M``
    returned in ``X``'s units."""
    if top == 0.0:
        raise ValueError("X: all samples are zero; x_i^T M x_j is 0 for every M.")
    return float(2.0 ** np.floor(np.log2(top)))


def _rank_and_block(s, n, d, rank_tol, block):
    """``(r, block)``: the numerical rank of the singular values ``s`` (above
    ``rank_tol`` times the largest; default ``max(n, d) eps``) and the
    validated block size."""
    tol = rank_tol if rank_tol is not None else max(n, d) * np.finfo(float).eps
    r = int(np.sum(s > tol * s[0]))
    block = int(block)
    if block < 1:
        raise ValueError(f"block: must be >= 1, got {block}.")
    return r, block


@dataclass(eq=False)
class SLRData(OnDevice, Samples):
    """Eq. 4 data: samples, labels, thresholds and the thin SVD of ``X``.

    Build with :meth:`from_labels`.

    Attributes
    ----------
    X : ndarray of shape (n, d)
    y : ndarray of int, shape (n,)
        Class codes ``0 .. n_classes - 1``.
    classes : ndarray
        The original labels (``classes[y]``).
    delta1, delta2 : float
        Thresholds, ``delta1 > delta2``.
    U : ndarray of shape (n, r)
    s : ndarray of shape (r,)
        Singular values of ``X / scale`` above the rank tolerance,
        decreasing.
    V : ndarray of shape (d, r)
    block_rows : int
        Rows per block in a pass over the pairs.
    scale : float
        A power of two near ``max |X_ij|``.  Every computation runs on
        ``X / scale`` (exact: a power of two only shifts exponents), so
        that data at any representable scale neither overflow nor
        underflow; matrices are returned in the units of ``X``
        (``M = M_internal / scale^2``, see :meth:`M_of_Z`).
    where : Device
        Where ``X`` lives (:class:`~cvxmetric._backend.Device`): NumPy on
        the host, or the namespace and device of a PyTorch / CuPy /
        array-api-strict input.  ``X`` and ``U`` stay there, and so do the
        passes over the pairs (the ``O(n^2 r)`` work), in float64; ``s``,
        ``V``, ``y``, ``Z``, gradients and Hessians (``r x r``, ``p x p``)
        are NumPy on the host.
    yd : array
        ``y`` on the device of ``X`` (``y`` itself for NumPy).
    xp : module
        ``where.xp``, the array namespace of ``X``.
    transfers : Transfers
        ``where.transfers``, the counted moves between host and device.
    """

    X: np.ndarray
    y: np.ndarray
    classes: np.ndarray
    delta1: float
    delta2: float
    U: np.ndarray
    s: np.ndarray
    V: np.ndarray
    block_rows: int
    scale: float = 1.0
    where: Device = field(default_factory=Device, repr=False)
    yd: object = None
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        if self.yd is None:
            self.yd = self.y

    @classmethod
    def from_labels(cls, X, y, *, delta1=1.0, delta2=0.0, rank_tol=None,
                    block=DEFAULT_BLOCK):
        """Validate and factor.

        Parameters
        ----------
        X : array_like of shape (n, d)
        y : array_like of int, shape (n,)
            Class labels; at least two classes.
        delta1, delta2 : float
            Same-class similarities should reach ``delta1``, different-class
            ones stay below ``delta2``; ``delta1 > delta2``.
        rank_tol : float, optional
            Singular values below ``rank_tol * s_max`` are dropped (default
            ``max(n, d) * eps``, as :func:`numpy.linalg.matrix_rank`).
        block : int
            Entries per row block of a pass.
        """
        if is_dask(X):
            # one task per row chunk, not the generic passes' graph per block
            from ._dask import SLRDaskData
            return SLRDaskData.from_dask(X, y, delta1=delta1, delta2=delta2,
                                         rank_tol=rank_tol, block=block)
        _, numpy_like = namespace(X)
        if not numpy_like:
            return cls._from_device(X, y, delta1, delta2, rank_tol, block)
        X = check_samples(X, "X")
        n, d = X.shape
        codes, classes = _encode_labels(y, n)
        delta1, delta2 = check_thresholds(delta1, delta2)
        scale = _power_of_two_scale(float(np.max(np.abs(X))))
        Xs = X / scale
        try:
            U, s, Vt = np.linalg.svd(Xs, full_matrices=False)
        except np.linalg.LinAlgError as exc:  # pragma: no cover - LAPACK failure
            raise ValueError(f"X: its singular value decomposition failed ({exc}).") from None
        r, block = _rank_and_block(s, n, d, rank_tol, block)
        return cls(
            X=X, y=codes, classes=classes, delta1=delta1, delta2=delta2,
            U=np.ascontiguousarray(U[:, :r]), s=s[:r].copy(),
            V=np.ascontiguousarray(Vt[:r].T), block_rows=max(1, block // n),
            scale=scale, _cache={"Xs": Xs},
        )

    @classmethod
    def _from_device(cls, X, y, delta1, delta2, rank_tol, block):
        """:meth:`from_labels` for an array of another namespace: the SVD
        on its device (``U`` stays there), ``s`` and ``V`` to the host."""
        where = Device.of(X)
        xp = where.xp
        X, y = check_device_samples(X, y, xp, where.transfers)
        n, d = X.shape
        codes, classes = _encode_labels(y, n)
        delta1, delta2 = check_thresholds(delta1, delta2)
        scale = _power_of_two_scale(float(xp.max(xp.abs(X))))
        Xs = X / scale
        U, s, Vt = xp.linalg.svd(Xs, full_matrices=False)
        s = where.host(s)
        r, block = _rank_and_block(s, n, d, rank_tol, block)
        return cls(
            X=X, y=codes, classes=classes, delta1=delta1, delta2=delta2,
            U=U[:, :r], s=s[:r].copy(),
            V=np.ascontiguousarray(where.host(Vt[:r, :]).T),
            block_rows=max(1, block // n), scale=scale, where=where,
            yd=where.dev(codes),
            _cache={"Xs": Xs},
        )

    # -- host and device -------------------------------------------------------
    # (xp, on_host, transfers and backend_info: OnDevice, from ``where``)

    def _zeros(self, shape):
        """float64 zeros on the data's device."""
        if self.on_host:
            return np.zeros(shape)
        return self.xp.zeros(shape, dtype=self.xp.float64, device=self.where.device)

    def _as_float(self, mask):
        """A boolean mask as float64 (numpy's ``astype`` for NumPy, whose
        declared minimum predates ``numpy.astype``)."""
        if self.on_host:
            return mask.astype(float)
        return self.xp.astype(mask, self.xp.float64)

    # The block kernels: in place on NumPy (a pass is memory-bound outside
    # its two products), new arrays elsewhere (the array API has no ``out=``).

    def _hinge(self, K, same):
        """``(rho, act)`` of a block ``K``: ``rho = [a]_+``, ``act = a > 0``
        with ``a = b - s K`` (overwrites ``K`` on NumPy)."""
        if self.on_host:
            K -= self.delta2
            np.subtract(self.delta1 - self.delta2, K, out=K, where=same)
            act = K > 0
            np.maximum(K, 0.0, out=K)
            return K, act
        a = self._args(K, same)
        return self.xp.maximum(a, 0.0), a > 0

    def _signed(self, rho, same, c):
        """``c s rho`` (``s = -1`` on same-class pairs; overwrites ``rho``
        on NumPy)."""
        if self.on_host:
            rho *= c
            np.negative(rho, out=rho, where=same)
            return rho
        return self.xp.where(same, -c * rho, c * rho)

    def _masked(self, x, mask):
        """``x`` where ``mask``, else 0 (overwrites ``x`` on NumPy)."""
        if self.on_host:
            x *= mask
            return x
        return self.xp.where(mask, x, 0.0)

    # -- sizes -----------------------------------------------------------------

    @property
    def n_samples(self):
        return self.X.shape[0]

    @property
    def rank(self):
        return self.s.shape[0]

    @property
    def pass_flops(self):
        """Flops of one BLAS call of a pass over the pairs, a ``(b x r) @
        (r x n)`` block product: what the threading policy
        (:func:`~cvxmetric._solver.blas_threads`) decides by."""
        n = self.n_samples
        return 2.0 * min(self.block_rows, n) * n * self.rank

    @property
    def n_classes(self):
        return self.classes.shape[0]

    @property
    def Xs(self):
        """``X / scale`` (n, d), the data every computation runs on."""
        Xs = self._cache.get("Xs")
        if Xs is None:
            Xs = self._cache["Xs"] = self.X / self.scale
        return Xs

    @property
    def n_sym(self):
        """``p = r (r + 1) / 2``, the number of symmetric coordinates."""
        r = self.rank
        return r * (r + 1) // 2

    # -- coordinates -----------------------------------------------------------

    def _internal_M(self, M):
        """``scale^2 M``: ``M`` in the units of ``X / scale`` (exact scaling)."""
        M = np.asarray(M, dtype=float)
        d = self.n_features
        if M.shape != (d, d):
            raise ValueError(f"M: expected shape ({d}, {d}), got {M.shape}.")
        Ms = (M * self.scale) * self.scale
        if not np.all(np.isfinite(Ms)):
            raise ValueError("M: contains NaN or infinite values (in the units of "
                             "X / scale).")
        return Ms

    def Z_of_M(self, M):
        """``Z = S V^T M V S`` (r, r): ``X M X^T = U Z U^T``."""
        W = self.V * self.s  # (d, r) = V S (of X / scale)
        return W.T @ self._internal_M(M) @ W

    def M_of_Z(self, Z):
        """The minimum-norm ``M = V S^{-1} Z S^{-1} V^T`` with ``Z_of_M(M) = Z``.

        Computed on ``X / scale`` and returned in ``X``'s units
        (``M_internal / scale^2``).

        Raises
        ------
        ValueError
            When that ``M`` is not representable in float64: its entries
            overflow, or underflow so far that it no longer gives the same
            similarities (data scaled far from 1, e.g. by ``1e+-200``: the
            minimiser of Eq. 4 at ``sX`` is the one at ``X`` divided by
            ``s^2``).
        """
        W = self.V / self.s  # (d, r) = V S^{-1}
        Mi = W @ Z @ W.T
        if np.array_equal(Z, Z.T):
            # symmetric Z gives a symmetric M: exactly, not to round-off
            Mi = 0.5 * (Mi + Mi.T)
        if not np.all(np.isfinite(Mi)):
            raise ValueError("X: the similarity matrix M of this problem is not finite "
                             "(X is numerically rank deficient beyond float64).")
        return m_in_units(Mi, self.scale, "the minimiser M")

    def target(self):
        """``D`` (n, n): ``delta1`` on same-class pairs, ``delta2`` elsewhere.

        The Eq. 2 target when ``delta1 = 1``, ``delta2 = 0``.  Built in full;
        meant for small ``n`` (tests, Eq. 1 / Eq. 3).
        """
        same = self.y[:, None] == self.y[None, :]
        return np.where(same, self.delta1, self.delta2)

    def least_squares_Z(self, Y=None, *, deadline=None):
        """Eq. 3 in coordinates: ``Z = U^T Y U`` (``Y`` default :meth:`target`).

        Without ``Y``, the target is ``delta2 1 1^T + (delta1 - delta2)
        sum_c 1_c 1_c^T`` (``1_c`` the indicator of class ``c``), so
        ``U^T Y U = delta2 u u^T + (delta1 - delta2) C^T C`` with ``u =
        U^T 1`` and ``C`` (n_classes, r) the class sums of ``U``'s rows:
        ``O(n r^2)``, no pass over the pairs.
        """
        U = self.U
        if Y is not None:
            Y = self.where.dev(np.asarray(Y, dtype=float))
            return self.where.host(U.T @ Y @ U)
        _tick(deadline)
        if self.on_host:
            C = np.zeros((self.n_classes, self.rank))
            np.add.at(C, self.y, U)
        else:  # the class sums as one product with the (n, C) indicators
            codes = self.where.dev(np.arange(self.n_classes))
            C = self.where.host(self._as_float(self.yd[:, None] == codes[None, :]).T @ U)
        u = C.sum(axis=0)
        return self.delta2 * np.outer(u, u) + (self.delta1 - self.delta2) * (C.T @ C)

    def _blocks(self):
        """Row blocks: ``(slice, same)`` with ``same`` (b, n) the class mask."""
        n, b, y = self.n_samples, self.block_rows, self.yd
        for start in range(0, n, b):
            rows = slice(start, min(n, start + b))
            yield rows, y[rows][:, None] == y[None, :]

    def _upper_blocks(self):
        """Row blocks of the upper block triangle: ``(rows, cols, same)``.

        ``cols = rows.start .. n``: block ``I`` holds the pairs ``(i, j)``
        with ``i`` in ``I`` and ``j >= I.start``; its first ``b`` columns
        are the diagonal block.  Every term of Eq. 4 is symmetric in
        ``(i, j)`` at a symmetric ``Z`` (``K = U Z U^T`` and the class
        relation are), so a pass over these blocks, with weight 2 off the
        diagonal block and 1 on it, sees every term at half the cost of
        :meth:`_blocks`.
        """
        n, b, y = self.n_samples, self.block_rows, self.yd
        for start in range(0, n, b):
            rows = slice(start, min(n, start + b))
            cols = slice(start, n)
            yield rows, cols, y[rows][:, None] == y[None, cols]

    def _upper_weighted(self, x, b):
        """``sum`` of a block of :meth:`_upper_blocks` over all ``n^2`` terms
        it stands for: weight 2 off its first ``b`` columns (the diagonal
        block), 1 on them.  A device scalar (summed on the host at the end
        of a pass: one synchronisation per pass, not per block)."""
        xp = self.xp
        return 2.0 * xp.sum(x) - xp.sum(x[:, :b])

    def _upper_count(self, act, b):
        """:meth:`_upper_weighted` of a boolean block: a device integer."""
        xp = self.xp
        return 2 * xp.count_nonzero(act) - xp.count_nonzero(act[:, :b])

    def _upper_value(self, left, right, deadline=None):
        """``(f, n_active)`` of Eq. 4 at the symmetric ``K = left @ right``
        (``left`` (n, k), ``right`` (k, n)), over the upper block triangle."""
        f, n_active = 0.0, 0
        for rows, cols, same in self._upper_blocks():
            _tick(deadline)
            rho, act = self._hinge(left[rows, :] @ right[:, cols], same)
            b = rho.shape[0]
            f += self._upper_weighted(rho * rho, b)
            n_active += self._upper_count(act, b)
        return float(f), int(n_active)

    def _U32(self):
        """``U`` in float32 (cached): the Hessian products of inexact CG."""
        U32 = self._cache.get("U32")
        if U32 is None:
            U32 = self._cache["U32"] = (self.U.astype(np.float32) if self.on_host
                                        else self.xp.astype(self.U, self.xp.float32))
        return U32

    def _args(self, K, same):
        """Hinge arguments ``a = b - s K`` of a block."""
        return self.xp.where(same, self.delta1 - K, K - self.delta2)

    # -- objective, gradient, Hessian ---------------------------------------

    def objective(self, M):
        """Eq. 4 at ``M`` (d, d), recomputed from ``X M X^T``."""
        xp, Xs = self.xp, self.Xs
        # X M X^T = Xs (scale^2 M) Xs^T
        XM = Xs @ self.where.dev(self._internal_M(M))  # (n, d)
        if np.array_equal(M, M.T):
            # K = X M X^T is symmetric: the upper block triangle suffices
            return self._upper_value(XM, Xs.T)[0]
        f = 0.0
        for rows, same in self._blocks():
            a = xp.maximum(self._args(XM[rows, :] @ Xs.T, same), 0.0)
            f += xp.sum(a * a)
        return float(f)

    def objective_Z(self, Z):
        """Eq. 4 at ``X M X^T = U Z U^T``."""
        return self.evaluate(Z)[0]

    def eq1_objective(self, M, Y=None):
        """Eq. 1, ``||X M X^T - Y||_F^2`` (``Y`` default :meth:`target`)."""
        Y = self.target() if Y is None else np.asarray(Y, dtype=float)
        R = self.Xs @ self.where.dev(self._internal_M(M)) @ self.Xs.T - self.where.dev(Y)
        return float(self.xp.sum(R * R))

    def evaluate(self, Z, *, grad=False, hessian=False, deadline=None):
        """One pass: ``f(Z)``, and optionally the gradient and the Hessian.

        Parameters
        ----------
        Z : ndarray of shape (r, r)
            Not necessarily symmetric (the Hessian is only formed for
            symmetric ``Z``).
        grad : bool
            Return ``grad f(Z) = U^T Lambda U`` (r, r).
        hessian : bool
            Return the generalised Hessian in symmetric coordinates (p, p),
            from the terms with ``a_ij > 0``.
        deadline : Deadline, optional
            Checked before every row block (raises :class:`Expired`).

        Returns
        -------
        f : float
        G : ndarray of shape (r, r) or None
        H : ndarray of shape (p, p) or None
        n_active : int
            Number of terms with ``a_ij > 0``.
        """
        xp, U = self.xp, self.U
        W = self.where.dev(Z) @ U.T  # (r, n): K_B = U_B W
        if not (grad or hessian) and np.array_equal(Z, Z.T):
            # the value alone at a symmetric Z: half the terms suffice
            f, n_active = self._upper_value(U, W, deadline)
            return f, None, None, n_active
        f, n_active = 0.0, 0
        G = self._zeros(Z.shape) if grad else None
        Gq = None
        if hessian:
            Q = self._sym_features()
            Gq = self._zeros((Q.shape[1], Q.shape[1]))
        for rows, same in self._blocks():
            _tick(deadline)
            rho, act = self._hinge(U[rows, :] @ W, same)
            f += xp.sum(rho * rho)
            n_active += xp.count_nonzero(act)
            if grad:
                Lam = self._signed(rho, same, 2.0)  # (b, n)
                G += U[rows, :].T @ (Lam @ U)
            if hessian:
                Gq += Q[rows, :].T @ (self._as_float(act) @ Q)
        H = self._hessian_from_gram(self.where.host(Gq)) if hessian else None
        return (float(f), self.where.host(G) if grad else None, H, int(n_active))

    def _sym_features(self):
        """``Q`` (n, p): ``Q_i[(x, y)] = u_ix u_iy`` for ``x <= y``."""
        Q = self._cache.get("Q")
        if Q is None:
            a, b = np.triu_indices(self.rank)
            if self.on_host:
                Q = np.ascontiguousarray(self.U[:, a] * self.U[:, b])
            else:
                xp = self.xp
                Q = (xp.take(self.U, self.where.dev(a), axis=1)
                     * xp.take(self.U, self.where.dev(b), axis=1))
            self._cache["Q"] = Q
        return Q

    def _hessian_index(self):
        """Index arrays turning the Gram ``Q^T m Q`` into the Hessian."""
        idx = self._cache.get("hidx")
        if idx is None:
            r = self.rank
            a, b = np.triu_indices(r)
            pos = np.zeros((r, r), dtype=np.intp)
            pos[a, b] = np.arange(a.size)
            pos[b, a] = pos[a, b]
            w = np.where(a == b, 0.5, 1.0 / _SQRT2)
            idx = (pos[a[:, None], a[None, :]], pos[b[:, None], b[None, :]],
                   pos[a[:, None], b[None, :]], pos[b[:, None], a[None, :]],
                   4.0 * np.outer(w, w))
            self._cache["hidx"] = idx
        return idx

    def _hessian_from_gram(self, Gq):
        """``H_kl = 2 sum m_ij phi_ij[k] phi_ij[l]`` from ``Gq = Q^T m Q``.

        With ``phi_ij[(a, b)] = w_ab (u_ia u_jb + u_ib u_ja)`` (``w = 1/2`` on
        the diagonal, ``1/sqrt(2)`` off it) and ``Gq[xy, zw] =
        sum m_ij u_ix u_iy u_jz u_jw`` (symmetric for a symmetric mask ``m``),
        ``sum m phi[k] phi[l] = 2 w_k w_l (Gq[ac, be] + Gq[ae, bc])`` for
        ``k = (a, b)``, ``l = (c, e)``.
        """
        Gq = 0.5 * (Gq + Gq.T)
        ac, be, ae, bc, ww = self._hessian_index()
        return ww * (Gq[ac, be] + Gq[ae, bc])

    def pair_features(self, i, j):
        """``phi_ij`` (k, p) for index arrays ``i``, ``j`` of length k (on
        the data's device)."""
        xp = self.xp
        a, b = np.triu_indices(self.rank)
        Ui = xp.take(self.U, self.where.dev(np.asarray(i)), axis=0)
        Uj = xp.take(self.U, self.where.dev(np.asarray(j)), axis=0)
        w = self.where.dev(np.where(a == b, 0.5, 1.0 / _SQRT2))
        a, b = self.where.dev(a), self.where.dev(b)
        return w * (xp.take(Ui, a, axis=1) * xp.take(Uj, b, axis=1)
                    + xp.take(Ui, b, axis=1) * xp.take(Uj, a, axis=1))

    # -- matrix-free passes ------------------------------------------------------

    @property
    def dense_hessian(self):
        """Whether the (p, p) Hessian is small enough to form (see
        :data:`DENSE_MAX_SYM`, :data:`DENSE_MAX_FEATURES`)."""
        p = self.n_sym
        return p <= DENSE_MAX_SYM and self.n_samples * p <= DENSE_MAX_FEATURES

    def pass_masks(self, Z, *, dual_mask=None, deadline=None):
        """One pass at a symmetric ``Z``: value, gradient, active masks.

        Runs over the upper block triangle (:meth:`_upper_blocks`): half the
        products of a pass over all ``n^2`` terms.

        Parameters
        ----------
        Z : ndarray of shape (r, r)
            Symmetric.
        dual_mask : list of bool arrays, optional
            Active masks (per upper block) of an earlier point ``Z_0``: also
            return the dual quantities of ``Lambda_1 = -2 s [a(Z)]_+``
            restricted to them (see :meth:`dual_bound_from`).
        deadline : Deadline, optional

        Returns
        -------
        f : float
        G : ndarray of shape (r, r)
        n_active : int
        masks : list of bool arrays
            ``a_ij > 0`` per upper block (``n^2 / 2`` bytes in all), on the
            data's device.
        dual : dict or None
            ``sq = ||Lambda_1||^2``, ``lin = <Lambda_1, D>``, ``E = U^T
            Lambda_1 U``.
        """
        xp, U = self.xp, self.U
        W = self.where.dev(Z) @ U.T
        f, n_active = 0.0, 0
        T = self._zeros(Z.shape)  # G = T + T^T
        masks = []
        sq = lin = 0.0
        corr = self._zeros(Z.shape) if dual_mask is not None else None
        for k, (rows, cols, same) in enumerate(self._upper_blocks()):
            _tick(deadline)
            Ub = U[rows, :]
            b = Ub.shape[0]
            rho, act = self._hinge(Ub @ W[:, cols], same)  # (b, n - start)
            f += self._upper_weighted(rho * rho, b)
            n_active += self._upper_count(act, b)
            Lam = self._signed(rho, same, 2.0)
            Lam[:, :b] *= 0.5  # the diagonal block is summed once in T + T^T
            T += Ub.T @ (Lam @ U[cols, :])
            masks.append(act)
            if dual_mask is not None:
                keep = dual_mask[k]
                Lam1 = xp.where(keep, Lam, 0.0)  # halved on the diagonal block
                # ||Lambda_1||^2 and <Lambda_1, D> over all n^2 terms: twice
                # the upper block (diagonal block halved: x 4 then x 1)
                sq += 2.0 * xp.sum(Lam1 * Lam1) + 2.0 * xp.sum(Lam1[:, :b] * Lam1[:, :b])
                lin += 2.0 * (self.delta2 * xp.sum(Lam1)
                              + (self.delta1 - self.delta2) * xp.sum(xp.where(same, Lam1, 0.0)))
                # U^T Lambda_1 U = G - U^T (Lambda on new activations) U: few
                # entries once the active set settles, summed sparsely then
                # (on NumPy; the array API has no gather of pairs)
                if self.on_host:
                    bi, bj = np.nonzero(act & ~keep)
                    if bi.size * Z.shape[0] <= b * U.shape[0]:
                        corr += (Ub[bi] * Lam[bi, bj][:, None]).T @ U[cols, :][bj]
                        continue
                corr += Ub.T @ (xp.where(keep, 0.0, Lam) @ U[cols, :])
        T = self.where.host(T)
        G = T + T.T
        dual = None
        if dual_mask is not None:
            corr = self.where.host(corr)
            E = G - (corr + corr.T)
            dual = {"sq": float(sq), "lin": float(lin), "E": E}
        return float(f), G, int(n_active), masks, dual

    def hess_vec(self, D, masks, *, deadline=None, dtype=np.float64):
        """Generalised Hessian times a symmetric ``D``: ``2 U^T (m o (U D U^T)) U``.

        ``m`` is the active mask from :meth:`pass_masks` (upper blocks);
        ``O(n^2 r)`` time over the upper block triangle, one row block of
        memory.  ``dtype=np.float32`` runs the two large products in single
        precision (relative error about ``1e-6``; sums of the ``r x r``
        result in float64): for inexact Newton systems solved to a looser
        relative residual.
        """
        xp = self.xp
        single = np.dtype(dtype) == np.float32
        U = self._U32() if single else self.U
        W = self.where.dev(D) @ self.U.T
        if single:
            W = W.astype(np.float32) if self.on_host else xp.astype(W, xp.float32)
        T = self._zeros(D.shape)
        for k, (rows, cols, _) in enumerate(self._upper_blocks()):
            _tick(deadline)
            Ub = U[rows, :]
            dK = self._masked(Ub @ W[:, cols], masks[k])
            dK[:, :Ub.shape[0]] *= 0.5  # the diagonal block, once in T + T^T
            part = Ub.T @ (dK @ U[cols, :])
            T += part if not single else (part.astype(np.float64) if self.on_host
                                          else xp.astype(part, xp.float64))
        T = self.where.host(T)
        T = T + T.T
        return T + T.T

    @staticmethod
    def dual_bound_from(dual, Z):
        """Lower bound on ``min f`` from the dual quantities of a pass at ``Z``.

        ``Lambda_1`` is sign feasible by construction, and for every ``Z'``
        (Fenchel-Young, term by term)
        ``f(Z') >= -||Lambda_1||^2 / 4 - <Lambda_1, D> + <E, Z'>`` with
        ``E = U^T Lambda_1 U``.  ``E`` is not exactly zero (an inexact Newton
        step, round-off), so at a minimiser ``Z*``::

            f* >= g(Lambda_1) + <E, Z> - ||E|| ||Z* - Z||,

        and ``||Z* - Z|| <= DUAL_RADIUS * max(1, ||Z||)`` is assumed (a
        minimiser within ten times the point's norm of a near-optimal
        point).  The solvers make ``||E||`` small enough that this term is
        ``<= 1e-10 max(1, f)``: the assumption would have to fail by a factor
        ``10^4`` to change whether a certificate passes.
        """
        E = dual["E"]
        en = float(np.linalg.norm(E))
        radius = DUAL_RADIUS * max(1.0, float(np.linalg.norm(Z)))
        return -dual["sq"] / 4.0 - dual["lin"] + float(np.sum(E * Z)) - en * radius

    def dual_bound_cg(self, Z, *, tol=None, maxiter=500, deadline=None,
                      evaluated=None):
        """Matrix-free dual bound at a symmetric ``Z``: ``(bound, f, n_cg)``.

        A Newton step on the active set of ``Z`` by conjugate gradients,
        then :meth:`dual_bound_from` at ``Z + dZ`` (bound 2 of the module
        docstring, with the residual accounted for).

        Parameters
        ----------
        tol : float, optional
            Residual of the Newton system (default: small enough for the
            residual term to be ``1e-10 max(1, f)``).
        evaluated : tuple, optional
            ``pass_masks(Z)`` when the caller has it.
        """
        if evaluated is None:
            evaluated = self.pass_masks(Z, deadline=deadline)
        f, G, _, masks, _ = evaluated
        if tol is None:
            tol = cert_residual(f, Z)
        dZ, _, n_cg = cg(lambda D: self.hess_vec(D, masks, deadline=deadline)
                         + 1e-14 * D, -G, tol=tol, maxiter=maxiter,
                         deadline=deadline)
        Z1 = Z + dZ
        out = self.pass_masks(Z1, dual_mask=masks, deadline=deadline)
        return self.dual_bound_from(out[4], Z1), f, n_cg, Z1, out

    # -- Algorithm 1 step ------------------------------------------------------

    def projection_step(self, Z, *, deadline=None):
        """``(f(Z), Z+)``: ``Z+ = U^T Pi_B(U Z U^T) U``, one step of Algorithm 1.

        ``Pi_B(K) = K + s [a]_+`` (clip to the box of targets), and in
        coordinates ``Z+ = Z + U^T (s [a]_+) U = Z - grad f(Z) / 2``.
        """
        xp, U = self.xp, self.U
        W = self.where.dev(Z) @ U.T
        f = 0.0
        step = self._zeros(Z.shape)
        for rows, same in self._blocks():
            _tick(deadline)
            rho, _ = self._hinge(U[rows, :] @ W, same)
            f += xp.sum(rho * rho)
            step += U[rows, :].T @ (self._signed(rho, same, -1.0) @ U)
        return float(f), Z + self.where.host(step)

    # -- certificate -------------------------------------------------------------

    def _newton_point(self, Z, H, g):
        """``Z + dZ`` with ``H dZ = -g`` (the Newton step of bound 2), or
        ``None`` when it cannot be formed."""
        p = g.shape[0]
        # any step gives a valid bound (the residual E is accounted for); a
        # singular H is regularised so that its null directions stay put
        try:
            c, low = scipy.linalg.cho_factor(H, check_finite=False)
        except np.linalg.LinAlgError:
            try:
                c, low = scipy.linalg.cho_factor(H + _singular_shift(H), check_finite=False)
            except np.linalg.LinAlgError:
                return None
        dz = -scipy.linalg.cho_solve((c, low), g, check_finite=False)
        if not np.all(np.isfinite(dz)) or p == 0:
            return None
        return Z + smat(dz, self.rank)

    def _dual_bound(self, Z, H, g):
        """Bound 2 of the module docstring, or ``-inf`` when not available.

        ``Lambda_1`` (clipped to its sign) is always dual feasible up to the
        residual ``E = U^T Lambda_1 U``, accounted for as in
        :meth:`dual_bound_from`.
        """
        Z1 = self._newton_point(Z, H, g)
        if Z1 is None:
            return -np.inf
        xp, U = self.xp, self.U
        W0, W1 = self.where.dev(Z) @ U.T, self.where.dev(Z1) @ U.T
        sq, lin = 0.0, 0.0
        E = self._zeros(Z.shape)
        for rows, same in self._blocks():
            a0 = self._args(U[rows, :] @ W0, same)
            a1 = self._args(U[rows, :] @ W1, same)
            rho1 = xp.where(a0 > 0, xp.maximum(a1, 0.0), 0.0)
            Lam = xp.where(same, -2.0 * rho1, 2.0 * rho1)
            sq += xp.sum(Lam * Lam)
            lin += (self.delta2 * xp.sum(Lam)
                    + (self.delta1 - self.delta2) * xp.sum(xp.where(same, Lam, 0.0)))
            E += U[rows, :].T @ (Lam @ U)
        E = self.where.host(E)
        return self.dual_bound_from({"sq": float(sq), "lin": float(lin),
                                     "E": 0.5 * (E + E.T)}, Z1)

    def _hessian_robust(self, Z, H, rho):
        """Hessian of the terms with ``a_ij > rho ||u_i|| ||u_j||`` at ``Z``.

        Those terms stay active on the ball ``||Z' - Z||_F <= rho``.  Computed
        as ``H`` minus the few terms in ``(0, rho ||u_i|| ||u_j||]`` when they
        are few, else by a masked pass.
        """
        xp, U = self.xp, self.U
        W = self.where.dev(Z) @ U.T
        un = xp.linalg.vector_norm(U, axis=1)
        ii, jj, count = [], [], 0
        for rows, same in self._blocks():
            a = self._args(U[rows, :] @ W, same)
            near = (a > 0) & (a <= rho * un[rows][:, None] * un[None, :])
            count += int(xp.count_nonzero(near))
            if count <= _FEW_TERMS:
                bi, bj = xp.nonzero(near)
                ii.append(self.where.host(bi) + rows.start)
                jj.append(self.where.host(bj))
        if count == 0:
            return H
        if count <= _FEW_TERMS:
            Phi = self.pair_features(np.concatenate(ii), np.concatenate(jj))
            return H - 2.0 * self.where.host(Phi.T @ Phi)
        Q = self._sym_features()
        Gq = self._zeros((Q.shape[1], Q.shape[1]))
        for rows, same in self._blocks():
            a = self._args(U[rows, :] @ W, same)
            keep = a > rho * un[rows][:, None] * un[None, :]
            Gq += Q[rows, :].T @ (self._as_float(keep) @ Q)
        return self._hessian_from_gram(self.where.host(Gq))

    def _ball_bound(self, Z, f, g, H):
        """Bound 3 of the module docstring, or ``-inf`` when not available."""
        gn = float(np.linalg.norm(g))
        if gn == 0.0:
            return f  # a stationary point of a convex C^1 function
        mu = float(np.linalg.eigvalsh(H)[0]) if H.size else 0.0
        if mu <= _TINY_CURVATURE:
            return -np.inf
        rho = 4.0 * gn / mu
        for _ in range(4):
            Hr = self._hessian_robust(Z, H, rho)
            mu = float(np.linalg.eigvalsh(Hr)[0])
            if mu > _TINY_CURVATURE and mu * rho > 2.0 * gn * (1.0 + 1e-9):
                try:
                    c = scipy.linalg.cho_factor(Hr, check_finite=False)
                except np.linalg.LinAlgError:  # round-off at a tiny mu
                    return -np.inf
                step = scipy.linalg.cho_solve(c, g, check_finite=False)
                return f - 0.5 * float(g @ step)
            if mu <= _TINY_CURVATURE:
                return -np.inf
            rho = 4.0 * gn / mu  # mu(rho) decreases: a larger ball, retried
        return -np.inf

    def lower_bound(self, Z, *, evaluated=None):
        """Best of the three lower bounds on ``min f`` at (the symmetric part of) ``Z``.

        Parameters
        ----------
        Z : ndarray of shape (r, r)
        evaluated : tuple, optional
            ``evaluate(Z, grad=True, hessian=True)`` for a symmetric ``Z``,
            when the caller has it.

        Returns
        -------
        bound : float
        parts : dict
            ``zero``, ``dual`` and ``ball`` bounds (``-inf``: not
            available), ``n_active`` and ``grad_norm`` at the symmetric part.
        """
        Zs = 0.5 * (Z + Z.T)
        with blas_threads(self.pass_flops):
            if not self.dense_hessian and evaluated is None:
                bound, f, _, _, _ = self.dual_bound_cg(Zs)
                return max(0.0, bound), {
                    "zero": 0.0, "dual": float(bound), "ball": -np.inf,
                    "objective_Z": float(f)}
            if evaluated is None:
                evaluated = self.evaluate(Zs, grad=True, hessian=True)
            f, G, H, n_active = evaluated
            g = svec(G)
            dual = self._dual_bound(Zs, H, g)
            ball = self._ball_bound(Zs, f, g, H)
        bound = max(0.0, dual, ball)
        return bound, {"zero": 0.0, "dual": float(dual), "ball": float(ball),
                       "n_active": int(n_active),
                       "grad_norm": float(np.linalg.norm(g)),
                       "objective_Z": float(f)}

    def check_representable(self, parts):
        """Raise when ``M`` in ``X``'s units does not carry the solution.

        ``parts`` are a certificate's (see :meth:`certificate`): the
        objective recomputed from ``X M X^T`` against the objective of the
        same point in the coordinates of ``range(X)``.  They differ by more
        than the package's gap tolerance when float64 cannot hold an ``M``
        whose similarities ``x_i^T M x_j`` are those of the solution: the
        rounding of ``M``'s entries alone moves them by about
        ``eps |x_i| |M| |x_j|``, which a common offset far above the spread
        of the data (``X + 1e8``) makes larger than the thresholds.

        Raises
        ------
        ValueError
            Naming ``X``, with the offset-to-spread ratio of its columns.
        """
        err = parts.get("representation_error", 0.0)
        if not err > _GAP:
            return
        xp, Xs = self.xp, self.Xs
        spread = float(xp.max(xp.std(Xs, axis=0)))
        offset = float(xp.max(xp.abs(xp.mean(Xs, axis=0))))
        ratio = offset / spread if spread > 0 else np.inf
        cond = float(self.s[0] / self.s[-1])
        raise ValueError(
            f"X: no matrix M in float64 represents this solution in X's units: "
            f"the objective recomputed from X M X^T differs from the solution's "
            f"({parts['objective_Z']:.10g}) by a relative {err:.2g}. X is "
            f"ill-conditioned (condition number {cond:.3g}; its columns have a "
            f"common offset {ratio:.3g} times their spread), so M needs entries "
            f"whose float64 rounding alone moves x_i^T M x_j beyond what the "
            f"thresholds allow. Remove nearly collinear features (e.g. by PCA) or "
            f"a common offset much larger than the spread (centring the features "
            f"changes the bilinear model).")

    def certificate(self, M, *, solver, solver_version="", tolerances=None,
                    times=None, tol_gap=_GAP, tol_feas=_FEAS, Z=None,
                    lower=None, return_parts=False):
        """Certificate of ``M`` for Eq. 4 (no constraints: violation 0).

        Parameters
        ----------
        M : ndarray of shape (d, d)
        Z : ndarray of shape (r, r), optional
            ``Z_of_M(M)`` when the caller has it.
        lower : tuple, optional
            ``lower_bound(Z)`` when the caller has it.
        return_parts : bool
            Also return the three bounds (see :meth:`lower_bound`).

        Returns
        -------
        Certificate
            ``min_eig`` is ``nan``: ``M`` is a general (non-symmetric)
            matrix and no eigenvalue condition applies.
        parts : dict, only if ``return_parts``
        """
        with blas_threads(self.pass_flops):
            obj = self.objective(M)
        if lower is None:
            if Z is None:
                Z = self.Z_of_M(M)
            lower = self.lower_bound(Z)
        bound, parts = lower
        parts = dict(parts)
        if "objective_Z" in parts:
            # f recomputed from M in X's units against f in the coordinates
            # of range(X): they differ when M cannot carry the answer (a
            # common offset far above the spread of the data)
            fz = parts["objective_Z"]
            parts["z_rel_gap"] = max(0.0, fz - bound) / max(1.0, abs(fz))
            parts["representation_error"] = abs(obj - fz) / max(1.0, abs(fz))
        cert = Certificate.from_bound(
            obj, bound, max_violation=0.0, min_eig=float("nan"),
            solver=solver, solver_version=solver_version, tolerances=tolerances,
            times=times, tol_gap=tol_gap, tol_feas=tol_feas)
        return (cert, parts) if return_parts else cert
