"""Constraint sets over a sample matrix ``X`` (n, d).

Three kinds of side information, all stored *by index* into ``X``:

* :class:`LabeledPairs` -- pairs ``(i, j)`` labelled +1 (similar) or -1
  (dissimilar);
* :class:`Triplets` -- ``(i, j, k)``: ``x_i`` is closer to ``x_j`` than to
  ``x_k``;
* :class:`Quadruplets` -- ``(i, j, k, l)`` with a margin ``delta_q``: the
  target relation is ``D_kl >= D_ij + delta_q`` (Law et al., Eq. 7).

Each can be built from index arrays plus ``X`` or from 3-D arrays of points
(the metric-learn convention, ``(n_tuples, tuple_size, n_features)``), in which
case identical points are merged and ``X`` is the array of distinct points.

The reductions of Eq. 7's bullets are exact:

* triplet ``(i, j, k)``            -> quadruplet ``(i, j, i, k)``, margin ``delta``;
* dissimilar pair ``(i, j)``       -> quadruplet ``(i, i, i, j)``, margin ``l``;
* similar pair ``(i, j)``          -> quadruplet ``(i, j, i, i)``, margin ``-u``.

A pair ``(i, i)`` has a zero difference vector and contributes nothing to a
distance; such "degenerate" pairs are what the reductions create on purpose,
but a labelled pair or a whole constraint whose distances cannot depend on the
metric is rejected.
"""

import numbers
from dataclasses import dataclass

import numpy as np
from sklearn.utils import check_random_state

from ._settings import MAX_SAMPLED
from ._validation import (
    check_finite,
    check_indices,
    check_int,
    check_samples,
    check_scalar,
)

__all__ = [
    "LabeledPairs",
    "Triplets",
    "Quadruplets",
    "tuples_to_indices",
    "pairs_from_labels",
    "triplets_from_labels",
    "quadruplets_from_labels",
    "informative",
]


def tuples_to_indices(tuples, name="tuples", *, width=None, preprocessor=None):
    """Turn tuples (indices or points) into ``(X, indices)``.

    Parameters
    ----------
    tuples : array_like
        Either integer indices of shape (n_tuples, width) into
        ``preprocessor``, or points of shape (n_tuples, width, n_features).
    name : str
        Argument name for error messages.
    width : int, optional
        Tuple size (2, 3 or 4).
    preprocessor : array_like of shape (n_samples, n_features), optional
        The sample matrix the indices refer to.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    indices : ndarray of int, shape (n_tuples, width)
    """
    if preprocessor is not None:
        if callable(preprocessor):
            raise ValueError(
                "preprocessor: only an array is supported, not a callable."
            )
        X = check_samples(preprocessor, "preprocessor")
        return X, check_indices(tuples, name, X.shape[0], width=width)
    arr = np.asarray(tuples)
    if arr.ndim == 2 and np.issubdtype(arr.dtype, np.integer):
        raise ValueError(
            f"{name}: integer indices need preprocessor=X (the samples they "
            f"index); otherwise pass points of shape (n_tuples, {width or 'k'}, "
            f"n_features)."
        )
    arr = check_finite(arr, name, ndim=3)
    if width is not None and arr.shape[1] != width:
        raise ValueError(
            f"{name}: expected shape (n_tuples, {width}, n_features), "
            f"got {arr.shape}."
        )
    if arr.shape[0] == 0:
        raise ValueError(f"{name}: the constraint set is empty.")
    if arr.shape[2] == 0:
        raise ValueError(f"{name}: points have no features.")
    flat = arr.reshape(-1, arr.shape[2])  # (n_tuples * width, d)
    X, inverse = np.unique(flat, axis=0, return_inverse=True)
    return X, inverse.reshape(arr.shape[:2]).astype(np.intp)


def _row_ids(X):
    """One integer per row of ``X``, equal exactly when the rows are equal.

    Rows are keyed by their bytes after ``+ 0.0`` (which maps ``-0.0`` to
    ``0.0``, so the keys agree with ``==``; ``X`` is finite).  O(n d), and
    it never gathers one row per pair: comparing ``X[i] == X[j]`` for 10^6
    pairs of 100 features took 2.8 s and 1.6 GB.
    """
    rows = np.ascontiguousarray(X + 0.0)
    seen = {}
    return np.fromiter((seen.setdefault(r.tobytes(), len(seen)) for r in rows),
                       dtype=np.intp, count=rows.shape[0])


