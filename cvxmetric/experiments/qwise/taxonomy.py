"""Hierarchical metric learning: quadruplets from a class taxonomy (Sec. 6).

Law, Thome and Cord, "Learning a distance metric from relative comparisons
between quadruplets of images" (IJCV 2016), Sec. 6.1, learn a metric in
which images of *sibling* classes (same super-class) are closer than images
of *cousin* classes (different super-classes), from two kinds of
quadruplets ``(i, j, k, l)`` asking for ``D(i, j) + delta <= D(k, l)``
(Eq. 7-8), ``c_a`` being the class of the anchor ``I_i``:

* type (1): ``(I_i, I_j)`` both in ``c_a``, ``(I_k, I_l)`` in
  ``c_a x c_b`` with ``c_b`` a sibling of ``c_a`` -- a same-class pair is
  closer than a sibling pair;
* type (2): ``(I_i, I_j)`` in ``c_a x c_b`` (``c_b`` a sibling),
  ``(I_k, I_l)`` in ``c_a x c_d`` with ``c_d`` a cousin -- a sibling pair
  is closer than a cousin pair.

To limit the number of constraints, ``I_j`` is one of the ``k`` nearest
neighbours of ``I_i``: within ``c_a`` for type (1), within the sibling
classes of ``c_a`` for type (2).

:class:`ClassTree` validates the two-level taxonomy (leaf class ->
super-class) and :func:`taxonomy_quadruplets` samples both types; the
result plugs into :class:`~cvxmetric.Qwise` (full matrix, Eq. 8) and
:class:`~cvxmetric.QwiseVector` (diagonal, Eq. 12-14) as
``fit(quadruplets, delta=delta)`` with ``preprocessor=X``.  The
hierarchy-aware accuracy of Eq. 24 (Table 6) is
:func:`cvxmetric.metrics.hierarchy_accuracy`, which takes the same
``parent`` mapping.

Decisions where the paper is silent
-----------------------------------
* The neighbours of ``I_i`` are its ``k`` nearest under a fixed metric of
  the input space (Euclidean by default), as LMNN's target neighbours;
  ``I_i`` itself is never its own neighbour.  When the pool is smaller than
  ``k`` every member of it is a neighbour.
* ``(I_k, I_l)`` is a *new* pair, not tied to ``I_i``: ``I_k`` uniform in
  ``c_a`` and ``I_l`` uniform among the samples of the sibling classes
  (type 1) or of the cousin classes (type 2), pooled.  The paper contrasts
  its quadruplets with LMNN's triplets, whose far pair shares the anchor;
  ``same_anchor=True`` gives that triplet-like reading (``I_k = I_i``).
* Margins ``delta = 1`` for both types (the Eq. 8 default); features should
  be on a scale where a unit margin is meaningful.
* A super-class with a single leaf is allowed: its class gets no anchor
  (it has no sibling) but serves as a cousin of every other class.  A
  tree (or a label set) in which no class has a sibling present cannot
  produce either type and is refused, as is one without two super-classes
  when type (2) quadruplets are asked for.
"""

from dataclasses import dataclass
from numbers import Real
from typing import NamedTuple

import numpy as np
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state

from ..._validation import check_finite, check_int, check_samples, check_scalar, describe
from ...constraints import informative

__all__ = ["ClassTree", "TaxonomyQuadruplets", "taxonomy_quadruplets"]

#: Rounds of re-sampling for the (rare) quadruplets that cannot constrain a
#: metric because rows are duplicated across classes.
_MAX_RESAMPLE = 20


def _is_missing(v):
    """A parent that is not given: None or a float NaN."""
    return v is None or (isinstance(v, (float, np.floating)) and np.isnan(v))


