"""Fusion baselines of the OMDML paper's Sec. 5.4 and their retrieval scores.

Wu, Hoi, Zhao, Miao, Liu, "Online multi-modal distance metric learning"
(TKDE 2016) compare OMDML and LOMDML with single-modal metric learners
adapted to several modalities by three fusions:

* ``-B`` ("best"): learn a metric on every modality, keep the modality whose
  metric has the highest mAP on the validation queries, report its test mAP;
* ``-C`` ("concatenation", early fusion): concatenate the modalities' features
  and learn one metric on them;
* ``-U`` ("uniform combination", late fusion): learn a metric on every
  modality and rank by the unweighted sum of the modalities' distances (for
  OASIS, of its similarities).

The learners (``BASELINES``):

* ``"Eucl"`` -- the squared Euclidean distance, nothing learned;
* ``"RCA"`` -- relevant component analysis (Bar-Hillel, Hertz, Shental,
  Weinshall, "Learning a Mahalanobis metric from equivalence constraints",
  JMLR 2005) with the classes as chunklets: ``M`` is the inverse of the
  pooled within-class covariance (:func:`rca_metric`);
* ``"OASIS"`` -- the bilinear similarity ``q^T W x`` of Chechik, Sharma,
  Shalit, Bengio, "Large scale online learning of image similarity through
  ranking" (JMLR 2010), :func:`cvxmetric.slr.oasis.oasis`; it ranks by
  similarity, not by a distance;
* ``"LMNN"`` -- large-margin nearest neighbours (Weinberger, Saul,
  "Distance metric learning for large margin nearest neighbor
  classification", JMLR 2009), the paper's learned Mahalanobis baseline:
  :class:`cvxmetric.LMNN` at its defaults (``k = 3``, ``regularization =
  0.5``), solved to a certified optimum in the span of the training
  features (:func:`cvxmetric.experiments._lmnn.fit_lmnn`).  The paper
  stopped LMNN's own solver after 500 iterations; this one has no
  iteration cap to set: it ends at the certified optimum;
* ``"Qwise"`` (in :data:`METHODS`, not run by default) -- the Mahalanobis
  metric of Law, Thome, Cord, "Learning a distance metric from relative
  comparisons between quadruplets of images" (IJCV 2016),
  :class:`cvxmetric.QwiseSupervised` with the fast solver (about a second
  at these sizes), the learned-Mahalanobis row before LMNN was available;
* ``"MMC"`` (in :data:`METHODS`, not run by default) -- the metric of Xing,
  Ng, Jordan, Russell, "Distance metric learning with application to
  clustering with side-information" (NIPS 2002),
  :class:`cvxmetric.MMCSupervised` with the fast solver.  On the digits
  views it ranks worse than the Euclidean distance (its objective spreads
  the dissimilar pairs rather than ordering neighbours).

Retrieval follows the paper's Sec. 5.2: every test (validation) sample
queries the training samples, the ones of its class are relevant, and the
scores are the mean average precision (:func:`cvxmetric.metrics.
mean_average_precision`) and the precision of the top ``K`` results
(:func:`top_k_precision`).  Ties are ranked pessimistically throughout.
"""

import numbers
import time
from typing import NamedTuple

import numpy as np
from sklearn.utils import check_random_state

from ..._validation import check_finite, check_option
from ...metrics import _check_matrix, _ranked_hits, _relevance_mask, average_precision
from ...omdml._problem import check_views
from .views import _check_labels

# one implementation of the (query, item) distance matrix in the package
from ..rankdml.retrieval import squared_distances  # noqa: E402

__all__ = ["BASELINES", "METHODS", "FUSIONS", "rca_metric", "squared_distances",
           "top_k_precision", "retrieval_scores", "fit_view_metric", "Evaluation",
           "evaluate"]

#: The single-modal learners run by default, in the order of the paper's
#: Table 2.
BASELINES = ("Eucl", "RCA", "OASIS", "LMNN")
#: Every single-modal learner :func:`fit_view_metric` knows.
METHODS = BASELINES + ("Qwise", "MMC")
#: The fusions of Sec. 5.4.
FUSIONS = ("B", "C", "U")

#: Default top-K cut-offs: every K from 1 to 100.
DEFAULT_KS = tuple(range(1, 101))


# ---------------------------------------------------------------------------
# Metrics and distances
# ---------------------------------------------------------------------------


