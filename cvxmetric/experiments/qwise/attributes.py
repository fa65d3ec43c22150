"""Relative attributes with quadruplet-wise constraints (Law, Thome, Cord 2016, Sec. 7).

An *attribute* ``a_m`` orders the classes from the least to the most
presence of a concept, with strict steps ``<`` and equivalences ``~``, e.g.
``e < f ~ g < h`` (Table 7, Fig. 10): :class:`AttributeOrdering`.  For each
attribute one row ``w_m`` of ``L`` (Eq. 12) is learned with the signed
dissimilarity ``D_w(i, j) = w^T (x_i - x_j)`` (Sec. 3.3.2, 7.1:
``QwiseVector(psi="linear")``, ``Psi_ij = x_i - x_j``); ``D_w(i, j) > 0``
says that ``I_i`` shows more of the attribute than ``I_j``.  Every image is
then described by ``h_i = L x_i`` and each class by a Gaussian in that
space (Sec. 7.2.1): :class:`AttributeGaussianClassifier`.

Every constraint is a quadruplet ``(i, j, k, l)`` with margin ``delta``,
asking ``D_w(k, l) >= D_w(i, j) + delta`` (Eq. 14).  For an image pair
``(i, j)`` drawn from a pair of classes ``(a, b)``, ``rank(a) <= rank(b)``,
and ``k``, ``l`` drawn from the levels ``p`` steps above ``b`` and ``p``
steps below ``a``:

===================  ==============  ==============================  =========
relation             method          quadruplet(s)                   ``delta``
===================  ==============  ==============================  =========
``a < b`` (ordered)  pairwise, QWSL  ``(i, i, j, i)``: ``D_ji >= 1``    1
``a ~ b`` (equiv.)   pairwise        ``(i, j, i, i)``, ``(j, i, i, i)``:  0
                                     ``|D_ij| <= 0`` (soft)
``a < b``            OQWSL           ``(j, i, k, l)`` (Eq. 25)         1
``a ~ b``            QWSL, OQWSL     ``(i, j, k, l)``, ``(j, i, k, l)``  1
                                     (Eq. 26)
===================  ==============  ==============================  =========

The pairwise rows are the ranking SVM of Parikh and Grauman ("Relative
attributes", ICCV 2011) written as quadruplets: a pair ``(i, i)`` has
``D_w = 0``, so ``(i, i, j, i)`` with margin 1 is the ordered-pair
constraint ``w^T (x_j - x_i) >= 1`` and the two margin-0 quadruplets of an
equivalent pair put the hinge loss ``|w^T (x_i - x_j)|`` on it.

Where the level ``p`` steps beyond a pair does not exist (a pair touching
the extreme "border" levels) no quadruplet can be sampled and the pair is
left out, as the paper does (Sec. 7.2.1, "Values of B"); ``border_pairs``
keeps OQWSL's ordered border pairs as pairwise constraints (the PubFig
"Qwise + Pairwise" of Table 8).
"""

from collections.abc import Mapping
from numbers import Real

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ...constraints import informative
from ..._validation import check_int, check_samples, describe
from ...qwise_vector.estimator import QwiseVector

__all__ = [
    "AttributeOrdering",
    "METHODS",
    "usable_class_pairs",
    "pairwise_constraints",
    "qwsl_constraints",
    "oqwsl_constraints",
    "attribute_constraints",
    "fit_relative_attributes",
    "AttributeGaussianClassifier",
]

#: Constraint samplers of Sec. 7.2.1: the baseline of Parikh and Grauman
#: and the two Qwise adaptations.
METHODS = ("pairwise", "qwsl", "oqwsl")

_RELATIONS = ("<", "~", ">")


def _is_group(item):
    return isinstance(item, (list, tuple, set, frozenset))


def _label_text(c):
    return repr(c.item() if isinstance(c, np.generic) else c)


def _level_group(pos, item):
    """Level ``pos`` of an ordering as a non-empty tuple of hashable,
    non-missing labels (a label alone is a group of one)."""
    group = tuple(item) if _is_group(item) else (item,)
    if not group:
        raise ValueError(f"levels: level {pos} is an empty group.")
    for c in group:
        if _is_group(c) or isinstance(c, np.ndarray):
            raise ValueError(f"levels: level {pos} nests a group; a level is "
                             f"a label or a flat group of labels.")
        try:
            hash(c)
        except TypeError:
            raise ValueError(f"levels: level {pos} holds an unhashable "
                             f"label of type {type(c).__name__}.") from None
        # NaN is unequal to itself: it can match no class label and
        # would make "listed twice" undetectable
        if c is None or (isinstance(c, (float, np.floating)) and c != c):
            raise ValueError(f"levels: level {pos} holds a missing label "
                             f"({c!r}); every level must name classes.")
    return group