@dataclass(frozen=True, eq=False)
class ClassTree:
    """A validated two-level class taxonomy: leaf classes under super-classes.

    Build it with :meth:`create`.  Two leaf classes are *siblings* when they
    are distinct and share their super-class, *cousins* when their
    super-classes differ (Sec. 6.1).

    Attributes
    ----------
    leaves : ndarray of shape (n_leaves,)
        The leaf class labels, sorted.
    supers : ndarray of shape (n_supers,)
        The super-class labels, sorted.
    parent_code : ndarray of int, shape (n_leaves,)
        ``supers[parent_code[c]]`` is the super-class of ``leaves[c]``.
    """

    leaves: np.ndarray
    supers: np.ndarray
    parent_code: np.ndarray

    @classmethod
    def create(cls, parent):
        """Validate a taxonomy and build the tree.

        Parameters
        ----------
        parent : dict or array_like of shape (n_leaves,)
            A mapping ``leaf class -> super-class``, or an array whose entry
            ``c`` is the super-class of leaf class ``c`` (leaves
            ``0 .. n_leaves - 1``).  Leaf and super-class labels live on
            different levels, so a super-class may share a label with a leaf
            (``parent=[0, 0, 1, 1]`` is valid).  A :class:`ClassTree` is
            returned unchanged.

        Returns
        -------
        ClassTree

        Raises
        ------
        ValueError
            ``parent`` is empty, has fewer than two leaf classes, gives a
            leaf no parent (None or NaN), or mixes label types that do not
            sort.
        """
        if isinstance(parent, ClassTree):
            return parent
        if isinstance(parent, dict):
            keys, values = list(parent.keys()), list(parent.values())
        else:
            if isinstance(parent, (str, bytes)):
                raise ValueError("parent: expected a dict or a 1-D array of "
                                 "super-classes, got a string.")
            try:
                arr = np.asarray(parent)
            except Exception as exc:  # ragged lists and the like
                raise ValueError(
                    f"parent: cannot be read as an array ({exc}).") from None
            if arr.ndim != 1:
                raise ValueError(
                    f"parent: expected a dict or a 1-D array of super-classes, "
                    f"got shape {arr.shape}.")
            keys, values = list(range(arr.shape[0])), arr.tolist()
        if len(keys) < 2:
            raise ValueError(
                f"parent: a taxonomy needs at least two leaf classes, got "
                f"{len(keys)}.")
        missing = [k for k, v in zip(keys, values) if _is_missing(v)]
        if missing:
            raise ValueError(
                f"parent: {len(missing)} leaf class(es) without a super-class "
                f"(first: {_show(missing[0])}).")
        leaves = _sorted_labels(keys, "parent", "leaf classes")
        supers = _sorted_labels(values, "parent", "super-classes")
        order = np.searchsorted(leaves, _as_array(keys))
        parent_code = np.empty(len(keys), dtype=np.intp)
        parent_code[order] = np.searchsorted(supers, _as_array(values))
        return cls(leaves, supers, parent_code)

    @property
    def n_leaves(self):
        """Number of leaf classes."""
        return self.leaves.shape[0]

    @property
    def parent(self):
        """The taxonomy as a dict ``leaf class -> super-class``."""
        return {a.item() if hasattr(a, "item") else a:
                (s.item() if hasattr(s, "item") else s)
                for a, s in zip(self.leaves, self.supers[self.parent_code])}

    def encode(self, y, name="y"):
        """Leaf codes (indices into :attr:`leaves`) of the labels ``y``.

        Parameters
        ----------
        y : array_like of shape (n_samples,)
            Leaf class labels.
        name : str, default="y"
            The argument named in an error message.

        Returns
        -------
        ndarray of int, shape (n_samples,)

        Raises
        ------
        ValueError
            ``y`` is not a non-empty 1-D array, or holds a label that is not
            a leaf of the tree.
        """
        try:
            y = np.asarray(y)
        except Exception as exc:
            raise ValueError(f"{name}: cannot be read as an array ({exc}).") from None
        if y.ndim != 1 or y.size == 0:
            raise ValueError(f"{name}: expected a non-empty 1-D array of labels, "
                             f"got shape {y.shape}.")
        try:
            labels, inverse = np.unique(y, return_inverse=True)
            pos = np.searchsorted(self.leaves, labels)
        except TypeError:  # labels that do not compare with the leaves
            raise ValueError(f"{name}: labels of a type that does not compare "
                             f"with the tree's leaf classes.") from None
        pos = np.minimum(pos, self.n_leaves - 1)
        unknown = labels[self.leaves[pos] != labels]
        if unknown.size:
            raise ValueError(
                f"{name}: {unknown.size} label(s) are not leaf classes of the "
                f"taxonomy (first: {_show(unknown[0])}).")
        return pos[inverse.reshape(-1)]

    def relation(self, a, b):
        """Relation of leaf codes ``a`` and ``b`` (broadcast).

        Parameters
        ----------
        a, b : array_like of int
            Leaf codes (from :meth:`encode`), in ``[0, n_leaves)``.

        Returns
        -------
        ndarray of int
            0 where ``a == b`` (same class), 1 where they are siblings, 2
            where they are cousins.  Half of it is Eq. 24's
            ``Delta(c, y_hat)``.

        Raises
        ------
        ValueError
            ``a`` or ``b`` not integer leaf codes (labels go through
            :meth:`encode` first).
        """
        a, b = np.asarray(a), np.asarray(b)
        for name, codes in (("a", a), ("b", b)):
            if codes.dtype == bool or not np.issubdtype(codes.dtype, np.integer):
                raise ValueError(f"{name}: expected integer leaf codes (see encode), "
                                 f"got dtype {codes.dtype}.")
            if codes.size and (codes.min() < 0 or codes.max() >= self.n_leaves):
                raise ValueError(f"{name}: leaf codes must be in [0, {self.n_leaves}).")
        sibling = self.parent_code[a] == self.parent_code[b]
        return np.where(a == b, 0, np.where(sibling, 1, 2))


