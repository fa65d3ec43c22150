"""Retrieval metrics against brute-force definitions and scikit-learn.

The brute-force references below rank the items of one query by an explicit
sort (ties pessimistic: irrelevant items before relevant ones), then read
the CMC rank and the average precision off that list -- the definitions, not
the vectorised code of :mod:`cvxmetric.metrics`.
"""

import numpy as np
import pytest
from sklearn.metrics import average_precision_score

from cvxmetric.metrics import (
    ap_dissimilar,
    ap_similar,
    average_precision,
    cmc_curve,
    hierarchy_accuracy,
    knn_accuracy,
    knn_predict,
    mean_average_precision,
    mean_class_accuracy,
    pair_map,
    rank_k_accuracy,
)

# exact-arithmetic identities (fractions of small integers): round-off only
ROUNDOFF = 1e-12


# ---------------------------------------------------------------------------
# brute-force definitions
# ---------------------------------------------------------------------------


def _pessimistic_order(key, rel):
    """Items by increasing ``key``, relevant items last among ties."""
    return sorted(range(len(key)), key=lambda j: (key[j], bool(rel[j])))


def brute_first_rank(dist_row, rel_row):
    order = _pessimistic_order(dist_row, rel_row)
    for pos, j in enumerate(order, start=1):
        if rel_row[j]:
            return pos
    return np.inf


def brute_cmc(D, mask, max_rank):
    ranks = np.array([brute_first_rank(D[i], mask[i]) for i in range(len(D))])
    return np.array([np.mean(ranks <= k) for k in range(1, max_rank + 1)])


def brute_ap(score_row, rel_row, higher_is_better=True):
    key = [-s for s in score_row] if higher_is_better else list(score_row)
    order = _pessimistic_order(key, rel_row)
    hits, precisions = 0, []
    for pos, j in enumerate(order, start=1):
        if rel_row[j]:
            hits += 1
            precisions.append(hits / pos)
    return np.mean(precisions) if precisions else np.nan


def random_mask(rng, n_q, n_items, p=0.2, at_least_one=True):
    mask = rng.random_sample((n_q, n_items)) < p
    if at_least_one:
        empty = ~mask.any(axis=1)
        mask[empty, rng.randint(n_items, size=empty.sum())] = True
    return mask


# ---------------------------------------------------------------------------
# CMC and rank-k accuracy
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_cmc_matches_brute_force_continuous(seed):
    rng = np.random.RandomState(seed)
    D = rng.random_sample((40, 25))
    mask = random_mask(rng, 40, 25)
    np.testing.assert_allclose(cmc_curve(D, mask), brute_cmc(D, mask, 25),
                               rtol=0, atol=ROUNDOFF)


@pytest.mark.parametrize("seed", range(4))
def test_cmc_matches_brute_force_with_ties(seed):
    # distances on a coarse integer grid: many ties, also between relevant
    # and irrelevant items and between relevant items
    rng = np.random.RandomState(seed)
    D = rng.randint(0, 4, size=(50, 12)).astype(float)
    mask = random_mask(rng, 50, 12, p=0.3)
    np.testing.assert_allclose(cmc_curve(D, mask, max_rank=12),
                               brute_cmc(D, mask, 12), rtol=0, atol=ROUNDOFF)


def test_cmc_index_form_equals_mask_form():
    rng = np.random.RandomState(0)
    D = rng.randint(0, 5, size=(30, 9)).astype(float)
    idx = rng.randint(9, size=30)
    mask = np.zeros((30, 9), dtype=bool)
    mask[np.arange(30), idx] = True
    np.testing.assert_array_equal(cmc_curve(D, idx, max_rank=9),
                                  cmc_curve(D, mask, max_rank=9))


