"""Retrieval metrics: CMC curve, rank-k accuracy, mean average precision.

Every function takes a score or distance matrix ``(n_queries, n_items)``
and the relevance of each item to each query, either as a boolean mask
``(n_queries, n_items)`` or, when each query has exactly one relevant item
(the CMC protocol of Lee, Jin and Jain 2008), as an index array
``(n_queries,)``.

Ties are resolved pessimistically: a relevant item tied with irrelevant ones
is ranked after them, so a constant metric never looks good.

The pair and classification metrics of Law, Thome and Cord, "Learning a
distance metric from relative comparisons between quadruplets of images"
(IJCV 2016) follow: the average precision of the similar and of the
dissimilar class of a set of labelled pairs and their mean (Sec. 5.3),
the mean class accuracy of a threshold on the distance (Sec. 5.3), k-NN
classification from a test-train distance matrix (Sec. 6.3) and the
hierarchy-aware accuracy of Eq. (24).
"""

import numbers

import numpy as np

from ._validation import describe

__all__ = ["cmc_curve", "rank_k_accuracy", "average_precision",
           "mean_average_precision", "ap_similar", "ap_dissimilar",
           "pair_map", "mean_class_accuracy", "knn_predict", "knn_accuracy",
           "hierarchy_accuracy"]


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
                         f"{describe(max_rank)}.")
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
                         f"got {describe(k)}.")
    return float(cmc_curve(distances, relevant, max_rank=k)[-1])


def _ranked_hits(key, mask, k=None):
    """The relevance ``mask`` of each row's items in ascending ``key`` order,
    a relevant item after the irrelevant ones it ties with (the pessimistic
    rank); the first ``k`` columns only when given."""
    # sort by key, then relevant last among ties (argsort is stable)
    perm = np.argsort(mask, axis=1, kind="stable")
    k2 = np.take_along_axis(key, perm, axis=1)
    perm = np.take_along_axis(perm, np.argsort(k2, axis=1, kind="stable"), axis=1)
    return np.take_along_axis(mask, perm if k is None else perm[:, :k], axis=1)


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
        hits = _ranked_hits(key[start:start + 256], mask[start:start + 256])
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


# ---------------------------------------------------------------------------
# Labelled pairs (Law, Thome and Cord 2016, Sec. 5.3)
# ---------------------------------------------------------------------------


def _check_pairs(distances, similar):
    """``distances`` as a finite float vector and ``similar`` as a boolean
    vector of the same length with both classes present."""
    try:
        d = np.asarray(distances)
    except ValueError as exc:  # ragged nested lists
        raise ValueError(f"distances: cannot be read as an array ({exc}).") from None
    if d.ndim != 1 or d.shape[0] == 0:
        raise ValueError(f"distances: expected a non-empty 1-D array (one distance "
                         f"per pair), got shape {d.shape}.")
    # _check_matrix holds the dtype and finiteness rules; reuse them on one row
    d = _check_matrix("distances", d[None, :])[0]
    try:
        s = np.asarray(similar)
    except ValueError as exc:
        raise ValueError(f"similar: cannot be read as an array ({exc}).") from None
    if s.shape != d.shape:
        raise ValueError(f"similar: expected shape {d.shape} (one flag per pair), "
                         f"got {s.shape}.")
    if s.dtype != bool:
        # +1/-1 or 0/1 labels are not read as booleans: -1 would become True
        raise ValueError(f"similar: expected a boolean array (True = similar "
                         f"pair), got dtype {s.dtype}.")
    n_sim = int(np.count_nonzero(s))
    if n_sim == 0 or n_sim == s.shape[0]:
        which = "similar" if n_sim == 0 else "dissimilar"
        raise ValueError(f"similar: no {which} pair; both classes are needed.")
    return d, s


