"""SCML in canonical form: triplets, a basis of rank-one metrics, the
objective and its certificate.

Sparse compositional metric learning (Shi, Bellet, Sha, "Sparse
compositional metric learning", AAAI 2014) learns ``M = sum_i w_i b_i
b_i^T`` over a fixed basis ``b_1 .. b_K`` with ``w >= 0``, from triplets
``(x_t, x_t+, x_t-)`` ("``x_t+`` is nearer to ``x_t`` than ``x_t-``")::

    minimise_{w >= 0}  F(w) = (1/T) sum_t [1 + D_w(x_t, x_t+) - D_w(x_t, x_t-)]_+
                              + beta ||w||_1

with ``D_w(x, z) = sum_i w_i (b_i^T (x - z))^2``.  With ``w >= 0`` the norm
is ``sum_i w_i`` and the margin argument is linear in ``w``: ``1 + c_t^T
w`` with ``c_ti = (b_i^T (x_t - x_t+))^2 - (b_i^T (x_t - x_t-))^2``, the
rows of the (T, K) matrix ``C``.  The problem is a linear program.

**The dual bound.**  Write each hinge as ``max_{a_t in [0, 1]} a_t (1 +
c_t^T w)``.  For any ``a in [0, 1]^T``, with the reduced costs ``r = beta
+ C^T a / T``, every ``w >= 0`` has

    F(w) >= mean(a) + r^T w.

When ``r >= 0`` the right-hand side is at least ``mean(a)``: a lower bound
on the optimum.  A dual point from a solver meets ``r >= 0`` only up to its
tolerance, so the bound is made rigorous in two ways and the larger is
kept: (i) ``a`` scaled by ``s = min(1, min_{q_i < -beta} beta / (-q_i))``
(``q = C^T a / T``) has ``r >= 0`` exactly, bound ``s mean(a)``; (ii) an
optimum ``w*`` has ``beta sum(w*) <= F(w*) <= min(F(0), F(w_hat)) =
min(1, F(w_hat))`` for any ``w_hat >= 0``, so over that simplex ``r^T w*
>= R min(0, min_i r_i)`` with ``R = min(1, F(w_hat)) / beta``, bound
``mean(a) + R min(0, min_i r_i)``.  At an optimal dual point (``r >= 0``)
both are ``mean(a)`` = the optimum (LP duality).  ``F >= 0`` makes 0 a
bound too.

**The basis.**  Given (a (K, d) array), or built as metric-learn 0.7
builds it, deterministically given ``random_state``: ``"triplet_diffs"``
(:func:`triplet_diffs_basis`) from the triplets, ``"lda"``
(:func:`lda_basis`) from labelled samples.
"""

import warnings

import numpy as np
from sklearn.utils import check_random_state

from .._tolerances import certificate_tolerance
from .._validation import check_finite, check_int, check_samples, check_scalar
from ..constraints import Triplets
from ..result import Certificate
from .._settings import SCML_BLOCK_ENTRIES as BLOCK_ENTRIES

__all__ = ["SCMLData", "triplet_diffs_basis", "lda_basis", "knn_triplets",
           "BASIS_NAMES", "BLOCK_ENTRIES"]

#: Basis constructions by name (metric-learn 0.7's).
BASIS_NAMES = ("triplet_diffs", "lda")


def _check_beta(beta):
    """``beta >= 0`` as a float, or a ValueError naming it."""
    return float(check_scalar(beta, "beta", low=0.0))


def _check_n_basis(n_basis, default):
    if n_basis is None:
        return default
    return check_int(n_basis, "n_basis", low=1)


def triplet_diffs_basis(X, triplets, n_basis=None, random_state=None):
    """metric-learn 0.7's ``'triplet_diffs'`` basis.

    Rounds of ``d`` triplets drawn without replacement (``random_state``):
    the eigenvectors of ``S^T S`` with a positive eigenvalue, ``S = sum
    (x - x+)(x - x+)^T - (x - x-)(x - x-)^T`` over the round, until
    ``n_basis`` (default ``80 d``) are collected.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    triplets : ndarray of int, shape (T, 3)
    n_basis : int, optional
    random_state : int, RandomState or None

    Returns
    -------
    ndarray of shape (n_basis, d)
    """
    d = X.shape[1]
    T = triplets.shape[0]
    n_basis = _check_n_basis(n_basis, 80 * d)
    if d > T:
        raise ValueError(f"triplets: the 'triplet_diffs' basis needs at least "
                         f"n_features = {d} triplets, got {T}; use another basis.")
    pos = X[triplets[:, 0]] - X[triplets[:, 1]]
    neg = X[triplets[:, 0]] - X[triplets[:, 2]]
    rng = check_random_state(random_state)
    basis = np.zeros((n_basis, d))
    filled = 0
    for _ in range(100 * n_basis + 100):
        pick = rng.choice(T, size=d, replace=False)
        S = pos[pick].T @ pos[pick] - neg[pick].T @ neg[pick]
        lam, V = np.linalg.eigh(S.T @ S)
        # metric-learn takes the *rows* of V: reproduced as it is
        new = V[lam > 0][: n_basis - filled]
        basis[filled:filled + len(new)] = new
        filled += len(new)
        if filled == n_basis:
            return basis
    raise ValueError("triplets: the 'triplet_diffs' rounds yield no basis vector "
                     "(every sampled S is zero); the triplets carry no information.")