def test_cmc_by_hand():
    D = np.array([
        [0.1, 0.5, 0.9],  # relevant 0 -> rank 1
        [0.1, 0.5, 0.9],  # relevant 2 -> rank 3
        [0.5, 0.5, 0.1],  # relevant 1 tied with item 0 -> rank 3 (pessimistic)
        [0.2, 0.2, 0.2],  # all tied -> rank 3
    ])
    rel = np.array([0, 2, 1, 1])
    np.testing.assert_allclose(cmc_curve(D, rel), [0.25, 0.25, 1.0], rtol=0,
                               atol=ROUNDOFF)
    assert rank_k_accuracy(D, rel, k=1) == 0.25
    assert rank_k_accuracy(D, rel, k=3) == 1.0


def test_constant_distance_is_worst_case():
    """Pessimistic ties: a metric that cannot tell items apart ranks every
    relevant item last (rank n_items), never first."""
    D = np.zeros((5, 7))
    rel = np.arange(5)
    curve = cmc_curve(D, rel)
    assert np.all(curve[:-1] == 0.0) and curve[-1] == 1.0


def test_cmc_is_monotone_and_ends_at_one():
    rng = np.random.RandomState(3)
    D = rng.random_sample((60, 15))
    rel = rng.randint(15, size=60)
    curve = cmc_curve(D, rel)
    assert curve.shape == (15,)
    assert np.all(np.diff(curve) >= 0)
    assert curve[-1] == 1.0


def test_cmc_prefix_consistency_and_rank_k():
    rng = np.random.RandomState(4)
    D = rng.random_sample((20, 30))
    rel = rng.randint(30, size=20)
    full = cmc_curve(D, rel)
    for k in (1, 5, 10, 30):
        np.testing.assert_array_equal(cmc_curve(D, rel, max_rank=k), full[:k])
        assert rank_k_accuracy(D, rel, k=k) == full[k - 1]


def test_cmc_query_without_relevant_item_counts_as_miss():
    D = np.array([[0.1, 0.2], [0.3, 0.4]])
    mask = np.array([[True, False], [False, False]])
    np.testing.assert_allclose(cmc_curve(D, mask), [0.5, 0.5])


def test_cmc_invariant_to_monotone_transform_and_item_permutation():
    rng = np.random.RandomState(5)
    D = rng.random_sample((25, 10))
    rel = rng.randint(10, size=25)
    perm = rng.permutation(10)
    inv = np.argsort(perm)
    base = cmc_curve(D, rel)
    np.testing.assert_array_equal(cmc_curve(np.exp(3 * D), rel), base)
    np.testing.assert_array_equal(cmc_curve(D[:, perm], inv[rel]), base)


def test_rank_k_accuracy_returns_float():
    out = rank_k_accuracy(np.array([[0.0, 1.0]]), np.array([0]), k=1)
    assert isinstance(out, float) and out == 1.0


# ---------------------------------------------------------------------------
# average precision
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_ap_matches_sklearn_without_ties(seed):
    rng = np.random.RandomState(seed)
    S = rng.standard_normal((30, 40))  # continuous: no ties almost surely
    mask = random_mask(rng, 30, 40, p=0.25)
    ours = average_precision(S, mask)
    ref = np.array([average_precision_score(mask[i], S[i]) for i in range(30)])
    np.testing.assert_allclose(ours, ref, rtol=0, atol=ROUNDOFF)
    np.testing.assert_allclose(mean_average_precision(S, mask), ref.mean(),
                               rtol=0, atol=ROUNDOFF)


def test_ap_distances_match_sklearn_on_negated_scores():
    rng = np.random.RandomState(7)
    D = rng.random_sample((12, 20))
    mask = random_mask(rng, 12, 20)
    ours = average_precision(D, mask, higher_is_better=False)
    ref = np.array([average_precision_score(mask[i], -D[i]) for i in range(12)])
    np.testing.assert_allclose(ours, ref, rtol=0, atol=ROUNDOFF)