def _merge_equivalences(rel):
    """Check the relation triples and close ``~`` transitively.

    Returns
    -------
    find : callable
        Class -> the root of its group of equivalent classes.
    strict : list of (a, b)
        The strict relations, each written ``a < b``.
    """
    parent = {}

    def find(c):
        parent.setdefault(c, c)
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    strict = []
    for pos, t in enumerate(rel):
        if not isinstance(t, (tuple, list)) or len(t) != 3:
            raise ValueError(f"relations: item {pos} is not a triple (a, rel, b).")
        a, r, b = t
        if r not in _RELATIONS:
            raise ValueError(f"relations: item {pos} has relation {r!r}; expected "
                             f"one of {', '.join(map(repr, _RELATIONS))}.")
        if a == b:
            raise ValueError(f"relations: item {pos} relates class "
                             f"{_label_text(a)} to itself.")
        find(a), find(b)
        if r == "~":
            parent[find(a)] = find(b)
        else:
            strict.append((a, b) if r == "<" else (b, a))
    return find, strict


def _group_graph(rel, find, strict):
    """The groups of equivalent classes and the ``<`` edges between them.

    Returns
    -------
    roots : list
        One root per group, in order of first mention.
    members : dict
        Root -> the group's classes, in order of first mention.
    succ : dict
        Root -> the roots of the groups it is below.
    """
    order = list(dict.fromkeys(c for t in rel for c in (t[0], t[2])))
    roots = list(dict.fromkeys(find(c) for c in order))
    members = {r: tuple(c for c in order if find(c) == r) for r in roots}
    succ = {r: set() for r in roots}
    for a, b in strict:
        ra, rb = find(a), find(b)
        if ra == rb:
            raise ValueError(f"relations: cycle: {_label_text(a)} < {_label_text(b)} "
                             f"but they are equivalent.")
        succ[ra].add(rb)
    return roots, members, succ


def _total_order(roots, members, succ):
    """The groups least to most (a topological sort that must be unique),
    or a ``ValueError`` for two unordered groups or a cycle."""
    indeg = {r: 0 for r in roots}
    for r in roots:
        for s in succ[r]:
            indeg[s] += 1
    levels = []
    ready = [r for r in roots if indeg[r] == 0]
    while ready:
        if len(ready) > 1:
            a, b = (members[r][0] for r in ready[:2])
            raise ValueError(f"relations: classes {_label_text(a)} and "
                             f"{_label_text(b)} are not ordered; the relations "
                             f"must give one total order.")
        r = ready.pop()
        levels.append(members[r])
        for s in sorted(succ[r], key=roots.index):
            indeg[s] -= 1
            if indeg[s] == 0:
                ready.append(s)
    if len(levels) < len(roots):
        stuck = next(r for r in roots if indeg[r] > 0)
        raise ValueError(f"relations: cycle through class "
                         f"{_label_text(members[stuck][0])}.")
    return levels


