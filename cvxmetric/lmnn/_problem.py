"""LMNN in canonical form: the target neighbours, the objective and its
certificate, evaluated over every impostor triplet block by block.

Large-margin nearest neighbours (Weinberger and Saul, "Distance metric
learning for large margin nearest neighbor classification", JMLR 2009),
with fixed target neighbours, is the convex problem (Eq. 13-14)::

    minimise_{M PSD}  F(M) = (1 - mu) sum_{i, j ~> i} D_M(i, j)
                            + mu sum_{i, j ~> i, l: y_l != y_i} [1 + D_M(i, j) - D_M(i, l)]_+

with ``D_M(i, j) = (x_i - x_j)^T M (x_i - x_j)`` and ``j ~> i`` the target
neighbours of ``i``.  Its impostor triplets ``(i, j, l)`` number ``sum_i
k_i (n - n_{c(i)})``: ``n k (n - n_c)`` at k targets each, 1.2 * 10^9 for
letter-sized data.  Nothing here holds one entry per triplet: the
objective and the certificate walk the anchors ``i`` in blocks
(:data:`TRIPLET_BLOCK` entries at a time) and find each block's active
hinges there.

**Target neighbours.**  The ``k`` nearest points of the same class under
the Euclidean metric of ``X`` (under ``M0`` when given), the point itself
excluded; ties in distance are broken by index (a stable sort), so the
choice is deterministic.  A class of ``n_c <= k`` points gives each of its
points all ``n_c - 1`` others of the class (fewer than ``k`` targets); a
class of one point gives none (its point is still an impostor of the
others).  metric-learn refuses ``k`` above the smallest class size
instead.

**The dual bound.**  Write each hinge as ``max_{g in [0, mu]} g (1 +
<M, C_ij - C_il>)`` with ``C_ab = (x_a - x_b)(x_a - x_b)^T``.  For
multipliers ``gamma_ijl in [0, mu]`` and ``S = sum gamma_ijl (C_il -
C_ij)``, every PSD ``M`` has

    F(M) >= sum gamma + <(1 - mu) A_T - S, M>,      A_T = sum_{i, j ~> i} C_ij,

so ``sum gamma / t`` bounds the optimum below, with ``t >= 1`` the
smallest number such that ``S / t <= (1 - mu) A_T`` (the multipliers
scaled by ``1 / t`` into the dual's feasible set); and since an optimum
``M*`` has ``(1 - mu) <A_T, M*> <= U`` for the objective ``U`` of any PSD
point, also ``sum gamma - (t - 1) U``.  The larger of the two is the
bound.  It holds for *any* multipliers in the box: those the certificate
is given (the multipliers of Eq. 14's constraints, from a solver) are
used on their triplets; every other triplet gets ``mu`` where its hinge is
active at ``M`` and 0 where it is not.  At the optimum with its
multipliers, ``t = 1`` and the bound is the optimum (strong duality).  It
is Qwise's dual bound (Eq. 8 with ``tr(M A_S)``) of the same problem
divided by ``1 - mu``, in LMNN's units.
"""

import numpy as np

from .._backend import (
    Cluster,
    Device,
    OnDevice,
    _module_of,
    check_host_input,
    is_dask,
    is_numpy,
)
from .._linalg import eigh_psd
from .._settings import TRIPLET_BLOCK
from .._tolerances import certificate_tolerance
from .._validation import check_finite, check_int, check_psd_matrix, check_samples
from ..qwise._problem import _exponent, loewner_scale
from ..result import Certificate
from ._sweeps import Ctx, block_cuts, dual_rows

__all__ = ["LMNNData", "target_neighbors"]


def _check_mu(mu):
    """``mu`` in (0, 1), as a float, or a ValueError naming it."""
    if isinstance(mu, bool) or not isinstance(mu, (int, float, np.integer, np.floating)) \
            or not np.isfinite(mu) or not 0.0 < float(mu) < 1.0:
        raise ValueError(f"mu: the weight of the push term must be a number in (0, 1) "
                         f"(JMLR 2009's mu, 0.5 in the paper), got {mu!r}.")
    return float(mu)