@pytest.mark.parametrize("seed", range(4))
def test_ap_with_ties_matches_brute_force_and_is_below_sklearn(seed):
    """With ties, AP is the pessimistic one (relevant last in a tie);
    scikit-learn gives every relevant item of a tied group the precision at
    the end of the group, which is never lower."""
    rng = np.random.RandomState(seed)
    S = rng.randint(0, 4, size=(40, 15)).astype(float)
    mask = random_mask(rng, 40, 15, p=0.3)
    ours = average_precision(S, mask)
    ref = np.array([brute_ap(S[i], mask[i]) for i in range(40)])
    np.testing.assert_allclose(ours, ref, rtol=0, atol=ROUNDOFF)
    sk = np.array([average_precision_score(mask[i], S[i]) for i in range(40)])
    assert np.all(ours <= sk + ROUNDOFF)
    assert np.any(ours < sk - 1e-3)  # the tie rule matters on this data


def test_ap_single_relevant_is_reciprocal_rank():
    rng = np.random.RandomState(8)
    D = rng.random_sample((30, 12))
    rel = rng.randint(12, size=30)
    ranks = np.array([brute_first_rank(D[i], np.arange(12) == rel[i])
                      for i in range(30)])
    np.testing.assert_allclose(average_precision(D, rel, higher_is_better=False),
                               1.0 / ranks, rtol=0, atol=ROUNDOFF)


def test_ap_chunking_over_many_queries():
    # more than one 256-query chunk
    rng = np.random.RandomState(9)
    S = rng.randint(0, 6, size=(600, 8)).astype(float)
    mask = random_mask(rng, 600, 8, p=0.3)
    ref = np.array([brute_ap(S[i], mask[i]) for i in range(600)])
    np.testing.assert_allclose(average_precision(S, mask), ref, rtol=0,
                               atol=ROUNDOFF)


def test_ap_nan_for_query_without_relevant_and_map_ignores_it():
    S = np.array([[0.9, 0.1, 0.5], [0.2, 0.3, 0.4]])
    mask = np.array([[True, False, False], [False, False, False]])
    ap = average_precision(S, mask)
    assert ap[0] == 1.0 and np.isnan(ap[1])
    assert mean_average_precision(S, mask) == 1.0


def test_map_raises_when_no_query_has_a_relevant_item():
    with pytest.raises(ValueError, match="relevant"):
        mean_average_precision(np.ones((2, 3)), np.zeros((2, 3), dtype=bool))


def test_ap_all_relevant_is_one():
    S = np.random.RandomState(0).random_sample((3, 5))
    np.testing.assert_allclose(average_precision(S, np.ones((3, 5), dtype=bool)), 1.0)


# ---------------------------------------------------------------------------
# bad inputs
# ---------------------------------------------------------------------------


GOOD_D = np.array([[0.1, 0.2, 0.3], [0.3, 0.2, 0.1]])
GOOD_REL = np.array([0, 2])


@pytest.mark.parametrize("fn", [cmc_curve, average_precision])
@pytest.mark.parametrize("bad, match", [
    (np.array([[0.1, np.nan, 0.3], [0.3, 0.2, 0.1]]), "NaN"),
    (np.array([[0.1, np.inf, 0.3], [0.3, 0.2, 0.1]]), "NaN or inf"),
    (np.array([0.1, 0.2, 0.3]), "2-D"),
    (np.zeros((2, 0)), "non-empty"),
    (np.array([["a", "b", "c"], ["d", "e", "f"]]), "real numbers"),
    (np.array([[1 + 1j, 0, 0], [0, 0, 0]]), "real numbers"),
    (np.ones((2, 3), dtype=bool), "real numbers"),
])
def test_bad_distance_matrix(fn, bad, match):
    with pytest.raises(ValueError, match=match):
        fn(bad, GOOD_REL)