def _pair_aps(d, s):
    """``(AP_S, AP_D)`` of validated pairs, pessimistic ties."""
    # AP_S: similar pairs relevant, ascending distance; AP_D: dissimilar pairs
    # relevant, descending distance.  One average_precision call per class so
    # that each gets the module's tie rule with its own relevant set.
    ap_s = average_precision(d[None, :], s[None, :], higher_is_better=False)[0]
    ap_d = average_precision(d[None, :], ~s[None, :], higher_is_better=True)[0]
    return float(ap_s), float(ap_d)


def ap_similar(distances, similar):
    """Average precision of the similar class, :math:`AP_S` (Sec. 5.3).

    The pairs are ranked by ascending distance and the similar pairs are the
    relevant ones.  A similar pair tied in distance with dissimilar ones is
    ranked after them (pessimistic ties, as :func:`average_precision`).

    Parameters
    ----------
    distances : array-like of shape (n_pairs,)
        Distance of each pair; finite.
    similar : array-like of bool, shape (n_pairs,)
        True for a similar pair, False for a dissimilar one; both classes
        must be present.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        ``distances`` not a non-empty finite real vector, ``similar`` not a
        boolean vector of the same length, or only one class present.
    """
    return _pair_aps(*_check_pairs(distances, similar))[0]


def ap_dissimilar(distances, similar):
    """Average precision of the dissimilar class, :math:`AP_D` (Sec. 5.3).

    The pairs are ranked by descending distance and the dissimilar pairs are
    the relevant ones; a dissimilar pair tied with similar ones is ranked
    after them.  Parameters and errors as :func:`ap_similar`.

    Returns
    -------
    float
    """
    return _pair_aps(*_check_pairs(distances, similar))[1]


def pair_map(distances, similar):
    """Mean average precision of labelled pairs, :math:`(AP_S + AP_D) / 2`
    (the MAP of Sec. 5.3).  Parameters and errors as :func:`ap_similar`.

    Returns
    -------
    float
    """
    ap_s, ap_d = _pair_aps(*_check_pairs(distances, similar))
    return 0.5 * (ap_s + ap_d)


def mean_class_accuracy(distances, similar, b):
    """Mean of the accuracies on similar and on dissimilar pairs (Sec. 5.3).

    A pair is predicted similar iff its distance is strictly below the
    threshold ``b`` (a pair at distance exactly ``b`` is predicted
    dissimilar).

    Parameters
    ----------
    distances : array-like of shape (n_pairs,)
    similar : array-like of bool, shape (n_pairs,)
        Both classes must be present (as :func:`ap_similar`).
    b : float
        Finite threshold, e.g. the learned ``intercept_``.

    Returns
    -------
    float
        ``0.5 * (mean(d[similar] < b) + mean(d[~similar] >= b))``.

    Raises
    ------
    ValueError
        Bad ``distances`` / ``similar`` (as :func:`ap_similar`), or ``b`` not
        a finite real number.
    """
    d, s = _check_pairs(distances, similar)
    if (isinstance(b, (bool, np.bool_)) or not isinstance(b, numbers.Real)
            or not np.isfinite(b)):
        raise ValueError(f"b: expected a finite real number, got {describe(b)}.")
    pred = d < b
    acc_s = np.mean(pred[s])
    acc_d = np.mean(~pred[~s])
    return float(0.5 * (acc_s + acc_d))


# ---------------------------------------------------------------------------
# Classification (Law, Thome and Cord 2016, Sec. 6.3)
# ---------------------------------------------------------------------------


def _check_labels(name, y, n=None):
    """A 1-D label vector (integers, strings, booleans or finite floats) of
    length ``n``; object arrays are refused rather than guessed at."""
    try:
        y = np.asarray(y)
    except ValueError as exc:
        raise ValueError(f"{name}: cannot be read as an array ({exc}).") from None
    if y.ndim != 1 or y.shape[0] == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D array of labels, got "
                         f"shape {y.shape}.")
    if n is not None and y.shape[0] != n:
        raise ValueError(f"{name}: expected {n} labels, got {y.shape[0]}.")
    if y.dtype.kind not in "biufUS":
        raise ValueError(f"{name}: labels must be integers, strings, booleans or "
                         f"floats, got dtype {y.dtype}.")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError(f"{name}: contains NaN or inf.")
    return y


