"""Qwise, structural: the 1-slack formulation of Sec. 4.4 (Eq. 16-17).

Law, Thome and Cord (2016), "Learning a distance metric from relative
comparisons between quadruplets of images", Sec. 4.4, following Metric
Learning to Rank (McFee and Lanckriet, "Metric learning to rank") and the
1-slack cutting-plane method (Joachims, Finley and Yu, "Cutting-plane
training of structural SVMs").

The problem (Eq. 16, 1-slack form)
----------------------------------
A set ``X`` of queries ``x``; each has relevant items ``C_x^+`` and
non-relevant items ``C_x^-`` (``P_x`` and ``N_x`` of them).  Every item
``c`` of query ``x`` has a difference vector ``u_c`` and the feature map
``phi(x, c) = -u_c u_c^T``, so ``<M, phi(x, c)> = -d_c`` with
``d_c = u_c^T M u_c`` the squared distance ``D2_M``::

    minimise_{M PSD, xi >= 0}  Omega(M) + C xi
    subject to, for every choice of one ranking y_x per query,
        (1/|X|) sum_x <M, psi(x, y_x*) - psi(x, y_x)>
            >= (1/|X|) sum_x Delta(y_x*, y_x) - xi

with ``Omega(M) = tr(M)`` (``"trace"``, MLR's choice) or
``0.5 ||M||_F^2`` (``"frobenius"``), and the partial-order feature map of
Eq. 17::

    psi(x, y) = sum_{i in C_x^+} sum_{j in C_x^-} y_ij (phi(x, c_i) - phi(x, c_j)) / (P_x N_x).

``y_x*`` ranks every relevant item ahead of every non-relevant one
(``y*_ij = +1``).  Writing ``f_ij = (1 - y_ij) / 2`` (1 when ``y`` orders
the pair wrongly, 1/2 for a tie, 0 when right)::

    <M, psi(x, y*) - psi(x, y)> = sum_ij 2 f_ij (d_j - d_i) / (P_x N_x)
    Delta(y*, y)                = sum_ij f_ij / (P_x N_x)        (AUC loss)

so every constraint is linear in the per-pair flips ``f``, and the most
violated ranking flips the pair ``(i, j)`` exactly when
``1 - 2 (d_j - d_i) > 0``, i.e. ``2 (d_j - d_i) < 1``.  Such a flip set is a
ranking (sort the items by ``d_i + 1/4`` for relevant, ``d_j - 1/4`` for
non-relevant ones), so the separation oracle is a sort.  Its value is the
closed form of the 1-slack problem::

    Eq. 16 = min_{M PSD} Omega(M) + C H(M),
    H(M)   = (1/|X|) sum_x (1/(P_x N_x)) sum_{i in C_x^+, j in C_x^-}
                 max(0, 1 - 2 (d_j - d_i)),

a weighted sum of Qwise hinges with margin 1/2 and weight
``2 C / (|X| P_x N_x)``.

Readings (which tuples are queries and items)
---------------------------------------------
* ``"quadruplets"``: each distinct unordered pair ``x = (i, j)`` that is the
  first pair of a quadruplet ``(i, j, k, l)`` is a query; ``C_x^+ = {x}``,
  ``C_x^-`` the distinct pairs ``(k, l)`` of its quadruplets;
  ``phi = phi_{R^d_2}``, ``u_c = x_{c1} - x_{c2}``.
* ``"triplets"``: each anchor ``a`` of triplets ``(a, b, c)`` (meaning
  ``D(a, b) < D(a, c)``) is a query, ``C_a^+`` its distinct ``b``,
  ``C_a^-`` its distinct ``c``; ``phi = phi_{R^d}``, ``u_c = x_a - x_c``.
  Every positive is compared with every negative of the anchor (MLR), not
  only within the given triplets.
* ``"pairs"``: one query, ``C^+ = S`` (similar pairs), ``C^- = D``
  (dissimilar pairs), ``phi = phi_{R^d_2}``.

Items are sets: a repeated tuple does not count twice.

Solvers
-------
* :class:`~cvxmetric.qwise_structural.StructuralCuttingPlane` (:mod:`.fast`)
  -- the 1-slack cutting-plane method: a master problem in CVXPY over the
  cuts found so far (Clarabel, SCS as fallback, certified), and the
  sort-based oracle above (:meth:`StructuralData.oracle`).  Certified: the
  master's Lagrange multipliers give a lower bound on Eq. 16 (every cut is a
  valid constraint of Eq. 16), the closed form ``Omega(M) + C H(M)`` at the
  master's ``M`` an upper bound.
* :func:`~cvxmetric.qwise_structural.solve_structural_fast` (:mod:`.fast`)
  -- the closed form as a weighted Qwise Eq. 8 problem, by the Qwise dual
  solver.
* :func:`~cvxmetric.qwise_structural.solve_exact` (:mod:`.exact`) -- the
  closed form as one CVXPY problem (one slack per hinge), certified by its
  duality gap.
* :func:`~cvxmetric.qwise_structural.solve_structural_enumerated`
  (:mod:`.exact`) -- Eq. 16 with every constraint
  written out (one per combination of rankings): exponentially many, for
  tiny instances only; the reference that ties the closed form to Eq. 16.
"""

