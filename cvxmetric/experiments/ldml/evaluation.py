"""The evaluation of Guillaumin, Verbeek, Schmid (2010), Sec. 4.

Verification (Sec. 4.1)
    Sample pairs of one set, about half of them positive (same class) and
    half negative (:func:`verification_pairs`; the paper takes 20 000 pairs
    per set), score each pair by minus its squared distance in the learned
    metric, and measure the average precision at ten evenly spaced values
    of recall (:func:`average_precision_10`).  The mAP is the mean of
    (train on A, test on B's pairs) and (train on B, test on A's pairs)
    (:func:`verification_map`).

Constrained clustering (Sec. 4.2)
    Name the instances of one set by the clustering of Sec. 2.3
    (:func:`~cvxmetric.ldml.label_instances`, "no name" allowed) in a
    metric learned on the other set.  The threshold ``b`` of Eq. 11 sets
    how many instances are named; a dichotomic search on ``b`` gives about
    ``n_points`` evenly spaced numbers of named instances, and the
    precision (correctly named / named) at each (:func:`naming_curve`).

Every random choice goes through ``random_state``.
"""

from typing import NamedTuple

import numpy as np
from sklearn.utils import check_random_state

from ..._validation import check_finite, check_scalar
from ...ldml._bags import LabelledBags
from ...ldml._naming import label_instances
from .._common import _check_count as _check_int

__all__ = ["RECALL_LEVELS", "split_bags", "restrict_bags", "verification_pairs", "average_precision_10",
           "pair_scores", "verification_ap", "VerificationScore",
           "verification_map", "NamingCurve", "naming_curve"]

#: The ten evenly spaced recall values of Sec. 4.1.
RECALL_LEVELS = np.arange(1, 11) / 10.0

# Above this many candidate pairs of one kind, pairs are drawn by rejection
# instead of from the enumerated list.
_ENUMERATE_MAX = 2_000_000


def _check_labels_1d(y, name, n=None):
    """Class labels: a non-empty 1-d array of integers (or finite numbers)."""
    try:
        y = np.asarray(y)
    except Exception as exc:  # ragged lists and the like
        raise ValueError(f"{name}: cannot be read as an array ({exc}).") from None
    if y.ndim != 1:
        raise ValueError(f"{name}: expected a 1-d array of class labels, got shape "
                         f"{y.shape}.")
    if y.size == 0:
        raise ValueError(f"{name}: is empty.")
    if n is not None and y.shape[0] != n:
        raise ValueError(f"{name}: expected one label per instance ({n}), got "
                         f"{y.shape[0]}.")
    if y.dtype == object or y.dtype.kind not in "biuf":
        raise ValueError(f"{name}: expected numeric class labels, got dtype {y.dtype}.")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError(f"{name}: contains NaN or infinite values.")
    return y


# ---------------------------------------------------------------------------
# Held-out instances of the same classes
# ---------------------------------------------------------------------------

def _check_set(S, name):
    for attr in ("X", "y", "bags", "captions"):
        if not hasattr(S, attr):
            raise ValueError(f"{name}: expected a LabelledBags (X, y, bags, captions), "
                             f"got {type(S).__name__} without {attr!r}.")
    if len(S.bags) == 0:
        raise ValueError(f"{name}: has no bags.")


def split_bags(S, test_size=0.5, random_state=None):
    """Split the instances of a set into two parts made of whole bags.

    A random ``test_size`` fraction of the bags (at least one, and at least
    one left) goes to the test part.  With :func:`restrict_bags` this gives
    a training set and held-out instances of the same classes -- a protocol
    beside the paper's, whose two sets share no class.

    Parameters
    ----------
    S : LabelledBags
    test_size : float in (0, 1), default=0.5
        Fraction of the bags.
    random_state : int, RandomState instance or None

    Returns
    -------
    train, test : ndarray of int
        Sorted instance indices of the two parts (disjoint; together, the
        instances of every bag).
    """
    _check_set(S, "S")
    test_size = check_scalar(test_size, "test_size", low=0.0, high=1.0)
    n_bags = len(S.bags)
    if n_bags < 2:
        raise ValueError("S: at least two bags are needed to split.")
    if not 0.0 < test_size < 1.0:
        raise ValueError(f"test_size: must be in (0, 1), got {test_size}.")
    rng = check_random_state(random_state)
    n_test = min(max(int(round(test_size * n_bags)), 1), n_bags - 1)
    order = rng.permutation(n_bags)
    parts = [np.sort(np.concatenate([np.asarray(S.bags[k], dtype=np.intp)
                                     for k in ks]))
             for ks in (order[n_test:], order[:n_test])]
    return parts[0], parts[1]


