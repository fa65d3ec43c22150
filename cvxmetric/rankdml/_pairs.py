"""Critical pair selection (Lee, Jin, Jain 2008, Sec. 5).

Training on every (relevant, irrelevant) combination of every query is out
of reach (93 million pairs in the paper).  The paper forms, per query, the
"critical" cannot-links -- the irrelevant items ranked highest by the
baseline metric ``A0`` -- plus a few randomly chosen irrelevant items "to
preserve the diversity of the training pairs" (10 + 10 in its Fig. 8).
Each chosen irrelevant item ``i`` is paired with every relevant item ``r``
of the query into a triplet ``(q, r, i)``: ``d(q, i) >= d(q, r) + 1``.
"""

import numpy as np
from sklearn.utils import check_random_state

from .._settings import _BLOCK_FLOATS
from .._validation import check_psd_matrix, check_samples, check_scalar

__all__ = ["critical_triplets"]


def _index_vector(idx, name, n):
    arr = np.asarray(idx)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        if arr.size == 0:
            arr = arr.astype(np.intp)
        else:
            raise ValueError(f"{name}: indices must be integers, got dtype {arr.dtype}.")
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of indices, got shape {arr.shape}.")
    if arr.size == 0:
        raise ValueError(f"{name}: is empty.")
    if arr.min() < 0 or arr.max() >= n:
        bad = int(arr.min()) if arr.min() < 0 else int(arr.max())
        raise ValueError(f"{name}: index {bad} is out of range for {n} samples.")
    return arr.astype(np.intp)


def _relevance_pairs(relevant_index, n_queries, n):
    """``(query_position, item)`` pairs from a 1-D, 2-D or ragged input."""
    try:
        arr = np.asarray(relevant_index)
    except ValueError:  # ragged: one sequence per query
        arr = None
    if arr is not None and arr.dtype != object:
        if arr.ndim in (1, 2):
            if arr.shape[0] != n_queries:
                raise ValueError(
                    f"relevant_index: expected {n_queries} rows (one per query), "
                    f"got {arr.shape[0]}."
                )
            arr2 = arr.reshape(n_queries, -1)
            flat = _index_vector(arr2.ravel(), "relevant_index", n)
            pos = np.repeat(np.arange(n_queries), arr2.shape[1])
            return pos, flat
        raise ValueError(
            f"relevant_index: expected shape (n_queries,) or (n_queries, k), or "
            f"one sequence of indices per query; got shape {arr.shape}."
        )
    if len(relevant_index) != n_queries:
        raise ValueError(
            f"relevant_index: expected {n_queries} entries (one per query), got "
            f"{len(relevant_index)}."
        )
    parts = [np.atleast_1d(np.asarray(r)) for r in relevant_index]
    sizes = np.array([p.size for p in parts])
    if np.any(sizes == 0):
        q = int(np.flatnonzero(sizes == 0)[0])
        raise ValueError(f"relevant_index: query {q} has no relevant item.")
    flat = _index_vector(np.concatenate(parts), "relevant_index", n)
    return np.repeat(np.arange(n_queries), sizes), flat


def _check_counts(n_top, n_random):
    """``(n_top, n_random)`` as ints >= 0, not both 0."""
    for name, val in (("n_top", n_top), ("n_random", n_random)):
        if isinstance(val, (bool, np.bool_)) or not isinstance(val, (int, np.integer)):
            raise TypeError(f"{name}: expected an int, got {type(val).__name__}.")
        check_scalar(int(val), name, low=0)
    n_top, n_random = int(n_top), int(n_random)
    if n_top + n_random == 0:
        raise ValueError("n_top, n_random: at least one irrelevant item per query "
                         "is needed (both are 0).")
    return n_top, n_random


def _baseline_coordinates(X, A0, d):
    """``X`` in coordinates where the distances of ``A0`` are Euclidean."""
    if A0 is None:
        return X
    A0 = check_psd_matrix(A0, "A0", d)
    w, U = np.linalg.eigh(A0)
    return X @ (U * np.sqrt(np.maximum(w, 0.0)))


def _choose_irrelevant(D, eligible, n_top, n_random, rng):
    """The chosen gallery positions of a block of queries and their validity.

    ``D`` (b, n_g) holds the squared distances, ``eligible`` the irrelevant
    items of each query.  Returns ``(chosen, ok)`` of shape (b, k): the
    ``n_top`` closest eligible items (a stable sort orders by distance,
    then gallery position), then ``n_random`` others in draw order; ``ok``
    is False where a query had fewer eligible items than requested.
    """
    b, n_g = D.shape
    # ineligible items sort last (inf)
    Dm = np.where(eligible, D, np.inf)
    k_top = min(n_top, n_g)
    top = np.argsort(Dm, axis=1, kind="stable")[:, :k_top]  # (b, k_top)
    top_ok = np.take_along_axis(eligible, top, axis=1)
    remaining = eligible.copy()
    np.put_along_axis(remaining, top, False, axis=1)
    k_rand = min(n_random, n_g)
    if k_rand:
        keys = rng.random_sample((b, n_g))
        keys[~remaining] = np.inf
        if k_rand < n_g:
            rnd = np.argpartition(keys, k_rand - 1, axis=1)[:, :k_rand]
        else:
            rnd = np.tile(np.arange(n_g), (b, 1))
        rk = np.take_along_axis(keys, rnd, axis=1)
        o = np.argsort(rk, axis=1, kind="stable")
        rnd = np.take_along_axis(rnd, o, axis=1)
        rnd_ok = np.isfinite(np.take_along_axis(keys, rnd, axis=1))
    else:
        rnd = np.zeros((b, 0), dtype=np.intp)
        rnd_ok = np.zeros((b, 0), dtype=bool)
    # (b, k_top + k_rand)
    return np.concatenate([top, rnd], axis=1), np.concatenate([top_ok, rnd_ok], axis=1)