from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np

from .._linalg import PairOperator
from .._validation import (
    check_instance,
    check_option,
    check_pair_labels,
    check_samples,
    check_scalar,
)
from ..constraints import Quadruplets, Triplets, informative
from ..qwise._problem import distinct_pairs
from ..result import Certificate

__all__ = ["StructuralData", "Cut", "STRUCTURAL_REGULARIZERS", "READINGS"]

#: ``Omega(M)``: ``tr(M)`` or ``0.5 ||M||_F^2``.
STRUCTURAL_REGULARIZERS = ("trace", "frobenius")

#: Which tuples are queries and items (see the module docstring).
READINGS = ("quadruplets", "triplets", "pairs")


# ---------------------------------------------------------------------------
# Data and oracle
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Cut:
    """One 1-slack constraint ``<M, G> >= delta - xi`` of Eq. 16.

    Attributes
    ----------
    G : ndarray of shape (d, d)
        ``(1/|X|) sum_x (psi(x, y_x*) - psi(x, y_x))``, symmetric.
    delta : float
        ``(1/|X|) sum_x Delta(y_x*, y_x)``.
    violation : float
        ``delta - <M, G>`` at the ``M`` the oracle was called with: for the
        most violated constraint, ``H(M)``.
    n_flipped : int
        Number of (relevant, non-relevant) pairs the ranking orders wrongly.
    """

    G: np.ndarray
    delta: float
    violation: float
    n_flipped: int