@pytest.mark.parametrize("fn", [cmc_curve, average_precision])
@pytest.mark.parametrize("bad, match", [
    (np.array([0, 3]), r"\[0, 3\)"),  # out of range
    (np.array([-1, 0]), r"\[0, 3\)"),
    (np.array([0, 1, 2]), "one per query"),  # wrong length
    (np.array([0.0, 2.0]), "integer"),  # float indices are not coerced
    (np.array([True, False]), "integer"),
    (np.ones((2, 2), dtype=bool), "shape"),  # mask of the wrong shape
    (np.ones((2, 3), dtype=int), "boolean"),  # integer mask
    (np.ones((2, 3, 1), dtype=bool), "shape"),
])
def test_bad_relevance(fn, bad, match):
    with pytest.raises(ValueError, match=match):
        fn(GOOD_D, bad)


@pytest.mark.parametrize("fn", [cmc_curve, average_precision, rank_k_accuracy])
def test_ragged_distances_name_the_argument(fn):
    with pytest.raises(ValueError, match="cannot be read as an array"):
        fn([[0.1, 0.2], [0.3]], GOOD_REL)


@pytest.mark.parametrize("max_rank", [0, 4, -1, 1.5, "2", True])
def test_bad_max_rank(max_rank):
    with pytest.raises(ValueError, match="max_rank"):
        cmc_curve(GOOD_D, GOOD_REL, max_rank=max_rank)


@pytest.mark.parametrize("k", [0, 4, 2.0, True])
def test_bad_k(k):
    with pytest.raises(ValueError, match="k"):
        rank_k_accuracy(GOOD_D, GOOD_REL, k=k)


def test_inputs_are_not_modified():
    D = GOOD_D.copy()
    S = GOOD_D.copy()
    mask = np.array([[True, False, False], [False, False, True]])
    cmc_curve(D, mask)
    average_precision(S, mask, higher_is_better=False)
    np.testing.assert_array_equal(D, GOOD_D)
    np.testing.assert_array_equal(S, GOOD_D)


# ---------------------------------------------------------------------------
# Qwise pair metrics (Law, Thome and Cord 2016, Sec. 5.3)
# ---------------------------------------------------------------------------


PAIR_D = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
PAIR_S = np.array([True, False, True, False, False])


def test_pair_ap_by_hand():
    # ascending: S D S D D -> AP_S = (1/1 + 2/3) / 2 = 5/6
    assert ap_similar(PAIR_D, PAIR_S) == pytest.approx(5 / 6, abs=ROUNDOFF)
    # descending: D D S D S (0.5, 0.4, 0.3, 0.2, 0.1), D relevant at ranks 1, 2, 4
    # -> AP_D = (1/1 + 2/2 + 3/4) / 3 = 11/12
    assert ap_dissimilar(PAIR_D, PAIR_S) == pytest.approx(11 / 12, abs=ROUNDOFF)
    # MAP = (5/6 + 11/12) / 2 = (10/12 + 11/12) / 2 = 21/24 = 7/8
    assert pair_map(PAIR_D, PAIR_S) == pytest.approx(7 / 8, abs=ROUNDOFF)
    assert isinstance(pair_map(PAIR_D, PAIR_S), float)


def test_pair_ap_ties_are_pessimistic():
    d = np.array([0.2, 0.2, 0.5])
    s = np.array([True, False, False])
    # ascending, the similar pair after the tied dissimilar one: D S D
    # -> AP_S = 1/2
    assert ap_similar(d, s) == pytest.approx(0.5, abs=ROUNDOFF)
    # descending: 0.5 (D, rank 1), then the tie at 0.2 with S first: D S D
    # -> AP_D = (1/1 + 2/3) / 2 = 5/6
    assert ap_dissimilar(d, s) == pytest.approx(5 / 6, abs=ROUNDOFF)


def test_pair_ap_constant_distance_is_worst_case():
    s = np.array([True, False, False, True])
    # every pair tied: the relevant ones come last, D D S S / S S D D
    # -> AP = (1/3 + 2/4) / 2 = 5/12 for both classes
    assert ap_similar(np.ones(4), s) == pytest.approx(5 / 12, abs=ROUNDOFF)
    assert ap_dissimilar(np.ones(4), s) == pytest.approx(5 / 12, abs=ROUNDOFF)
    assert pair_map(np.ones(4), s) == pytest.approx(5 / 12, abs=ROUNDOFF)