def _zero_length(ids, i, j):
    """Boolean mask of pairs whose difference vector is exactly zero, from
    the row ids of :func:`_row_ids`."""
    return ids[i] == ids[j]


def _same_pair(ids, a, b, c, e):
    """Mask of tuples whose two pairs ``(a, b)`` and ``(c, e)`` join the same
    two points (in either order): both sides of their constraint are one
    distance, so the constraint does not depend on the metric."""
    lo1, hi1 = np.minimum(ids[a], ids[b]), np.maximum(ids[a], ids[b])
    lo2, hi2 = np.minimum(ids[c], ids[e]), np.maximum(ids[c], ids[e])
    return (lo1 == lo2) & (hi1 == hi2)


def informative(X, indices):
    """Mask of the triplets ``(i, j, k)`` or quadruplets ``(i, j, k, l)`` (by
    index into ``X``) whose constraint depends on the metric.

    A tuple carries no information when both of its pairs have a zero-length
    difference, or when both pairs join the same two points (the constraint
    compares a distance with itself).  :class:`Triplets` and
    :class:`Quadruplets` refuse such tuples; generators that sample from
    labels alone can draw them where rows are duplicated across classes, and
    use this mask to drop them.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    indices : ndarray of int, shape (n_tuples, 3) or (n_tuples, 4)

    Returns
    -------
    ndarray of bool, shape (n_tuples,)
    """
    idx = np.asarray(indices)
    if idx.ndim != 2 or idx.shape[1] not in (3, 4):
        raise ValueError(f"indices: expected shape (n, 3) or (n, 4), got {idx.shape}.")
    if idx.shape[1] == 3:
        i, j, k = idx.T
        idx = np.stack([i, j, i, k], axis=1)
    ids = _row_ids(X)
    a, b, c, e = idx.T
    empty = _zero_length(ids, a, b) & _zero_length(ids, c, e)
    return ~(empty | _same_pair(ids, a, b, c, e))


def _refuse(mask, name, kind, why):
    if np.any(mask):
        raise ValueError(
            f"{name}: {int(mask.sum())} {kind}(s) {why} (first at row "
            f"{int(np.flatnonzero(mask)[0])}); they do not constrain the metric."
        )


def _check_margin(delta, n, name="delta"):
    if np.ndim(delta) == 0:
        delta = check_scalar(delta, name)
        return np.full(n, delta)
    return check_finite(delta, name, shape=(n,))


@dataclass(frozen=True, eq=False)
class LabeledPairs:
    """Pairs ``(i, j)`` of rows of ``X`` labelled +1 (similar) / -1 (dissimilar).

    Attributes
    ----------
    X : ndarray of shape (n_samples, n_features)
    indices : ndarray of int, shape (n_pairs, 2)
    labels : ndarray of int, shape (n_pairs,)
        +1 for similar pairs (set S), -1 for dissimilar pairs (set D).
    """

    X: np.ndarray
    indices: np.ndarray
    labels: np.ndarray

    @classmethod
    def from_tuples(cls, pairs, y, *, preprocessor=None):
        """Build from index pairs with ``preprocessor=X`` or from 3-D points."""
        X, idx = tuples_to_indices(pairs, "pairs", width=2, preprocessor=preprocessor)
        return cls.create(X, idx, y)

    @classmethod
    def create(cls, X, indices, labels, *, name="pairs"):
        """Validate and build."""
        X = check_samples(X)
        idx = check_indices(indices, name, X.shape[0], width=2)
        y = np.asarray(labels)
        if y.shape != (idx.shape[0],):
            raise ValueError(
                f"{name} labels: expected shape ({idx.shape[0]},), got {y.shape}."
            )
        if y.dtype == object or not np.all(np.isin(y, (-1, 1))):
            # list() rather than np.unique: mixed object values do not sort
            shown = list(dict.fromkeys(y.ravel().tolist()))[:5]
            raise ValueError(
                f"{name} labels: must be +1 (similar) or -1 (dissimilar), got "
                f"values {shown}."
            )
        zero = _zero_length(_row_ids(X), idx[:, 0], idx[:, 1])
        if np.any(zero):
            raise ValueError(
                f"{name}: {int(zero.sum())} pair(s) have a zero-length difference "
                f"vector (first at row {int(np.flatnonzero(zero)[0])}); their "
                f"distance does not depend on the metric."
            )
        return cls(X, idx, y.astype(np.int8))

    @property
    def similar(self):
        """Index pairs of the similar set S, shape (n_similar, 2)."""
        return self.indices[self.labels == 1]

    @property
    def dissimilar(self):
        """Index pairs of the dissimilar set D, shape (n_dissimilar, 2)."""
        return self.indices[self.labels == -1]

    def to_quadruplets(self, u, l):
        """Exact reduction to quadruplets (Law et al., Sec. 3.1).

        Similar ``(i, j)`` becomes ``(i, j, i, i)`` with margin ``-u``
        (``D_ij <= u``); dissimilar ``(i, j)`` becomes ``(i, i, i, j)`` with
        margin ``l`` (``D_ij >= l``).
        """
        u = check_scalar(u, "u")
        l = check_scalar(l, "l")
        i, j = self.indices.T
        sim = self.labels == 1
        quads = np.where(
            sim[:, None],
            np.stack([i, j, i, i], axis=1),
            np.stack([i, i, i, j], axis=1),
        )
        delta = np.where(sim, -u, l)
        return Quadruplets(self.X, quads, delta)