@dataclass(frozen=True, eq=False)
class StructuralData:
    """Eq. 16 on one data set: queries, items and the hyperparameters.

    Build with :meth:`from_quadruplets`, :meth:`from_triplets` or
    :meth:`from_pairs`.  Items are stored grouped by query, relevant items
    first; per-item arrays have one entry per (query, item).

    Attributes
    ----------
    X : ndarray of shape (n_samples, n_features)
    reading : {"quadruplets", "triplets", "pairs"}
    regularizer : {"trace", "frobenius"}
    C : float > 0
    op : PairOperator
        Over the distinct unordered pairs whose difference vectors ``u_c``
        the items use.
    item_pair : ndarray of int, shape (n_items,)
        Index into ``op``'s pairs.
    item_query : ndarray of int, shape (n_items,)
        Query of each item, non-decreasing.
    item_relevant : ndarray of bool, shape (n_items,)
    n_relevant, n_irrelevant : ndarray of int, shape (n_queries,)
        ``P_x`` and ``N_x``.
    item_weight : ndarray of shape (n_items,)
        ``1 / (|X| P_x N_x)`` of the item's query.
    """

    X: np.ndarray
    reading: str
    regularizer: str
    C: float
    op: PairOperator
    item_pair: np.ndarray
    item_query: np.ndarray
    item_relevant: np.ndarray
    n_relevant: np.ndarray
    n_irrelevant: np.ndarray
    item_weight: np.ndarray
    _cache: dict = field(default_factory=dict, repr=False)

    # -- construction --------------------------------------------------------

    @classmethod
    def _build(cls, X, reading, regularizer, C, query, rel_pairs, rel_query,
               irr_pairs, irr_query):
        """Common constructor: ``*_pairs`` (k, 2) index pairs, ``*_query``
        (k,) query keys; duplicates are removed, queries renumbered."""
        check_option(regularizer, "regularizer", STRUCTURAL_REGULARIZERS)
        C = check_scalar(C, "C", low=0, low_inclusive=False)
        uniq, pinv = distinct_pairs(np.vstack([rel_pairs, irr_pairs]), X.shape[0])
        n_pairs = len(uniq)
        qkeys, qinv = np.unique(np.concatenate([rel_query, irr_query]),
                                return_inverse=True)
        relevant = np.zeros(len(pinv), dtype=bool)
        relevant[:len(rel_pairs)] = True
        # one item per distinct (query, pair, relevance)
        key = (qinv.astype(np.int64) * n_pairs + pinv) * 2 + ~relevant
        key = np.unique(key)
        item_relevant = (key % 2) == 0
        rest = key // 2
        item_pair = (rest % n_pairs).astype(np.intp)
        item_query = (rest // n_pairs).astype(np.intp)
        Q = len(qkeys)
        P = np.bincount(item_query[item_relevant], minlength=Q)
        N = np.bincount(item_query[~item_relevant], minlength=Q)
        if np.any(P == 0) or np.any(N == 0):  # pragma: no cover - by construction
            raise ValueError(f"{reading}: a query without relevant or "
                             f"non-relevant items.")
        weight = 1.0 / (Q * P[item_query] * N[item_query].astype(float))
        return cls(X=X, reading=reading, regularizer=regularizer, C=C,
                   op=PairOperator(X, uniq), item_pair=item_pair,
                   item_query=item_query, item_relevant=item_relevant,
                   n_relevant=P, n_irrelevant=N, item_weight=weight)

    @classmethod
    def from_quadruplets(cls, quadruplets, *, regularizer="trace", C=1.0):
        """Quadruplet reading: the query is the first pair ``(i, j)``.

        Parameters
        ----------
        quadruplets : Quadruplets
            ``(i, j, k, l)``: ``D(i, j)`` should be below ``D(k, l)``; the
            margins are not used (Eq. 16's margin is the AUC loss).
        regularizer : {"trace", "frobenius"}
        C : float > 0
        """
        check_instance(quadruplets, Quadruplets, "quadruplets")
        X, q = quadruplets.X, quadruplets.indices.astype(np.int64)
        n = X.shape[0]
        qkey = np.minimum(q[:, 0], q[:, 1]) * n + np.maximum(q[:, 0], q[:, 1])
        return cls._build(X, "quadruplets", regularizer, C, qkey,
                          q[:, :2], qkey, q[:, 2:], qkey)

    @classmethod
    def from_triplets(cls, triplets, *, regularizer="trace", C=1.0):
        """Triplet reading: the anchor ``a`` of ``(a, b, c)`` is the query.

        Parameters
        ----------
        triplets : Triplets
            ``(a, b, c)``: ``D(a, b)`` should be below ``D(a, c)``.
        regularizer : {"trace", "frobenius"}
        C : float > 0
        """
        check_instance(triplets, Triplets, "triplets")
        t = triplets.indices
        a = t[:, 0]
        return cls._build(triplets.X, "triplets", regularizer, C, a,
                          t[:, [0, 1]], a, t[:, [0, 2]], a)

    @classmethod
    def from_pairs(cls, X, pairs, labels, *, regularizer="trace", C=1.0):
        """Pairwise reading: one query, ``C^+ = S``, ``C^- = D``.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)
        pairs : array_like of int, shape (n_pairs, 2)
        labels : array_like of shape (n_pairs,)
            +1 (similar, relevant) or -1 (dissimilar); both must occur.
        regularizer : {"trace", "frobenius"}
        C : float > 0
        """
        from .._validation import check_indices

        X = check_samples(X)
        idx = check_indices(pairs, "pairs", X.shape[0], width=2)
        y = check_pair_labels(labels, idx.shape[0], "labels")
        if np.all(y == 1) or np.all(y == -1):
            raise ValueError("labels: the pairwise reading needs both similar "
                             "(+1) and dissimilar (-1) pairs.")
        S, D = idx[y == 1], idx[y == -1]
        return cls._build(X, "pairs", regularizer, C, np.zeros(1, int),
                          S, np.zeros(len(S), int), D, np.zeros(len(D), int))

    def with_params(self, *, regularizer=None, C=None):
        """The same queries with other hyperparameters (no copy of the data)."""
        regularizer = self.regularizer if regularizer is None else regularizer
        check_option(regularizer, "regularizer", STRUCTURAL_REGULARIZERS)
        C = self.C if C is None else check_scalar(C, "C", low=0, low_inclusive=False)
        return StructuralData(
            X=self.X, reading=self.reading, regularizer=regularizer, C=C,
            op=self.op, item_pair=self.item_pair, item_query=self.item_query,
            item_relevant=self.item_relevant, n_relevant=self.n_relevant,
            n_irrelevant=self.n_irrelevant, item_weight=self.item_weight,
            _cache=self._cache)

    # -- sizes ---------------------------------------------------------------

    @property
    def n_features(self):
        return self.X.shape[1]

    @property
    def n_queries(self):
        return len(self.n_relevant)

    @property
    def n_items(self):
        return len(self.item_pair)

    @property
    def n_terms(self):
        """Number of hinges ``sum_x P_x N_x`` of the closed form."""
        return int(np.sum(self.n_relevant.astype(np.int64) * self.n_irrelevant))

    # -- primal --------------------------------------------------------------

    def distances(self, M):
        """``d_p = u_p^T M u_p`` of every distinct pair, shape (n_pairs,)."""
        return self.op.sqdist(0.5 * (M + M.T))

    def regularizer_value(self, M):
        """``Omega(M)``."""
        if self.regularizer == "trace":
            return float(np.trace(M))
        return 0.5 * float(np.sum(M * M))

    def flips(self, dist):
        """The most violated ranking at distances ``dist`` (the oracle).

        For each relevant item ``i``: ``n_i``, the number of non-relevant
        ``j`` of its query with ``2 (d_j - d_i) < 1``; for each
        non-relevant ``j``: ``m_j``, the number of relevant ``i`` with the
        same condition.  One ``np.lexsort`` of all items by (query, shifted
        distance, relevance) and two cumulative sums; no loop over queries.

        Returns
        -------
        counts : ndarray of int, shape (n_items,)
            ``n_i`` on relevant items, ``m_j`` on non-relevant items.
        """
        rel = self.item_relevant
        d = dist[self.item_pair]
        # a relevant item at d_i + 1/2 ahead of a non-relevant one at d_j
        # exactly when d_j < d_i + 1/2; ties (hinge exactly 0) are not flips:
        # relevance sorts relevant first among equal values
        v = np.where(rel, d + 0.5, d)
        order = np.lexsort((~rel, v, self.item_query))
        rel_s = rel[order]
        q_s = self.item_query[order]
        cum_irr = np.cumsum(~rel_s)
        cum_rel = np.cumsum(rel_s)
        sizes = self.n_relevant + self.n_irrelevant
        ends = np.cumsum(sizes)
        starts = ends - sizes
        base_irr = np.where(starts > 0, cum_irr[starts - 1], 0)
        base_rel = np.where(starts > 0, cum_rel[starts - 1], 0)
        counts_s = np.where(
            rel_s,
            cum_irr - base_irr[q_s],  # non-relevant items sorted before
            self.n_relevant[q_s] - (cum_rel - base_rel[q_s]),  # relevant after
        )
        counts = np.empty_like(counts_s)
        counts[order] = counts_s
        return counts

    def oracle(self, M, *, dist=None):
        """The most violated constraint of Eq. 16 at ``M`` (separation oracle).

        Parameters
        ----------
        M : ndarray of shape (d, d)
        dist : ndarray, optional
            :meth:`distances` of ``M`` when already known.

        Returns
        -------
        Cut
            ``G = Phi^T diag(g) Phi`` with pair weights
            ``g = 2 w m_j`` on non-relevant and ``-2 w n_i`` on relevant
            items (``w = 1 / (|X| P_x N_x)``), summed per distinct pair;
            ``delta = sum_i w n_i``; ``violation = delta - <M, G> = H(M)``.
        """
        if dist is None:
            dist = self.distances(M)
        counts = self.flips(dist)
        w = self.item_weight * counts
        delta = float(np.sum(w[self.item_relevant]))
        g = 2.0 * np.bincount(self.item_pair, np.where(self.item_relevant, -w, w),
                              minlength=self.op.n_pairs)
        violation = delta - float(g @ dist)
        G = self.op.gram(g)
        G = 0.5 * (G + G.T)
        return Cut(G=G, delta=delta, violation=max(violation, 0.0),
                   n_flipped=int(np.sum(counts[self.item_relevant])))

    def loss(self, M, *, dist=None):
        """``H(M)``: the slack Eq. 16 needs at ``M`` (sum of hinges)."""
        if dist is None:
            dist = self.distances(M)
        counts = self.flips(dist)
        w = self.item_weight * counts
        g = np.where(self.item_relevant, -w, w)
        val = float(np.sum(w[self.item_relevant])) - 2.0 * float(g @ dist[self.item_pair])
        return max(val, 0.0)

    def objective(self, M, *, dist=None):
        """Eq. 16's value at ``M``: ``Omega(M) + C H(M)``."""
        return self.regularizer_value(M) + self.C * self.loss(M, dist=dist)

    # -- the hinges of the closed form ------------------------------------

    def terms(self):
        """Every (relevant, non-relevant) pair of every query.

        Returns
        -------
        rel_pair, irr_pair : ndarray of int, shape (n_terms,)
            Index into ``op``'s pairs of ``c_i`` and ``c_j``.
        weight : ndarray of shape (n_terms,)
            ``1 / (|X| P_x N_x)``.
        query : ndarray of int, shape (n_terms,)
        """
        if "terms" not in self._cache:
            order = np.lexsort((~self.item_relevant, self.item_query))
            rel_items = order[self.item_relevant[order]]  # grouped by query
            irr_items = order[~self.item_relevant[order]]
            q_rel = self.item_query[rel_items]
            N = self.n_irrelevant.astype(np.int64)
            irr_start = np.cumsum(N) - N
            reps = N[q_rel]
            i_item = np.repeat(rel_items, reps)
            q_t = np.repeat(q_rel, reps)
            first = np.cumsum(reps) - reps
            within = np.arange(len(i_item)) - np.repeat(first, reps)
            j_item = irr_items[irr_start[q_t] + within]
            self._cache["terms"] = (self.item_pair[i_item], self.item_pair[j_item],
                                    self.item_weight[i_item], q_t)
        return self._cache["terms"]

    def as_qwise(self):
        """The closed form as weighted Qwise data (Eq. 8 with per-hinge
        weights): term ``t = (x, i, j)`` is the quadruplet (pair of ``c_i``,
        pair of ``c_j``) with margin 1/2 and weight ``2 C w_t``, since
        ``C w_t [1 - 2 (d_j - d_i)]_+ = 2 C w_t [1/2 + d_i - d_j]_+``.

        Returns
        -------
        qdata : QwiseData
            Over the terms whose hinge depends on ``M`` (the two pairs
            differ and are not both of zero length).
        keep : ndarray of bool, shape (n_terms,)
            Which terms those are; the others are constants.
        """
        from ..qwise._problem import QwiseData

        i, j, w, _ = self.terms()
        op = self.op
        idx = np.column_stack([op.i[i], op.j[i], op.i[j], op.j[j]])
        keep = (i != j) & informative(self.X, idx)
        quads = Quadruplets(self.X, idx[keep], np.full(int(keep.sum()), 0.5))
        qdata = QwiseData.from_sets(quads, regularizer=self.regularizer,
                                    C_q=2.0 * self.C, weights=w[keep])
        return qdata, keep

    def scale_error(self):
        """The ValueError (naming ``X``) of data whose scale puts the
        closed form's hinge weight outside :data:`~cvxmetric.qwise.C_RANGE`
        in scale-free units, or None.

        Eq. 16 is not invariant to scaling ``X``: ``M`` scales like
        ``1 / |X|^2`` and the regulariser against the hinges like ``|X|^-2``
        (trace) or ``|X|^-4`` (Frobenius).  Out of that range the fast path
        refuses the data up front; the conic paths try them and, when they
        fail, report this cause instead of the conic solver's error.
        """
        try:
            self.as_qwise()
        except ValueError as exc:
            if str(exc).startswith("X:"):
                return exc
        return None

    def hinge_arguments(self, dist):
        """``1 - 2 (d_j - d_i)`` per term (:meth:`terms` order)."""
        i, j, _, _ = self.terms()
        return 1.0 - 2.0 * (dist[j] - dist[i])

    # -- dual ----------------------------------------------------------------

    def dual_bound(self, S, lin, upper=None):
        """A lower bound on Eq. 16 from aggregated multipliers.

        For multipliers ``lambda_k >= 0`` of cuts ``(G_k, delta_k)`` with
        ``sum_k lambda_k <= C`` (or hinge multipliers ``0 <= alpha_t <= C w_t``,
        the same thing cut by cut), ``S = sum_k lambda_k G_k`` and
        ``lin = sum_k lambda_k delta_k``, the Lagrangian dual value is

        * ``"frobenius"``: ``lin - 0.5 ||Pi_+(S)||_F^2``;
        * ``"trace"``: ``lin`` if ``S <= I``; otherwise two valid repairs,
          the larger taken: scaling (``lin / t`` with ``t = lambda_max(S)``)
          and restriction (an optimum has ``tr(M*) <= upper`` for ``upper``
          the objective of any PSD point, so ``lin - upper (t - 1)``).
        """
        S = 0.5 * (S + S.T)
        if self.regularizer == "frobenius":
            w = np.linalg.eigvalsh(S)
            return float(lin) - 0.5 * float(np.sum(np.maximum(w, 0.0) ** 2))
        t = max(1.0, float(np.linalg.eigvalsh(S)[-1]))
        bound = float(lin) / t
        if upper is not None and np.isfinite(upper):
            bound = max(bound, float(lin) - max(float(upper), 0.0) * (t - 1.0))
        return bound

    def hinge_dual_bound(self, alpha, M=None, upper=None, *, dist=None):
        """Lower bound from hinge multipliers ``alpha`` (``terms`` order).

        ``alpha`` is clipped to ``[0, C w_t]``; with ``M``, the bound of the
        multipliers made consistent with ``M`` (``C w_t`` where the hinge is
        active, 0 where it is inactive) is also computed and the larger
        bound returned (both are valid).
        """
        i, j, w, _ = self.terms()
        cap = self.C * w
        alpha = np.clip(np.asarray(alpha, dtype=float), 0.0, cap)

        def bound(a):
            g = 2.0 * (np.bincount(j, a, self.op.n_pairs) - np.bincount(i, a, self.op.n_pairs))
            return self.dual_bound(self.op.gram(g), float(np.sum(a)), upper)

        best = bound(alpha)
        if M is not None:
            if dist is None:
                dist = self.distances(M)
            arg = self.hinge_arguments(dist)
            alpha2 = np.where(arg > 1e-9, cap, np.where(arg < -1e-9, 0.0, alpha))
            if np.any(alpha2 != alpha):
                best = max(best, bound(alpha2))
        return best

    def certificate(self, M, bound, *, solver, solver_version="", tolerances=None,
                    times=None):
        """Certificate of ``M`` (made PSD by the caller) against ``bound``."""
        min_eig = float(np.linalg.eigvalsh(0.5 * (M + M.T))[0])
        obj = self.objective(M)
        return Certificate.from_bound(
            obj, bound, max_violation=max(0.0, -min_eig), min_eig=min_eig,
            solver=solver, solver_version=solver_version, tolerances=tolerances,
            times=times)


def _omega_expr(regularizer, M):
    """``Omega(M)`` as a CVXPY expression."""
    if regularizer == "trace":
        return cp.trace(M)
    return 0.5 * cp.sum_squares(M)