def _as_array(values):
    """A 1-D array of labels, one entry per value.

    A homogeneous dtype (int, float, str) when the labels have one, so that
    they compare like the labels of ``y``; otherwise an object array, never
    NumPy's silent cast of mixed numbers and strings to strings.
    """
    values = list(values)
    out = np.empty(len(values), dtype=object)
    out[:] = values
    if all(isinstance(v, (str, np.str_)) for v in values) or all(
            isinstance(v, (Real, np.number)) for v in values):
        return np.asarray(values)
    return out


def _show(v):
    """A label for an error message (plain Python, not ``np.int64(5)``)."""
    return repr(v.item() if isinstance(v, np.generic) else v)


def _sorted_labels(values, name, what):
    arr = _as_array(values)
    try:
        return np.unique(arr)
    except TypeError:
        raise ValueError(f"{name}: {what} of types that do not sort "
                         f"together.") from None


class TaxonomyQuadruplets(NamedTuple):
    """Quadruplets sampled from a taxonomy, ready for ``fit``.

    ``est.fit(q.quadruplets, delta=q.delta)`` with ``preprocessor=X``
    learns from them (:class:`~cvxmetric.Qwise`,
    :class:`~cvxmetric.QwiseVector`).

    Attributes
    ----------
    quadruplets : ndarray of int, shape (n, 4)
        ``(i, j, k, l)``, indices into ``X``: want
        ``D(i, j) + delta <= D(k, l)``.
    delta : ndarray of shape (n,)
        Margins.
    type : ndarray of int, shape (n,)
        1 or 2, the kind of Sec. 6.1 each quadruplet is.
    """

    quadruplets: np.ndarray
    delta: np.ndarray
    type: np.ndarray


class _Layout:
    """Sample positions grouped by class and by super-class.

    ``by_class`` sorts the samples by (super-class, class): each class is a
    contiguous block inside its super-class's block, so "a uniform sample of
    the siblings" and "a uniform sample of the cousins" are a uniform
    position in a block with a hole, drawn without a loop.
    """

    def __init__(self, codes, tree):
        self.codes = codes
        self.sup = tree.parent_code[codes]  # super code of each sample
        n_leaves, n_sup = tree.n_leaves, tree.supers.shape[0]
        self.order = np.lexsort((codes, self.sup))
        self.count = np.bincount(codes, minlength=n_leaves)
        sup_of_leaf = tree.parent_code
        self.sup_count = np.bincount(self.sup, minlength=n_sup)
        self.sup_start = np.concatenate([[0], np.cumsum(self.sup_count)[:-1]])
        # a class's block starts after the earlier super-classes and, in its
        # own super-class, after the classes of smaller code
        key = sup_of_leaf * n_leaves + np.arange(n_leaves)
        rank = np.argsort(key, kind="stable")
        start_sorted = np.concatenate([[0], np.cumsum(self.count[rank])[:-1]])
        self.start = np.empty(n_leaves, dtype=np.intp)
        self.start[rank] = start_sorted
        self.sibling_count = self.sup_count[sup_of_leaf] - self.count
        self.cousin_count = codes.shape[0] - self.sup_count[sup_of_leaf]
        self.sup_of_leaf = sup_of_leaf

    def in_class(self, c, rng):
        """One uniform sample of class ``c`` (array of leaf codes)."""
        return self.order[self.start[c] + rng.randint(0, self.count[c])]

    def sibling_of(self, c, rng):
        """One uniform sample of the sibling classes of ``c`` (pooled)."""
        s = self.sup_of_leaf[c]
        r = rng.randint(0, self.sibling_count[c])
        offset = self.start[c] - self.sup_start[s]  # the hole: class c itself
        r = r + (r >= offset) * self.count[c]
        return self.order[self.sup_start[s] + r]

    def cousin_of(self, c, rng):
        """One uniform sample of the cousin classes of ``c`` (pooled)."""
        s = self.sup_of_leaf[c]
        r = rng.randint(0, self.cousin_count[c])
        r = r + (r >= self.sup_start[s]) * self.sup_count[s]
        return self.order[r]