class AttributeOrdering:
    """A class ordering for one relative attribute: levels from least to most.

    Parameters
    ----------
    levels : sequence
        The levels from the least to the most presence of the attribute.
        Each item is a class label (a level of its own) or a list / tuple /
        set of labels that are equivalent (``~``).  ``[0, (1, 2), 3]`` is
        ``0 < 1 ~ 2 < 3``.  Labels are hashable scalars (ints, strings);
        a tuple is always read as a group.
    classes : array_like, optional
        The known class labels; a label of ``levels`` not among them is
        refused.

    Attributes
    ----------
    levels : tuple of tuple
        The groups of equivalent classes, least to most.
    classes : tuple
        Every class, in level order.
    rank : dict
        Class label -> index of its level.

    Raises
    ------
    ValueError
        Fewer than two classes or two levels, a class listed twice, an
        empty group, an unknown class.

    Examples
    --------
    >>> o = AttributeOrdering.parse("T < I ~ S < H")
    >>> o.levels
    (('T',), ('I', 'S'), ('H',))
    >>> print(o)
    'T' < 'I' ~ 'S' < 'H'
    """

    def __init__(self, levels, classes=None):
        if isinstance(levels, (str, bytes)) or not hasattr(levels, "__iter__"):
            raise ValueError("levels: expected a sequence of class labels or groups "
                             "of labels, least to most (use AttributeOrdering.parse "
                             "for a string like 'a < b ~ c').")
        groups = [_level_group(pos, item) for pos, item in enumerate(levels)]
        flat = [c for g in groups for c in g]
        if len(flat) < 2:
            raise ValueError(f"levels: an ordering needs at least two classes, "
                             f"got {len(flat)}.")
        rank = {}
        for r, g in enumerate(groups):
            for c in g:
                if c in rank:
                    raise ValueError(f"levels: class {_label_text(c)} is listed twice "
                                     f"(levels {rank[c]} and {r}).")
                rank[c] = r
        if len(groups) < 2:
            raise ValueError("levels: all classes are equivalent; an ordering needs "
                             "at least two levels (one '<').")
        self.levels = tuple(groups)
        self.classes = tuple(flat)
        self.rank = rank
        if classes is not None:
            self.check_classes(classes, "classes")

    # -- constructors ------------------------------------------------------

    @classmethod
    def parse(cls, text, classes=None):
        """Read ``"T < I ~ S < H"`` (labels are the stripped strings).

        ``>`` is not accepted here: write the ordering from least to most.
        """
        if not isinstance(text, str):
            raise ValueError(f"text: expected a string, got {type(text).__name__}.")
        levels = []
        for part in text.split("<"):
            names = [s.strip() for s in part.split("~")]
            if any(not s for s in names):
                raise ValueError(f"text: empty class name in {text!r}.")
            if any(">" in s for s in names):
                raise ValueError(f"text: write the ordering least to most with '<' "
                                 f"and '~' only, got {text!r}.")
            levels.append(tuple(names))
        return cls(levels, classes=classes)

    @classmethod
    def from_relations(cls, relations, classes=None):
        """Build from relation triples ``(a, "<", b)``, ``(a, "~", b)`` or
        ``(a, ">", b)``.

        Equivalences are closed transitively; the strict relations between
        the resulting groups must then give one total order (every two groups
        comparable through a chain of ``<``).

        Raises
        ------
        ValueError
            A cycle (``a < b < a``, or ``a < b`` with ``a ~ b``), two groups
            left unordered, an unknown relation.
        """
        rel = list(relations)
        if not rel:
            raise ValueError("relations: empty.")
        find, strict = _merge_equivalences(rel)
        roots, members, succ = _group_graph(rel, find, strict)
        levels = _total_order(roots, members, succ)
        return cls(levels, classes=classes)

    # -- views -------------------------------------------------------------

    @property
    def n_levels(self):
        """Number of levels (groups)."""
        return len(self.levels)

    def relation(self, a, b):
        """How class ``a`` compares with class ``b`` in this ordering.

        Parameters
        ----------
        a, b : hashable
            Classes of the ordering.

        Returns
        -------
        {"<", "~", ">"}
        """
        for c in (a, b):
            if c not in self.rank:
                raise ValueError(f"a, b: unknown class {_label_text(c)}.")
        ra, rb = self.rank[a], self.rank[b]
        return "<" if ra < rb else ("~" if ra == rb else ">")

    def check_classes(self, known, name="y"):
        """Raise if a class of the ordering is not among ``known``.

        Parameters
        ----------
        known : array_like
            The known class labels (e.g. the training labels).
        name : str, default="y"
            The argument named in the message.

        Raises
        ------
        ValueError
            A class of the ordering is missing from ``known``.
        """
        known = set(np.unique(np.asarray(known)).tolist())
        missing = [c for c in self.classes if c not in known]
        if missing:
            raise ValueError(f"{name}: the ordering names class(es) "
                             f"{', '.join(_label_text(c) for c in missing[:5])} "
                             f"not found among the known classes.")

    def __str__(self):
        return " < ".join(" ~ ".join(_label_text(c) for c in g) for g in self.levels)

    def __repr__(self):
        return f"AttributeOrdering({str(self)!r})"

    def __eq__(self, other):
        if not isinstance(other, AttributeOrdering):
            return NotImplemented
        return [set(g) for g in self.levels] == [set(g) for g in other.levels]

    __hash__ = None


def _as_ordering(ordering, name="ordering"):
    if isinstance(ordering, AttributeOrdering):
        return ordering
    if isinstance(ordering, str):
        return AttributeOrdering.parse(ordering)
    try:
        return AttributeOrdering(ordering)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