@dataclass(frozen=True, eq=False)
class Triplets:
    """Triplets ``(i, j, k)``: ``D_ij`` should be smaller than ``D_ik``."""

    X: np.ndarray
    indices: np.ndarray

    @classmethod
    def from_tuples(cls, triplets, *, preprocessor=None):
        """Build from index triplets with ``preprocessor=X`` or 3-D points."""
        X, idx = tuples_to_indices(
            triplets, "triplets", width=3, preprocessor=preprocessor
        )
        return cls.create(X, idx)

    @classmethod
    def create(cls, X, indices, *, name="triplets"):
        """Validate and build."""
        X = check_samples(X)
        idx = check_indices(indices, name, X.shape[0], width=3)
        i, j, k = idx.T
        ids = _row_ids(X)
        both = _zero_length(ids, i, j) & _zero_length(ids, i, k)
        _refuse(both, name, "triplet", "have both difference vectors of zero length")
        _refuse(_same_pair(ids, i, j, i, k), name, "triplet",
                "compare a distance with itself (x_j and x_k are the same point)")
        return cls(X, idx)

    def to_quadruplets(self, delta=1.0):
        """Exact reduction: ``(i, j, k)`` -> ``(i, j, i, k)`` with margin delta."""
        i, j, k = self.indices.T
        quads = np.stack([i, j, i, k], axis=1)
        return Quadruplets(self.X, quads, _check_margin(delta, len(quads)))


@dataclass(frozen=True, eq=False)
class Quadruplets:
    """Quadruplets ``(i, j, k, l)`` with margins: want ``D_kl >= D_ij + delta``.

    Attributes
    ----------
    X : ndarray of shape (n_samples, n_features)
    indices : ndarray of int, shape (n_quadruplets, 4)
    delta : ndarray of shape (n_quadruplets,)
    """

    X: np.ndarray
    indices: np.ndarray
    delta: np.ndarray

    @classmethod
    def from_tuples(cls, quadruplets, delta=1.0, *, preprocessor=None):
        """Build from index quadruplets with ``preprocessor=X`` or 3-D points."""
        X, idx = tuples_to_indices(
            quadruplets, "quadruplets", width=4, preprocessor=preprocessor
        )
        return cls.create(X, idx, delta)

    @classmethod
    def create(cls, X, indices, delta=1.0, *, name="quadruplets"):
        """Validate and build."""
        X = check_samples(X)
        idx = check_indices(indices, name, X.shape[0], width=4)
        i, j, k, l = idx.T
        ids = _row_ids(X)
        both = _zero_length(ids, i, j) & _zero_length(ids, k, l)
        _refuse(both, name, "quadruplet", "have both difference vectors of zero length")
        _refuse(_same_pair(ids, i, j, k, l), name, "quadruplet",
                "compare a distance with itself (the pairs (i, j) and (k, l) "
                "join the same two points)")
        return cls(X, idx, _check_margin(delta, len(idx)))

    def __len__(self):
        return self.indices.shape[0]

    def concat(self, other):
        """Union of two quadruplet sets over the same ``X``."""
        if other.X is not self.X and not np.array_equal(other.X, self.X):
            raise ValueError("other: quadruplets refer to a different X.")
        return Quadruplets(
            self.X,
            np.vstack([self.indices, other.indices]),
            np.concatenate([self.delta, other.delta]),
        )


# ---------------------------------------------------------------------------
# Generators from class labels
# ---------------------------------------------------------------------------