def _neighbour_table(X, layout, k, metric, pool):
    """The ``k`` nearest neighbours of every sample within its pool.

    ``pool="class"``: the other samples of its class (type 1);
    ``pool="sibling"``: the samples of the sibling classes (type 2).

    Returns
    -------
    table : ndarray of int, shape (n_samples, k)
        Global indices, nearest first; rows are padded with -1.
    size : ndarray of int, shape (n_samples,)
        Number of valid neighbours of each sample (``min(k, pool size)``).
    """
    n = X.shape[0]
    table = np.full((n, k), -1, dtype=np.intp)
    size = np.zeros(n, dtype=np.intp)
    for c in np.flatnonzero(layout.count):  # one fit per class, not per sample
        members = layout.order[layout.start[c]:layout.start[c] + layout.count[c]]
        if pool == "class":
            candidates = members
            n_nb = min(k, members.shape[0] - 1)
        else:
            candidates = np.flatnonzero((layout.sup == layout.sup_of_leaf[c])
                                        & (layout.codes != c))
            n_nb = min(k, candidates.shape[0])
        if n_nb < 1:
            continue
        nn = NearestNeighbors(n_neighbors=n_nb, metric=metric).fit(X[candidates])
        if pool == "class":
            # X=None: a sample is not its own neighbour, even with duplicates
            nb = nn.kneighbors(return_distance=False)
        else:
            nb = nn.kneighbors(X[members], return_distance=False)
        table[members, :n_nb] = candidates[nb]
        size[members] = n_nb
    return table, size


def _check_delta(delta):
    """Margins of the two types as a length-2 array."""
    if isinstance(delta, (bool, np.bool_)):
        raise ValueError("delta: expected a number or a pair (type 1, type 2), "
                         "got a bool.")
    if isinstance(delta, Real):
        delta = check_scalar(delta, "delta")
        return np.array([delta, delta])
    d = check_finite(delta, "delta", ndim=1)
    if d.shape != (2,):
        raise ValueError(f"delta: expected a number or a pair (type 1, type 2), "
                         f"got shape {d.shape}.")
    return d


def _draw(X, layout, rng, kind, anchors_ok, table, size, n, same_anchor):
    """``n`` quadruplets of one type: (n, 4) indices."""
    i = rng.choice(anchors_ok, size=n)
    c = layout.codes[i]
    j = table[i, rng.randint(0, size[i])]
    kk = i if same_anchor else layout.in_class(c, rng)
    if kind == 1:
        ll = layout.sibling_of(c, rng)
    else:
        ll = layout.cousin_of(c, rng)
    return np.stack([i, j, kk, ll], axis=1)


def _check_counts(n_type1, n_type2):
    """The two quadruplet counts: integers >= 0, not both 0."""
    n_type1 = check_int(n_type1, "n_type1", low=0)
    n_type2 = check_int(n_type2, "n_type2", low=0)
    if n_type1 + n_type2 == 0:
        raise ValueError("n_type1, n_type2: ask for at least one quadruplet.")
    return n_type1, n_type2


def _sample_type(X, layout, codes, kind, n, k, metric, same_anchor, rng):
    """``n`` informative quadruplets of type ``kind`` (1 or 2): (n, 4)
    indices, redrawing those that compare identical points."""
    sib = layout.sibling_count[codes] > 0
    if kind == 1:
        ok = sib & (layout.count[codes] >= 2)
        why = ("type (1) needs a class with two samples and a sibling "
               "class (same super-class) in y")
    else:
        ok = sib & (layout.cousin_count[codes] > 0)
        why = ("type (2) needs a class with a sibling class and a cousin "
               "class (another super-class) in y")
    anchors_ok = np.flatnonzero(ok)
    if anchors_ok.size == 0:
        raise ValueError(f"parent: {why}; none has.")
    table, size = _neighbour_table(
        X, layout, k, metric, "class" if kind == 1 else "sibling")
    quads = _draw(X, layout, rng, kind, anchors_ok, table, size, n,
                  same_anchor)
    for _ in range(_MAX_RESAMPLE):
        bad = ~informative(X, quads)
        if not bad.any():
            break
        quads[bad] = _draw(X, layout, rng, kind, anchors_ok, table, size,
                           int(bad.sum()), same_anchor)
    else:
        raise ValueError(
            f"X: {int(bad.sum())} type ({kind}) quadruplet(s) still compare "
            f"identical points after {_MAX_RESAMPLE} draws; rows of X are "
            f"duplicated across classes.")
    return quads