def restrict_bags(S, instances):
    """The bags of ``S`` that lie entirely in ``instances``, as a new set.

    Parameters
    ----------
    S : LabelledBags
    instances : array_like of int
        Instance indices into ``S.X``.

    Returns
    -------
    LabelledBags
        ``X`` and ``y`` of the kept bags' instances (in increasing index
        order), the kept bags re-indexed into them, their captions, the
        same ``setting``.

    Raises
    ------
    ValueError
        Naming ``instances`` when an index is out of range or no bag lies
        entirely in it.
    """
    _check_set(S, "S")
    n = len(S.y)
    inst = np.asarray(instances)
    if inst.ndim != 1 or (inst.size and (inst.dtype == bool
                                         or not np.issubdtype(inst.dtype, np.integer))):
        raise ValueError(f"instances: expected a 1-d array of integer indices, got "
                         f"shape {inst.shape} and dtype {inst.dtype}.")
    if inst.size and (inst.min() < 0 or inst.max() >= n):
        bad = int(inst.min()) if inst.min() < 0 else int(inst.max())
        raise ValueError(f"instances: index {bad} is out of range for {n} instances.")
    inside = np.zeros(n, dtype=bool)
    inside[inst.astype(np.intp)] = True
    keep = [k for k, B in enumerate(S.bags) if np.all(inside[np.asarray(B, dtype=np.intp)])]
    if not keep:
        raise ValueError("instances: no bag lies entirely among these instances.")
    used = np.sort(np.concatenate([np.asarray(S.bags[k], dtype=np.intp) for k in keep]))
    new_index = np.full(n, -1, dtype=np.intp)
    new_index[used] = np.arange(used.size)
    bags = [np.sort(new_index[np.asarray(S.bags[k], dtype=np.intp)]) for k in keep]
    captions = [np.asarray(S.captions[k]) for k in keep]
    return LabelledBags(np.asarray(S.X)[used], np.asarray(S.y)[used], bags, captions,
                        getattr(S, "setting", None))


# ---------------------------------------------------------------------------
# Verification pairs
# ---------------------------------------------------------------------------

def _encode(i, j, n):
    """An unordered pair as one integer (``i < j``)."""
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    return lo.astype(np.int64) * n + hi


def _take_distinct(codes, seen, need):
    """Append the first ``need`` codes not in ``seen`` (in order); the list of
    codes kept."""
    codes = codes[~np.isin(codes, np.fromiter(seen, dtype=np.int64, count=len(seen)))]
    _, first = np.unique(codes, return_index=True)
    kept = codes[np.sort(first)][:need]
    seen.update(kept.tolist())
    return kept


def _sample_positive(codes_y, counts, n_pos, n, rng):
    """``n_pos`` distinct same-class pairs, uniform among them."""
    if n_pos == 0:
        return np.zeros(0, dtype=np.int64)
    per_class = counts * (counts - 1) // 2
    total = int(per_class.sum())
    members = [np.flatnonzero(codes_y == c) for c in range(counts.size)]
    if total <= 2 * n_pos or total <= _ENUMERATE_MAX:
        allp = np.concatenate([_class_pairs(m, n) for m in members if m.size > 1])
        return rng.choice(allp, size=n_pos, replace=False)
    seen, out = set(), []
    p = per_class / total
    while sum(len(o) for o in out) < n_pos:
        need = n_pos - sum(len(o) for o in out)
        k = rng.choice(counts.size, size=2 * need + 16, p=p)
        a = rng.random(k.size)
        b = rng.random(k.size)
        size = counts[k]
        i = np.floor(a * size).astype(np.int64)
        j = np.floor(b * (size - 1)).astype(np.int64)
        j = j + (j >= i)  # a distinct second member
        gi = np.array([members[c][t] for c, t in zip(k, i)], dtype=np.int64)
        gj = np.array([members[c][t] for c, t in zip(k, j)], dtype=np.int64)
        out.append(_take_distinct(_encode(gi, gj, n), seen, need))
    return np.concatenate(out)


