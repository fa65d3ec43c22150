"""Constraint sets: validation, the exact reductions of Eq. 7, 3-D input, generators.

Law et al. (2016), Sec. 3.1, bullets after Eq. 7:

* triplet ``(i, j, k)``      -> quadruplet ``(i, j, i, k)``, same margin;
* dissimilar pair ``(i, j)`` -> ``(i, i, i, j)`` with ``delta = l``;
* similar pair ``(i, j)``    -> ``(i, j, i, i)`` with ``delta = -u``.
"""

import re

import numpy as np
import pytest

from cvxmetric.constraints import (
    LabeledPairs,
    Quadruplets,
    Triplets,
    pairs_from_labels,
    quadruplets_from_labels,
    triplets_from_labels,
    tuples_to_indices,
)


def raises_naming(exc, name):
    return pytest.raises(exc, match=r"^" + re.escape(name) + r"\b")


def sqdist(X, M, i, j):
    """Naive ``(x_i - x_j)^T M (x_i - x_j)`` for index arrays."""
    P = X[i] - X[j]
    return np.einsum("pd,de,pe->p", P, M, P)


def random_psd(d, seed):
    B = np.random.RandomState(seed).randn(d, d)
    return B @ B.T


# the three kinds, by (class, width, tuple name, extra args for create)
KINDS = {
    "pairs": (LabeledPairs, 2),
    "triplets": (Triplets, 3),
    "quadruplets": (Quadruplets, 4),
}


def create(kind, X, idx, **kw):
    cls, width = KINDS[kind]
    if kind == "pairs":
        labels = kw.pop("labels", np.where(np.arange(len(idx)) % 2, -1, 1))
        return cls.create(X, idx, labels, **kw)
    return cls.create(X, idx, **kw)


def good_indices(kind):
    return {"pairs": [[0, 1], [2, 3]], "triplets": [[0, 1, 2], [3, 4, 5]],
            "quadruplets": [[0, 1, 2, 3], [4, 5, 0, 2]]}[kind]


# ---------------------------------------------------------------------------
# validation common to the three kinds
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_X(kind, bad, X):
    Xb = X.copy()
    Xb[1, 0] = bad
    with raises_naming(ValueError, "X"):
        create(kind, Xb, good_indices(kind))


@pytest.mark.parametrize("kind", list(KINDS))
def test_X_wrong_shape(kind, X):
    with raises_naming(ValueError, "X"):
        create(kind, X[:, 0], good_indices(kind))


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize(
    "mutate, why",
    [
        (lambda a: a.astype(float), "integers"),
        (lambda a: np.where(a == a.max(), -1, a), "negative"),
        (lambda a: np.where(a == a.max(), 18, a), "out of range"),
        (lambda a: a[:, :-1], "expected shape"),
        (lambda a: a[:0], "empty"),
        (lambda a: a[0], "expected shape"),
    ],
    ids=["float", "negative", "out-of-range", "wrong-width", "empty", "1d"],
)
def test_bad_indices(kind, mutate, why, X):
    idx = mutate(np.asarray(good_indices(kind)))
    with raises_naming(ValueError, kind) as info:
        create(kind, X, idx)
    assert why in str(info.value)


@pytest.mark.parametrize("kind", list(KINDS))
def test_callable_preprocessor(kind, X):
    cls, _ = KINDS[kind]
    args = (good_indices(kind),) + ((np.array([1, -1]),) if kind == "pairs" else ())
    with raises_naming(ValueError, "preprocessor"):
        cls.from_tuples(*args, preprocessor=lambda idx: X[idx])


@pytest.mark.parametrize("kind", list(KINDS))
def test_integer_indices_without_preprocessor(kind, X):
    cls, _ = KINDS[kind]
    args = (np.array(good_indices(kind)),) + (
        (np.array([1, -1]),) if kind == "pairs" else ())
    with raises_naming(ValueError, kind) as info:
        cls.from_tuples(*args)
    assert "preprocessor" in str(info.value)


@pytest.mark.parametrize("kind", list(KINDS))
def test_preprocessor_validated(kind, X):
    cls, _ = KINDS[kind]
    args = (good_indices(kind),) + ((np.array([1, -1]),) if kind == "pairs" else ())
    Xb = X.copy()
    Xb[0, 0] = np.nan
    with raises_naming(ValueError, "preprocessor"):
        cls.from_tuples(*args, preprocessor=Xb)
    with raises_naming(ValueError, kind):  # float indices into a preprocessor
        cls.from_tuples(np.asarray(args[0], float), *args[1:], preprocessor=X)