def test_perfect_separation_gives_one():
    d = np.array([0.3, 0.1, 0.9, 0.7])
    s = np.array([True, True, False, False])
    assert ap_similar(d, s) == ap_dissimilar(d, s) == pair_map(d, s) == 1.0
    # any threshold between the classes classifies every pair right
    assert mean_class_accuracy(d, s, 0.5) == 1.0


@pytest.mark.parametrize("seed", range(5))
def test_pair_ap_match_sklearn_without_ties(seed):
    rng = np.random.RandomState(seed)
    d = rng.random_sample(60)  # continuous: no ties
    s = rng.random_sample(60) < 0.3
    s[:2] = [True, False]
    assert ap_similar(d, s) == pytest.approx(
        average_precision_score(s, -d), abs=ROUNDOFF)
    assert ap_dissimilar(d, s) == pytest.approx(
        average_precision_score(~s, d), abs=ROUNDOFF)


@pytest.mark.parametrize("seed", range(5))
def test_pair_ap_with_ties_match_brute_force(seed):
    rng = np.random.RandomState(seed)
    d = rng.randint(0, 4, 40).astype(float)  # many ties
    s = rng.random_sample(40) < 0.4
    s[:2] = [True, False]
    assert ap_similar(d, s) == pytest.approx(
        brute_ap(d, s, higher_is_better=False), abs=ROUNDOFF)
    assert ap_dissimilar(d, s) == pytest.approx(
        brute_ap(d, ~s, higher_is_better=True), abs=ROUNDOFF)


def test_mean_class_accuracy_by_hand():
    # b = 0.3: predicted similar = d < 0.3 = [T, T, F, F, F]
    # similar pairs (0.1, 0.3): 1 of 2 right; the pair at exactly b is
    # predicted dissimilar; dissimilar pairs (0.2, 0.4, 0.5): 2 of 3 right
    # -> (1/2 + 2/3) / 2 = 7/12
    assert mean_class_accuracy(PAIR_D, PAIR_S, 0.3) == pytest.approx(
        7 / 12, abs=ROUNDOFF)
    # b = 0.35: similar 2/2, dissimilar 2/3 -> (1 + 2/3) / 2 = 5/6, while the
    # plain accuracy would be 4/5: the classes are weighted equally
    assert mean_class_accuracy(PAIR_D, PAIR_S, 0.35) == pytest.approx(
        5 / 6, abs=ROUNDOFF)
    # b below every distance: all predicted dissimilar -> (0 + 1) / 2
    assert mean_class_accuracy(PAIR_D, PAIR_S, np.float64(0.0)) == 0.5
    assert isinstance(mean_class_accuracy(PAIR_D, PAIR_S, 1), float)


PAIR_FNS = [ap_similar, ap_dissimilar, pair_map,
            lambda d, s: mean_class_accuracy(d, s, 0.3)]


@pytest.mark.parametrize("fn", PAIR_FNS)
@pytest.mark.parametrize("d, s, match", [
    (np.array([0.1, np.nan, 0.3, 0.4, 0.5]), PAIR_S, "distances: contains NaN"),
    (np.array([0.1, np.inf, 0.3, 0.4, 0.5]), PAIR_S, "distances: contains NaN"),
    (PAIR_D[None, :], PAIR_S, "distances: expected a non-empty 1-D"),
    (np.zeros(0), np.zeros(0, dtype=bool), "distances: expected a non-empty 1-D"),
    (PAIR_S, PAIR_S, "distances: expected real numbers"),
    (np.array(list("abcde")), PAIR_S, "distances: expected real numbers"),
    ([[0.1, 0.2], [0.3]], PAIR_S, "distances: cannot be read"),
    (PAIR_D, PAIR_S[:4], r"similar: expected shape \(5,\)"),
    (PAIR_D, PAIR_S.astype(int), "similar: expected a boolean"),
    (PAIR_D, np.where(PAIR_S, 1, -1), "similar: expected a boolean"),
    (PAIR_D, np.ones(5, dtype=bool), "similar: no dissimilar pair"),
    (PAIR_D, np.zeros(5, dtype=bool), "similar: no similar pair"),
])
def test_pair_metrics_bad_input(fn, d, s, match):
    with pytest.raises(ValueError, match=match):
        fn(d, s)