def _check_labels(y, min_classes=2):
    y = np.asarray(y)
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"y: expected a non-empty 1-D array, got shape {y.shape}.")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y: contains NaN or infinite labels.")
    classes, codes = np.unique(y, return_inverse=True)
    if classes.size < min_classes:
        raise ValueError(
            f"y: need at least {min_classes} classes, got {classes.size}."
        )
    return codes


def _sample_same(codes, rng, size):
    """Sample ``size`` ordered pairs (i, j), i != j, of the same class."""
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    ok = counts >= 2
    if not np.any(ok):
        raise ValueError("y: no class has two samples; similar pairs are impossible.")
    # anchors drawn among samples whose class has a partner
    anchors = np.flatnonzero(ok[codes])
    i = rng.choice(anchors, size=size)
    c = codes[i]
    # draw a partner uniformly among the other members of the class
    offset = rng.randint(0, counts[c] - 1)
    pos_i = np.empty(len(codes), dtype=np.intp)
    pos_i[order] = np.arange(len(codes))
    rank_i = pos_i[i] - starts[c]
    rank_j = offset + (offset >= rank_i)
    j = order[starts[c] + rank_j]
    return i, j


def _sample_diff(codes, rng, size, anchors=None):
    """Sample ``size`` pairs (k, l) of different classes."""
    n = len(codes)
    k = rng.randint(0, n, size) if anchors is None else anchors
    l = rng.randint(0, n, size)
    bad = codes[k] == codes[l]
    while np.any(bad):  # rejection: expected few rounds with >= 2 classes
        l[bad] = rng.randint(0, n, int(bad.sum()))
        bad = codes[k] == codes[l]
    return k, l


def _check_count(n, name, low):
    """An integer count of tuples in ``[low, MAX_SAMPLED]``: a ValueError
    naming ``name`` otherwise (a float such as 2.7 or 1e12 included), a
    TypeError for what is not a number."""
    if isinstance(n, bool) or not isinstance(n, numbers.Real):
        raise TypeError(f"{name}: expected an integer, got {type(n).__name__}.")
    return check_int(n, name, low=low, high=MAX_SAMPLED)


def pairs_from_labels(y, n_pairs, *, random_state=None):
    """Sample labelled pairs: half similar (+1), half dissimilar (-1).

    Parameters
    ----------
    y : array_like of shape (n_samples,)
        Class labels, at least two classes.
    n_pairs : int in [2, 2^28]
        Number of pairs (sampled with replacement).
    random_state : int, RandomState instance or None

    Returns
    -------
    pairs : ndarray of int, shape (n_pairs, 2)
    labels : ndarray of int, shape (n_pairs,)
    """
    codes = _check_labels(y)
    n_pairs = _check_count(n_pairs, "n_pairs", 2)
    rng = check_random_state(random_state)
    n_sim = n_pairs // 2
    i, j = _sample_same(codes, rng, n_sim)
    k, l = _sample_diff(codes, rng, n_pairs - n_sim)
    pairs = np.vstack([np.stack([i, j], 1), np.stack([k, l], 1)])
    labels = np.concatenate([np.ones(n_sim, int), -np.ones(n_pairs - n_sim, int)])
    return pairs, labels


def triplets_from_labels(y, n_triplets, *, random_state=None):
    """Sample triplets ``(i, j, k)`` with ``y_i == y_j != y_k``.

    ``n_triplets`` is an integer in ``[1, 2^28]`` (sampled with
    replacement)."""
    codes = _check_labels(y)
    n_triplets = _check_count(n_triplets, "n_triplets", 1)
    rng = check_random_state(random_state)
    i, j = _sample_same(codes, rng, n_triplets)
    _, k = _sample_diff(codes, rng, n_triplets, anchors=i)
    return np.stack([i, j, k], axis=1)


def quadruplets_from_labels(y, n_quadruplets, *, random_state=None):
    """Sample quadruplets ``(i, j, k, l)`` with ``y_i == y_j`` and ``y_k != y_l``.

    A same-class pair should be closer than a different-class pair.
    ``n_quadruplets`` is an integer in ``[1, 2^28]`` (sampled with
    replacement).
    """
    codes = _check_labels(y)
    n_quadruplets = _check_count(n_quadruplets, "n_quadruplets", 1)
    rng = check_random_state(random_state)
    i, j = _sample_same(codes, rng, n_quadruplets)
    k, l = _sample_diff(codes, rng, n_quadruplets)
    return np.stack([i, j, k, l], axis=1)
