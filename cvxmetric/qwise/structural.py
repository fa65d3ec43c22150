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
* :class:`StructuralCuttingPlane` -- the 1-slack cutting-plane method: a
  master problem in CVXPY over the cuts found so far (Clarabel, SCS as
  fallback, certified), and the sort-based oracle above.  Certified: the
  master's Lagrange multipliers give a lower bound on Eq. 16 (every cut is a
  valid constraint of Eq. 16), the closed form ``Omega(M) + C H(M)`` at the
  master's ``M`` an upper bound.
* :func:`solve_structural_exact` -- the closed form as one CVXPY problem
  (one slack per hinge), certified by its duality gap.
* :func:`solve_structural_enumerated` -- Eq. 16 with every constraint
  written out (one per combination of rankings): exponentially many, for
  tiny instances only; the reference that ties the closed form to Eq. 16.
"""

import itertools
import logging
import resource
import time
import tracemalloc
import warnings
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import NamedTuple

import cvxpy as cp
import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from .._base import (
    LabelledMixin,
    MahalanobisMixin,
    _OrderedTuplesMixin,
    array_ndim,
    default_n_constraints,
    given_options,
    store_arguments,
    validate_labelled,
)
from .._docs import fill_doc
from .._exact import SOLVERS, solve_certified
from .._linalg import PairOperator, project_psd
from .._settings import MAX_ENUMERATED
from .._solver import IterativeSolver, conic_verbose, stop_message
from .._tolerances import EXACT_GAP
from .._validation import (
    check_instance,
    check_option,
    check_pair_labels,
    check_samples,
    check_scalar,
)
from ..constraints import (
    Quadruplets,
    Triplets,
    informative,
    quadruplets_from_labels,
    triplets_from_labels,
    tuples_to_indices,
)
from ..formulations import formulation
from ..model import DeclaredProblem
from ..result import Certificate, SolverError, SolverResult, Status
from ._problem import distinct_pairs
from .exact import _sqdist_expr

__all__ = [
    "StructuralData",
    "Cut",
    "StructuralCuttingPlane",
    "solve_structural_exact",
    "solve_structural_fast",
    "solve_structural_enumerated",
    "declared_problem",
    "QwiseStructural",
    "QwiseStructuralSupervised",
    "bench_structural",
    "STRUCTURAL_REGULARIZERS",
    "READINGS",
]

logger = logging.getLogger("cvxmetric")

#: ``Omega(M)``: ``tr(M)`` or ``0.5 ||M||_F^2``.
STRUCTURAL_REGULARIZERS = ("trace", "frobenius")

#: Which tuples are queries and items (see the module docstring).
READINGS = ("quadruplets", "triplets", "pairs")

#: Conic solvers of the cutting-plane master problem, in order.  SCS first:
#: on the master (one (d, d) PSD cone, a few hundred dense cut rows) its
#: factor-once splitting iterations are 7-15x faster than Clarabel's
#: interior point at d = 50 (0.47 s against 3.3-7.6 s for 100 cuts to 1e-8,
#: measured on the 2-core machine), and every master point is certified
#: by the package's own bound anyway.
MASTER_SOLVERS = ("SCS", "CLARABEL")


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
        from ..constraints import informative
        from ._problem import QwiseData

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


# ---------------------------------------------------------------------------
# The 1-slack cutting-plane method
# ---------------------------------------------------------------------------


class CuttingPlaneState(NamedTuple):
    iter_num: int
    error: float  # H(M) - xi: violation of the most violated constraint
    epsilon: float  # the stopping threshold this round (see StructuralCuttingPlane)
    xi: float  # the master's slack at M: max(0, max_k delta_k - <M, G_k>)
    cut: Cut  # the oracle's cut at M (added by the next round)
    cuts: tuple  # the cuts in the master problem
    lower: float  # best lower bound on Eq. 16 so far
    upper: float  # objective of the best M so far
    best_M: np.ndarray
    lam: np.ndarray  # the master's multipliers, one per cut
    master_iter: int  # interior-point iterations, summed over rounds
    history: tuple  # per round: (violation, lower, upper, seconds)
    master: dict = None  # this run's master problem (see _master_problem)


@dataclass
class StructuralCuttingPlane(IterativeSolver):
    """1-slack cutting-plane solver of Eq. 16 (Joachims, Finley, Yu; MLR).

    One round (one :meth:`update`) adds the most violated constraint at the
    current ``M`` (:meth:`StructuralData.oracle`) to the working set and
    re-solves the master problem::

        minimise_{M PSD, xi >= 0}  Omega(M) + C xi
        subject to  <M, G_k> >= delta_k - xi   for each cut k

    in CVXPY (rebuilt each round: one PSD variable, one slack, one linear
    constraint per cut with the cut's (d, d) matrix as constant), through
    the package's certified path (Clarabel, SCS as fallback).  It stops
    when the most violated constraint exceeds ``xi`` by at most
    ``epsilon``: ``H(M) - xi <= epsilon``.

    Certificate: the master's multipliers ``lambda`` (``sum lambda <= C``)
    give the dual value ``g(lambda)`` of :meth:`StructuralData.dual_bound`,
    a lower bound on the master's optimum and hence on Eq. 16's (the
    master has a subset of Eq. 16's constraints); ``Omega(M) + C H(M)`` at
    the master's ``M`` is an upper bound.  The gap is at most
    ``C (H(M) - xi)`` plus the master's own gap.

    Attributes
    ----------
    maxiter : int
        Maximum number of rounds (cuts).
    tol : float
        Relative gap aimed at when ``epsilon`` is None: each round stops at
        ``epsilon = tol * max(1, f(M)) / C``, so that the certified relative
        gap is ``tol`` plus the master's gap (about 1e-9).  Default
        ``EXACT_GAP / 2``: the result is normally certified ``optimal``.
    epsilon : float > 0, optional
        Absolute stopping threshold on ``H(M) - xi`` (SVM-struct's and
        MLR's ``epsilon``; MLR uses 0.01).  Overrides ``tol``; a loose
        value ends with status ``optimal_inaccurate``.
    max_time : float, optional
        Wall-clock budget (seconds), checked between rounds.
    solvers : tuple of str
        Conic solvers of the master problem, in order.
    master_tol : float
        Tolerance passed to the conic solver of the master.
    """

    maxiter: int = 500
    tol: float = 0.5 * EXACT_GAP
    max_time: float = None
    epsilon: float = None
    solvers: tuple = MASTER_SOLVERS
    master_tol: float = 1e-9

    name = "structural"

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "epsilon": [Interval(Real, 0, None, closed="neither"), None],
        "solvers": [tuple, list],
        "master_tol": [Interval(Real, 0, None, closed="neither")],
    }

    def blas_flops(self, data):
        return float(data.op.n_pairs) * data.n_features ** 2

    def _epsilon(self, data, upper):
        if self.epsilon is not None:
            return float(self.epsilon)
        return self.tol * max(1.0, abs(upper)) / data.C

    def init_state(self, data, init=None):
        check_instance(data, StructuralData, "data")
        d = data.n_features
        M = np.zeros((d, d))
        if init is not None:
            M = project_psd(np.asarray(init.M, dtype=float))
        cut = data.oracle(M)
        upper = data.regularizer_value(M) + data.C * cut.violation
        state = CuttingPlaneState(
            iter_num=0, error=cut.violation, epsilon=self._epsilon(data, upper),
            xi=0.0, cut=cut, cuts=(), lower=0.0, upper=upper, best_M=M,
            lam=np.zeros(0), master_iter=0, history=())
        return M, state

    def converged(self, state):
        return state.error <= state.epsilon

    @staticmethod
    def _master_problem(data, n_cuts, cache):
        """The master problem with room for at least ``n_cuts`` cuts
        (``cache``: the run's current one, or None).

        Kept between rounds (in the run's state): cut ``k`` is row ``k`` of
        the parameter ``A`` (its ``G_k`` flattened) and entry ``k`` of
        ``delta``; unused rows are zero (``0 >= 0 - xi``, implied by
        ``xi >= 0``).  The problem is
        DPP, so a new cut only updates parameter values, and SCS restarts
        from the previous round's solution (CVXPY's warm start).  The room
        doubles when it runs out (one recompilation).
        """
        if cache is not None and cache["room"] >= n_cuts:
            return cache
        d = data.n_features
        room = max(16, 2 * (cache["room"] if cache is not None else 0), n_cuts)
        M = cp.Variable((d, d), symmetric=True, name="M")
        xi = cp.Variable(nonneg=True, name="xi")
        A = cp.Parameter((room, d * d), name="A", value=np.zeros((room, d * d)))
        delta = cp.Parameter(room, name="delta", value=np.zeros(room))
        # [declare:structural-master]
        con = A @ cp.vec(M, order="C") >= delta - xi
        problem = cp.Problem(
            cp.Minimize(_omega_expr(data.regularizer, M) + data.C * xi),
            [con, M >> 0])
        # [/declare]
        return {"room": room, "problem": problem, "M": M, "xi": xi,
                "A": A, "delta": delta, "con": con}

    def _master(self, data, cuts, cache):
        """Solve the master problem over ``cuts`` (``cache``: the run's
        master problem so far); ``(M, lam, delta, info, master problem)``."""
        K = len(cuts)
        m = self._master_problem(data, K, cache)
        A = np.zeros(m["A"].shape)
        A[:K] = np.stack([c.G.reshape(-1) for c in cuts])  # G symmetric
        delta = np.zeros(m["room"])
        delta[:K] = [c.delta for c in cuts]
        m["A"].value, m["delta"].value = A, delta
        M, con = m["M"], m["con"]
        A, delta = A[:K], delta[:K]
        Gs = np.stack([c.G for c in cuts])

        def multipliers():
            lam = np.maximum(np.ravel(con.dual_value)[:K], 0.0)
            total = float(lam.sum())
            return lam * (data.C / total) if total > data.C else lam

        def master_value(Mv):
            return data.regularizer_value(Mv) + data.C * max(
                0.0, float(np.max(delta - A @ Mv.reshape(-1))))

        def certify(name, version, opts, times):
            Mv = 0.5 * (M.value + M.value.T)
            lam = multipliers()
            upper = master_value(project_psd(Mv))
            S = np.tensordot(lam, Gs, axes=1)
            bound = data.dual_bound(S, float(lam @ delta), upper)
            min_eig = float(np.linalg.eigvalsh(Mv)[0])
            return Certificate.from_bound(
                master_value(Mv), bound, max_violation=max(0.0, -min_eig),
                min_eig=min_eig, solver=name, solver_version=version,
                tolerances=opts, times=times)

        try:
            _, info = solve_certified(m["problem"], certify, solvers=self.solvers,
                                      tol=self.master_tol)
        except SolverError as exc:
            # an uncertified master point still gives valid bounds (the
            # multipliers are repaired, the upper bound is recomputed)
            if M.value is None or con.dual_value is None:
                raise
            info = exc.result[1] if exc.result is not None else {"n_iter": 0}
            logger.info("structural master not certified: %s", exc)
        return project_psd(M.value), multipliers(), delta, info, m

    def update(self, M, state, data):
        t0 = time.perf_counter()
        cuts = state.cuts + (state.cut,)
        Mv, lam, delta, info, master = self._master(data, cuts, state.master)
        dist = data.distances(Mv)
        cut = data.oracle(Mv, dist=dist)
        f = data.regularizer_value(Mv) + data.C * cut.violation
        # the master's slack at its M, from the cuts themselves
        xi = max(0.0, max(c.delta - float(np.sum(c.G * Mv)) for c in cuts))
        S = np.tensordot(lam, np.stack([c.G for c in cuts]), axes=1)
        upper = min(state.upper, f)
        best_M = Mv if f <= state.upper else state.best_M
        lower = max(state.lower, data.dual_bound(S, float(lam @ delta), upper))
        error = max(cut.violation - xi, 0.0)
        history = state.history + ((error, lower, upper, time.perf_counter() - t0),)
        logger.debug("structural round %d: H - xi = %.3e, bounds [%.9g, %.9g]",
                     state.iter_num + 1, error, lower, upper)
        new = CuttingPlaneState(
            iter_num=state.iter_num + 1, error=error,
            epsilon=self._epsilon(data, upper), xi=xi, cut=cut, cuts=cuts,
            lower=lower, upper=upper, best_M=best_M, lam=lam,
            master_iter=state.master_iter + int(info.get("n_iter", 0)),
            history=history, master=master)
        return Mv, new

    def finalize(self, M, state, data):
        best = state.best_M
        cert = data.certificate(best, state.lower, solver="cutting_plane")
        info = {
            "n_cuts": len(state.cuts),
            "rounds": state.iter_num,
            "epsilon": float(state.epsilon),
            "final_violation": float(state.error),
            "xi": float(state.xi),
            "lower": float(state.lower),
            "upper": float(state.upper),
            "master_iter": int(state.master_iter),
            "lambda": state.lam,
            "history": [dict(zip(("violation", "lower", "upper", "seconds"), h))
                        for h in state.history],
        }
        return best, cert, info


# ---------------------------------------------------------------------------
# Exact references
# ---------------------------------------------------------------------------


def _zero_if_optimal(data, t0):
    """``M = 0`` as a certified fast result when Eq. 16's bound with every
    hinge multiplier at its cap ``C w_t`` closes the gap there, else None."""
    M = np.zeros((data.X.shape[1],) * 2)
    _, _, w, _ = data.terms()
    dist = data.distances(M)
    upper = data.objective(M, dist=dist)
    bound = data.hinge_dual_bound(data.C * w, M, upper, dist=dist)
    cert = data.certificate(M, bound, solver="fast", tolerances={})
    if not cert.passed:
        return None
    cert.times["total"] = time.perf_counter() - t0
    return SolverResult(M=M, status=Status.OPTIMAL, objective=cert.objective,
                        n_iter=0, certificate=cert, method="fast",
                        info={"zero_certified": True}, time=cert.times["total"],
                        raw_status=Status.OPTIMAL)


def solve_structural_fast(data, *, tol=None, maxiter=None, max_time=None, warn=True):
    """Eq. 16 through its closed form, by the Qwise dual solver.

    The closed form ``Omega(M) + C H(M)`` is a Qwise Eq. 8 problem with
    per-hinge weights (:meth:`StructuralData.as_qwise`), solved by
    :class:`~cvxmetric.qwise.QwiseDualSolver` (restarted PDHG with its
    working set; it scales to 10^6 hinges).  Its ``M`` is certified here on
    Eq. 16 itself: the upper bound is :meth:`StructuralData.objective`, the
    lower bound :meth:`StructuralData.hinge_dual_bound` of its multipliers
    (constant hinges at their cap).  Not the paper's algorithm (that is
    :class:`StructuralCuttingPlane`): the same optimum, reached without
    cuts.

    Parameters
    ----------
    data : StructuralData
    tol, maxiter, max_time
        Passed to :class:`~cvxmetric.qwise.QwiseDualSolver` when given.
    warn : bool, default=True
        Emit a ``ConvergenceWarning`` when the result is not ``"optimal"``.

    Returns
    -------
    SolverResult
        ``method="fast"``.
    """
    from .fast import QwiseDualSolver

    check_instance(data, StructuralData, "data")
    t0 = time.perf_counter()
    try:
        qdata, keep = data.as_qwise()
    except ValueError as exc:
        # data so small that the closed form's scale-free hinge weight
        # underflows: the exact paths (in the user's units) certify M = 0
        # there, and so does this path, with the same bound (every
        # multiplier at its cap, the subgradient of the hinges at M = 0)
        zero = _zero_if_optimal(data, t0) if str(exc).startswith("X:") else None
        if zero is None:
            raise
        return zero
    options = {k: v for k, v in (("tol", tol), ("maxiter", maxiter),
                                 ("max_time", max_time)) if v is not None}
    res = QwiseDualSolver(**options).run(qdata, warn=False)
    M = project_psd(res.M)
    dist = data.distances(M)
    upper = data.objective(M, dist=dist)
    # multipliers of the closed form's hinges: the Qwise ones halved
    # (the hinge weight is 2 C w_t there, C w_t here)
    alpha = np.zeros(data.n_terms)
    alpha[keep] = 0.5 * np.asarray(res.info["alpha"], dtype=float)
    bound = data.hinge_dual_bound(alpha, M, upper, dist=dist)
    cert = data.certificate(M, bound, solver="fast", tolerances={"tol": tol})
    cert.times["total"] = time.perf_counter() - t0
    out = SolverResult(M=M, status=res.raw_status, objective=cert.objective,
                       n_iter=res.n_iter, certificate=cert, method="fast",
                       info={"qwise_status": res.status},
                       time=cert.times["total"], raw_status=res.raw_status)
    if out.status != Status.OPTIMAL and warn:
        warnings.warn(stop_message("fast", out, max_time), ConvergenceWarning,
                      stacklevel=2)
    return out


def solve_structural_exact(data, *, solvers=SOLVERS, tol=1e-9, verbose=False):
    """Eq. 16 through its closed form, as one CVXPY problem.

    ::

        minimise_{M PSD, s >= 0}  Omega(M) + C sum_t w_t s_t
        subject to  s_t >= 1 - 2 (d_j(M) - d_i(M))   for every term t = (x, i, j)

    with ``w_t = 1 / (|X| P_x N_x)`` and all distances at once as
    ``cp.sum(cp.multiply(Phi @ M, Phi), axis=1)``.  Certified: the hinge
    constraints' multipliers give the dual bound of
    :meth:`StructuralData.hinge_dual_bound`.

    Parameters
    ----------
    data : StructuralData
    solvers : sequence of str
        Clarabel first, SCS as fallback.
    tol : float
        Conic solver tolerance.
    verbose : bool

    Returns
    -------
    SolverResult
        ``method="exact"``; ``info["alpha"]`` the hinge multipliers.
    """
    check_instance(data, StructuralData, "data")
    t0 = time.perf_counter()
    # the declared problem itself (declared_problem), solved and certified
    declared = declared_problem(data)
    M, problem = declared.variables["M"], declared.problem
    con = declared.constraints["hinges"]

    def certify(name, version, opts, times):
        Mv = project_psd(M.value)
        upper = data.objective(Mv)
        bound = data.hinge_dual_bound(np.ravel(con.dual_value), Mv, upper)
        return data.certificate(Mv, bound, solver=name, solver_version=version,
                                tolerances=opts, times=times)

    cert, info = solve_certified(problem, certify, solvers=solvers, tol=tol,
                                 verbose=verbose)
    return SolverResult(
        M=project_psd(M.value), status=info["status"], objective=cert.objective,
        n_iter=info["n_iter"], certificate=cert, method="exact",
        info={"alpha": np.ravel(con.dual_value).copy(), "attempts": info["attempts"],
              "n_terms": int(con.shape[0])},
        time=time.perf_counter() - t0)


class _StructuralDeclared(DeclaredProblem):
    """Eq. 16 in its closed form, as printed, in the user's units
    (:func:`declared_problem`)."""

    def _family_objective(self, M):
        return self.data.objective(M)

    def _family_certificate(self, M):
        lam = self._dual("hinges")
        if lam is None:
            self._warn_no_multipliers()
            bound = -np.inf
        else:
            # the hinges' multipliers, made consistent with M where a hinge
            # is strictly active / inactive (hinge_dual_bound keeps the best)
            upper = self.data.objective(project_psd(M))
            bound = self.data.hinge_dual_bound(np.ravel(lam), M, upper)
        args = self._certificate_args()
        return self.data.certificate(M, bound, solver=args["solver"],
                                     times=args["times"])

    def _family_repair(self, M):
        # an interior-point M is PSD only to the solver's tolerance: its
        # projection is the point the exact path certifies
        if np.linalg.eigvalsh(M)[0] >= 0:
            return M
        return project_psd(M)

    def _update_parameters(self, values):
        # validated (ValueError naming C) before anything changes
        self.data = self.data.with_params(C=float(values["C"]))


@fill_doc
def declared_problem(data):
    """Eq. 16 as printed, in the user's units, unsolved.

    The 1-slack constraint set of Eq. 16 has one constraint per choice of
    rankings (exponentially many); its value at every ``M`` is the closed
    form ``Omega(M) + C H(M)`` (module docstring), declared as
    :func:`solve_structural_exact` solves it::

        minimise_{M, s}  Omega(M) + C sum_t w_t s_t
        subject to  s_t >= 1 - 2 (d_j(M) - d_i(M))  (hinges),  s >= 0,
                    M PSD  (psd)

    with ``w_t = 1 / (|X| P_x N_x)`` and every distance at once.  Variables
    ``M`` (symmetric) and ``s``; parameter ``C``; constraints ``hinges``
    and ``psd``.  The certificate's dual bound
    (:meth:`StructuralData.hinge_dual_bound`) takes the multipliers of
    ``hinges`` from the last solve.

    Parameters
    ----------
    data : StructuralData

    {declared_returns_model}
    """
    from .exact import PAPER

    check_instance(data, StructuralData, "data")
    d = data.n_features
    op = data.op
    Phi = op.X[op.i] - op.X[op.j]  # (n_pairs, d)
    i, j, w, _ = data.terms()
    # [declare:structural-closed-form]
    M = cp.Variable((d, d), symmetric=True, name="M")
    s = cp.Variable(len(i), nonneg=True, name="s")
    C = cp.Parameter(nonneg=True, value=data.C, name="C")
    dist = _sqdist_expr(M, Phi)  # all d_p = u_p^T M u_p at once
    cons = {"hinges": s >= 1 - 2 * (dist[j] - dist[i]), "psd": M >> 0}
    problem = cp.Problem(cp.Minimize(_omega_expr(data.regularizer, M)
                                     + C * (w @ s)), list(cons.values()))
    # [/declare]
    return _StructuralDeclared(
        family="qwise_structural", paper=PAPER, equation="Eq. 16", problem=problem,
        variables={"M": M, "s": s}, parameters={"C": C}, constraints=cons,
        metric_key="M", data=data)


def _weak_order_patterns(P, N):
    """Distinct ``y`` restricted to C^+ x C^- over every ranking with ties
    of ``P + N`` items: an array (n_patterns, P, N) of -1 / 0 / +1."""
    m = P + N
    levels = np.array(list(itertools.product(range(m), repeat=m)))  # (m^m, m)
    # y_ij = +1 when relevant i is ranked ahead of (lower level than) j
    y = np.sign(levels[:, None, P:] - levels[:, :P, None])  # (m^m, P, N)
    return np.unique(y.reshape(len(y), -1), axis=0).reshape(-1, P, N)


def structural_constraints(data, *, max_constraints=MAX_ENUMERATED):
    """Every 1-slack constraint of Eq. 16, written out from Eq. 17.

    For each query, every ranking (with ties) of its items is enumerated and
    reduced to its distinct ``y`` on ``C_x^+ x C_x^-``; ``psi`` is built
    literally from ``phi(x, c) = -u_c u_c^T``, ``Delta`` is the AUC loss
    (a tie counts 1/2).  A constraint is one choice of ranking per query, so
    their number is the product over queries: tiny instances only.

    Returns
    -------
    G : ndarray of shape (n_constraints, d, d)
        ``(1/|X|) sum_x (psi(x, y_x*) - psi(x, y_x))``.
    delta : ndarray of shape (n_constraints,)
        ``(1/|X|) sum_x Delta(y_x*, y_x)``.

    Raises
    ------
    ValueError
        When there would be more than ``max_constraints`` constraints.
    """
    Q = data.n_queries
    sizes = (data.n_relevant + data.n_irrelevant).astype(float)
    if float(np.sum(sizes * np.log(np.maximum(sizes, 1)))) > 64:
        raise ValueError("data: too many items per query to enumerate rankings.")
    op = data.op
    U = op.X[op.i] - op.X[op.j]
    per_query = []
    total = 1
    for x in range(Q):
        items = np.flatnonzero(data.item_query == x)
        rel = items[data.item_relevant[items]]
        irr = items[~data.item_relevant[items]]
        P, N = len(rel), len(irr)
        phi_rel = -np.einsum("pa,pb->pab", U[data.item_pair[rel]], U[data.item_pair[rel]])
        phi_irr = -np.einsum("pa,pb->pab", U[data.item_pair[irr]], U[data.item_pair[irr]])
        diff = phi_rel[:, None] - phi_irr[None, :]  # (P, N, d, d)

        def psi(y, diff=diff, P=P, N=N):
            return np.einsum("kij,ijab->kab", y, diff) / (P * N)

        Y = _weak_order_patterns(P, N)
        psi_star = psi(np.ones((1, P, N)))
        Gx = psi_star - psi(Y.astype(float))  # (n_patterns, d, d)
        Dx = np.sum((1 - Y) / 2.0, axis=(1, 2)) / (P * N)
        per_query.append((Gx, Dx))
        total *= len(Dx)
        if total > max_constraints:
            raise ValueError(
                f"data: Eq. 16 has more than max_constraints={max_constraints} "
                f"1-slack constraints here; use fewer queries or items.")
    combos = np.array(list(itertools.product(*[range(len(D)) for _, D in per_query])))
    G = sum(per_query[x][0][combos[:, x]] for x in range(Q)) / Q
    delta = sum(per_query[x][1][combos[:, x]] for x in range(Q)) / Q
    return G, delta


def solve_structural_enumerated(data, *, max_constraints=MAX_ENUMERATED,
                                solvers=SOLVERS, tol=1e-9):
    """Eq. 16 with every 1-slack constraint written out (tiny instances).

    The constraints of :func:`structural_constraints` in one CVXPY problem;
    its optimum equals :func:`solve_structural_exact`'s (the closed form)
    and the cutting-plane solver's.  Certified: each constraint is a cut,
    so its multipliers give :meth:`StructuralData.dual_bound`.

    Returns
    -------
    SolverResult
        ``method="enumerated"``; ``info["n_constraints"]``.
    """
    t0 = time.perf_counter()
    G, delta = structural_constraints(data, max_constraints=max_constraints)
    d = data.n_features
    M = cp.Variable((d, d), symmetric=True, name="M")
    xi = cp.Variable(nonneg=True, name="xi")
    A = G.reshape(len(G), -1)
    con = A @ cp.vec(M, order="C") >= delta - xi
    problem = cp.Problem(cp.Minimize(_omega_expr(data.regularizer, M) + data.C * xi),
                         [con, M >> 0])

    def certify(name, version, opts, times):
        Mv = project_psd(M.value)
        lam = np.maximum(np.ravel(con.dual_value), 0.0)
        if lam.sum() > data.C:
            lam *= data.C / lam.sum()
        bound = data.dual_bound(np.tensordot(lam, G, axes=1), float(lam @ delta),
                                data.objective(Mv))
        return data.certificate(Mv, bound, solver=name, solver_version=version,
                                tolerances=opts, times=times)

    cert, info = solve_certified(problem, certify, solvers=solvers, tol=tol)
    return SolverResult(
        M=project_psd(M.value), status=info["status"], objective=cert.objective,
        n_iter=info["n_iter"], certificate=cert, method="enumerated",
        info={"n_constraints": len(delta), "xi": float(xi.value),
              "attempts": info["attempts"]},
        time=time.perf_counter() - t0)


# ---------------------------------------------------------------------------
# Estimators
# ---------------------------------------------------------------------------

#: Values of the estimators' ``solver`` parameter.
STRUCTURAL_SOLVERS = ("cutting_plane", "exact", "fast")

_SHARED_CONSTRAINTS = {
    "regularizer": [StrOptions(set(STRUCTURAL_REGULARIZERS))],
    "C": [Interval(Real, 0, None, closed="neither")],
    "reading": [StrOptions({"quadruplets", "triplets"})],
    "solver": [StrOptions(set(STRUCTURAL_SOLVERS))],
    "epsilon": [Interval(Real, 0, None, closed="neither"), None],
    "max_iter": [Interval(Integral, 1, None, closed="left"), None],
    "random_state": ["random_state"],
    "verbose": ["verbose"],
}

_WIDTH = {"quadruplets": 4, "triplets": 3}


class _StructuralBase(MahalanobisMixin, BaseEstimator):
    """Solve and store: the part both structural estimators share."""

    def _solve(self, data):
        """Solve Eq. 16 on :class:`StructuralData` by ``solver`` and store the
        fitted state."""
        options = given_options(epsilon=self.epsilon, maxiter=self.max_iter)
        result = self._run_solver({
            "cutting_plane": lambda: _scale_checked(
                data, lambda: StructuralCuttingPlane(**options).run(data)),
            "exact": lambda: _scale_checked(
                data, lambda: formulation("qwise_structural").solve_exact(
                    data, verbose=conic_verbose(self.verbose))),
            "fast": lambda: solve_structural_fast(data, maxiter=self.max_iter),
        })
        self._store_result(result, data.n_features)
        self._log_fit(before=[("reading=%s", data.reading), ("solver=%s", self.solver)],
                      after=[("queries=%d", data.n_queries), ("terms=%d", data.n_terms)])
        return self

    def _structural_data(self, X, idx):
        """The :class:`StructuralData` of validated tuples ``idx`` into ``X``,
        read as ``reading`` says."""
        if self.reading == "quadruplets":
            return StructuralData.from_quadruplets(
                Quadruplets.create(X, idx, 1.0), regularizer=self.regularizer, C=self.C)
        return StructuralData.from_triplets(
            Triplets.create(X, idx), regularizer=self.regularizer, C=self.C)


def _scale_checked(data, run):
    """``run()``, a conic or cutting-plane solve on ``data``.  Its
    :class:`~cvxmetric.result.SolverError` on data whose scale-free hinge
    weight is out of range failed because of that scale: that error, naming
    ``X``, is raised instead, as the fast path does up front."""
    try:
        return run()
    except SolverError as exc:
        scale = data.scale_error()
        if scale is not None:
            raise scale from exc
        raise


@fill_doc
class QwiseStructural(_OrderedTuplesMixin, _StructuralBase):
    """Structural (MLR-style, 1-slack) Qwise: Eq. 16-17, tuple learner.

    Learns a PSD ``M`` minimising ``Omega(M) + C H(M)``, the 1-slack
    problem of Eq. 16 with the partial-order feature map of Eq. 17 and the
    AUC loss (see :mod:`cvxmetric.qwise.structural`)::

        H(M) = (1/|X|) sum_x (1/(P_x N_x)) sum_{i in C_x^+, j in C_x^-}
                   max(0, 1 - 2 (D2_M(c_j) - D2_M(c_i)))

    Parameters
    ----------
    regularizer : {"trace", "frobenius"}, default="trace"
        ``Omega(M)``: ``tr(M)`` (MLR's) or ``0.5 ||M||_F^2``.
    C : float > 0, default=1.0
        Weight of the slack.
    reading : {"quadruplets", "triplets"}, default="quadruplets"
        ``"quadruplets"``: ``fit`` takes ``(i, j, k, l)``, the query is
        the pair ``(i, j)``, its non-relevant items the pairs ``(k, l)``.
        ``"triplets"``: ``fit`` takes ``(a, b, c)`` meaning
        ``D(a, b) < D(a, c)``; the anchor ``a`` is the query.  ``score``,
        ``predict`` and ``decision_function`` take the same kind of tuple
        (the reading is looked up at call time).
    solver : {"fast", "cutting_plane", "exact"}, default="fast"
        :func:`solve_structural_fast` (the closed form by the Qwise dual
        solver: certified, and the one that scales -- 2 s at 10^5
        quadruplets in 50 dimensions), :class:`StructuralCuttingPlane` (the
        paper's 1-slack cutting-plane method: certified when it stops, but
        it did not within five minutes there, nor on scikit-learn's digits)
        or :func:`solve_structural_exact` (CVXPY).
    epsilon : float > 0, optional
        Stopping threshold of the cutting-plane method on ``H(M) - xi``
        (``None``: chosen from the objective so that the result is
        certified at the package's tolerance).  Ignored by ``"exact"``.
    max_iter : int >= 1, optional
        Maximum number of cutting-plane rounds (``None``: 500).
    preprocessor : array_like of shape (n_samples, n_features), optional
        The sample matrix integer tuples index into.
    random_state : int, RandomState instance or None, default=None
        Unused (no solver is randomised); kept for the metric-learn
        convention shared with :class:`QwiseStructuralSupervised`.
    {verbose}

    Attributes
    ----------
    components_, mahalanobis_matrix_ : ndarray of shape (n_features, n_features)
    objective_ : float
        ``Omega(M) + C H(M)`` at the returned ``M``.
    status_ : str
        ``"optimal"`` exactly when the certificate passes.
    n_iter_ : int
        Cutting-plane rounds (= cuts), or interior-point iterations.
    certificate_ : Certificate
    result_ : SolverResult
        ``info`` holds ``n_cuts``, ``epsilon``, ``final_violation`` and the
        per-round ``history`` for the cutting-plane method.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from cvxmetric.qwise.structural import QwiseStructural
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 3.0]])
    >>> est = QwiseStructural(preprocessor=X).fit([[0, 1, 2, 3]])
    >>> est.status_
    'optimal'
    """

    _parameter_constraints = {
        **_SHARED_CONSTRAINTS,
        "preprocessor": ["array-like", None],
    }

    def __init__(self, regularizer="trace", C=1.0, reading="quadruplets",
                 solver="fast", epsilon=None, max_iter=None,
                 preprocessor=None, random_state=None, verbose=False):
        store_arguments(self, locals())

    # the tuples score / predict take follow the reading
    @property
    def _tuple_name(self):
        return self.reading

    @property
    def _width(self):
        return _WIDTH.get(self.reading, 0)

    def fit(self, tuples, y=None):
        """Learn ``M`` from quadruplets or triplets (according to ``reading``).

        Parameters
        ----------
        tuples : array_like
            ``reading="quadruplets"``: indices (n, 4) into ``preprocessor``
            or points (n, 4, n_features); ``reading="triplets"``: (n, 3) or
            (n, 3, n_features).
        y : None
            Not used: the order within each tuple is its label.

        Returns
        -------
        self : QwiseStructural
        """
        return self._solve(self._data(tuples, y))

    def declared_problem(self, tuples, y=None):
        """Eq. 16 on these tuples, as declared, without solving it.

        {takes_what_fit_takes}

        {params_as_in_fit}

        {declared_returns_certified}
        """
        self._validate_params()
        return declared_problem(self._data(tuples, y))

    def _data(self, tuples, y=None):
        if y is not None:
            raise ValueError(
                f"y: {type(self).__name__}.fit takes no labels (the order "
                f"within each tuple is its label).")
        name, width = self.reading, _WIDTH[self.reading]
        ndim = array_ndim(tuples, name)
        shape = np.shape(tuples)
        if ndim in (2, 3) and len(shape) > 1 and shape[1] != width:
            raise ValueError(
                f"{name}: reading={self.reading!r} takes tuples of {width}, got "
                f"shape {shape}; set reading="
                f"{'triplets' if shape[1] == 3 else 'quadruplets'!r} for tuples "
                f"of {shape[1]}." if shape[1] in (3, 4) else
                f"{name}: reading={self.reading!r} takes tuples of {width}, got "
                f"shape {shape}.")
        X = self.preprocessor if ndim != 3 else None
        X, idx = tuples_to_indices(tuples, name, width=width, preprocessor=X)
        return self._structural_data(X, idx)


@fill_doc(learner="QwiseStructural")
class QwiseStructuralSupervised(LabelledMixin, TransformerMixin, _StructuralBase):
    """Structural Qwise learned from class labels: ``fit(X, y)``.

    Samples ``n_constraints`` quadruplets (``reading="quadruplets"``:
    same-class pair, then different-class pair,
    :func:`~cvxmetric.quadruplets_from_labels`) or triplets
    (``reading="triplets"``, :func:`~cvxmetric.triplets_from_labels`),
    drops those that compare nothing (duplicated rows) and solves Eq. 16 as
    :class:`QwiseStructural` does.

    Parameters
    ----------
    n_constraints : int >= 1, optional
        Number of tuples sampled (default ``min(1000, 20 * n_samples)``).
    reading, regularizer, C, solver, epsilon, max_iter, verbose
        As in :class:`QwiseStructural`.
    random_state : int, RandomState instance or None, default=None
        Seeds the sampling.

    Attributes
    ----------
    {supervised_attributes}
    """

    _parameter_constraints = {
        **_SHARED_CONSTRAINTS,
        "n_constraints": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, n_constraints=None, reading="quadruplets", regularizer="trace",
                 C=1.0, solver="fast", epsilon=None, max_iter=None,
                 random_state=None, verbose=False):
        store_arguments(self, locals())

    def _fit(self, X, y):
        """Sample tuples from the labels and learn ``M``."""
        return self._solve(self._sample(X, y))

    def _declare(self, X, y):
        """Eq. 16 on the constraints ``fit(X, y)`` samples."""
        return declared_problem(self._sample(X, y))

    def _sample(self, X, y):
        """Validate ``(X, y)``; the :class:`StructuralData` of the sampled
        tuples."""
        X, y, _, _ = validate_labelled(self, X, y, ensure_min_samples=2)
        n = default_n_constraints(X.shape[0], self.n_constraints)
        rng = check_random_state(self.random_state)
        sample = (quadruplets_from_labels if self.reading == "quadruplets"
                  else triplets_from_labels)
        idx = sample(y, n, random_state=rng)
        useful = informative(X, idx)
        if not np.any(useful):
            raise ValueError(
                "X: every sampled tuple compares identical points or a distance "
                "with itself; the data has no information on the metric.")
        return self._structural_data(X, idx[useful])


# ---------------------------------------------------------------------------
# Benchmark
# ---------------------------------------------------------------------------


def bench_structural(n_quadruplets=100_000, d=50, random_state=0, *, n_samples=500,
                     n_classes=5, separation=0.5, C=1.0, regularizer="trace",
                     epsilon=None, maxiter=500, max_time=None, trace_memory=False):
    """Time the cutting-plane solver on Gaussian classes (quadruplet reading).

    ``n_samples`` points in ``d`` dimensions, ``n_classes`` balanced
    Gaussian classes (:func:`cvxmetric.collection.gaussian_classes`,
    standardised), ``n_quadruplets`` quadruplets from the labels
    (:func:`~cvxmetric.quadruplets_from_labels`).

    Parameters
    ----------
    trace_memory : bool
        Measure the peak of Python-tracked allocations (numpy arrays
        included) with ``tracemalloc`` during the solve (slows CVXPY's
        compilation); the process's peak resident set size is always
        reported.

    Returns
    -------
    dict
        ``time`` (solve, seconds), ``setup_time``, ``rounds``, ``n_cuts``,
        ``epsilon`` (the final stopping threshold), ``final_violation``,
        ``objective``, ``lower``, ``rel_gap``, ``status``, ``n_queries``,
        ``n_terms``, ``peak_rss_mb``, ``peak_traced_mb`` (``None`` unless
        ``trace_memory``), ``round_seconds`` (summed over rounds: master
        solve plus oracle), ``oracle_seconds`` (one oracle call).
    """
    from ..collection import gaussian_classes, standardize

    rng = np.random.RandomState(random_state)
    X, y = gaussian_classes(rng, n_samples, d, n_classes, separation)
    X = standardize(X)
    t0 = time.perf_counter()
    idx = quadruplets_from_labels(y, n_quadruplets, random_state=rng)
    idx = idx[informative(X, idx)]
    data = StructuralData.from_quadruplets(Quadruplets.create(X, idx, 1.0),
                                           regularizer=regularizer, C=C)
    setup = time.perf_counter() - t0
    solver = StructuralCuttingPlane(epsilon=epsilon, maxiter=maxiter, max_time=max_time)
    if trace_memory:
        tracemalloc.start()
    t1 = time.perf_counter()
    data.oracle(np.eye(d))
    t_oracle = time.perf_counter() - t1
    t1 = time.perf_counter()
    result = solver.run(data, warn=False)
    elapsed = time.perf_counter() - t1
    traced = None
    if trace_memory:
        traced = tracemalloc.get_traced_memory()[1] / 2 ** 20
        tracemalloc.stop()
    info = result.info
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB -> MB on Linux
    return {
        "n_quadruplets": int(len(idx)), "d": d, "n_samples": n_samples,
        "n_queries": data.n_queries, "n_terms": data.n_terms,
        "n_pairs": data.op.n_pairs, "setup_time": setup, "time": elapsed,
        "oracle_seconds": t_oracle,
        "round_seconds": float(sum(h["seconds"] for h in info["history"])),
        "rounds": info["rounds"], "n_cuts": info["n_cuts"],
        "epsilon": info["epsilon"], "final_violation": info["final_violation"],
        "objective": result.objective, "lower": info["lower"],
        "rel_gap": result.certificate.rel_gap, "status": result.status,
        "peak_rss_mb": rss, "peak_traced_mb": traced,
    }