# ---------------------------------------------------------------------------
# Which class pairs a method can use
# ---------------------------------------------------------------------------

# kinds of the class pairs' constraints
_ORDERED_PAIR, _EQUIV_PAIR, _ORDERED_QUAD, _EQUIV_QUAD = range(4)


def _check_method(method, p, equivalences, border_pairs):
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method: expected one of {', '.join(map(repr, METHODS))}, "
                         f"got {describe(method)}.")
    check_int(p, "p", low=1)  # k and l come from the p-th closest levels
    for name, v in (("equivalences", equivalences), ("border_pairs", border_pairs)):
        if not isinstance(v, (bool, np.bool_)):
            raise ValueError(f"{name}: expected True or False, got {describe(v)}.")
    if border_pairs and method != "oqwsl":
        raise ValueError("border_pairs: only OQWSL (method='oqwsl') leaves ordered "
                         "border pairs out; the other methods keep them already.")


def usable_class_pairs(ordering, method="pairwise", *, p=1, equivalences=True,
                       border_pairs=False):
    """The class pairs a method draws constraints from, with their kind.

    Pairs ``(a, b)`` of distinct classes with ``rank(a) <= rank(b)``,
    enumerated in the order of ``ordering.classes``.

    Parameters
    ----------
    ordering : AttributeOrdering, str or sequence
    method : {"pairwise", "qwsl", "oqwsl"}
        ``"pairwise"``: every ordered pair, and every equivalent pair when
        ``equivalences``.  ``"qwsl"``: every ordered pair (pairwise, as the
        baseline) and the equivalent pairs whose level has a level ``p``
        steps below and above (Eq. 26).  ``"oqwsl"``: only pairs with those
        neighbour levels (Eq. 25 and 26).
    p : int >= 1
        The quadruplets' ``k`` and ``l`` come from the ``p``-th closest
        levels: ``rank(b) + p`` and ``rank(a) - p`` ((O)QWSL-p, Fig. 12).
    equivalences : bool
        Whether the pairwise baseline uses its equivalence constraints.
    border_pairs : bool
        OQWSL only: keep the ordered pairs without neighbour levels as
        pairwise constraints.

    Returns
    -------
    list of (a, b, kind)
        ``kind`` is ``"ordered pair"``, ``"equivalent pair"``,
        ``"ordered quadruplet"`` (Eq. 25) or ``"equivalent quadruplet"``
        (Eq. 26).
    """
    ordering = _as_ordering(ordering)
    _check_method(method, p, equivalences, border_pairs)
    names = ("ordered pair", "equivalent pair", "ordered quadruplet",
             "equivalent quadruplet")
    return [(a, b, names[k]) for a, b, k in
            _usable(ordering, method, p, equivalences, border_pairs)]


def _usable(ordering, method, p, equivalences, border_pairs):
    top = ordering.n_levels - 1
    out = []
    cls = ordering.classes
    for s, a in enumerate(cls):
        for b in cls[s + 1:]:
            ra, rb = ordering.rank[a], ordering.rank[b]
            if ra > rb:
                a, b, ra, rb = b, a, rb, ra
            inner = ra - p >= 0 and rb + p <= top  # neighbour levels exist
            if ra < rb:
                if method == "oqwsl":
                    kind = (_ORDERED_QUAD if inner
                            else _ORDERED_PAIR if border_pairs else None)
                else:
                    kind = _ORDERED_PAIR
            elif method == "pairwise":
                kind = _EQUIV_PAIR if equivalences else None
            else:
                kind = _EQUIV_QUAD if inner else None
            if kind is not None:
                out.append((a, b, kind))
    return out


# ---------------------------------------------------------------------------
# Samplers
# ---------------------------------------------------------------------------


def _check_y(y, ordering):
    y = np.asarray(y)
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"y: expected a non-empty 1-D array of class labels, got "
                         f"shape {y.shape}.")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y: contains NaN or infinite labels.")
    ordering.check_classes(y, "y")
    return y


def _check_count(n, name):
    if n is None:
        return None
    return check_int(n, name, low=1)


def _members(y, classes):
    """Indices of ``y`` per class label, as a dict."""
    return {c: np.flatnonzero(y == c) for c in classes}