def rca_metric(X, y, *, shrinkage=1e-2):
    """Relevant component analysis with the classes as chunklets.

    ``C = 1/n sum_c sum_{i in c} (x_i - mu_c)(x_i - mu_c)^T`` is the pooled
    within-class covariance and the metric is its inverse.  Features
    constant within every class (blank pixels, for instance) make ``C``
    singular; RCA's authors reduce the dimension first, here ``C`` is
    shrunk instead: ``M = (C + s * tr(C) / d * I)^{-1}``, which keeps
    ``M`` defined and bounded by ``d / (s tr C)``.

    Parameters
    ----------
    X : array_like of shape (n, d)
    y : array_like of shape (n,)
        Class labels.
    shrinkage : float >= 0
        ``s`` above, relative to the mean eigenvalue of ``C``.

    Returns
    -------
    M : ndarray of shape (d, d)
        Symmetric positive definite (when ``shrinkage > 0`` or ``C`` is).
    """
    X = check_finite(X, "X", ndim=2)
    y = _check_labels(y)
    if X.shape[0] != y.shape[0] or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X, y: expected a non-empty X with one row per label, got "
                         f"X {X.shape} and y {y.shape}.")
    if (isinstance(shrinkage, bool) or not isinstance(shrinkage, numbers.Real)
            or not np.isfinite(shrinkage) or shrinkage < 0):
        raise ValueError(f"shrinkage: must be a finite number >= 0, got {shrinkage!r}.")
    from ...rca import within_chunklet_covariance  # the one RCA covariance

    _, codes = np.unique(y, return_inverse=True)
    C, _ = within_chunklet_covariance(X, codes)
    d = X.shape[1]
    C = C + (shrinkage * np.trace(C) / d) * np.eye(d)
    try:
        M = np.linalg.inv(C)
    except np.linalg.LinAlgError:
        raise ValueError("X: the within-class covariance is singular; pass "
                         "shrinkage > 0.") from None
    return 0.5 * (M + M.T)


def top_k_precision(distances, relevant, ks=DEFAULT_KS):
    """Mean precision of the ``K`` best-ranked items, for every ``K`` in ``ks``.

    Precision at ``K`` of one query is the fraction of relevant items among
    its ``K`` nearest; ties are ranked pessimistically (a relevant item tied
    with irrelevant ones comes after them), as in :mod:`cvxmetric.metrics`.

    Parameters
    ----------
    distances : array_like of shape (n_queries, n_items)
        Smaller is closer.
    relevant : array_like
        Boolean mask ``(n_queries, n_items)`` or one relevant index per query.
    ks : sequence of int in [1, n_items]

    Returns
    -------
    ndarray of shape (len(ks),)
    """
    D = _check_matrix("distances", distances)
    mask = _relevance_mask(relevant, D.shape)
    n_q, n_items = D.shape
    ks_arr = np.asarray(ks)
    if (ks_arr.ndim != 1 or ks_arr.size == 0 or ks_arr.dtype.kind not in "iu"
            or ks_arr.min() < 1 or ks_arr.max() > n_items):
        raise ValueError(f"ks: expected a non-empty 1-D sequence of integers in "
                         f"[1, {n_items}].")
    k_max = int(ks_arr.max())
    hits_at = np.zeros(k_max)
    for start in range(0, n_q, 256):  # chunks bound the (chunk, n_items) sorts
        hits = _ranked_hits(D[start:start + 256], mask[start:start + 256], k_max)
        hits_at += np.cumsum(hits, axis=1).sum(axis=0)
    return hits_at[ks_arr - 1] / (n_q * ks_arr)


def retrieval_scores(distances, y_query, y_items, ks=DEFAULT_KS):
    """mAP and top-K precision of ranking the items for every query.

    Parameters
    ----------
    distances : array_like of shape (n_queries, n_items)
        Smaller is closer.
    y_query : array_like of shape (n_queries,)
    y_items : array_like of shape (n_items,)
        An item is relevant to a query of its class.
    ks : sequence of int
        Top-K cut-offs, clipped to ``n_items``.

    Returns
    -------
    map : float
        Mean average precision over the queries with a relevant item.
    precision : ndarray of shape (len(ks),)
        :func:`top_k_precision`.
    """
    D = _check_matrix("distances", distances)
    y_query, y_items = _check_labels(y_query, "y_query"), _check_labels(y_items, "y_items")
    if D.shape != (y_query.size, y_items.size):
        raise ValueError(f"distances: expected shape ({y_query.size}, {y_items.size}) "
                         f"(queries, items), got {D.shape}.")
    rel = y_query[:, None] == y_items[None, :]
    ap = average_precision(D, rel, higher_is_better=False)
    if np.all(np.isnan(ap)):
        raise ValueError("y_query: no query has a relevant item.")
    ks = np.minimum(np.asarray(ks), D.shape[1])
    return float(np.nanmean(ap)), top_k_precision(D, rel, ks)


# ---------------------------------------------------------------------------
# Single-modal learners
# ---------------------------------------------------------------------------