@pytest.mark.parametrize("b", [np.nan, np.inf, "0.3", None, True, [0.3]])
def test_mean_class_accuracy_bad_threshold(b):
    with pytest.raises(ValueError, match="b: expected a finite real number"):
        mean_class_accuracy(PAIR_D, PAIR_S, b)


# ---------------------------------------------------------------------------
# k-NN (Sec. 6.3)
# ---------------------------------------------------------------------------


KNN_Y = np.array([0, 1, 1, 2, 0])
KNN_D = np.array([
    [0.5, 0.1, 0.4, 0.2, 0.3],  # order 1(c1) 3(c2) 4(c0) 2(c1) 0(c0)
    [0.1, 0.2, 0.3, 0.9, 0.4],  # order 0(c0) 1(c1) 2(c1) 4(c0) 3(c2)
    [0.3, 0.3, 0.1, 0.3, 0.3],  # order 2(c1), then the tie by index: 0 1 3 4
    [0.2, 0.2, 0.2, 0.2, 0.2],  # all tied: training order 0(c0) 1(c1) 2(c1) ...
])


@pytest.mark.parametrize("k, expected", [
    # row 0: c1 | c1:c2 1-1, c1 nearer | 1-1-1, c1 nearest | c1 2 votes
    #        | 5: c0 2, c1 2, c2 1, c1 nearer
    # row 1: c0 | c0:c1 1-1, c0 nearer | c1 2 votes | c0:c1 2-2, c0 nearer
    #        | c0 2, c1 2, c2 1, c0 nearer
    # row 2: c1 | c1, c0 1-1 -> c1 | c1, c0, c1 -> c1 | c1 2, c0 1, c2 1 -> c1
    #        | c0 2, c1 2, c2 1 -> c1 (index 2 nearest)
    # row 3: c0 | c0:c1 1-1 -> c0 (index 0 first) | c1 2 votes | c1 2 votes
    #        | c0 2, c1 2 -> c0 (index 0 first)
    (1, [1, 0, 1, 0]),
    (2, [1, 0, 1, 0]),
    (3, [1, 1, 1, 1]),
    (4, [1, 0, 1, 1]),
    (5, [1, 0, 1, 0]),
])
def test_knn_predict_by_hand(k, expected):
    np.testing.assert_array_equal(knn_predict(KNN_D, KNN_Y, k=k), expected)


def test_knn_string_labels_and_accuracy():
    y = np.array(["frog", "toad", "toad", "newt", "frog"])
    pred = knn_predict(KNN_D, y, k=3)
    np.testing.assert_array_equal(pred, ["toad"] * 4)
    assert pred.dtype == y.dtype
    # k = 4 predicts [c1, c0, c1, c1]; y_test agrees on rows 0 and 3 -> 2/4
    assert knn_accuracy(KNN_D, KNN_Y, [1, 2, 0, 1], k=4) == 0.5
    assert knn_accuracy(KNN_D, y, ["toad", "frog", "toad", "toad"], k=4) == 1.0


def _brute_knn(D, y, k):
    """One row at a time: sort by (distance, index), count votes, break a
    tie by the earliest neighbour of the tied classes."""
    out = []
    for row in D:
        order = sorted(range(len(row)), key=lambda j: (row[j], j))[:k]
        votes = {}
        for pos, j in enumerate(order):
            n, first = votes.get(y[j], (0, pos))
            votes[y[j]] = (n + 1, first)
        out.append(max(votes, key=lambda c: (votes[c][0], -votes[c][1])))
    return np.array(out)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [1, 2, 4, 7])