def _check_labels(y, n):
    """Integer codes of the class labels ``y`` (n,), at least two classes."""
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y: expected one class label per sample, shape ({n},), got "
                         f"shape {y.shape}.")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y: class labels must be finite.")
    classes, codes = np.unique(y, return_inverse=True)
    if classes.size < 2:
        raise ValueError("y: LMNN needs at least 2 classes (with one there is no "
                         "impostor, and M = 0 is optimal).")
    return classes, codes.reshape(-1).astype(np.intp)


def _on_device(X):
    """Whether ``X`` is an array of another namespace than NumPy (PyTorch,
    CuPy, array-api-strict...) or a ``dask.array``, whose passes run there."""
    if is_numpy(X) or isinstance(X, (list, tuple)):
        return False
    return is_dask(X) or _module_of(X) in ("torch", "cupy", "array_api_strict", "jax") \
        or hasattr(X, "__array_namespace__")


def _where(X):
    """The :class:`~cvxmetric._backend.Device` of the passes over ``X``:
    NumPy's for host data (nothing moves), the namespace and device of an
    array-API input, and the cluster for a ``dask.array``
    (:class:`~cvxmetric._backend.Cluster`: its moves are counted as the
    tasks' arguments and gathered results)."""
    if not _on_device(X):
        return Device()
    if is_dask(X):
        return Cluster()
    return Device.of(X)