class _Mahalanobis:
    """Distances under a fixed PSD matrix ``M`` (None: Euclidean);
    ``status`` is the learner's solver status (None: nothing solved)."""

    def __init__(self, M=None, status=None):
        self.M = M
        self.status = status

    def __call__(self, Q, X):
        return squared_distances(Q, X, self.M)


class _Bilinear:
    """Negated OASIS similarity ``-q^T W x``: smaller is closer, so that it
    sums and ranks like the distances."""

    status = None  # OASIS runs a fixed number of steps: no status

    def __init__(self, W):
        self.W = W

    def __call__(self, Q, X):
        return -(np.asarray(Q, float) @ self.W) @ np.asarray(X, float).T


def fit_view_metric(method, X, y, *, n_triplets=5000, oasis_C=0.1,
                    rca_shrinkage=1e-2, lmnn_max_time=None, random_state=None):
    """Learn one single-modal baseline; a function ranking items for queries.

    Parameters
    ----------
    method : {"Eucl", "RCA", "OASIS", "LMNN", "Qwise", "MMC"}
    X : array_like of shape (n, d)
        Training features.
    y : array_like of shape (n,)
        Training labels.
    n_triplets : int
        OASIS steps (triplets sampled from ``y``).
    oasis_C : float
        OASIS aggressiveness.
    rca_shrinkage : float
        See :func:`rca_metric`.
    lmnn_max_time : float > 0, optional
        Wall-clock budget of an LMNN fit (seconds; None: until certified);
        a fit it stops keeps its point and says so in ``status``.
    random_state : int, RandomState or None
        OASIS triplets, Qwise quadruplets, MMC pairs (LMNN is deterministic).

    Returns
    -------
    callable
        ``f(Q, X) -> (n_queries, n_items)``, smaller is closer (for OASIS the
        negated similarity); its ``status`` is the solver's final status for
        LMNN, Qwise and MMC (``"optimal"``: certified), None otherwise.
    """
    check_option(method, "method", METHODS)
    if method == "Eucl":
        return _Mahalanobis(None)
    if method == "RCA":
        return _Mahalanobis(rca_metric(X, y, shrinkage=rca_shrinkage))
    if method == "OASIS":
        from ...slr.oasis import oasis
        return _Bilinear(oasis(X, y, n_triplets, C=oasis_C, random_state=random_state))
    if method == "LMNN":
        from .._lmnn import fit_lmnn
        fit = fit_lmnn(X, y, max_time=lmnn_max_time)
        return _Mahalanobis(fit.M, fit.status)
    if method == "Qwise":
        from ...qwise.estimator import QwiseSupervised
        est = QwiseSupervised(solver="fast", random_state=random_state)
    else:
        from ...mmc.estimator import MMCSupervised
        est = MMCSupervised(solver="fast", random_state=random_state)
    est.fit(X, y)
    return _Mahalanobis(est.mahalanobis_matrix_, str(est.status_))


# ---------------------------------------------------------------------------
# Fusions and the evaluation
# ---------------------------------------------------------------------------


class Evaluation(NamedTuple):
    """What :func:`evaluate` measured, each a dict ``name -> value`` keyed by
    ``"<method>-<fusion>"`` (for instance ``"RCA-B"``)."""

    #: mean average precision on the test queries
    map: dict
    #: top-K precision on the test queries, ``(len(ks),)`` each
    topk: dict
    #: seconds to learn (every per-view fit for -B and -U, plus -B's
    #: validation ranking)
    seconds: dict
    #: -B: the index of the chosen modality; -C / -U: None
    view: dict
    #: the solver status of each metric the row used (-B and -U: one per
    #: modality, -C: one), ``"optimal"`` when certified; empty for the
    #: learners without a solver status (Eucl, RCA, OASIS)
    status: dict


def _check_split(split, n):
    if not isinstance(split, (list, tuple)) or len(split) != 3:
        raise ValueError("split: expected (train, validation, test) index arrays.")
    out = []
    for part, name in zip(split, ("train", "validation", "test")):
        idx = np.asarray(part)
        if idx.ndim != 1 or idx.size == 0 or idx.dtype.kind not in "iu":
            raise ValueError(f"split: the {name} part must be a non-empty 1-D integer "
                             f"index array, got dtype {idx.dtype} and shape {idx.shape}.")
        if idx.min() < 0 or idx.max() >= n:
            raise ValueError(f"split: the {name} part has indices outside [0, {n}).")
        out.append(idx)
    return out