@pytest.mark.parametrize("kind", list(KINDS))
def test_bad_points(kind, X):
    cls, width = KINDS[kind]
    idx = np.asarray(good_indices(kind))
    extra = (np.array([1, -1]),) if kind == "pairs" else ()
    pts = X[idx].copy()
    pts[0, 0, 0] = np.nan
    with raises_naming(ValueError, kind):
        cls.from_tuples(pts, *extra)
    with raises_naming(ValueError, kind):  # wrong tuple width
        cls.from_tuples(X[idx[:, :-1]] if width > 2 else X[np.c_[idx, idx]],
                        *extra)
    with raises_naming(ValueError, kind):  # 2-D float array is not points
        cls.from_tuples(X[idx[:, 0]], *extra)
    empty_extra = (np.zeros(0),) if kind == "pairs" else ()
    with raises_naming(ValueError, kind):  # empty
        cls.from_tuples(np.zeros((0, width, 3)), *empty_extra)


# ---------------------------------------------------------------------------
# degenerate constraints
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("idx", [[[0, 1], [3, 3]], [[0, 1], [2, 4]]],
                         ids=["i==j", "identical-rows"])
def test_degenerate_labeled_pairs(idx, X):
    Xd = X.copy()
    Xd[4] = Xd[2]  # rows 2 and 4 identical
    with raises_naming(ValueError, "pairs") as info:
        LabeledPairs.create(Xd, idx, [1, -1])
    assert "zero-length" in str(info.value)


def test_degenerate_triplets(X):
    Xd = X.copy()
    Xd[4] = Xd[2]
    # both differences zero: (2, 2, 4) with x_2 == x_4
    with raises_naming(ValueError, "triplets") as info:
        Triplets.create(Xd, [[0, 1, 3], [2, 2, 4]])
    assert "zero length" in str(info.value)
    with raises_naming(ValueError, "triplets"):
        Triplets.create(X, [[5, 5, 5]])
    # one zero difference still constrains the metric
    Triplets.create(Xd, [[2, 4, 1]])
    Triplets.create(X, [[2, 2, 1]])


def test_degenerate_quadruplets(X):
    Xd = X.copy()
    Xd[4] = Xd[2]
    with raises_naming(ValueError, "quadruplets") as info:
        Quadruplets.create(Xd, [[0, 1, 2, 3], [1, 1, 2, 4]])
    assert "zero length" in str(info.value)
    with raises_naming(ValueError, "quadruplets"):
        Quadruplets.create(X, [[3, 3, 5, 5]])
    # what the pair reductions create on purpose is allowed
    Quadruplets.create(X, [[0, 0, 0, 1], [0, 1, 0, 0]])


# ---------------------------------------------------------------------------
# labels and margins
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "labels", [[1, 0], [1, 2], [-1, -2], ["a", "b"], [1.0, np.nan],
               np.array([1, -1], dtype=object)],
    ids=["zero", "two", "minus-two", "strings", "nan", "object"],
)
def test_labels_not_pm1(labels, X):
    with raises_naming(ValueError, "pairs labels"):
        LabeledPairs.create(X, [[0, 1], [2, 9]], labels)


def test_labels_mixed_object_names_argument(X):
    with raises_naming(ValueError, "pairs labels"):
        LabeledPairs.create(X, [[0, 1], [2, 9]],
                            np.array([1, None], dtype=object))


@pytest.mark.parametrize("labels", [[1], [1, -1, 1], [[1, -1]]])
def test_labels_wrong_length(labels, X):
    with raises_naming(ValueError, "pairs labels"):
        LabeledPairs.create(X, [[0, 1], [2, 9]], labels)


def test_labels_float_pm1_accepted(X):
    p = LabeledPairs.create(X, [[0, 1], [2, 9]], [1.0, -1.0])
    np.testing.assert_array_equal(p.labels, [1, -1])
    np.testing.assert_array_equal(p.similar, [[0, 1]])
    np.testing.assert_array_equal(p.dissimilar, [[2, 9]])