def _label_family(y):
    # numbers (bool, int, float) compare with numbers, strings with strings
    return "str" if y.dtype.kind in "US" else "num"


def _check_same_family(name_a, a, name_b, b):
    if _label_family(a) != _label_family(b):
        raise ValueError(f"{name_b}: labels of dtype {b.dtype} cannot be compared "
                         f"with {name_a} of dtype {a.dtype}.")


def _check_k(k, n_train):
    if (isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer))
            or not 1 <= k <= n_train):
        raise ValueError(f"k: expected an integer in [1, n_train={n_train}], got "
                         f"{describe(k)}.")
    return int(k)


def knn_predict(distances, y_train, k=1):
    """k-nearest-neighbour prediction from a test-train distance matrix.

    The k-NN classifier of Sec. 6.3 (Tables 5 and 6 use ``k = 10``): each
    test point takes the majority label of its ``k`` nearest training points.

    Parameters
    ----------
    distances : array-like of shape (n_test, n_train)
        Smaller is closer.  Neighbours are ordered by distance, ties in
        distance by training index (a stable sort).
    y_train : array-like of shape (n_train,)
        Training labels (integers, strings, booleans or finite floats).
    k : int, default=1
        Number of neighbours, in ``[1, n_train]``.

    Returns
    -------
    ndarray of shape (n_test,)
        Predicted labels, of the dtype of ``y_train``.  A tie in the vote goes
        to the tied class whose nearest member among the ``k`` neighbours
        comes first in the neighbour order (closest; at equal distance, the
        smaller training index).

    Raises
    ------
    ValueError
        ``distances`` not a non-empty finite real matrix, ``y_train`` of the
        wrong length or dtype, ``k`` not an integer in ``[1, n_train]``.
    """
    D = _check_matrix("distances", distances)
    n_test, n_train = D.shape
    y_train = _check_labels("y_train", y_train, n_train)
    k = _check_k(k, n_train)
    classes, codes = np.unique(y_train, return_inverse=True)
    n_classes = classes.shape[0]
    out = np.empty(n_test, dtype=y_train.dtype)
    rows_all = np.arange(n_test)
    for start in range(0, n_test, 1024):  # chunks bound the argsort workspace
        Dc = D[start:start + 1024]
        m = Dc.shape[0]
        # stable argsort: ties in distance keep the training index order
        nn = np.argsort(Dc, axis=1, kind="stable")[:, :k]
        nc = codes[nn]  # (m, k) class codes, nearest first
        rows = rows_all[:m]
        counts = np.bincount((rows[:, None] * n_classes + nc).ravel(),
                             minlength=m * n_classes).reshape(m, n_classes)
        # position of each class's nearest member among the k (k if absent);
        # writing from the farthest to the nearest leaves the first position
        first = np.full((m, n_classes), k, dtype=np.intp)
        for j in range(k - 1, -1, -1):
            first[rows, nc[:, j]] = j
        # most votes first, then the earliest nearest member (first < k + 1)
        score = counts * (k + 1) + (k - first)
        out[start:start + m] = classes[np.argmax(score, axis=1)]
    return out


def knn_accuracy(distances, y_train, y_test, k=1):
    """Fraction of test points whose :func:`knn_predict` label equals
    ``y_test`` (the accuracy of Table 5).

    Parameters
    ----------
    distances : array-like of shape (n_test, n_train)
    y_train : array-like of shape (n_train,)
    y_test : array-like of shape (n_test,)
    k : int, default=1

    Returns
    -------
    float

    Raises
    ------
    ValueError
        As :func:`knn_predict`, or ``y_test`` of the wrong length or of a
        label type that cannot be compared with ``y_train``.
    """
    y_pred = knn_predict(distances, y_train, k)
    y_train = np.asarray(y_train)
    y_test = _check_labels("y_test", y_test, y_pred.shape[0])
    _check_same_family("y_train", y_train, "y_test", y_test)
    return float(np.mean(y_pred == y_test))