def test_knn_matches_brute_force_with_ties(seed, k):
    rng = np.random.RandomState(seed)
    D = rng.randint(0, 5, (30, 12)).astype(float)  # many distance ties
    y = rng.randint(0, 3, 12)
    np.testing.assert_array_equal(knn_predict(D, y, k=k), _brute_knn(D, y, k))


@pytest.mark.parametrize("k", [1, 3, 5])
def test_knn_matches_sklearn_without_ties(k):
    from sklearn.neighbors import KNeighborsClassifier
    rng = np.random.RandomState(0)
    Xtr, Xte = rng.randn(40, 3), rng.randn(25, 3)
    y = rng.randint(0, 2, 40)  # two classes, odd k: no vote ties
    D = np.sqrt(((Xte[:, None, :] - Xtr[None, :, :]) ** 2).sum(-1))
    ref = KNeighborsClassifier(n_neighbors=k).fit(Xtr, y).predict(Xte)
    np.testing.assert_array_equal(knn_predict(D, y, k=k), ref)


def test_knn_chunking_over_many_queries():
    rng = np.random.RandomState(1)
    D = rng.randint(0, 3, (2100, 6)).astype(float)
    y = rng.randint(0, 3, 6)
    np.testing.assert_array_equal(knn_predict(D, y, k=3), _brute_knn(D, y, 3))


@pytest.mark.parametrize("k", [0, 6, -1, 2.0, True, "1", None])
def test_knn_bad_k(k):
    with pytest.raises(ValueError, match=r"k: expected an integer in \[1, n_train=5\]"):
        knn_predict(KNN_D, KNN_Y, k=k)


@pytest.mark.parametrize("D, y, match", [
    (np.where(KNN_D == 0.5, np.nan, KNN_D), KNN_Y, "distances: contains NaN"),
    (KNN_D[0], KNN_Y, "distances: expected a non-empty 2-D"),
    (KNN_D, KNN_Y[:4], "y_train: expected 5 labels, got 4"),
    (KNN_D, KNN_Y[None, :], "y_train: expected a non-empty 1-D"),
    (KNN_D, np.array([0, 1, np.nan, 2, 0]), "y_train: contains NaN"),
    (KNN_D, np.array([0, 1, None, 2, 0], dtype=object), "y_train: labels must be"),
])
def test_knn_bad_input(D, y, match):
    with pytest.raises(ValueError, match=match):
        knn_predict(D, y)


@pytest.mark.parametrize("y_test, match", [
    ([0, 1, 2], "y_test: expected 4 labels, got 3"),
    (["0", "1", "2", "0"], "y_test: labels of dtype"),
    ([0.0, np.nan, 1.0, 2.0], "y_test: contains NaN"),
])
def test_knn_accuracy_bad_y_test(y_test, match):
    with pytest.raises(ValueError, match=match):
        knn_accuracy(KNN_D, KNN_Y, y_test)


# ---------------------------------------------------------------------------
# Hierarchy-aware accuracy (Eq. 24)
# ---------------------------------------------------------------------------


H_PARENT = {0: "A", 1: "A", 2: "B", 3: "B"}  # siblings: {0, 1} and {2, 3}
H_TRUE = [0, 0, 0, 0, 1, 1, 2]
H_PRED = [0, 1, 2, 0, 1, 3, 2]


def test_hierarchy_accuracy_by_hand():
    # class 0: Delta = 0, 0.5 (sibling 1), 1 (2 is under B), 0 -> Acc = 1 - 1.5/4 = 0.625
    # class 1: Delta = 0, 1 (3 is under B)                     -> Acc = 1 - 1/2   = 0.5
    # class 2: Delta = 0                                       -> Acc = 1
    # class 3 only predicted: not a class of y_true, not averaged
    expected = {0: 0.625, 1: 0.5, 2: 1.0}
    got = hierarchy_accuracy(H_TRUE, H_PRED, H_PARENT, per_class=True)
    assert got.keys() == expected.keys()
    for c in expected:
        assert got[c] == pytest.approx(expected[c], abs=ROUNDOFF)
    # mean over classes: (0.625 + 0.5 + 1) / 3 = 2.125 / 3
    assert hierarchy_accuracy(H_TRUE, H_PRED, H_PARENT) == pytest.approx(
        2.125 / 3, abs=ROUNDOFF)
    # ... not the mean over examples: 1 - (0.5 + 1 + 1) / 7 = 4.5 / 7
    assert hierarchy_accuracy(H_TRUE, H_PRED, H_PARENT) != pytest.approx(4.5 / 7)