@pytest.mark.parametrize("kind", ["triplets", "quadruplets"])
def test_margins(kind, X):
    idx = good_indices(kind)

    def build(delta):
        if kind == "triplets":
            return Triplets.create(X, idx).to_quadruplets(delta)
        return Quadruplets.create(X, idx, delta)

    np.testing.assert_array_equal(build(0.5).delta, [0.5, 0.5])
    np.testing.assert_array_equal(build([0.5, -1.0]).delta, [0.5, -1.0])
    for bad in ([1.0], [1.0, 2.0, 3.0], [[1.0, 2.0]]):
        with raises_naming(ValueError, "delta"):
            build(bad)
    for bad in (np.nan, np.inf, [1.0, np.nan]):
        with raises_naming(ValueError, "delta"):
            build(bad)
    for bad in ("1", None):
        with raises_naming(TypeError, "delta"):
            build(bad)


def test_to_quadruplets_bounds_types(pairs):
    with raises_naming(TypeError, "u"):
        pairs.to_quadruplets("1", 2.0)
    with raises_naming(ValueError, "l"):
        pairs.to_quadruplets(1.0, np.nan)


def test_concat(X, quads):
    both = quads.concat(quads)
    assert len(both) == 2 * len(quads)
    np.testing.assert_array_equal(both.indices[len(quads):], quads.indices)
    other = Quadruplets.create(X + 1.0, quads.indices)
    with raises_naming(ValueError, "other"):
        quads.concat(other)


# ---------------------------------------------------------------------------
# exact reductions (Eq. 7 bullets)
# ---------------------------------------------------------------------------


def test_triplet_reduction(triplets):
    q = triplets.to_quadruplets(0.7)
    i, j, k = triplets.indices.T
    np.testing.assert_array_equal(q.indices, np.stack([i, j, i, k], 1))
    np.testing.assert_array_equal(q.delta, 0.7)
    assert q.X is triplets.X
    # the constraint D_ik >= D_ij + delta is the quadruplet's D_kl >= D_ij + delta
    M = random_psd(triplets.X.shape[1], 0)
    Xt = triplets.X
    np.testing.assert_array_equal(
        sqdist(Xt, M, q.indices[:, 2], q.indices[:, 3])
        - sqdist(Xt, M, q.indices[:, 0], q.indices[:, 1]),
        sqdist(Xt, M, i, k) - sqdist(Xt, M, i, j),
    )


def test_pair_reduction(pairs, u_l):
    u, l = u_l
    q = pairs.to_quadruplets(u, l)
    assert q.X is pairs.X
    for (i, j), lab, quad, delta in zip(pairs.indices, pairs.labels, q.indices,
                                        q.delta):
        if lab == 1:
            assert tuple(quad) == (i, j, i, i) and delta == -u
        else:
            assert tuple(quad) == (i, i, i, j) and delta == l
    # hinge arguments: similar [D_ij - u]_+, dissimilar [l - D_ij]_+
    Xp = pairs.X
    M = random_psd(Xp.shape[1], 1)
    arg = q.delta + sqdist(Xp, M, *q.indices[:, :2].T) - sqdist(Xp, M, *q.indices[:, 2:].T)
    D = sqdist(Xp, M, *pairs.indices.T)
    want = np.where(pairs.labels == 1, D - u, l - D)
    np.testing.assert_array_equal(arg, want)


# ---------------------------------------------------------------------------
# 3-D point input equals index input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(KINDS))
def test_points_equal_indices(kind, X, quads, triplets, pairs):
    obj = {"pairs": pairs, "triplets": triplets, "quadruplets": quads}[kind]
    cls, width = KINDS[kind]
    extra = (pairs.labels,) if kind == "pairs" else ()
    by_idx = cls.from_tuples(obj.indices, *extra, preprocessor=X)
    by_pts = cls.from_tuples(X[obj.indices], *extra)
    np.testing.assert_array_equal(by_idx.X, X)
    np.testing.assert_array_equal(by_idx.indices, obj.indices)
    # the same points, tuple by tuple, and distinct rows in the merged X
    np.testing.assert_array_equal(by_pts.X[by_pts.indices], X[obj.indices])
    assert len(np.unique(by_pts.X, axis=0)) == len(by_pts.X)
    assert len(by_pts.X) == len(np.unique(obj.indices))
    if kind == "pairs":
        np.testing.assert_array_equal(by_pts.labels, by_idx.labels)
    if kind == "quadruplets":
        np.testing.assert_array_equal(by_pts.delta, by_idx.delta)
    # same distances under any metric, pair by pair of each tuple
    M = random_psd(X.shape[1], 2)
    cols = {"pairs": [(0, 1)], "triplets": [(0, 1), (0, 2)],
            "quadruplets": [(0, 1), (2, 3)]}[kind]
    for a, b in cols:
        np.testing.assert_allclose(
            sqdist(by_pts.X, M, by_pts.indices[:, a], by_pts.indices[:, b]),
            sqdist(X, M, obj.indices[:, a], obj.indices[:, b]), rtol=1e-14)

