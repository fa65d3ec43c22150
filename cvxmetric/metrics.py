"""Retrieval metrics: CMC curve, rank-k accuracy, mean average precision.

Every function takes a score or distance matrix ``(n_queries, n_items)``
and the relevance of each item to each query, either as a boolean mask
``(n_queries, n_items)`` or, when each query has exactly one relevant item
(the CMC protocol of Lee, Jin and Jain 2008), as an index array
``(n_queries,)``.

Ties are resolved pessimistically: a relevant item tied with irrelevant ones
is ranked after them, so a constant metric never looks good.
"""

import numpy as np

__all__ = ["cmc_curve", "rank_k_accuracy", "average_precision",
           "mean_average_precision"]


def _check_matrix(name, a):
    try:
        a = np.asarray(a)
    except ValueError as exc:  # ragged nested lists
        raise ValueError(f"{name}: cannot be read as an array ({exc}).") from None
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"{name}: expected a non-empty 2-D array (n_queries, "
                         f"n_items), got shape {a.shape}.")
    if not np.issubdtype(a.dtype, np.number) or np.issubdtype(a.dtype, np.complexfloating):
        raise ValueError(f"{name}: expected real numbers, got dtype {a.dtype}.")
    a = a.astype(float, copy=False)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains NaN or inf.")
    return a


def _relevance_mask(relevant, shape):
    """Boolean mask ``(n_queries, n_items)`` from a mask or an index array."""
    rel = np.asarray(relevant)
    n_q, n_items = shape
    if rel.ndim == 1:
        if rel.shape[0] != n_q:
            raise ValueError(f"relevant: expected {n_q} indices (one per query), "
                             f"got {rel.shape[0]}.")
        if rel.dtype.kind not in "iu":
            raise ValueError(f"relevant: an index array must be integer, got "
                             f"dtype {rel.dtype}.")
        if rel.size and (rel.min() < 0 or rel.max() >= n_items):
            raise ValueError(f"relevant: indices must be in [0, {n_items}).")
        mask = np.zeros(shape, dtype=bool)
        mask[np.arange(n_q), rel] = True
        return mask
    if rel.shape != shape:
        raise ValueError(f"relevant: expected a boolean mask of shape {shape} or "
                         f"an index array of shape ({n_q},), got {rel.shape}.")
    if rel.dtype != bool:
        raise ValueError(f"relevant: a mask must be boolean, got dtype {rel.dtype}.")
    return rel


def _first_relevant_rank(distances, mask):
    """1-based rank of the best-placed relevant item of each query (pessimistic
    ties); ``inf`` for a query without relevant item."""
    best = np.where(mask, distances, np.inf).min(axis=1)  # (n_queries,)
    # pessimistic: every irrelevant item at distance <= best is ranked before
    ahead = np.sum((distances <= best[:, None]) & ~mask, axis=1)
    rank = ahead + 1.0
    rank[~mask.any(axis=1)] = np.inf
    return rank


def cmc_curve(distances, relevant, max_rank=None):
    """Cumulative matching characteristic.

    Parameters
    ----------
    distances : array-like of shape (n_queries, n_items)
        Smaller is closer.
    relevant : array-like
        Index of each query's relevant item, shape ``(n_queries,)``, or a
        boolean mask ``(n_queries, n_items)``.
    max_rank : int, optional
        Length of the curve (default ``n_items``).

    Returns
    -------
    ndarray of shape (max_rank,)
        Entry ``k - 1`` is the fraction of queries whose first relevant item
        is ranked ``k`` or better.
    """
    D = _check_matrix("distances", distances)
    mask = _relevance_mask(relevant, D.shape)
    n_items = D.shape[1]
    if max_rank is None:
        max_rank = n_items
    # bool is an int subclass: reject it rather than read True as rank 1
    if (isinstance(max_rank, (bool, np.bool_))
            or not isinstance(max_rank, (int, np.integer))
            or not 1 <= max_rank <= n_items):
        raise ValueError(f"max_rank: expected an integer in [1, {n_items}], got "
                         f"{max_rank!r}.")
    rank = _first_relevant_rank(D, mask)
    ks = np.arange(1, max_rank + 1)
    return (rank[None, :] <= ks[:, None]).mean(axis=1)


def rank_k_accuracy(distances, relevant, k=1):
    """Fraction of queries whose first relevant item is in the top ``k``
    (the CMC curve at ``k``).

    Raises
    ------
    ValueError
        Bad ``distances`` / ``relevant`` (as :func:`cmc_curve`), or ``k``
        not an integer in ``[1, n_items]``.
    """
    try:
        n_items = np.shape(distances)[-1] if np.ndim(distances) == 2 else None
    except ValueError:  # ragged nested lists: cmc_curve names the argument
        n_items = None
    if (isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer))
            or (n_items is not None and not 1 <= k <= n_items)):
        raise ValueError(f"k: expected an integer in [1, n_items={n_items}], "
                         f"got {k!r}.")
    return float(cmc_curve(distances, relevant, max_rank=k)[-1])


def average_precision(scores, relevant, *, higher_is_better=True):
    """Average precision of each query.

    Parameters
    ----------
    scores : array-like of shape (n_queries, n_items)
        Similarities (``higher_is_better=True``) or distances.
    relevant : array-like
        Boolean mask ``(n_queries, n_items)`` or one relevant index per query.
    higher_is_better : bool

    Returns
    -------
    ndarray of shape (n_queries,)
        ``nan`` for a query with no relevant item.
    """
    S = _check_matrix("scores", scores)
    mask = _relevance_mask(relevant, S.shape)
    key = -S if higher_is_better else S  # ascending key = best first
    n_q, n_items = S.shape
    out = np.full(n_q, np.nan)
    for start in range(0, n_q, 256):  # chunks bound the (chunk, n_items) sorts
        k = key[start:start + 256]
        m = mask[start:start + 256]
        # sort by key, then relevant last among ties (argsort is stable)
        perm = np.argsort(m, axis=1, kind="stable")
        k2 = np.take_along_axis(k, perm, axis=1)
        perm = np.take_along_axis(perm, np.argsort(k2, axis=1, kind="stable"), axis=1)
        hits = np.take_along_axis(m, perm, axis=1)  # (chunk, n_items)
        cum = np.cumsum(hits, axis=1)
        prec = cum / np.arange(1, n_items + 1)
        n_rel = hits.sum(axis=1)
        ok = n_rel > 0
        ap = np.where(hits, prec, 0.0).sum(axis=1)
        out[start:start + 256][ok] = ap[ok] / n_rel[ok]
    return out


def mean_average_precision(scores, relevant, *, higher_is_better=True):
    """Mean of :func:`average_precision` over the queries with a relevant item.

    Raises
    ------
    ValueError
        When no query has a relevant item.
    """
    ap = average_precision(scores, relevant, higher_is_better=higher_is_better)
    if np.all(np.isnan(ap)):
        raise ValueError("relevant: no query has a relevant item.")
    return float(np.nanmean(ap))