def _sample_pool(pools, which, rng):
    """One uniform draw from ``pools[which[t]]`` for every ``t`` (vectorised
    over the draws: the pools are concatenated and addressed by offsets)."""
    sizes = np.array([len(q) for q in pools])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    flat = np.concatenate(pools)
    pos = (rng.random_sample(len(which)) * sizes[which]).astype(np.intp)
    return flat[starts[which] + np.minimum(pos, sizes[which] - 1)]


def _constraints(y, ordering, method, p, equivalences, border_pairs, n_class_pairs,
                 n_per_relation, random_state):
    ordering = _as_ordering(ordering)
    _check_method(method, p, equivalences, border_pairs)
    y = _check_y(y, ordering)
    n_class_pairs = _check_count(n_class_pairs, "n_class_pairs")
    n_per_relation = _check_count(n_per_relation, "n_per_relation")
    rng = check_random_state(random_state)
    usable = _usable(ordering, method, p, equivalences, border_pairs)
    if not usable:
        raise ValueError(f"ordering: {method} with p={p} finds no usable class pair "
                         f"in {ordering} (every pair touches a border level).")
    if n_class_pairs is not None:
        if n_class_pairs > len(usable):
            raise ValueError(f"n_class_pairs: {n_class_pairs} exceeds the "
                             f"{len(usable)} class pairs {method} (p={p}) can use "
                             f"in this ordering.")
        pick = np.sort(rng.choice(len(usable), n_class_pairs, replace=False))
        usable = [usable[t] for t in pick]
    members = _members(y, ordering.classes)
    # image pairs (i in a, j in b) of every selected class pair; the loop is
    # over class pairs (at most C(C, 2)), never over constraints
    I, J, kind, lo, hi = [], [], [], [], []
    for a, b, k in usable:
        ma, mb = members[a], members[b]
        if n_per_relation is None:
            i, j = np.repeat(ma, len(mb)), np.tile(mb, len(ma))
        else:
            flat = rng.randint(0, len(ma) * len(mb), n_per_relation)
            i, j = ma[flat // len(mb)], mb[flat % len(mb)]
        I.append(i)
        J.append(j)
        n = len(i)
        kind.append(np.full(n, k))
        lo.append(np.full(n, ordering.rank[a]))
        hi.append(np.full(n, ordering.rank[b]))
    I, J, kind = np.concatenate(I), np.concatenate(J), np.concatenate(kind)
    lo, hi = np.concatenate(lo), np.concatenate(hi)
    quad = (kind == _ORDERED_QUAD) | (kind == _EQUIV_QUAD)
    K = np.zeros_like(I)
    L = np.zeros_like(I)
    if np.any(quad):
        pools = [np.concatenate([members[c] for c in g]) for g in ordering.levels]
        K[quad] = _sample_pool(pools, hi[quad] + p, rng)  # p levels above b
        L[quad] = _sample_pool(pools, lo[quad] - p, rng)  # p levels below a
    # one row per image pair, two for the equivalent kinds (Eq. 26 and the
    # two sides of |D_ij|), interleaved so the two stay adjacent
    rows = np.empty((len(I), 4), dtype=np.intp)
    m = kind == _ORDERED_PAIR
    rows[m] = np.stack([I[m], I[m], J[m], I[m]], 1)
    m = kind == _EQUIV_PAIR
    rows[m] = np.stack([I[m], J[m], I[m], I[m]], 1)
    m = kind == _ORDERED_QUAD
    rows[m] = np.stack([J[m], I[m], K[m], L[m]], 1)
    m = kind == _EQUIV_QUAD
    rows[m] = np.stack([I[m], J[m], K[m], L[m]], 1)
    equiv = (kind == _EQUIV_PAIR) | (kind == _EQUIV_QUAD)
    second = rows[equiv][:, [1, 0, 2, 3]]  # (j, i, ...): the other sign
    count = 1 + equiv.astype(np.intp)
    out = np.empty((int(count.sum()), 4), dtype=np.intp)
    pos = np.concatenate([[0], np.cumsum(count)[:-1]])
    out[pos] = rows
    out[pos[equiv] + 1] = second
    delta = np.where(np.repeat(kind, count) == _EQUIV_PAIR, 0.0, 1.0)
    return out, delta


_SAMPLER_PARAMS = """
    n_class_pairs : int, optional
        ``B`` of Sec. 7.2.1: the number of class pairs drawn (without
        replacement) from the usable ones (:func:`usable_class_pairs`);
        ``None`` takes them all.  More than are usable is refused.
    n_per_relation : int, optional
        Image pairs per class pair, drawn uniformly with replacement;
        ``None`` takes every pair ``N_a x N_b`` (the paper's ``N x N``).
    random_state : int, RandomState instance or None, default=None
        Seeds the draws of class pairs, image pairs and of ``k``, ``l``.

    Returns
    -------
    indices : ndarray of int, shape (n_quadruplets, 4)
        ``(i, j, k, l)``: want ``D_w(k, l) >= D_w(i, j) + delta``; indices
        into ``y`` (the rows of the matching ``X``).
    delta : ndarray of shape (n_quadruplets,)
        1, or 0 for the baseline's equivalence quadruplets.

    Raises
    ------
    ValueError
        A class of the ordering missing from ``y``, no usable class pair,
        a bad count.
"""


def pairwise_constraints(y, ordering, *, equivalences=True, n_class_pairs=None,
                         n_per_relation=None, random_state=None):
    return _constraints(y, ordering, "pairwise", 1, equivalences, False,
                        n_class_pairs, n_per_relation, random_state)


pairwise_constraints.__doc__ = """The relative-attribute baseline (Parikh and Grauman) as quadruplets.

    An ordered class pair ``a < b`` gives, for images ``i`` of ``a`` and
    ``j`` of ``b``, the quadruplet ``(i, i, j, i)`` with margin 1, i.e.
    ``D_w(j, i) = w^T (x_j - x_i) >= 1``; an equivalent pair ``a ~ b`` gives
    ``(i, j, i, i)`` and ``(j, i, i, i)`` with margin 0, i.e. the hinge
    loss of ``|D_w(i, j)|``.

    Parameters
    ----------
    y : array_like of shape (n_samples,)
        Class labels of the training images.
    ordering : AttributeOrdering, str or sequence
        The attribute's class ordering (see :class:`AttributeOrdering`).
    equivalences : bool, default=True
        Use the equivalent pairs (Sec. 7.2.1 compares with and without).
""" + _SAMPLER_PARAMS


def qwsl_constraints(y, ordering, *, p=1, n_class_pairs=None, n_per_relation=None,
                     random_state=None):
    return _constraints(y, ordering, "qwsl", p, True, False, n_class_pairs,
                        n_per_relation, random_state)


qwsl_constraints.__doc__ = """QWSL-p (Sec. 7.2.1): the baseline's ordered pairs, equivalences by Eq. 26.

    Ordered class pairs give the pairwise quadruplets ``(i, i, j, i)`` of
    :func:`pairwise_constraints`.  An equivalent pair ``a ~ b`` (level
    ``r``) gives, for ``i`` in ``a``, ``j`` in ``b`` and one ``k`` from
    level ``r + p`` and ``l`` from level ``r - p`` (uniform over the
    level's images), the two quadruplets ``(i, j, k, l)`` and
    ``(j, i, k, l)`` with margin 1: ``D_kl >= D_ij + 1`` and
    ``D_kl >= D_ji + 1`` (Eq. 26), instead of ``D_ij = 0``.  Equivalent
    pairs without both neighbour levels are left out.

    Parameters
    ----------
    y : array_like of shape (n_samples,)
    ordering : AttributeOrdering, str or sequence
    p : int >= 1, default=1
        Draw ``k`` and ``l`` from the ``p``-th closest levels.
""" + _SAMPLER_PARAMS


def oqwsl_constraints(y, ordering, *, p=1, border_pairs=False, n_class_pairs=None,
                      n_per_relation=None, random_state=None):
    return _constraints(y, ordering, "oqwsl", p, True, border_pairs, n_class_pairs,
                        n_per_relation, random_state)


oqwsl_constraints.__doc__ = """OQWSL-p (Sec. 7.2.1): quadruplets only (Eq. 25 and 26).

    An ordered class pair ``a < b`` (levels ``r_a < r_b``) gives, for ``i``
    in ``a``, ``j`` in ``b``, ``k`` from level ``r_b + p`` and ``l`` from
    level ``r_a - p``, the quadruplet ``(j, i, k, l)`` with margin 1:
    ``D_kl >= D_ji + 1`` -- the pair of the outer classes is more
    dissimilar than the pair of the inner ones (Eq. 25).  Equivalent pairs
    give Eq. 26 as in :func:`qwsl_constraints`.  Pairs without both
    neighbour levels are left out (at most ``C(C - 2, 2)`` class pairs for
    ``C`` strictly ordered classes and ``p = 1``).

    Parameters
    ----------
    y : array_like of shape (n_samples,)
    ordering : AttributeOrdering, str or sequence
    p : int >= 1, default=1
    border_pairs : bool, default=False
        Keep the ordered pairs left out as pairwise constraints
        ``(i, i, j, i)`` (the PubFig "Qwise + Pairwise" of Table 8).
""" + _SAMPLER_PARAMS


def attribute_constraints(y, orderings, method="qwsl", *, p=1, equivalences=True,
                          border_pairs=False, n_class_pairs=None, n_per_relation=None,
                          random_state=None):
    """One constraint set per attribute, for ``QwiseVector(psi="linear")``.

    Parameters
    ----------
    y : array_like of shape (n_samples,)
    orderings : dict
        ``{attribute: ordering}``.
    method : {"pairwise", "qwsl", "oqwsl"}, default="qwsl"
    p, equivalences, border_pairs, n_class_pairs, n_per_relation
        As in :func:`pairwise_constraints`, :func:`qwsl_constraints`,
        :func:`oqwsl_constraints` (``equivalences`` for the baseline,
        ``border_pairs`` for OQWSL, ``p`` for both Qwise methods).
    random_state : int, RandomState instance or None, default=None
        One generator, drawn from attribute after attribute in the dict's
        order.

    Returns
    -------
    quadruplets, delta : dict, dict
        ``{attribute: indices}`` and ``{attribute: delta}``, ready for
        ``QwiseVector(psi="linear", preprocessor=X).fit(quadruplets,
        delta=delta)``.
    """
    if not isinstance(orderings, Mapping) or not orderings:
        raise ValueError("orderings: expected a non-empty dict {attribute: ordering}.")
    _check_method(method, p, equivalences, border_pairs)
    rng = check_random_state(random_state)
    quads, deltas = {}, {}
    for name, ordering in orderings.items():
        try:
            ordering = _as_ordering(ordering, "orderings")
        except ValueError as exc:
            raise ValueError(f"{exc} (attribute {name!r})") from None
        quads[name], deltas[name] = _constraints(
            y, ordering, method, p, equivalences, border_pairs, n_class_pairs,
            n_per_relation, rng)
    return quads, deltas


def fit_relative_attributes(X, y, orderings, method="qwsl", *, p=1, equivalences=True,
                            border_pairs=False, n_class_pairs=None, n_per_relation=None,
                            C_q=1.0, loss="huber", solver="newton", random_state=None,
                            **params):
    """Learn ``L`` (one row per attribute, Eq. 12) from class orderings.

    Samples :func:`attribute_constraints`, drops the quadruplets that
    cannot constrain ``w`` (duplicate images: see
    :func:`~cvxmetric.constraints.informative`) and fits
    ``QwiseVector(psi="linear", C_p=0)`` on the dict of sets, one row of
    ``L`` per attribute (Sec. 3.3.2).

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    y : array_like of shape (n_samples,)
    orderings : dict
        ``{attribute: ordering}``.
    method, p, equivalences, border_pairs, n_class_pairs, n_per_relation
        As in :func:`attribute_constraints`.
    C_q : float, default=1.0
        Weight of the quadruplet losses (Eq. 14).
    loss, solver : str, default="huber", "newton"
        Passed to :class:`~cvxmetric.qwise_vector.estimator.QwiseVector`
        (the paper's smoothed problem and Newton method).
    random_state : int, RandomState instance or None, default=None
        Seeds the sampling.
    **params
        Further :class:`QwiseVector` parameters (``tol``, ``max_iter``, ...).

    Returns
    -------
    QwiseVector
        Fitted; ``transform(X)`` returns ``h = L x`` and ``attributes_`` the
        attribute names (the order of the columns).
    """
    X = check_samples(X)
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y: expected shape ({X.shape[0]},), got {y.shape}.")
    quads, deltas = attribute_constraints(
        y, orderings, method, p=p, equivalences=equivalences, border_pairs=border_pairs,
        n_class_pairs=n_class_pairs, n_per_relation=n_per_relation,
        random_state=random_state)
    for name in quads:
        keep = informative(X, quads[name])
        if not np.any(keep):
            raise ValueError(f"X: every constraint of attribute {name!r} compares "
                             f"identical images.")
        quads[name], deltas[name] = quads[name][keep], deltas[name][keep]
    est = QwiseVector(psi="linear", C_q=C_q, C_p=0.0, loss=loss, solver=solver,
                      preprocessor=X, **params)
    return est.fit(quads, delta=deltas)


# ---------------------------------------------------------------------------
# The Gaussian class model of Sec. 7.2.1
# ---------------------------------------------------------------------------


class AttributeGaussianClassifier(ClassifierMixin, BaseEstimator):
    """One multivariate Gaussian per class in attribute space; maximum likelihood.

    Sec. 7.2.1 (after Parikh and Grauman): for each class ``c_s`` the mean
    ``mu_s`` and covariance ``Sigma_s`` of the ``h_i = L x_i`` of its
    training images; a test image goes to the class of highest likelihood
    ``N(h_t; mu_s, Sigma_s)`` (no class prior).

    Parameters
    ----------
    reg : float >= 0, default=1e-6
        Ridge added to every covariance, relative to the mean variance of
        the features over all training samples: ``Sigma_s + reg * v I``.
        Keeps ``Sigma_s`` invertible when a class has fewer images than
        attributes or lies on a subspace.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    means_ : ndarray of shape (n_classes, n_features)
    covariances_ : ndarray of shape (n_classes, n_features, n_features)
        Maximum-likelihood covariances plus the ridge.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> H = np.array([[0.0, 0.1], [0.1, 0.0], [5.0, 5.1], [5.1, 5.0]])
    >>> AttributeGaussianClassifier().fit(H, [0, 0, 1, 1]).predict([[4.9, 5.2]])
    array([1])
    """

    _parameter_constraints = {"reg": [Interval(Real, 0, None, closed="left")]}

    def __init__(self, reg=1e-6):
        self.reg = reg

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, H, y):
        """Estimate ``mu_s`` and ``Sigma_s`` per class.

        Parameters
        ----------
        H : array_like of shape (n_samples, n_features)
            Attribute scores ``h_i``.
        y : array_like of shape (n_samples,)

        Returns
        -------
        self
        """
        H, y = validate_data(self, H, y, ensure_min_samples=2)
        check_classification_targets(y)
        self.classes_, codes, counts = np.unique(y, return_inverse=True,
                                                 return_counts=True)
        if self.classes_.size < 2:
            raise ValueError(f"y: need at least two classes, got {self.classes_.size}.")
        if counts.min() < 2:
            bad = self.classes_[np.argmin(counts)]
            raise ValueError(f"y: class {_label_text(bad)} has one sample; a "
                             f"covariance needs at least two.")
        scale = float(np.mean(np.var(H, axis=0)))
        if scale <= 0:
            raise ValueError("H: every feature is constant; no Gaussian can be fitted.")
        d = H.shape[1]
        means = np.zeros((self.classes_.size, d))
        np.add.at(means, codes, H)
        means /= counts[:, None]
        R = H - means[codes]
        # per-class scatter in one pass: sum over samples of r r^T
        cov = np.zeros((self.classes_.size, d, d))
        np.add.at(cov, codes, R[:, :, None] * R[:, None, :])
        cov /= counts[:, None, None]
        cov += self.reg * scale * np.eye(d)
        self.means_, self.covariances_ = means, cov
        self._factors = []
        for s in range(self.classes_.size):
            try:
                self._factors.append(cho_factor(cov[s], lower=True))
            except np.linalg.LinAlgError:
                raise ValueError(f"H: the covariance of class "
                                 f"{_label_text(self.classes_[s])} is singular; "
                                 f"increase reg.") from None
        return self

    def log_likelihood(self, H):
        """``log N(h; mu_s, Sigma_s)`` for every sample and class.

        Parameters
        ----------
        H : array_like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        check_is_fitted(self)
        H = validate_data(self, H, reset=False)
        d = H.shape[1]
        out = np.empty((H.shape[0], self.classes_.size))
        for s, (c, low) in enumerate(self._factors):  # one solve per class
            R = H - self.means_[s]
            maha = np.einsum("ij,ji->i", R, cho_solve((c, low), R.T))
            logdet = 2.0 * np.sum(np.log(np.diag(c)))
            out[:, s] = -0.5 * (maha + logdet + d * np.log(2.0 * np.pi))
        return out

    def predict(self, H):
        """The class of highest likelihood for every row of ``H``.

        Parameters
        ----------
        H : array_like of shape (n_samples, n_features)
            Attribute scores ``h = L x``.

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels from :attr:`classes_`.
        """
        best = np.argmax(self.log_likelihood(H), axis=1)  # checks fitted first
        return self.classes_[best]
