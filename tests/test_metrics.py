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
    average_precision,
    cmc_curve,
    mean_average_precision,
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