def _class_pairs(m, n):
    i, j = np.triu_indices(m.size, 1)
    return _encode(m[i], m[j], n)


def _sample_negative(codes_y, counts, n_neg, n, rng):
    """``n_neg`` distinct different-class pairs, uniform among them."""
    if n_neg == 0:
        return np.zeros(0, dtype=np.int64)
    total = n * (n - 1) // 2 - int(np.sum(counts * (counts - 1) // 2))
    if total <= 2 * n_neg or total <= _ENUMERATE_MAX:
        i, j = np.triu_indices(n, 1)
        keep = codes_y[i] != codes_y[j]
        return rng.choice(_encode(i[keep], j[keep], n), size=n_neg, replace=False)
    accept = total / (n * (n - 1) / 2)
    seen, out = set(), []
    while sum(len(o) for o in out) < n_neg:
        need = n_neg - sum(len(o) for o in out)
        m = int(min(10 * need / accept + 16, 10_000_000))
        i = rng.integers(0, n, size=m)
        j = rng.integers(0, n - 1, size=m)
        j = j + (j >= i)
        keep = codes_y[i] != codes_y[j]
        out.append(_take_distinct(_encode(i[keep], j[keep], n), seen, need))
    return np.concatenate(out)


def verification_pairs(y, n_pairs, random_state=None):
    """Pairs for the verification task of Sec. 4.1, half positive, half negative.

    Draws ``n_pairs // 2`` distinct positive pairs (two distinct instances
    of the same class), uniformly among all such pairs, and ``n_pairs -
    n_pairs // 2`` distinct negative pairs (different classes), uniformly
    among those; returned in a random order.  The paper samples 20 000
    pairs of each set.

    Parameters
    ----------
    y : array_like of shape (n_instances,)
        The class of each instance (integers or other numbers).
    n_pairs : int >= 2
        Number of pairs.  Each kind must have enough distinct pairs.
    random_state : int, RandomState instance or None

    Returns
    -------
    pairs : ndarray of int, shape (n_pairs, 2)
        Indices into ``y`` of two distinct instances, ``pairs[:, 0] <
        pairs[:, 1]``; no pair occurs twice.
    labels : ndarray of int, shape (n_pairs,)
        +1 for a positive (same-class) pair, -1 for a negative one.

    Raises
    ------
    ValueError
        Naming ``y`` when it is empty, not 1-d, has NaN, has a single class
        (no negative pair) or no class with two instances (no positive
        pair); naming ``n_pairs`` when there are fewer distinct pairs of a
        kind than requested.

    Examples
    --------
    >>> pairs, labels = verification_pairs([0, 0, 1, 1, 2, 2], 4, random_state=0)
    >>> pairs.shape, int((labels == 1).sum())
    ((4, 2), 2)
    """
    y = _check_labels_1d(y, "y")
    n_pairs = _check_int(n_pairs, "n_pairs", 2)
    rng = check_random_state(random_state)
    gen = np.random.default_rng(rng.randint(2 ** 31 - 1))
    _, codes_y = np.unique(y, return_inverse=True)
    counts = np.bincount(codes_y).astype(np.int64)
    n = y.shape[0]
    if counts.size < 2:
        raise ValueError("y: only one class; negative (different-class) pairs need "
                         "at least two.")
    n_pos_avail = int(np.sum(counts * (counts - 1) // 2))
    if n_pos_avail == 0:
        raise ValueError("y: no class has two instances; positive (same-class) pairs "
                         "need one.")
    n_neg_avail = n * (n - 1) // 2 - n_pos_avail
    n_pos = n_pairs // 2
    n_neg = n_pairs - n_pos
    if n_pos > n_pos_avail or n_neg > n_neg_avail:
        raise ValueError(f"n_pairs: {n_pairs} pairs need {n_pos} distinct positive and "
                         f"{n_neg} distinct negative pairs; y has {n_pos_avail} and "
                         f"{n_neg_avail}.")
    pos = _sample_positive(codes_y, counts, n_pos, n, gen)
    neg = _sample_negative(codes_y, counts, n_neg, n, gen)
    codes = np.concatenate([pos, neg])
    labels = np.concatenate([np.ones(n_pos, dtype=int), -np.ones(n_neg, dtype=int)])
    order = gen.permutation(n_pairs)
    codes, labels = codes[order], labels[order]
    pairs = np.column_stack([codes // n, codes % n]).astype(np.intp)
    return pairs, labels


# ---------------------------------------------------------------------------
# Average precision at ten recall values
# ---------------------------------------------------------------------------

def _check_pair_labels(labels, n, name="labels"):
    try:
        labels = np.asarray(labels)
    except Exception as exc:
        raise ValueError(f"{name}: cannot be read as an array ({exc}).") from None
    if labels.ndim != 1 or labels.shape[0] != n:
        raise ValueError(f"{name}: expected shape ({n},) (one label per score), got "
                         f"{labels.shape}.")
    if labels.dtype == bool:
        return labels
    if labels.dtype == object or labels.dtype.kind not in "iuf" \
            or not np.all(np.isin(labels, (-1, 1))):
        shown = list(dict.fromkeys(labels.ravel().tolist()))[:5]
        raise ValueError(f"{name}: must be +1 (positive) or -1 (negative) (or "
                         f"booleans), got values {shown}.")
    return labels == 1


def average_precision_10(scores, labels):
    """Average precision at ten evenly spaced values of recall (Sec. 4.1).

    Definition.  Rank the pairs by decreasing score.  For every distinct
    score ``t``, the pairs with ``score >= t`` are called positive, which
    gives ``precision(t) = TP(t) / #{score >= t}`` and ``recall(t) = TP(t) /
    P`` (``P``: the number of positive pairs); tied scores enter together,
    so the value does not depend on the order of ties.  The interpolated
    precision at recall ``r`` is the best precision at any recall at least
    ``r`` (as in the 11-point AP of PASCAL VOC 2007)::

        p_interp(r) = max { precision(t) : recall(t) >= r }

    and the score is its mean over the ten recall values ``r = 0.1, 0.2,
    ..., 1.0`` (:data:`RECALL_LEVELS`; recall 0 is not used)::

        AP10 = (1 / 10) sum_{k=1..10} p_interp(k / 10).

    A perfect ranking scores 1; a constant score, the fraction of positive
    pairs.  The comparison ``recall(t) >= k / 10`` is done in integers
    (``10 TP(t) >= k P``), exactly.

    Parameters
    ----------
    scores : array_like of shape (n,)
        Higher means "more likely positive" (for a metric: minus the
        squared distance).
    labels : array_like of shape (n,)
        +1 (positive) or -1 (negative), or booleans; at least one positive.

    Returns
    -------
    float
        ``AP10`` in [0, 1].

    Raises
    ------
    ValueError
        Naming ``scores`` (empty, not 1-d, NaN / inf) or ``labels`` (shape,
        values other than +-1, no positive).

    Examples
    --------
    >>> average_precision_10([0.9, 0.8, 0.7, 0.6], [1, -1, 1, -1])
    0.8333333333333334
    """
    scores = check_finite(scores, "scores", ndim=1)
    if scores.size == 0:
        raise ValueError("scores: is empty.")
    pos = _check_pair_labels(labels, scores.shape[0])
    P = int(np.sum(pos))
    if P == 0:
        raise ValueError("labels: no positive pair; recall is undefined.")
    order = np.argsort(-scores, kind="stable")
    s, p = scores[order], pos[order]
    tp = np.cumsum(p)
    # the last index of each group of tied scores: thresholds t = distinct scores
    last = np.flatnonzero(np.r_[s[1:] != s[:-1], True])
    tp, called = tp[last], last + 1
    precision = tp / called
    # p_interp at recall k/10: the best precision among thresholds with
    # 10 TP >= k P (a suffix maximum, since TP grows with the threshold index)
    best_after = np.maximum.accumulate(precision[::-1])[::-1]
    k = np.arange(1, 11)
    first = np.searchsorted(10 * tp, k * P, side="left")  # first with 10 TP >= k P
    return float(np.mean(best_after[first]))


def pair_scores(Z, pairs):
    """Minus the squared distance of each pair in the coordinates ``Z``.

    Parameters
    ----------
    Z : array_like of shape (n_instances, d)
        The instances in the metric's coordinates (``X @ L.T``; ``d_M(x_i,
        x_j) = ||z_i - z_j||^2``).
    pairs : array_like of int, shape (n_pairs, 2)

    Returns
    -------
    ndarray of shape (n_pairs,)
    """
    Z = check_finite(Z, "Z", ndim=2)
    if Z.shape[0] == 0:
        raise ValueError("Z: is empty.")
    pairs = np.asarray(pairs)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.shape[0] == 0:
        raise ValueError(f"pairs: expected a non-empty (n_pairs, 2) array of indices, "
                         f"got shape {pairs.shape}.")
    if pairs.dtype == bool or not np.issubdtype(pairs.dtype, np.integer):
        raise ValueError(f"pairs: indices must be integers, got dtype {pairs.dtype}.")
    if pairs.min() < 0 or pairs.max() >= Z.shape[0]:
        bad = int(pairs.min()) if pairs.min() < 0 else int(pairs.max())
        raise ValueError(f"pairs: index {bad} is out of range for {Z.shape[0]} "
                         f"instances.")
    diff = Z[pairs[:, 0]] - Z[pairs[:, 1]]
    return -np.einsum("pd,pd->p", diff, diff)


def verification_ap(Z, pairs, labels):
    """:func:`average_precision_10` of the pairs scored by minus their squared
    distance in the coordinates ``Z`` (see :func:`pair_scores`)."""
    scores = pair_scores(Z, pairs)
    return average_precision_10(scores, labels)


class VerificationScore(NamedTuple):
    """Result of :func:`verification_map`."""

    #: mean of the two APs (the paper's mAP)
    map: float
    #: AP10 on B's pairs of the metric trained on A
    ap_train_A: float
    #: AP10 on A's pairs of the metric trained on B
    ap_train_B: float


def _set_Xy(S, name):
    X = getattr(S, "X", None)
    y = getattr(S, "y", None)
    if X is None or y is None:
        raise ValueError(f"{name}: expected a labelled set with attributes X and y "
                         f"(a LabelledBags), got {type(S).__name__}.")
    X = check_finite(X, f"{name}.X", ndim=2)
    if X.shape[0] == 0:
        raise ValueError(f"{name}.X: is empty.")
    y = _check_labels_1d(y, f"{name}.y", X.shape[0])
    return X, y


def verification_map(fit_and_embed, A, B, *, n_pairs=20000, pairs=None,
                     random_state=None):
    """The mAP of Sec. 4.1: train on A, test on B's pairs, and the reverse.

    Parameters
    ----------
    fit_and_embed : callable
        ``fit_and_embed(train, test)`` learns a metric on the set ``train``
        and returns ``test.X`` in its coordinates, an array (n_test, d)
        (e.g. ``est.fit(...).transform(test.X)``; the identity for L2).
    A, B : LabelledBags
        The two sets (anything with ``X`` and ``y``).
    n_pairs : int, default=20000
        Pairs per test set (:func:`verification_pairs`), when ``pairs`` is
        not given.
    pairs : tuple, optional
        ``((pairs_A, labels_A), (pairs_B, labels_B))``: test pairs fixed in
        advance (the same for every method compared).
    random_state : int, RandomState instance or None
        For sampling the pairs.

    Returns
    -------
    VerificationScore
        ``map``, ``ap_train_A`` (tested on B), ``ap_train_B`` (tested on A).
    """
    if not callable(fit_and_embed):
        raise TypeError(f"fit_and_embed: expected a callable, got "
                        f"{type(fit_and_embed).__name__}.")
    _, yA = _set_Xy(A, "A")
    _, yB = _set_Xy(B, "B")
    if pairs is None:
        rng = check_random_state(random_state)
        pairs = (verification_pairs(yA, n_pairs, rng), verification_pairs(yB, n_pairs, rng))
    elif len(pairs) != 2 or any(len(p) != 2 for p in pairs):
        raise ValueError("pairs: expected ((pairs_A, labels_A), (pairs_B, labels_B)).")
    aps = []
    for train, test, (P, lab), name, n_test in ((A, B, pairs[1], "B", len(yB)),
                                                (B, A, pairs[0], "A", len(yA))):
        Z = np.asarray(fit_and_embed(train, test))
        if Z.ndim != 2 or Z.shape[0] != n_test:
            raise ValueError(f"fit_and_embed: expected an array ({n_test}, d) for set "
                             f"{name}, got shape {Z.shape}.")
        aps.append(verification_ap(Z, P, lab))
    return VerificationScore(float(np.mean(aps)), aps[0], aps[1])


# ---------------------------------------------------------------------------
# Naming precision curve
# ---------------------------------------------------------------------------

class NamingCurve(NamedTuple):
    """Result of :func:`naming_curve`, sorted by ``b``."""

    #: instances given a name at each threshold
    n_named: np.ndarray
    #: correctly named / named (NaN where nothing is named)
    precision: np.ndarray
    #: the thresholds ``b`` of Eq. 11
    b: np.ndarray
    #: the most instances the captions can name (each class once per bag)
    n_nameable: int


def _naming_bag(k, B, n):
    """Bag ``k`` as a non-empty 1-d array of indices into ``n`` instances."""
    B = np.asarray(B)
    if B.ndim != 1 or B.size == 0:
        raise ValueError(f"bags[{k}]: expected a non-empty 1-d array of instance "
                         f"indices, got shape {B.shape}.")
    if B.dtype == bool or not np.issubdtype(B.dtype, np.integer):
        raise ValueError(f"bags[{k}]: indices must be integers, got dtype {B.dtype}.")
    if B.min() < 0 or B.max() >= n:
        bad = int(B.min()) if B.min() < 0 else int(B.max())
        raise ValueError(f"bags[{k}]: index {bad} is out of range for {n} "
                         f"instances.")
    return B.astype(np.intp)


def _naming_caption(k, c):
    """Caption ``k`` as its sorted distinct non-negative integer labels."""
    c = np.atleast_1d(np.asarray(c))
    if c.size and (c.dtype == bool or not np.issubdtype(c.dtype, np.integer)):
        raise ValueError(f"captions[{k}]: labels must be integers, got dtype "
                         f"{c.dtype}.")
    if c.size and c.min() < 0:
        raise ValueError(f"captions[{k}]: labels must be non-negative integers.")
    return np.unique(c.astype(np.intp))


def _naming_input(Z, bags, captions, y_true):
    Z = check_finite(Z, "Z", ndim=2)
    if Z.shape[0] == 0:
        raise ValueError("Z: is empty.")
    n = Z.shape[0]
    y_true = _check_labels_1d(y_true, "y_true", n)
    if not hasattr(bags, "__len__") or len(bags) == 0:
        raise ValueError("bags: expected a non-empty sequence of index arrays.")
    if not hasattr(captions, "__len__") or len(captions) != len(bags):
        got = len(captions) if hasattr(captions, "__len__") else None
        raise ValueError(f"captions: expected one label set per bag ({len(bags)}), "
                         f"got {got}.")
    bags_out, caps_out = [], []
    for k, (B, c) in enumerate(zip(bags, captions)):
        bags_out.append(_naming_bag(k, B, n))
        caps_out.append(_naming_caption(k, c))
    allidx = np.concatenate(bags_out)
    if np.unique(allidx).size != allidx.size:
        raise ValueError("bags: an instance belongs to two bags (or twice to one).")
    if not any(c.size for c in caps_out):
        raise ValueError("captions: every caption is empty; nothing can be named.")
    return Z, bags_out, caps_out, y_true


def _check_named_range(named_range):
    """``(low, high)`` of :func:`naming_curve`'s ``named_range``, with
    ``0 < low < high <= 1``."""
    try:
        if len(named_range) != 2:
            raise TypeError
        lo_f, hi_f = (check_scalar(v, "named_range") for v in named_range)
    except TypeError:
        raise ValueError(f"named_range: expected two fractions (low, high), got "
                         f"{named_range!r}.") from None
    if not 0.0 < lo_f < hi_f <= 1.0:
        raise ValueError(f"named_range: expected 0 < low < high <= 1, got "
                         f"({lo_f}, {hi_f}).")
    return lo_f, hi_f


def _distance_scale(Z):
    """The scale of the threshold ``b``: the median squared distance of a
    fixed sample of pairs (their largest if the median is 0, else 1)."""
    n = Z.shape[0]
    idx = np.arange(n)[:: max(1, n // 500)]
    sub = Z[idx]
    sq = np.einsum("nd,nd->n", sub, sub)
    d2 = sq[:, None] + sq[None, :] - 2.0 * sub @ sub.T
    d2 = d2[np.triu_indices(len(idx), 1)]
    scale = float(np.median(d2)) if d2.size else 1.0
    if not scale > 0:
        scale = float(np.max(d2)) if d2.size and np.max(d2) > 0 else 1.0
    return scale


class _NamingRuns:
    """The clusterings of :func:`naming_curve`, one per threshold ``b``.

    ``cache`` maps ``b`` to ``(n_named, precision)`` and ``labels`` to the
    labels found.
    """

    def __init__(self, Z, bags, caps, y_true, n_sweeps):
        self.Z, self.bags, self.caps, self.y_true = Z, bags, caps, y_true
        self.n_sweeps = n_sweeps
        self.cache = {}
        self.labels = {}

    def count(self, b, warm=True):
        """The number of instances named at threshold ``b`` (run once)."""
        if b not in self.cache:
            # continuation in b: start from the labels of the nearest larger
            # threshold evaluated (the paper's start at a small b empties
            # every class in its first sweep and names by ties)
            above = [c for c in self.labels if c > b] if warm else []
            init = self.labels[min(above)] if above else None
            lab = label_instances(self.Z, self.bags, self.caps, b,
                                  n_sweeps=self.n_sweeps, name_all=False, init=init)
            named = lab >= 0
            k = int(named.sum())
            prec = (float(np.mean(lab[named] == self.y_true[named])) if k
                    else float("nan"))
            self.cache[b] = (k, prec)
            self.labels[b] = lab
        return self.cache[b][0]

    def forget_below(self, b_hi):
        """Drop the runs at thresholds below ``b_hi``."""
        for c in [c for c in self.cache if c < b_hi]:
            del self.cache[c], self.labels[c]


def _search_target(runs, t, tol, max_evals, b_hi):
    """Bisect ``b`` between the evaluated thresholds that bracket the target
    count ``t`` until a count is within ``tol`` of it, the budget of
    ``max_evals`` runs is spent, or the count jumps over ``t``."""
    while len(runs.cache) < max_evals:
        bs = np.array(sorted(runs.cache))
        ks = np.array([runs.cache[b][0] for b in bs])
        if np.min(np.abs(ks - t)) <= tol:
            break
        below = np.flatnonzero(ks < t)
        if below.size == 0:
            break
        i = below[-1]  # largest b whose count is below the target
        above = np.flatnonzero((ks >= t) & (bs > bs[i]))
        if above.size == 0:
            break
        lo_b, hi_b = bs[i], bs[above[0]]
        mid = 0.5 * (lo_b + hi_b)
        if hi_b - lo_b <= 1e-6 * b_hi or not lo_b < mid < hi_b:
            break  # a jump of the count: no threshold in between reaches t
        runs.count(mid)


def _closest_points(cache, targets, n_nameable):
    """The :class:`NamingCurve` of the evaluated thresholds closest to the
    targets, sorted by ``b``, each count kept once and 0 left out."""
    bs = np.array(sorted(cache))
    ks = np.array([cache[b][0] for b in bs])
    chosen = set()
    for t in targets:
        chosen.add(float(bs[int(np.argmin(np.abs(ks - t)))]))
    chosen = sorted(chosen)
    out_k, out_p, out_b, seen = [], [], [], set()
    for b in chosen:
        k, p = cache[b]
        if k in seen or k == 0:
            continue
        seen.add(k)
        out_k.append(k)
        out_p.append(p)
        out_b.append(b)
    return NamingCurve(np.array(out_k, dtype=int), np.array(out_p, dtype=float),
                       np.array(out_b, dtype=float), n_nameable)


def naming_curve(Z, bags, captions, y_true, *, n_points=50, named_range=(0.05, 1.0),
                 max_evals=None, n_sweeps=5):
    """Naming precision against the number of named instances (Sec. 4.2).

    At a threshold ``b`` the constrained clustering of Sec. 2.3
    (:func:`~cvxmetric.ldml.label_instances` with ``name_all=False``: "no
    name" competes) names some instances; ``b <= 0`` names none, a large
    ``b`` every instance the captions have room for.  A dichotomic search on
    ``b`` looks for ``n_points`` evenly spaced numbers of named instances
    between ``named_range[0]`` and ``named_range[1]`` times the nameable
    count.  The predicted class of an instance is the caption label it is
    given, compared directly with ``y_true`` (the captions hold the class
    labels themselves).  The clustering at the top threshold starts as the
    paper's; every smaller threshold starts from the labels of the nearest
    larger one evaluated (a continuation: from the paper's start, a small
    ``b`` empties every class in the first sweep and names by ties).

    Parameters
    ----------
    Z : array_like of shape (n_instances, d)
        The instances in the metric's coordinates.
    bags : sequence of array_like of int
        Disjoint index arrays into ``Z``.
    captions : sequence of sequence of int
        The label set of each bag (non-negative integers, in the label
        space of ``y_true``; may be empty).
    y_true : array_like of shape (n_instances,)
        The true class of each instance.
    n_points : int >= 2, default=50
        Targets of the search (the paper: 50).
    named_range : (float, float), default=(0.05, 1.0)
        The targets' range as fractions of the nameable count ``sum_d
        min(|bag_d|, |caption_d|)``, ``0 < low < high <= 1``.
    max_evals : int, optional
        Most clusterings run (default ``4 * n_points``); each is one call to
        :func:`~cvxmetric.ldml.label_instances`.
    n_sweeps : int >= 1, default=5
        Passed to :func:`~cvxmetric.ldml.label_instances`.

    Returns
    -------
    NamingCurve
        ``n_named``, ``precision``, ``b`` (the distinct thresholds whose
        counts came closest to the targets, sorted by ``b``) and
        ``n_nameable``.  The count is not guaranteed to grow with ``b``
        (the clustering is a local optimum), so points are sorted by ``b``
        and duplicates of a count are kept once.
    """
    Z, bags, caps, y_true = _naming_input(Z, bags, captions, y_true)
    n_points = _check_int(n_points, "n_points", 2)
    n_sweeps = _check_int(n_sweeps, "n_sweeps", 1)
    max_evals = 4 * n_points if max_evals is None else _check_int(max_evals, "max_evals",
                                                                  2)
    lo_f, hi_f = _check_named_range(named_range)
    n_nameable = int(sum(min(B.size, c.size) for B, c in zip(bags, caps)))
    lo_t = max(1.0, lo_f * n_nameable)
    hi_t = max(lo_t, hi_f * n_nameable)
    targets = np.linspace(lo_t, hi_t, n_points)
    spacing = (hi_t - lo_t) / max(n_points - 1, 1)
    tol = max(0.5, 0.3 * spacing)

    runs = _NamingRuns(Z, bags, caps, y_true, n_sweeps)
    # brackets: b = 0 names nothing; double until the top target is reached
    b_hi = _distance_scale(Z)
    for _ in range(200):
        if runs.count(b_hi, warm=False) >= hi_t - tol or len(runs.cache) >= max_evals:
            break
        b_hi *= 2.0
    # the search proper descends from b_hi: forget the cold starts below it
    runs.forget_below(b_hi)
    runs.count(0.0)
    for t in targets:
        _search_target(runs, t, tol, max_evals, b_hi)
    return _closest_points(runs.cache, targets, n_nameable)