def hierarchy_accuracy(y_true, y_pred, parent, *, per_class=False):
    """Hierarchy-aware accuracy of Eq. (24).

    For a class ``c`` with ``m`` test examples and predictions
    :math:`\\hat y_t`, :math:`Acc_c = 1 - \\frac{1}{m}\\sum_t \\Delta(c,
    \\hat y_t)` with :math:`\\Delta = 0` for a correct prediction, ``0.5``
    for a sibling class (a different class with the same parent) and ``1``
    otherwise.  For a two-level taxonomy this is the context-sensitive loss
    of Verma et al. (the height of the lowest common ancestor over the tree
    height).

    The paper reports :math:`Acc_c` per class (Table 6); this function
    aggregates them as their unweighted mean over the classes present in
    ``y_true`` (each class counts once, whatever its size; with equally
    sized classes this is the mean of :math:`1 - \\Delta` over all test
    examples).  ``per_class=True`` returns the per-class values instead.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_test,)
        True and predicted class labels (integers, strings, booleans or
        finite floats, both of the same kind).
    parent : mapping or array-like
        Parent node of each class: a dict ``class -> parent`` or a 1-D array
        indexed by integer class labels (``parent[c]``).  Two different
        classes are siblings iff their parents compare equal.
    per_class : bool, default=False

    Returns
    -------
    float or dict
        The mean of :math:`Acc_c` over the classes of ``y_true``, or with
        ``per_class=True`` a dict ``class -> Acc_c`` over those classes.

    Raises
    ------
    ValueError
        Bad or mismatched label vectors, or a label of ``y_true`` /
        ``y_pred`` without a parent entry.
    """
    y_true = _check_labels("y_true", y_true)
    y_pred = _check_labels("y_pred", y_pred, y_true.shape[0])
    _check_same_family("y_true", y_true, "y_pred", y_pred)
    labels, inv = np.unique(np.concatenate([y_true, y_pred]), return_inverse=True)
    inv = inv.ravel()  # numpy 2.0.x returns the input's shape
    n = y_true.shape[0]
    t_code, p_code = inv[:n], inv[n:]
    label_list = labels.tolist()  # Python scalars: hash like dict keys
    if isinstance(parent, dict):
        missing = [c for c in label_list if c not in parent]
        lookup = parent.get
    else:
        try:
            par = np.asarray(parent)
        except ValueError as exc:
            raise ValueError(f"parent: cannot be read as an array ({exc}).") from None
        if par.ndim != 1:
            raise ValueError(f"parent: expected a dict class -> parent or a 1-D "
                             f"array indexed by class, got shape {par.shape}.")
        if labels.dtype.kind not in "iu":
            raise ValueError(f"parent: an array parent needs integer class labels, "
                             f"got dtype {labels.dtype}; pass a dict.")
        missing = [c for c in label_list if not 0 <= c < par.shape[0]]
        par_list = par.tolist()
        lookup = par_list.__getitem__
    if missing:
        shown = ", ".join(repr(c) for c in missing[:5])
        more = f" (and {len(missing) - 5} more)" if len(missing) > 5 else ""
        raise ValueError(f"parent: no entry for label(s) {shown}{more}.")
    # parents as integer codes (any hashable parent value), one per label
    pid = {}
    try:
        pcode = np.array([pid.setdefault(lookup(c), len(pid)) for c in label_list])
    except TypeError as exc:  # unhashable parent value
        raise ValueError(f"parent: parent nodes must be hashable ({exc}).") from None
    delta = np.where(t_code == p_code, 0.0,
                     np.where(pcode[t_code] == pcode[p_code], 0.5, 1.0))
    classes, t_inv = np.unique(t_code, return_inverse=True)
    t_inv = t_inv.ravel()
    acc = 1.0 - np.bincount(t_inv, weights=delta) / np.bincount(t_inv)
    if per_class:
        return {label_list[c]: float(a) for c, a in zip(classes, acc)}
    return float(np.mean(acc))