def taxonomy_quadruplets(X, y, parent, *, n_type1, n_type2, k=5, delta=1.0,
                         metric="euclidean", same_anchor=False,
                         random_state=None):
    """Sample the two quadruplet types of Sec. 6.1 from a class taxonomy.

    Type (1) asks ``D(I_i, I_j) + delta_1 <= D(I_k, I_l)`` with ``I_i, I_j``
    in the same class ``c_a`` (``I_j`` among the ``k`` nearest neighbours of
    ``I_i`` in ``c_a``) and ``(I_k, I_l)`` in ``c_a x c_b``, ``c_b`` a
    sibling of ``c_a``.  Type (2) asks the same with ``(I_i, I_j)`` in
    ``c_a x c_b`` (``I_j`` among the ``k`` nearest neighbours of ``I_i`` in
    the sibling classes) and ``(I_k, I_l)`` in ``c_a x c_d``, ``c_d`` a
    cousin (another super-class).  These are the constraints of Eq. 7 that
    Eq. 8 (full matrix) and Eq. 12-14 (diagonal) learn from.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        The samples; the neighbours of ``I_i`` are found in this space.
    y : array_like of shape (n_samples,)
        Leaf class of each sample; every label must be a leaf of ``parent``.
    parent : dict, array_like or ClassTree
        The two-level taxonomy, leaf class -> super-class (see
        :meth:`ClassTree.create`).
    n_type1, n_type2 : int >= 0
        Number of quadruplets of each type (keyword only); not both 0.
    k : int >= 1, default=5
        Size of the neighbourhood ``I_j`` is drawn from (uniformly).  A pool
        smaller than ``k`` contributes all its members.
    delta : float or pair of floats, default=1.0
        Margin of every quadruplet, or ``(delta_1, delta_2)`` per type.  The
        paper does not state its margins; 1 is the Eq. 8 default.
    metric : str or callable, default="euclidean"
        Metric of :class:`sklearn.neighbors.NearestNeighbors` for the
        neighbour search (the paper's "k nearest neighbors" in the input
        space).
    same_anchor : bool, default=False
        When True, ``I_k = I_i``: triplets whose far pair shares the
        anchor (the shape of LMNN's triplets, not LMNN's objective),
        written as quadruplets; by default ``I_k`` is a fresh uniform
        sample of ``c_a``.
    random_state : int, RandomState instance or None, default=None
        Seed of every random choice (anchors, neighbour ranks, far pairs).

    Returns
    -------
    TaxonomyQuadruplets
        ``(quadruplets, delta, type)``: type (1) rows first, then type (2).

    Raises
    ------
    ValueError
        Bad ``X``, ``y``, ``parent``, counts, ``k`` or ``delta``; a label of
        ``y`` not in the taxonomy; no class of ``y`` with two samples and a
        sibling class present (type 1), or with a sibling and a cousin
        class present (type 2).

    Notes
    -----
    Anchors ``I_i`` are uniform among the samples whose class can produce
    the type: for type (1) a class with at least two samples and a sibling
    class in ``y``; for type (2) a class with a sibling and a cousin class
    in ``y``.  A leaf of the taxonomy absent from ``y`` takes no part.
    Quadruplets that cannot constrain any metric (possible only when rows of
    ``X`` are duplicated across classes, see
    :func:`cvxmetric.constraints.informative`) are drawn again.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.arange(8.0).reshape(-1, 1)
    >>> y = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    >>> q = taxonomy_quadruplets(X, y, {0: "a", 1: "a", 2: "b", 3: "b"},
    ...                          n_type1=3, n_type2=2, k=1, random_state=0)
    >>> q.quadruplets.shape, q.type.tolist()
    ((5, 4), [1, 1, 1, 2, 2])
    """
    X = check_samples(X)
    tree = ClassTree.create(parent)
    codes = tree.encode(y)
    if codes.shape[0] != X.shape[0]:
        raise ValueError(f"y: expected {X.shape[0]} labels (one per row of X), "
                         f"got {codes.shape[0]}.")
    n_type1, n_type2 = _check_counts(n_type1, n_type2)
    k = check_int(k, "k", low=1)
    margins = _check_delta(delta)
    if not isinstance(same_anchor, (bool, np.bool_)):
        raise ValueError(f"same_anchor: expected a bool, got {describe(same_anchor)}.")
    rng = check_random_state(random_state)
    layout = _Layout(codes, tree)

    blocks, types = [], []
    for kind, n in ((1, n_type1), (2, n_type2)):
        if n == 0:
            continue
        quads = _sample_type(X, layout, codes, kind, n, k, metric, same_anchor, rng)
        blocks.append(quads)
        types.append(np.full(n, kind, dtype=np.int8))
    kind = np.concatenate(types)
    return TaxonomyQuadruplets(np.vstack(blocks), margins[kind - 1], kind)