def test_hierarchy_accuracy_array_parent_and_string_labels():
    par = np.array([10, 10, 20, 20])  # parent of class c is par[c]
    assert hierarchy_accuracy(H_TRUE, H_PRED, par) == pytest.approx(
        2.125 / 3, abs=ROUNDOFF)
    names = np.array(["frog", "toad", "carp", "pike"])
    sp = {"frog": "amphibian", "toad": "amphibian", "carp": "fish",
          "pike": "fish"}
    got = hierarchy_accuracy(names[H_TRUE], names[H_PRED], sp, per_class=True)
    assert got == pytest.approx({"frog": 0.625, "toad": 0.5, "carp": 1.0},
                                abs=ROUNDOFF)


def test_hierarchy_accuracy_bounds_and_plain_accuracy():
    y = np.array([0, 1, 2, 3])
    assert hierarchy_accuracy(y, y, H_PARENT) == 1.0
    # every prediction a sibling: Delta = 0.5 everywhere
    assert hierarchy_accuracy(y, np.array([1, 0, 3, 2]), H_PARENT) == 0.5
    # every prediction in the other subtree: Delta = 1
    assert hierarchy_accuracy(y, np.array([2, 3, 0, 1]), H_PARENT) == 0.0
    # every class its own parent: Eq. 24 is the per-class accuracy
    flat = {c: c for c in range(4)}
    assert hierarchy_accuracy(y, np.array([1, 0, 3, 2]), flat) == 0.0


@pytest.mark.parametrize("y_true, y_pred, parent, match", [
    (H_TRUE, [0, 1, 2, 0, 1, 4, 2], H_PARENT, "parent: no entry for label.*4"),
    ([5] + H_TRUE[1:], H_PRED, H_PARENT, "parent: no entry for label.*5"),
    (H_TRUE, H_PRED, np.array([10, 10, 20]), "parent: no entry for label.*3"),
    ([-1] + H_TRUE[1:], H_PRED, np.array([10, 10, 20, 20]),
     "parent: no entry for label.*-1"),
    (["a", "b"], ["a", "a"], np.array([0, 0]), "parent: an array parent needs integer"),
    (H_TRUE, H_PRED, np.zeros((2, 2)), "parent: expected a dict"),
    (H_TRUE, H_PRED[:6], H_PARENT, "y_pred: expected 7 labels, got 6"),
    ([], [], H_PARENT, "y_true: expected a non-empty 1-D"),
    (H_TRUE, [str(c) for c in H_PRED], H_PARENT, "y_pred: labels of dtype"),
    ([0.0, np.nan], [0.0, 1.0], H_PARENT, "y_true: contains NaN"),
])
def test_hierarchy_accuracy_bad_input(y_true, y_pred, parent, match):
    with pytest.raises(ValueError, match=match):
        hierarchy_accuracy(y_true, y_pred, parent)


def test_new_metrics_do_not_modify_inputs():
    d, s = PAIR_D.copy(), PAIR_S.copy()
    pair_map(d, s)
    mean_class_accuracy(d, s, 0.3)
    np.testing.assert_array_equal(d, PAIR_D)
    np.testing.assert_array_equal(s, PAIR_S)
    D, y = KNN_D.copy(), KNN_Y.copy()
    knn_accuracy(D, y, [0, 0, 0, 0], k=3)
    np.testing.assert_array_equal(D, KNN_D)
    np.testing.assert_array_equal(y, KNN_Y)