def _fused_distances(mth, fusion, per_view, fit_seconds, views, split, yt, yv, seed,
                     opts):
    """``(D, seconds, chosen, statuses)`` of one fusion of method ``mth``:
    the test queries' distances to the training items, the learning time,
    the view -B chose (``None`` for the other fusions) and the solver
    statuses of the metrics learned.

    -B keeps the view of best validation mAP, -U sums the views' distances
    (both from the per-view metrics ``per_view``, learned in
    ``fit_seconds``), and the concatenation learns one metric on all views
    side by side, seeded by ``seed``."""
    train, val, test = split
    statuses = tuple(f.status for f, _ in per_view if f.status is not None)
    if fusion == "B":
        t0 = time.perf_counter()
        val_map = [retrieval_scores(f(v[val], v[train]), yv, yt, ks=(1,))[0]
                   for (f, _), v in zip(per_view, views)]
        chosen = int(np.argmax(val_map))
        seconds = fit_seconds + time.perf_counter() - t0
        D = per_view[chosen][0](views[chosen][test], views[chosen][train])
        return D, seconds, chosen, statuses
    if fusion == "U":
        D = sum(f(v[test], v[train]) for (f, _), v in zip(per_view, views))
        return D, fit_seconds, None, statuses
    Z = np.hstack(views)
    t0 = time.perf_counter()
    f = fit_view_metric(mth, Z[train], yt, random_state=seed, **opts)
    seconds = time.perf_counter() - t0
    return f(Z[test], Z[train]), seconds, None, () if f.status is None else (f.status,)


def evaluate(views, y, split, *, methods=BASELINES, fusions=FUSIONS,
             n_triplets=5000, ks=DEFAULT_KS, oasis_C=0.1, rca_shrinkage=1e-2,
             lmnn_max_time=None, random_state=None):
    """Learn every baseline with every fusion and score it on the test split.

    Parameters
    ----------
    views : list of array_like, each of shape (n, n_i)
        All samples (scaled to ``[0, 1]`` on the training part, see
        :func:`cvxmetric.experiments.omdml.views.scale_views`).
    y : array_like of shape (n,)
    split : (train, validation, test)
        Index arrays (:func:`cvxmetric.experiments.omdml.views.retrieval_split`).  The
        validation queries only choose -B's modality.
    methods : sequence of str
        Among :data:`METHODS` (default :data:`BASELINES`).
    fusions : sequence of str
        Among :data:`FUSIONS`.
    n_triplets : int
        OASIS steps.
    ks : sequence of int
        Top-K cut-offs.
    oasis_C, rca_shrinkage, lmnn_max_time
        As in :func:`fit_view_metric`.
    random_state : int, RandomState or None
        One seed per learner is drawn from it, so the results do not depend
        on which methods run.

    Returns
    -------
    Evaluation
        ``map``, ``topk``, ``seconds``, ``view``, ``status``, keyed
        ``"<method>-<fusion>"``
        in the order of ``fusions`` then ``methods`` (the paper's Table 2).
    """
    views = check_views(views)
    y = _check_labels(y)
    if y.size != views[0].shape[0]:
        raise ValueError(f"y: expected {views[0].shape[0]} labels (one per row of the "
                         f"views), got {y.size}.")
    train, val, test = _check_split(split, y.size)
    methods = [check_option(mth, "methods", METHODS) for mth in methods]
    fusions = [check_option(f, "fusions", FUSIONS) for f in fusions]
    if not methods or not fusions:
        raise ValueError("methods, fusions: expected at least one of each.")
    rng = check_random_state(random_state)
    # a fixed seed per (method, view) whatever subset runs
    seeds = {mth: rng.randint(2**31 - 1, size=len(views) + 1) for mth in METHODS}
    yt, yv, ye = y[train], y[val], y[test]
    opts = dict(n_triplets=n_triplets, oasis_C=oasis_C, rca_shrinkage=rca_shrinkage,
                lmnn_max_time=lmnn_max_time)
    res = Evaluation({}, {}, {}, {}, {})
    for mth in methods:
        per_view = []
        if "B" in fusions or "U" in fusions:
            for i, v in enumerate(views):
                t0 = time.perf_counter()
                f = fit_view_metric(mth, v[train], yt, random_state=seeds[mth][i], **opts)
                per_view.append((f, time.perf_counter() - t0))
        fit_seconds = sum(s for _, s in per_view)
        for fusion in fusions:
            name = f"{mth}-{fusion}"
            D, seconds, chosen, statuses = _fused_distances(mth, fusion, per_view, fit_seconds, views,
                                                  (train, val, test), yt, yv,
                                                  seeds[mth][-1], opts)
            res.map[name], res.topk[name] = retrieval_scores(D, ye, yt, ks)
            res.seconds[name] = seconds
            res.view[name] = chosen
            res.status[name] = statuses
    order = [f"{mth}-{f}" for f in fusions for mth in methods]
    return Evaluation(*({k: d[k] for k in order} for d in res))
