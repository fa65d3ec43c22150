"""Critical pair selection (Sec. 5) against a brute-force reference."""

import numpy as np
import pytest

import cvxmetric.rankdml._pairs as pairs_module
from cvxmetric.rankdml import critical_triplets


def _data(seed=0, n=40, d=3):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    queries = np.arange(10)
    gallery = np.arange(10, n)
    relevant = 10 + rng.randint(0, n - 10, size=10)
    return X, queries, relevant, gallery


def _brute_top(X, q, rel, gallery, k, A0=None):
    """The k irrelevant gallery items closest to q, ties by gallery position."""
    A0 = np.eye(X.shape[1]) if A0 is None else A0
    cand = [(float((X[g] - X[q]) @ A0 @ (X[g] - X[q])), pos, g)
            for pos, g in enumerate(gallery) if g not in rel and g != q]
    return [g for _, _, g in sorted(cand)[:k]]


@pytest.mark.parametrize("A0", [None, "pd"])
def test_top_ranked_items_are_the_closest_irrelevant(A0):
    X, queries, relevant, gallery = _data()
    if A0 == "pd":
        B = np.random.RandomState(1).randn(3, 3)
        A0 = B @ B.T + 0.1 * np.eye(3)
    t = critical_triplets(queries, relevant, gallery, X, n_top=4, n_random=0, A0=A0)
    assert t.shape == (10 * 4, 3)
    for k, q in enumerate(queries):
        rows = t[t[:, 0] == q]
        assert np.all(rows[:, 1] == relevant[k])
        assert rows[:, 2].tolist() == _brute_top(X, q, {relevant[k]}, gallery, 4, A0)


def test_random_items_are_irrelevant_distinct_and_outside_the_top():
    X, queries, relevant, gallery = _data()
    t = critical_triplets(queries, relevant, gallery, X, n_top=3, n_random=5,
                          random_state=0)
    assert t.shape == (10 * 8, 3)
    for k, q in enumerate(queries):
        irr = t[t[:, 0] == q, 2]
        top, rnd = irr[:3], irr[3:]
        assert top.tolist() == _brute_top(X, q, {relevant[k]}, gallery, 3)
        assert len(set(irr.tolist())) == 8  # no repeats
        assert relevant[k] not in irr and q not in irr
        assert set(rnd.tolist()) <= set(gallery.tolist()) - set(top.tolist())


def test_random_part_is_uniform_and_seeded():
    X, queries, relevant, gallery = _data()
    a = critical_triplets(queries, relevant, gallery, X, n_top=1, n_random=3,
                          random_state=3)
    b = critical_triplets(queries, relevant, gallery, X, n_top=1, n_random=3,
                          random_state=3)
    c = critical_triplets(queries, relevant, gallery, X, n_top=1, n_random=3,
                          random_state=4)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # every eligible item is drawn sometimes, at a rate near uniform
    counts = np.zeros(len(X))
    for seed in range(200):
        t = critical_triplets(queries[:1], relevant[:1], gallery, X, n_top=1,
                              n_random=3, random_state=seed)
        np.add.at(counts, t[1:, 2], 1)
    eligible = counts[gallery] > 0
    assert eligible.sum() == len(gallery) - 2  # all but the relevant and the top one
    rate = counts[gallery][eligible] / 200
    assert abs(rate.mean() - 3 / 28) < 1e-12 and rate.min() > 0.03


def test_several_relevant_items_and_ragged_input():
    X, queries, _, gallery = _data()
    rel2 = np.stack([gallery[:10], gallery[10:20]], axis=1)  # (10, 2)
    t = critical_triplets(queries, rel2, gallery, X, n_top=2, n_random=1,
                          random_state=0)
    assert t.shape == (10 * 2 * 3, 3)
    for k, q in enumerate(queries):
        rows = t[t[:, 0] == q]
        assert set(rows[:, 1].tolist()) == set(rel2[k].tolist())
        # both relevant items of the query share the same irrelevant items
        assert set(rows[:, 2].tolist()).isdisjoint(rel2[k].tolist())
        assert rows[:3, 2].tolist() == rows[3:, 2].tolist()
    ragged = [rel2[k, : 1 + k % 2] for k in range(10)]
    t2 = critical_triplets(queries, ragged, gallery, X, n_top=2, n_random=0)
    assert len(t2) == sum(2 * (1 + k % 2) for k in range(10))


def test_query_inside_the_gallery_is_never_its_own_irrelevant_item():
    X, _, _, _ = _data()
    everyone = np.arange(len(X))
    t = critical_triplets(everyone[:5], everyone[5:10], everyone, X, n_top=3,
                          n_random=2, random_state=0)
    assert not np.any(t[:, 0] == t[:, 2]) and not np.any(t[:, 1] == t[:, 2])


def test_short_gallery_gives_what_it_has():
    X, queries, relevant, _ = _data()
    gallery = np.array([10, 11, 12])
    rel = np.full(10, 10)
    t = critical_triplets(queries, rel, gallery, X, n_top=5, n_random=5,
                          random_state=0)
    assert len(t) == 10 * 2  # two irrelevant items per query exist
    assert set(t[:, 2].tolist()) == {11, 12}


def test_blocked_computation_matches(monkeypatch):
    X, queries, relevant, gallery = _data(seed=2)
    full = critical_triplets(queries, relevant, gallery, X, n_top=3, n_random=2,
                             random_state=0)
    # force one query per block; the top-ranked part does not depend on it
    monkeypatch.setattr(pairs_module, "_BLOCK_FLOATS", 1)
    blocked = critical_triplets(queries, relevant, gallery, X, n_top=3, n_random=0)
    np.testing.assert_array_equal(full.reshape(10, 5, 3)[:, :3], blocked.reshape(10, 3, 3))


@pytest.mark.parametrize("kwargs, match", [
    (dict(queries_index=[0.5]), "queries_index: indices must be integers"),
    (dict(queries_index=[100]), "queries_index: index 100 is out of range"),
    (dict(gallery_index=[]), "gallery_index: is empty"),
    (dict(gallery_index=[11, 11]), "gallery_index: contains duplicate"),
    (dict(relevant_index=[1, 2]), "relevant_index: expected 10 rows"),
    (dict(X=np.full((40, 3), np.nan)), "X: contains"),
    (dict(n_top=0, n_random=0), "n_top, n_random"),
    (dict(n_top=-1), "n_top: must be >= 0"),
    (dict(A0=-np.eye(3)), "A0: matrix is not positive semidefinite"),
])
def test_bad_input_is_rejected(kwargs, match):
    X, queries, relevant, gallery = _data()
    args = dict(queries_index=queries, relevant_index=relevant,
                gallery_index=gallery, X=X)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        critical_triplets(**args)
    with pytest.raises(TypeError, match="n_top"):
        critical_triplets(queries, relevant, gallery, X, n_top=2.5)