def lda_basis(X, y, n_basis=None, random_state=None):
    """metric-learn 0.7's ``'lda'`` basis of ``SCML_Supervised``.

    K-means centres of ``X`` (``ceil(n_basis / (2 e))`` clusters, ``e =
    min(n_classes - 1, d)``, ``random_state``); around each centre, the
    nearest samples of every class at two scales (10 and 20 per class, or
    20 and 50 when ``d > 50``); the normalised scalings of an LDA of each
    neighbourhood are the basis vectors.  ``n_basis`` defaults to
    ``min(20 d, 2 n e - 1)``.

    Returns
    -------
    ndarray of shape (n_basis, d)
    """
    from sklearn.cluster import KMeans
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.neighbors import NearestNeighbors
    from sklearn.preprocessing import normalize

    labels, counts = np.unique(y, return_counts=True)
    n, d = X.shape
    num_eig = min(labels.size - 1, d)
    n_basis = _check_n_basis(n_basis, min(20 * d, 2 * n * num_eig - 1))
    if n_basis >= 2 * n * num_eig:
        raise ValueError(f"n_basis: at most {2 * n * num_eig - 1} LDA basis vectors "
                         f"from {n} samples, got {n_basis}.")
    if n_basis < labels.size:
        warnings.warn("n_basis: fewer basis vectors than classes; the metric may "
                      "discriminate poorly.", UserWarning, stacklevel=2)
    n_clusters = int(np.ceil(n_basis / (2 * num_eig)))
    centres = KMeans(n_clusters=n_clusters, n_init=10, random_state=random_state,
                     algorithm="elkan").fit(X).cluster_centers_
    scales = (20, 50) if d > 50 else (10, 20)
    k_class = np.vstack([np.minimum(counts, s) for s in scales])
    bounds = np.hstack([np.zeros((2, 1), np.int64), k_class]).cumsum(axis=1)
    idx = [np.zeros((n_clusters, k_class[s].sum()), np.int64) for s in range(2)]
    for c, label in enumerate(labels):
        members = np.flatnonzero(y == label)
        near = NearestNeighbors().fit(X[members]).kneighbors(
            centres, n_neighbors=k_class[-1, c], return_distance=False)
        for s in range(2):
            idx[s][:, bounds[s, c]:bounds[s, c + 1]] = members[near[:, :k_class[s, c]]]
    basis = np.zeros((n_basis, d))
    lda = LinearDiscriminantAnalysis()
    for s in range(2):
        for c in range(n_clusters):
            # metric-learn's slots: num_eig rows per neighbourhood
            start = (s * n_clusters + c) * num_eig
            if start >= n_basis:
                return basis
            lda.fit(X[idx[s][c]], y[idx[s][c]])
            new = normalize(lda.scalings_.T)[: min(num_eig, n_basis - start)]
            basis[start:start + len(new)] = new
    return basis


def knn_triplets(X, y, k_genuine=3, k_impostor=10):
    """metric-learn 0.7's ``Constraints.generate_knntriplets``.

    For every sample, each of its ``k_genuine`` nearest same-class samples
    with each of its ``k_impostor`` nearest other-class samples (Euclidean;
    fewer in a class too small for them, with a warning), in
    metric-learn's order.

    Returns
    -------
    ndarray of int, shape (T, 3)
    """
    from sklearn.neighbors import NearestNeighbors

    labels, counts = np.unique(y, return_counts=True)
    n = y.shape[0]
    parts = []
    for label, count in zip(labels, counts):
        kg, ki = min(k_genuine, count - 1), min(k_impostor, n - count)
        if kg < k_genuine or ki < k_impostor:
            warnings.warn(f"y: class {label!r} has {count} samples: {kg} genuine and "
                          f"{ki} impostor neighbours each (asked {k_genuine} and "
                          f"{k_impostor}).", UserWarning, stacklevel=2)
        gen = np.flatnonzero(y == label)
        imp = np.flatnonzero(y != label)
        if kg == 0 or ki == 0:
            continue
        g = gen[NearestNeighbors().fit(X[gen]).kneighbors(
            n_neighbors=kg, return_distance=False)]
        i = imp[NearestNeighbors().fit(X[imp]).kneighbors(
            X[gen], n_neighbors=ki, return_distance=False)]
        # metric-learn's comb(): anchor-major, genuine then impostor
        a = np.repeat(gen, kg * ki)
        b = np.repeat(g.reshape(-1), ki)
        c = np.tile(i, (1, kg)).reshape(-1)
        parts.append(np.column_stack([a, b, c]))
    if not parts:
        raise ValueError("y: no sample has both a same-class and an other-class "
                         "neighbour; no triplet can be formed.")
    return np.concatenate(parts).astype(np.intp)