def test_points_merge_duplicates():
    pts = np.array([[[0.0, 0.0], [1.0, 0.0]], [[1.0, 0.0], [0.0, 2.0]]])
    Xp, idx = tuples_to_indices(pts, "pairs", width=2)
    assert Xp.shape == (3, 2)
    assert idx[0, 1] == idx[1, 0]
    np.testing.assert_array_equal(Xp[idx], pts)


def test_quadruplet_margin_from_points(X, quads):
    delta = np.linspace(-1, 2, len(quads))
    q = Quadruplets.from_tuples(X[quads.indices], delta)
    np.testing.assert_array_equal(q.delta, delta)


# ---------------------------------------------------------------------------
# generators from class labels
# ---------------------------------------------------------------------------

GENERATORS = {
    "pairs": lambda y, n, rs: pairs_from_labels(y, n, random_state=rs),
    "triplets": lambda y, n, rs: triplets_from_labels(y, n, random_state=rs),
    "quadruplets": lambda y, n, rs: quadruplets_from_labels(y, n, random_state=rs),
}


@pytest.mark.parametrize("kind", list(GENERATORS))
def test_generator_determinism(kind, y):
    gen = GENERATORS[kind]
    a, b = gen(y, 40, 7), gen(y, 40, 7)
    c = gen(y, 40, 8)
    flat = lambda r: np.concatenate([np.ravel(x) for x in
                                     (r if isinstance(r, tuple) else (r,))])
    np.testing.assert_array_equal(flat(a), flat(b))
    assert not np.array_equal(flat(a), flat(c))
    rng = np.random.RandomState(3)
    d = gen(y, 40, rng)
    e = gen(y, 40, np.random.RandomState(3))
    np.testing.assert_array_equal(flat(d), flat(e))


@pytest.mark.parametrize("y", [np.repeat([0, 1, 2], 6),
                               np.array(list("aabbbbcdddddde")),
                               np.array([5, 5, 9])],
                         ids=["balanced", "strings-unbalanced", "minimal"])
def test_generator_class_conditions(y):
    n = len(y)
    pairs, labels = pairs_from_labels(y, 101, random_state=0)
    assert pairs.shape == (101, 2) and labels.shape == (101,)
    assert (labels == 1).sum() == 50 and (labels == -1).sum() == 51
    i, j = pairs.T
    assert np.all((0 <= pairs) & (pairs < n))
    assert np.all(i != j)
    np.testing.assert_array_equal(y[i] == y[j], labels == 1)

    tri = triplets_from_labels(y, 60, random_state=0)
    i, j, k = tri.T
    assert np.all(i != j) and np.all(y[i] == y[j]) and np.all(y[i] != y[k])

    quad = quadruplets_from_labels(y, 60, random_state=0)
    i, j, k, l = quad.T
    assert np.all(i != j) and np.all(y[i] == y[j]) and np.all(y[k] != y[l])
    # all of them are accepted as constraints on distinct samples
    X = np.random.RandomState(0).randn(n, 2)  # distinct rows
    LabeledPairs.create(X, pairs, labels)
    Triplets.create(X, tri)
    Quadruplets.create(X, quad)


def test_generator_partner_uniform():
    """The same-class partner is drawn among the *other* class members."""
    y = np.array([0, 0, 0, 1, 1])
    tri = triplets_from_labels(y, 3000, random_state=0)
    for a in range(3):
        partners = tri[tri[:, 0] == a, 1]
        assert set(partners) == {0, 1, 2} - {a}


@pytest.mark.parametrize(
    "y, why",
    [
        (np.array([0, 1, 2, 3]), "no class has two samples"),
        (np.zeros(5, int), "at least 2 classes"),
        (np.array([]), "non-empty"),
        (np.zeros((3, 2), int), "1-D"),
        (np.array([0.0, np.nan, 1.0, 1.0]), "NaN"),
    ],
    ids=["singletons", "one-class", "empty", "2d", "nan"],
)
@pytest.mark.parametrize("kind", list(GENERATORS))
def test_generator_impossible(kind, y, why):
    with raises_naming(ValueError, "y") as info:
        GENERATORS[kind](y, 4, 0)
    assert why in str(info.value)


@pytest.mark.parametrize("kind, name, low",
                         [("pairs", "n_pairs", 1), ("triplets", "n_triplets", 0),
                          ("quadruplets", "n_quadruplets", 0)])