def _block_rows(n, width, block=TRIPLET_BLOCK):
    """Anchors per block when each holds ``n * width`` entries (``block``
    entries per block)."""
    return max(1, block // max(1, n * width))


def _sqdist_rows(Z, rows, cols, w=None):
    """``sum_r w_r (z_a,r - z_b,r)^2`` for ``a`` in ``rows``, ``b`` in
    ``cols`` (a (len(rows), len(cols)) array from the differences
    themselves, not the cancelling expansion)."""
    diff = Z[rows][:, None, :] - Z[cols][None, :, :]
    diff *= diff
    return diff.sum(axis=2) if w is None else diff @ w


def target_neighbors(X, codes, k, M0=None):
    """The ``k`` nearest same-class points of each sample (module docstring).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    codes : ndarray of int, shape (n,)
        Class codes.
    k : int >= 1
    M0 : ndarray of shape (d, d), optional
        PSD metric of the search (default: Euclidean).

    Returns
    -------
    targets : ndarray of int, shape (n, k)
        ``targets[i, s]`` is the ``s``-th nearest target of ``i`` (nearest
        first, ties by index); ``-1`` in the slots a small class leaves
        empty.
    """
    check_host_input(X, "X", "target_neighbors")
    Z = X - X.mean(axis=0)
    Z = np.ldexp(Z, -_exponent(float(np.max(np.abs(Z), initial=0.0))))
    if M0 is not None:
        w, V = eigh_psd(M0)
        Z = Z @ (V * np.sqrt(w))
    n = X.shape[0]
    targets = np.full((n, k), -1, dtype=np.intp)
    for c in np.unique(codes):
        members = np.flatnonzero(codes == c)
        kc = min(k, members.size - 1)
        if kc == 0:
            continue
        step = _block_rows(members.size, Z.shape[1])
        for start in range(0, members.size, step):
            rows = members[start:start + step]
            D = _sqdist_rows(Z, rows, members)
            D[np.arange(rows.size), start + np.arange(rows.size)] = np.inf
            order = np.argsort(D, axis=1, kind="stable")[:, :kc]
            targets[rows, :kc] = members[order]
    return targets


class LMNNData(OnDevice):
    """LMNN's data: samples, labels, target neighbours and ``mu``.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        Finite.  A PyTorch, CuPy or ``array-api-strict`` array, or a
        ``dask.array`` chunked by rows, stays where it is and the passes over
        the triplets run there (:mod:`cvxmetric.lmnn._sweeps`); a copy comes
        to the host once, for the target search, the pull matrix and the
        working set's bookkeeping.
    y : array_like of shape (n_samples,)
        Class labels, at least two classes.
    k : int >= 1, default=3
        Target neighbours per sample (fewer in a class of ``k`` points or
        less: module docstring).
    mu : float in (0, 1), default=0.5
        Weight of the push (hinge) term; ``1 - mu`` weighs the pull term.
    M0 : array_like of shape (n_features, n_features), optional
        PSD metric under which the target neighbours are searched
        (default: the Euclidean metric of ``X``).
    targets : ndarray of int, shape (n_samples, k), optional
        The target neighbours already found (:func:`target_neighbors`; used
        to change ``mu`` without searching again).

    Attributes
    ----------
    X, classes, codes, k, mu, M0, targets
        ``classes[codes]`` are the labels.
    C : float
        ``mu / (1 - mu)``: the hinge weight of the same problem divided by
        ``1 - mu`` (Qwise's Eq. 8 with ``C_q = C``).
    A_T : ndarray of shape (n_features, n_features)
        ``sum_{i, j ~> i} (x_i - x_j)(x_i - x_j)^T``: ``pull(M) = <A_T, M>``.
    n_triplets : int
        Number of impostor triplets ``(i, j, l)``.
    where : Device
        Where the passes run (NumPy's for NumPy data, where nothing moves),
        shared with the data :meth:`with_mu` and the solvers derive.
    transfers : Transfers
        ``where.transfers``: the counted moves between the host and the
        device (or cluster) of the passes; none for NumPy data.
    triplet_block : int
        Entries per block of a pass (:data:`TRIPLET_BLOCK`).
    """

    #: Entries per block of a pass over the triplets (a device takes larger
    #: blocks: fewer, larger kernels).
    triplet_block = TRIPLET_BLOCK

    def __init__(self, X, y, k=3, mu=0.5, M0=None, *, targets=None):
        self.where = _where(X)
        source, X, y = self._host_copy(X, y)
        X = check_samples(X, "X")
        n, d = X.shape
        if n < 2:
            raise ValueError(f"X: LMNN needs at least 2 samples, got {n}.")
        self.classes, self.codes = _check_labels(y, n)
        self.k = check_int(k, "k", low=1)
        self.mu = _check_mu(mu)
        self.M0 = None if M0 is None else check_psd_matrix(M0, "M0", d, tol=1e-8)
        self.X = X
        # distances are computed on Xn = (X - mean) / 2^e (powers of two:
        # exact), of order 1 whatever the scale of X; M acts as 2^(2e) M there
        Xc = X - X.mean(axis=0)
        self._e = _exponent(float(np.max(np.abs(Xc), initial=0.0)))
        self._Xn = np.ldexp(Xc, -self._e)
        if targets is None:
            targets = target_neighbors(X, self.codes, self.k, self.M0)
        self.targets = targets
        if not np.any(targets >= 0):
            raise ValueError("y: no class has two samples, so no sample has a target "
                             "neighbour (LMNN pulls each sample towards its k nearest "
                             "same-class samples).")
        valid = targets >= 0
        anchors = np.repeat(np.arange(n), self.k)[valid.ravel()]
        Phi = self._Xn[anchors] - self._Xn[targets[valid]]
        self._A_n = Phi.T @ Phi
        with np.errstate(over="ignore"):
            self.A_T = np.ldexp(self._A_n, 2 * self._e)
        counts = np.bincount(self.codes)
        self.n_triplets = int(np.sum(valid.sum(axis=1) * (n - counts[self.codes])))
        self._sweeps = None
        if source is not None:
            # the passes over the triplets run where the samples are
            from ._sweeps import DaskSweeps, XpSweeps

            engine = DaskSweeps if is_dask(source) else XpSweeps
            self._sweeps = engine(source, X.mean(axis=0), self._e, targets, self.codes,
                                  self.k, self.where)

    def _host_copy(self, X, y):
        """``(source, X, y)``: a NumPy, list or frame ``X`` as it is (source
        None); an array of another namespace or a ``dask.array`` kept as
        ``source``, with its copy on the host (moved once, counted) for the
        target search, the pull matrix and the working set's bookkeeping
        (its restricted problems are built there, their passes run where
        the samples are: :meth:`qwise_here`), and ``y`` read on the host."""
        if self.on_host:
            return None, X, y
        if not (is_numpy(y) or isinstance(y, (list, tuple))):
            y = self.where.host(y)
        if is_dask(X) and X.ndim != 2:
            raise ValueError(f"X: expected a 2-d array, got {X.ndim} dimensions.")
        return X, self.where.host(X), y

    def backend_info(self):
        """``{"backend", "device", "transfers"}`` of the passes, for a
        result's ``info`` (None for NumPy data)."""
        return None if self.on_host else super().backend_info()

    def _like(self, X, targets, mu=None, transform=None):
        """An :class:`LMNNData` of the host samples ``X`` (same labels, ``k``,
        ``targets``); its passes on this data's device, on the samples
        ``transform(device X, put)`` computed there (``put`` moves a host
        array there: :meth:`Device.dev <cvxmetric._backend.Device.dev>`, or
        ``numpy.asarray`` for a Dask task's argument)."""
        new = LMNNData(X, self.classes[self.codes], self.k,
                       self.mu if mu is None else mu, targets=targets)
        new.triplet_block = self.triplet_block
        if self._sweeps is not None:
            new.where = self.where
            new._sweeps = (self._sweeps if transform is None else self._sweeps.derived(
                transform, X.mean(axis=0), new._e, targets, new.codes, new.k))
        return new

    # -- shape helpers -----------------------------------------------------------

    @property
    def n_samples(self):
        return self.X.shape[0]

    @property
    def n_features(self):
        return self.X.shape[1]

    @property
    def C(self):
        return self.mu / (1.0 - self.mu)

    def qwise_here(self, qdata):
        """The Qwise problem ``qdata`` over these samples (the restricted
        problems of :func:`cvxmetric.lmnn.exact._as_qwise`, built on the
        host copy) with its passes where this data's run: on the device of
        an array-API input (the samples already there; the moves counted in
        :attr:`transfers`), as it is for NumPy and Dask data."""
        return qdata if self._sweeps is None else self._sweeps.qwise(qdata)

    def with_mu(self, mu):
        """The same data and target neighbours at another ``mu``."""
        new = self._like(self.X, self.targets, mu)
        new.M0 = self.M0
        return new

    def triplets(self):
        """Every impostor triplet, as ``(ids, ijl)``.

        ``ids`` (int64, sorted) numbers triplet ``(i, j = targets[i, s], l)``
        as ``(i k + s) n + l``, the order of the exact path's constraints
        and of the multipliers a certificate is given; ``ijl`` is the
        (n_triplets, 3) array of sample indices.  One row per triplet: for
        the exact path's sizes only.
        """
        n, k = self.n_samples, self.k
        parts = []
        for c in np.unique(self.codes):
            anchors = np.flatnonzero(self.codes == c)
            others = np.flatnonzero(self.codes != c)
            slot = (anchors[:, None] * k + np.arange(k)).ravel()
            slot = slot[self.targets[anchors].ravel() >= 0]
            parts.append((slot[:, None].astype(np.int64) * n + others).ravel())
        ids = np.sort(np.concatenate(parts))
        return ids, self.triplet_samples(ids)

    def triplet_samples(self, ids):
        """The (len(ids), 3) array of sample indices ``(i, j, l)`` of the
        triplets ``ids`` (:meth:`triplets`' numbering)."""
        slot, l = np.divmod(np.asarray(ids, dtype=np.int64), self.n_samples)
        i, s = np.divmod(slot, self.k)
        return np.column_stack([i, self.targets[i, s], l]).astype(np.intp)

    # -- blockwise passes ----------------------------------------------------------

    def _eig(self, M):
        """``(w, V)``: eigenvalues of ``M`` in the units of ``Xn`` and its
        eigenvectors, so that ``D_M(a, b) = sum_r w_r (z_a,r - z_b,r)^2``
        with ``Z = Xn V`` (exact for any symmetric ``M``, PSD or not)."""
        M = check_finite(M, "M", shape=(self.n_features, self.n_features))
        w, V = np.linalg.eigh(0.5 * (M + M.T))
        with np.errstate(over="ignore"):
            w = np.ldexp(w, 2 * self._e)
        if not np.all(np.isfinite(w)):
            raise ValueError("M: its distances on X overflow; M is far outside the "
                             "range of a metric of these data.")
        return w, V

    def _factor(self, M):
        """``(w, Zn)``: :meth:`_eig`'s ``w`` and ``Xn`` in its eigenvectors."""
        w, V = self._eig(M)
        return w, self._Xn @ V

    def pull(self, M):
        """``sum_{i, j ~> i} D_M(i, j) = <A_T, M>``."""
        M = check_finite(M, "M", shape=(self.n_features, self.n_features))
        return float(np.sum(self._A_n * np.ldexp(M, 2 * self._e)))

    def hinge_sum(self, M):
        """``sum_{(i, j, l)} [1 + D_M(i, j) - D_M(i, l)]_+`` over every
        impostor triplet, block by block."""
        return self._dual_pass(M, hinge_only=True)

    def objective(self, M):
        """JMLR 2009's objective ``(1 - mu) pull + mu hinges`` at ``M``."""
        return (1.0 - self.mu) * self.pull(M) + self.mu * self.hinge_sum(M)

    def value_grad(self, M):
        """``(objective, gradient)`` at ``M`` in one pass: the gradient
        ``(1 - mu) A_T + mu sum_active (C_ij - C_il)`` over the triplets
        whose hinge argument is above :data:`MARGIN_TOL` (a subgradient
        where some hinge sits on its margin)."""
        hinge, S, _, _ = self._dual_pass(M)
        obj = (1.0 - self.mu) * self.pull(M) + self.mu * hinge
        with np.errstate(over="ignore"):
            return obj, np.ldexp((1.0 - self.mu) * self._A_n - S, 2 * self._e)

    # -- the certificate -----------------------------------------------------------

    def _check_multipliers(self, ids, gamma):
        """``(ids, gamma)`` validated: sorted distinct triplet ids (int64)
        and finite multipliers clipped to ``[0, mu]``; empty when ``ids``
        is None."""
        if ids is None:
            return np.empty(0, np.int64), np.empty(0)
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        gamma = check_finite(gamma, "gamma", shape=ids.shape)
        if ids.size and (np.any(np.diff(ids) <= 0) or ids[0] < 0
                         or ids[-1] >= self.n_samples ** 2 * self.k):
            raise ValueError("ids: expected sorted, distinct triplet ids "
                             "(LMNNData.triplets).")
        return ids, np.clip(gamma, 0.0, self.mu)

    def _dual_pass(self, M, ids=None, gamma=None, hinge_only=False):
        """One blockwise pass over every triplet at ``M``
        (:func:`~cvxmetric.lmnn._sweeps.dual_rows`), where the samples are.

        The multipliers are ``gamma`` on the triplets ``ids`` and, on every
        other triplet, ``mu`` where its hinge is active (argument above
        :data:`MARGIN_TOL`), 0 otherwise.

        Returns
        -------
        hinge : float
            The sum of the hinges at ``M`` (alone with ``hinge_only``).
        S : ndarray of shape (d, d)
            ``sum gamma_ijl (C_il - C_ij)`` in the units of ``Xn``.
        lin : float
            ``sum gamma_ijl``.
        alt : tuple
            ``(S, lin)`` with the given multipliers replaced, off the
            margin, by those the sign of their hinge at ``M`` gives (a second
            valid choice: it repairs multipliers a first-order method moves
            slowly).
        """
        w, V = self._eig(M)
        n = self.n_samples
        step = _block_rows(n, max(self.k, self.n_features), self.triplet_block)
        if ids is None:
            ids, gamma = np.empty(0, np.int64), np.empty(0)
        if self._sweeps is not None:
            out = self._sweeps.dual(w, V, self.mu, step, ids, gamma, hinge_only)
        else:
            ctx = Ctx(self._Xn, self.targets, self.codes, self.k)
            cuts = block_cuts(ids, 0, n, step, self.k, n) if ids.size else None
            out = dual_rows(np, ctx, self._Xn @ V, w, self.mu, 0, n, step, ids, gamma,
                            cuts, hinge_only)
        if hinge_only:
            return float(out)
        hinge, S, lin, S_alt, lin_alt, bad = out
        if bad:
            raise ValueError("ids: some ids are not impostor triplets "
                             "(LMNNData.triplets).")
        return (float(hinge), 0.5 * (S + S.T), float(lin),
                (0.5 * (S_alt + S_alt.T), float(lin_alt)))

    def _bound(self, S, lin, upper):
        """The dual bound of the module docstring from ``S`` (units of
        ``Xn``) and ``lin``; ``upper``: the objective of a PSD point, or
        None."""
        t = loewner_scale(S, (1.0 - self.mu) * self._A_n)
        if not np.isfinite(t):
            return -np.inf
        bound = lin / t
        if upper is not None:
            bound = max(bound, lin - max(upper, 0.0) * (t - 1.0))
        return bound

    def dual_bound(self, M, ids=None, gamma=None):
        """A lower bound on LMNN's optimum (module docstring) from the
        multipliers ``gamma`` (in ``[0, mu]``, clipped) of the triplets
        ``ids`` (:meth:`triplets`' numbering) and, for every other triplet,
        the sign of its hinge at ``M``; valid for any ``M``."""
        return self._evaluate(M, ids, gamma)[1]

    def _evaluate(self, M, ids, gamma):
        """``(objective, bound, min_eig)`` at ``M``: one pass."""
        ids, gamma = self._check_multipliers(ids, gamma)
        M = 0.5 * (M + M.T)
        min_eig = float(np.linalg.eigvalsh(M)[0])
        hinge, S, lin, alt = self._dual_pass(M, ids, gamma)
        obj = (1.0 - self.mu) * self.pull(M) + self.mu * hinge
        # the objective of a PSD point bounds (1 - mu) <A_T, M*> above
        upper = obj if min_eig >= 0 else None
        bound = self._bound(S, lin, upper)
        if ids.size:
            bound = max(bound, self._bound(*alt, upper))
        return obj, bound, min_eig

    def certificate(self, M, ids=None, gamma=None, *, solver, solver_version="",
                    tolerances=None, times=None):
        """The certificate of ``M``: JMLR 2009's objective recomputed over
        every triplet, the dual bound of :meth:`dual_bound`, the PSD
        violation; judged at the package's tolerance
        (``certificate_tolerance("lmnn")``), the gap relative to
        ``max(1, |objective|)``.

        Parameters
        ----------
        M : ndarray of shape (d, d)
        ids : ndarray of int64, optional
            Sorted triplet ids (:meth:`triplets`) whose multipliers are
            given.
        gamma : ndarray, optional
            Their multipliers (Eq. 14's constraints: in ``[0, mu]``).
        solver, solver_version, tolerances, times
            What produced ``M``.

        Returns
        -------
        Certificate
        """
        tol_gap, tol_feas = certificate_tolerance("lmnn")
        obj, bound, min_eig = self._evaluate(M, ids, gamma)
        return Certificate.from_bound(
            obj, bound, max_violation=max(0.0, -min_eig), min_eig=min_eig,
            solver=solver, solver_version=solver_version, tolerances=tolerances,
            times=times, tol_gap=tol_gap, tol_feas=tol_feas)