class SCMLData:
    """SCML's data: triplets, basis and ``beta`` (module docstring).

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        Finite.
    triplets : array_like of int, shape (n_triplets, 3)
        ``(t, t+, t-)`` indices into ``X``; at least one; a triplet whose
        two pairs are the same points is refused (its hinge is 1 whatever
        ``w``).
    basis : {"triplet_diffs"} or array_like of shape (n_basis, n_features)
        The basis vectors (rows), or metric-learn's construction from the
        triplets (:func:`triplet_diffs_basis`).
    beta : float >= 0, default=1e-5
        Weight of ``||w||_1``.
    n_basis : int, optional
        Size of a constructed basis (metric-learn's default when None).
    random_state : int, RandomState or None
        Seeds a constructed basis.

    Attributes
    ----------
    X, triplets, basis, beta
    C : ndarray of shape (n_triplets, n_basis)
        ``c_ti = (b_i^T (x_t - x_t+))^2 - (b_i^T (x_t - x_t-))^2``.
    """

    def __init__(self, X, triplets, basis="triplet_diffs", beta=1e-5, *, n_basis=None,
                 random_state=None):
        X = check_samples(X, "X")
        if len(np.asarray(triplets, dtype=object).reshape(-1)) == 0:
            raise ValueError("triplets: none given; SCML needs at least one triplet.")
        self.triplets = Triplets.create(X, triplets).indices
        self.X = X
        self.beta = _check_beta(beta)
        if isinstance(basis, str):
            if basis not in ("triplet_diffs",):
                raise ValueError(f"basis: expected 'triplet_diffs' or an array of "
                                 f"shape (n_basis, {X.shape[1]}), got {basis!r}"
                                 + (" ('lda' needs class labels: "
                                    "SCMLData.from_labels)" if basis == "lda" else "")
                                 + ".")
            basis = triplet_diffs_basis(X, self.triplets, n_basis, random_state)
        self.basis = self._check_basis(basis, X.shape[1])
        self._C = None

    @staticmethod
    def _check_basis(basis, d):
        if isinstance(basis, str) or basis is None:
            raise ValueError(f"basis: expected one of {BASIS_NAMES} or an array of "
                             f"shape (n_basis, {d}), got {basis!r}.")
        B = check_finite(basis, "basis", ndim=2)
        if B.shape[1] != d or B.shape[0] < 1:
            raise ValueError(f"basis: expected shape (n_basis >= 1, {d}), got "
                             f"{B.shape}.")
        return B

    @classmethod
    def from_labels(cls, X, y, k_genuine=3, k_impostor=10, basis="lda", beta=1e-5, *,
                    n_basis=None, random_state=None):
        """``SCML_Supervised``'s data: :func:`knn_triplets` and the basis
        ``"lda"`` (:func:`lda_basis`), ``"triplet_diffs"`` or an array.

        Triplets whose two pairs are the same points (duplicate samples in
        two classes) are dropped: their hinge does not depend on ``w``.
        """
        from ..constraints import informative

        X = check_samples(X, "X")
        y = np.asarray(y)
        triplets = knn_triplets(X, y, k_genuine, k_impostor)
        useful = informative(X, triplets)
        if not np.any(useful):
            raise ValueError("X: every neighbour triplet compares a point with an "
                             "identical one; the data carry no information.")
        if isinstance(basis, str) and basis == "lda":
            basis = lda_basis(X, y, n_basis, random_state)
        return cls(X, triplets[useful], basis, beta, n_basis=n_basis,
                   random_state=random_state)

    def with_beta(self, beta):
        """The same triplets and basis at another ``beta`` (no recomputation)."""
        out = object.__new__(SCMLData)
        out.__dict__.update(self.__dict__)
        out.beta = _check_beta(beta)
        return out

    # -- shapes ----------------------------------------------------------------

    @property
    def n_triplets(self):
        return self.triplets.shape[0]

    @property
    def n_basis(self):
        return self.basis.shape[0]

    @property
    def n_features(self):
        return self.X.shape[1]

    @property
    def C(self):
        """The (n_triplets, n_basis) matrix of distance differences,
        computed on first use; the solvers and the certificate use blocks
        of it (:meth:`block`, :meth:`margins`, :meth:`reduced_costs`)."""
        if self._C is None:
            self._C = self.block()
        return self._C

    @property
    def XB(self):
        """The projections ``X B^T`` (n_samples, n_basis)."""
        if getattr(self, "_XB", None) is None:
            self._XB = self.X @ self.basis.T
        return self._XB

    def block(self, rows=None, cols=None):
        """``C[rows][:, cols]`` from the projections (default: all)."""
        if self._C is not None:
            C = self._C if rows is None else self._C[rows]
            return C if cols is None else C[:, cols]
        XB = self.XB if cols is None else self.XB[:, cols]
        t = self.triplets if rows is None else self.triplets[rows]
        near = XB[t[:, 0]] - XB[t[:, 1]]
        far = XB[t[:, 0]] - XB[t[:, 2]]
        out = near * near - far * far
        if not np.all(np.isfinite(out)):
            raise ValueError("X: the squared projections on the basis overflow; "
                             "rescale X or the basis.")
        return out

    def _pair_squares(self, pairs, cols):
        """``(b_i^T (x - z))^2`` for the pairs ``pairs`` and the basis
        vectors ``cols`` (len(pairs), len(cols))."""
        XB = self.XB[:, cols]
        diff = XB[pairs[:, 0]] - XB[pairs[:, 1]]
        out = diff * diff
        if not np.all(np.isfinite(out)):
            raise ValueError("X: the squared projections on the basis overflow; "
                             "rescale X or the basis.")
        return out

    @property
    def pairs(self):
        """The distinct pairs the triplets compare: ``(pairs, near, far)``,
        ``pairs`` a (P, 2) array of sample indices and ``near``, ``far`` the
        row of ``pairs`` of each triplet's ``(t, t+)`` and ``(t, t-)``.
        Triplets share pairs (metric-learn's k-NN triplets: ``n k_g``
        near and ``n k_i`` far pairs for ``n k_g k_i`` triplets), so a
        distance per pair is cheaper than a row of ``C`` per triplet."""
        if getattr(self, "_pairs", None) is None:
            t, n = self.triplets, self.X.shape[0]
            codes = np.concatenate([t[:, 0] * n + t[:, 1], t[:, 0] * n + t[:, 2]])
            uniq, inv = np.unique(codes, return_inverse=True)
            T = self.n_triplets
            self._pairs = (np.column_stack([uniq // n, uniq % n]), inv[:T], inv[T:])
        return self._pairs

    def margins(self, w):
        """``1 + C w`` over every triplet: ``1 + D_w(t, t+) - D_w(t, t-)``
        from the distances ``D_w`` of the distinct pairs (:attr:`pairs`),
        over the columns where ``w != 0``, or through ``M`` when they
        outnumber the features (per block of pairs: ``C`` itself is never
        formed)."""
        w = self.check_weights(w)
        nz = np.flatnonzero(w)
        if nz.size == 0:
            return np.ones(self.n_triplets)
        if self._C is not None:
            return 1.0 + self._C[:, nz] @ w[nz]
        pairs, near, far = self.pairs
        # more nonzero weights than features: through M = B^T diag(w) B
        # (d^2 per pair rather than nnz(w))
        dense = nz.size > self.n_features
        Z = self.X if dense else self.XB[:, nz]
        M = self.metric(w) if dense else None
        dist = np.empty(pairs.shape[0])
        step = max(1, BLOCK_ENTRIES // Z.shape[1])
        for s in range(0, pairs.shape[0], step):
            p = pairs[s:s + step]
            diff = Z[p[:, 0]] - Z[p[:, 1]]
            dist[s:s + step] = np.sum((diff @ M) * diff, axis=1) if dense else (
                (diff * diff) @ w[nz])
        if not np.all(np.isfinite(dist)):
            raise ValueError("X: the squared projections on the basis overflow; "
                             "rescale X or the basis.")
        return 1.0 + (dist[near] - dist[far])

    def reduced_costs(self, a):
        """``beta + C^T a / T`` from the triplets where ``a != 0``: the
        multipliers summed per distinct pair (:attr:`pairs`), ``+`` on the
        near pairs and ``-`` on the far ones."""
        a = np.asarray(a, dtype=float)
        if self._C is not None:
            nz = np.flatnonzero(a)
            return self.beta + (a[nz] @ self._C[nz]) / self.n_triplets
        pairs, near, far = self.pairs
        P = pairs.shape[0]
        weight = np.bincount(near, a, P) - np.bincount(far, a, P)
        nz = np.flatnonzero(weight)
        q = np.zeros(self.n_basis)
        step = max(1, BLOCK_ENTRIES // self.n_basis)
        for s in range(0, nz.size, step):
            rows = nz[s:s + step]
            q += weight[rows] @ self._pair_squares(pairs[rows], slice(None))
        return self.beta + q / self.n_triplets

    # -- the metric ------------------------------------------------------------

    def check_weights(self, w, name="w"):
        """``w`` as a finite (n_basis,) float array, or a ValueError naming it."""
        return check_finite(w, name, shape=(self.n_basis,))

    def metric(self, w):
        """``M = sum_i w_i b_i b_i^T`` (d, d)."""
        w = self.check_weights(w)
        return (self.basis.T * w) @ self.basis

    def objective(self, w):
        """``F(w)``: the mean hinge plus ``beta ||w||_1``."""
        w = self.check_weights(w)
        hinge = np.maximum(0.0, self.margins(w))
        return float(hinge.mean() + self.beta * np.sum(np.abs(w)))

    def objective_of_metric(self, M):
        """``F`` from the metric alone, for a basis of unit-norm rows.

        The hinges depend on ``w`` through ``M`` only, and with unit-norm
        rows ``sum_i w_i = tr(M)``; so ``F(w) = mean hinge(M) + beta
        tr(M)`` for every ``w >= 0`` with ``M = B^T diag(w) B``.

        Raises
        ------
        ValueError
            Naming ``basis`` when a row is not of unit norm.
        """
        if not np.allclose(np.linalg.norm(self.basis, axis=1), 1.0, rtol=0, atol=1e-12):
            raise ValueError("basis: the objective of a metric alone needs unit-norm "
                             "basis rows (then ||w||_1 = tr(M)).")
        M = check_finite(M, "M", shape=(self.n_features, self.n_features))
        i, j, k = self.triplets.T
        near, far = self.X[i] - self.X[j], self.X[i] - self.X[k]
        D = np.einsum("td,de,te->t", near, M, near) - np.einsum("td,de,te->t", far, M, far)
        return float(np.maximum(0.0, 1.0 + D).mean() + self.beta * np.trace(M))

    # -- the certificate -------------------------------------------------------

    def dual_bound(self, a, upper=None):
        """The rigorous lower bound of the module docstring at the hinge
        multipliers ``a`` (clipped into ``[0, 1]``).

        Parameters
        ----------
        a : array_like of shape (n_triplets,)
        upper : float, optional
            ``F(w_hat)`` of some ``w_hat >= 0`` (default: ``F(0) = 1``).

        Returns
        -------
        float
        """
        a = np.clip(check_finite(a, "a", shape=(self.n_triplets,)), 0.0, 1.0)
        r = self.reduced_costs(a)
        q = r - self.beta
        lin = float(a.mean())
        neg = q < -self.beta
        if not np.any(neg):
            return lin
        # (i) a scaled into the dual's feasible set
        s = float(np.min(self.beta / -q[neg])) if self.beta > 0 else 0.0
        bound = s * lin
        # (ii) the optimum lies in {w >= 0, sum(w) <= R}
        if self.beta > 0:
            R = min(1.0, np.inf if upper is None else max(upper, 0.0)) / self.beta
            bound = max(bound, lin + R * float(np.min(r)))
        return max(bound, 0.0)

    def certificate(self, w, a=None, *, solver, solver_version="", tolerances=None,
                    times=None):
        """The certificate of ``w``: ``F(w)`` with ``||w||_1``, the dual bound
        at ``a`` (``-inf`` without it), the violation ``max(0, -min w)``;
        judged at ``certificate_tolerance("scml")``.

        Returns
        -------
        Certificate
        """
        w = self.check_weights(w)
        tol_gap, tol_feas = certificate_tolerance("scml")
        obj = self.objective(w)
        violation = max(0.0, -float(np.min(w)))
        upper = obj if violation == 0.0 else None
        bound = -np.inf if a is None else self.dual_bound(a, upper)
        min_eig = float(np.linalg.eigvalsh(self.metric(w))[0])
        return Certificate.from_bound(
            obj, bound, max_violation=violation, min_eig=min_eig, solver=solver,
            solver_version=solver_version, tolerances=tolerances, times=times,
            tol_gap=tol_gap, tol_feas=tol_feas)