def test_generator_counts(kind, name, low, y):
    with raises_naming(ValueError, name):
        GENERATORS[kind](y, low, 0)
    with raises_naming(TypeError, name):
        GENERATORS[kind](y, "10", 0)


# ---------------------------------------------------------------------------
# tuples that compare a distance with itself
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [[0, 1, 0, 1], [0, 1, 1, 0], [1, 0, 0, 1]])
def test_same_pair_quadruplets_refused(bad, X):
    with pytest.raises(ValueError, match="^quadruplets: 1 quadruplet"):
        Quadruplets.create(X, [[0, 1, 0, 2], bad])
    with pytest.raises(ValueError, match="^quadruplets: 1 quadruplet"):
        Quadruplets.from_tuples(X[np.array([bad])])


def test_same_pair_triplets_refused(X):
    with pytest.raises(ValueError, match="^triplets: 1 triplet"):
        Triplets.create(X, [[0, 1, 2], [0, 3, 3]])
    Xd = X.copy()
    Xd[3] = Xd[4]  # (0, 3, 4) joins the same two points twice
    with pytest.raises(ValueError, match="^triplets: 1 triplet"):
        Triplets.create(Xd, [[0, 3, 4]])


def test_generators_never_draw_same_index_pairs():
    """By labels alone the samplers cannot draw (i, j, i, j), (i, j, j, i)
    or (q, r, r): a same-class pair never equals a different-class pair."""
    y = np.repeat([0, 1, 2], [2, 3, 40])
    Q = quadruplets_from_labels(y, 5000, random_state=0)
    same = (np.minimum(Q[:, 0], Q[:, 1]) == np.minimum(Q[:, 2], Q[:, 3])) & (
        np.maximum(Q[:, 0], Q[:, 1]) == np.maximum(Q[:, 2], Q[:, 3]))
    assert not np.any(same)
    T = triplets_from_labels(y, 5000, random_state=0)
    assert not np.any(T[:, 1] == T[:, 2])


def test_generators_on_rows_duplicated_across_classes():
    """With rows duplicated across classes the samplers (which see labels
    only) can draw tuples whose two pairs join the same two points;
    ``create`` refuses them, and the consumer must skip them."""
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
    y = np.array([0, 0, 1, 1])  # rows 0 / 2 and 1 / 3 coincide
    Q = quadruplets_from_labels(y, 200, random_state=0)
    T = triplets_from_labels(y, 200, random_state=0)
    with pytest.raises(ValueError, match="^quadruplets:"):
        Quadruplets.create(X, Q)
    with pytest.raises(ValueError, match="^triplets:"):
        Triplets.create(X, T)


def test_informative_mask_matches_what_create_refuses():
    """``informative`` is the public form of the refusal in ``create``: a
    generator drops exactly the tuples ``Triplets`` / ``Quadruplets`` refuse
    (rows duplicated across classes make the label samplers draw them)."""
    from cvxmetric.constraints import informative

    X = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 2.0]])  # 1 == 2
    quads = np.array([[0, 1, 0, 2],   # same two points: refused
                      [1, 0, 2, 0],   # same, reversed order
                      [1, 2, 0, 0],   # both pairs of zero length
                      [0, 1, 0, 3]])  # informative
    assert informative(X, quads).tolist() == [False, False, False, True]
    for row in quads[:3]:
        with pytest.raises(ValueError, match="do not constrain the metric"):
            Quadruplets.create(X, row[None])
    Quadruplets.create(X, quads[3:])
    trips = np.array([[0, 1, 2], [0, 1, 3], [1, 2, 2]])
    assert informative(X, trips).tolist() == [False, True, False]
    with pytest.raises(ValueError, match="indices"):
        informative(X, np.zeros((2, 2), dtype=int))


@pytest.mark.parametrize("kind, name", [("pairs", "n_pairs"), ("triplets", "n_triplets"),
                                        ("quadruplets", "n_quadruplets")])
def test_generator_counts_integral_and_bounded(kind, name, y):
    """A fractional count (2.7) and a count no machine holds (1e12, 10**12)
    are refused naming the argument, never rounded nor a MemoryError."""
    for bad in (2.7, 1e12, 10 ** 12, 100.0):
        with raises_naming(ValueError, name):
            GENERATORS[kind](y, bad, 0)
    assert len(np.atleast_1d(GENERATORS[kind](y, np.int64(4), 0)[0])) >= 1