def critical_triplets(queries_index, relevant_index, gallery_index, X, n_top=10,
                      n_random=10, A0=None, random_state=None):
    """Critical triplets ``(query, relevant, irrelevant)`` (Sec. 5).

    For each query, the irrelevant gallery items are ranked by their squared
    distance to the query under the baseline metric ``A0``; the ``n_top``
    closest ones (ties broken by gallery position) and ``n_random`` others
    drawn uniformly without replacement from the remaining irrelevant items
    are paired with every relevant item of the query.

    Parameters
    ----------
    queries_index : array_like of int, shape (n_queries,)
        Rows of ``X`` that are queries.
    relevant_index : array_like of int
        The items relevant to each query, as rows of ``X``: shape
        (n_queries,) (one each, the paper's setting), (n_queries, k), or a
        sequence of ``n_queries`` index sequences (ragged).
    gallery_index : array_like of int, shape (n_gallery,)
        Rows of ``X`` forming the database; the irrelevant items of a query
        are the gallery items that are neither relevant to it nor the query
        row itself.
    X : array_like of shape (n_samples, n_features)
        The samples (the ``preprocessor`` of the estimators).
    n_top : int >= 0
        Top-ranked irrelevant items per query.
    n_random : int >= 0
        Random irrelevant items per query, outside the top-ranked ones.
    A0 : array_like of shape (n_features, n_features), optional
        Symmetric PSD baseline metric (default: Euclidean, the identity).
    random_state : int, RandomState instance or None
        Seeds the random choice.

    Returns
    -------
    triplets : ndarray of int, shape (n_triplets, 3)
        Rows ``(q, r, i)`` indexing ``X``, grouped by query (in the order of
        ``queries_index``), then relevant item, then the chosen irrelevant
        items (top-ranked by rank, then the random ones in draw order).
        A query with fewer irrelevant items than requested contributes all
        it has.

    Raises
    ------
    ValueError
        Bad indices, an empty set, NaN in ``X``, a non-PSD ``A0``, or
        ``n_top + n_random == 0``.
    """
    X = check_samples(X, "X")
    n, d = X.shape
    queries = _index_vector(queries_index, "queries_index", n)
    gallery = _index_vector(gallery_index, "gallery_index", n)
    if len(np.unique(gallery)) != len(gallery):
        raise ValueError("gallery_index: contains duplicate indices.")
    rel_pos, rel_item = _relevance_pairs(relevant_index, len(queries), n)
    n_top, n_random = _check_counts(n_top, n_random)
    Z = _baseline_coordinates(X, A0, d)
    rng = check_random_state(random_state)
    n_q, n_g = len(queries), len(gallery)
    # position of each gallery row, to mask relevant items and the query itself
    gpos = np.full(n, -1, dtype=np.intp)
    gpos[gallery] = np.arange(n_g)
    Zg = Z[gallery]  # (n_g, k)
    sq_g = np.einsum("ij,ij->i", Zg, Zg)
    order_rel = np.argsort(rel_pos, kind="stable")
    rel_pos, rel_item = rel_pos[order_rel], rel_item[order_rel]
    rel_start = np.searchsorted(rel_pos, np.arange(n_q + 1))
    block = max(1, _BLOCK_FLOATS // max(n_g, 1))
    out = []
    for s in range(0, n_q, block):
        qb = queries[s:s + block]
        b = len(qb)
        Zq = Z[qb]
        # (b, n_g) squared distances; the expansion is clipped at 0
        D = np.einsum("ij,ij->i", Zq, Zq)[:, None] + sq_g[None, :] - 2.0 * (Zq @ Zg.T)
        np.maximum(D, 0.0, out=D)
        eligible = np.ones((b, n_g), dtype=bool)
        # relevant items of the block's queries, and each query itself
        lo, hi = rel_start[s], rel_start[s + b]
        rp, ri = rel_pos[lo:hi] - s, gpos[rel_item[lo:hi]]
        keep = ri >= 0
        eligible[rp[keep], ri[keep]] = False
        qg = gpos[qb]
        has = qg >= 0
        eligible[np.flatnonzero(has), qg[has]] = False
        chosen, ok = _choose_irrelevant(D, eligible, n_top, n_random, rng)
        # expand: one triplet per (relevant item, chosen irrelevant item)
        counts = rel_start[s + 1:s + b + 1] - rel_start[s:s + b]  # (b,)
        row_q = np.repeat(np.arange(b), counts)  # (n_rel_block,)
        rel_b = rel_item[lo:hi]
        irr = gallery[chosen[row_q]]  # (n_rel_block, k)
        good = ok[row_q]
        q_col = np.broadcast_to(qb[row_q][:, None], irr.shape)
        r_col = np.broadcast_to(rel_b[:, None], irr.shape)
        out.append(np.stack([q_col[good], r_col[good], irr[good]], axis=1))
    return np.concatenate(out, axis=0).astype(np.intp)
