"""Sec. 2.3 of Guillaumin, Verbeek, Schmid (2010): per-bag assignment by
bipartite matching against brute force, and the bag-by-bag label step."""

import itertools

import numpy as np
import pytest

from cvxmetric.ldml import assign_bag, clustering_objective, label_instances


def _brute_force(G):
    """Best total gain over every assignment with distinct classes."""
    F, K = G.shape
    best = 0.0
    options = list(range(K)) + [-1]
    for combo in itertools.product(options, repeat=F):
        named = [c for c in combo if c >= 0]
        if len(named) != len(set(named)):
            continue
        best = max(best, sum(G[i, c] for i, c in enumerate(combo) if c >= 0))
    return best


@pytest.mark.parametrize("seed", range(40))
def test_assign_bag_is_the_brute_force_optimum(seed):
    rng = np.random.default_rng(seed)
    F, K = int(rng.integers(1, 5)), int(rng.integers(0, 5))
    G = rng.normal(size=(F, K)) * rng.choice([0.1, 1.0, 10.0])
    a = assign_bag(G)
    named = a[a >= 0]
    assert len(named) == len(set(named.tolist()))
    gain = float(sum(G[i, c] for i, c in enumerate(a) if c >= 0))
    assert gain == pytest.approx(_brute_force(G), abs=1e-12)


def _toy(seed=0, n_bags=12):
    """Bags of 1-3 instances around class centres; captions name the true
    classes of the bag plus, sometimes, a spurious one."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(4, 3)) * 4
    Z, bags, labels, truth = [], [], [], []
    for _ in range(n_bags):
        k = int(rng.integers(1, 4))
        cls = rng.choice(4, size=k, replace=False)
        start = len(Z)
        for c in cls:
            Z.append(centres[c] + rng.normal(size=3))
            truth.append(c)
        bags.append(np.arange(start, start + k))
        cap = set(cls.tolist())
        if rng.uniform() < 0.3:
            cap.add(int(rng.integers(0, 4)))
        labels.append(sorted(cap))
    return np.array(Z), bags, labels, np.array(truth)


def test_label_step_reaches_a_bagwise_optimum():
    Z, bags, caps, truth = _toy()
    b = 20.0
    y = label_instances(Z, bags, caps, b, n_sweeps=20)
    for B, s in zip(bags, caps):
        assert set(y[B][y[B] >= 0]) <= set(s)  # only classes of the caption
        named = y[B][y[B] >= 0]
        assert len(named) == len(set(named.tolist()))  # one instance per class
    # no single bag can be improved: its labels are the matching optimum
    base = clustering_objective(Z, y, b)
    for B, s in zip(bags, caps):
        for combo in itertools.product(list(s) + [-1], repeat=len(B)):
            named = [c for c in combo if c >= 0]
            if len(named) != len(set(named)):
                continue
            y2 = y.copy()
            y2[B] = combo
            assert clustering_objective(Z, y2, b) <= base + 1e-9
    # a local optimum of an NP-hard problem (Sec. 2.3): not necessarily the
    # truth's labelling, never below the first sweep's start... and every
    # named instance has a class of its caption
    assert base > clustering_objective(Z, np.full(len(Z), -1), b)


def test_singleton_bags_take_their_caption():
    """Instance-level labels (setting (a) of Sec. 4.1): the label step must
    return them, whatever the metric, when naming pays (b large)."""
    Z, _, _, truth = _toy(2)
    bags = [[i] for i in range(len(Z))]
    caps = [[int(c)] for c in truth]
    y = label_instances(Z, bags, caps, b=1e3)
    np.testing.assert_array_equal(y, truth)


def test_threshold_governs_how_many_are_named():
    Z, bags, caps, _ = _toy(1)
    counts = [int(np.sum(label_instances(Z, bags, caps, b) >= 0))
              for b in (-50.0, 5.0, 50.0)]
    assert counts[0] == 0 and counts[0] <= counts[1] <= counts[2]
    assert counts[2] == len(Z) or counts[2] >= counts[1]


def test_bad_input():
    Z = np.zeros((4, 2))
    with pytest.raises(ValueError, match=r"bags\[1\]: the bag is empty"):
        label_instances(Z, [[0], []], [[0], [1]], 1.0)
    with pytest.raises(ValueError, match=r"bags\[0\]: index 7 is out of range"):
        label_instances(Z, [[7]], [[0]], 1.0)
    with pytest.raises(ValueError, match="bag_labels: expected one label set per bag"):
        label_instances(Z, [[0], [1]], [[0]], 1.0)
    with pytest.raises(ValueError, match="bag_labels: classes must be non-negative"):
        label_instances(Z, [[0]], [[-2]], 1.0)
    with pytest.raises(ValueError, match="G"):
        assign_bag(np.array([[np.nan]]))


# ---------------------------------------------------------------------------
# labelled bags from the digits (Sec. 4.1 settings)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("setting", ["instances", "bags", "noisy"])
def test_digits_bags(setting):
    from cvxmetric.ldml import digits_bags

    A, B = digits_bags(setting, n_per_class=30, random_state=0)
    assert set(np.unique(A.y)).isdisjoint(np.unique(B.y))
    for S in (A, B):
        cover = np.sort(np.concatenate(S.bags))
        np.testing.assert_array_equal(cover, np.arange(len(S.y)))  # a partition
        assert max(len(b) for b in S.bags) <= (1 if setting == "instances" else 4)
        assert S.X.min() >= 0 and S.X.max() <= 1
        for b, cap in zip(S.bags, S.captions):
            true = set(S.y[b].tolist())
            if setting in ("instances", "bags"):
                assert set(cap.tolist()) == true
            else:
                assert set(cap.tolist()) <= set(np.unique(S.y).tolist())
    again = digits_bags(setting, n_per_class=30, random_state=0)[0]
    assert all(np.array_equal(a, b) for a, b in zip(A.bags, again.bags))


def test_noisy_rates():
    from cvxmetric.ldml import digits_bags

    A, _ = digits_bags("noisy", p_missing=0.3, p_spurious=0.0, random_state=1)
    true = sum(len(set(A.y[b].tolist())) for b in A.bags)
    kept = sum(len(set(c.tolist()) & set(A.y[b].tolist()))
               for b, c in zip(A.bags, A.captions))
    assert 0.6 < kept / true < 0.8  # about 70 % of the true names kept


def test_digits_bags_bad_input():
    from cvxmetric.ldml import digits_bags

    with pytest.raises(ValueError, match="setting"):
        digits_bags("captions")
    with pytest.raises(ValueError, match="max_bag"):
        digits_bags(max_bag=0)
    with pytest.raises(ValueError, match="p_missing"):
        digits_bags("noisy", p_missing=1.5)
    with pytest.raises(ValueError, match="classes_A, classes_B"):
        digits_bags(classes_A=(0, 1), classes_B=(1, 2))


@pytest.mark.parametrize("setting", ["instances", "bags", "noisy"])
def test_digit_people_bags(setting):
    from cvxmetric.ldml import digit_people_bags

    A, B = digit_people_bags(setting, n_people=20, photos=(2, 4), random_state=0)
    assert set(np.unique(A.y)).isdisjoint(np.unique(B.y))
    for S in (A, B):
        assert len(np.unique(S.y)) == 20 and S.X.shape[1] == 64
        counts = np.bincount(S.y - S.y.min())
        assert counts.min() >= 2 and counts.max() <= 4
        cover = np.sort(np.concatenate(S.bags))
        np.testing.assert_array_equal(cover, np.arange(len(S.y)))
        for b, cap in zip(S.bags, S.captions):
            # the people of one photo are distinct
            assert len(set(S.y[b].tolist())) == len(b)
            if setting != "noisy":
                assert set(cap.tolist()) == set(S.y[b].tolist())
    again = digit_people_bags(setting, n_people=20, photos=(2, 4), random_state=0)[0]
    np.testing.assert_array_equal(again.X, A.X)
    # photos of one person differ (pose and lighting), but stay closer to
    # each other than to other people on average
    A0 = digit_people_bags("instances", n_people=30, noise=0.0, shift=0,
                           contrast=(1.0, 1.0), random_state=1)[0]
    same = A0.y[:, None] == A0.y[None, :]
    D = np.sum((A0.X[:, None] - A0.X[None]) ** 2, axis=2)
    assert np.allclose(D[same], 0.0)


def test_digit_people_bags_bad_input():
    from cvxmetric.ldml import digit_people_bags

    with pytest.raises(ValueError, match="n_people"):
        digit_people_bags(n_people=1)
    with pytest.raises(ValueError, match="photos"):
        digit_people_bags(photos=(3, 2))
    with pytest.raises(ValueError, match="shift"):
        digit_people_bags(shift=5)
    with pytest.raises(ValueError, match="noise"):
        digit_people_bags(noise=-1.0)
    with pytest.raises(ValueError, match="setting"):
        digit_people_bags("faces")


def test_label_step_from_given_labels():
    from cvxmetric.ldml import digits_bags

    A, _ = digits_bags("bags", max_bag=3, random_state=0)
    cold = label_instances(A.X, A.bags, A.captions, 3.0)
    high = label_instances(A.X, A.bags, A.captions, 100.0)
    warm = label_instances(A.X, A.bags, A.captions, 3.0, init=high)
    # continuation in b: a better local optimum of Eq. 11 than the paper's
    # start, which at this small b empties every class in its first sweep
    assert clustering_objective(A.X, warm, 3.0) > clustering_objective(A.X, cold, 3.0)
    named = warm >= 0
    assert np.mean(warm[named] == A.y[named]) > 0.9
    with pytest.raises(ValueError, match="init"):
        label_instances(A.X, A.bags, A.captions, 3.0, init=high[:5])
    bad = high.copy()
    bad[A.bags[0][0]] = 9 if 9 not in A.captions[0] else 8
    with pytest.raises(ValueError, match=r"init: bags\[0\]"):
        label_instances(A.X, A.bags, A.captions, 3.0, init=bad)


def test_label_step_past_the_budget_stops_once_a_class_has_two_instances():
    from cvxmetric.ldml._budget import budget

    Z, bags, caps, _ = _toy(3, n_bags=40)
    # (LDML*'s training step: every instance its caption has room for named)
    full = label_instances(Z, bags, caps, 20.0, name_all=True)
    with budget(0.0):
        cut = label_instances(Z, bags, caps, 20.0, name_all=True)
    # the first sweep stopped at the first bag boundary where two visited
    # instances share a class; the bags it did not reach have no name
    named = np.flatnonzero(cut >= 0)
    assert named.size >= 2
    _, counts = np.unique(cut[named], return_counts=True)
    assert counts.max() >= 2
    last = max(k for k, B in enumerate(bags) if np.any(cut[B] >= 0))
    assert all(np.all(cut[B] < 0) for B in bags[last + 1:])
    assert last + 1 < len(bags)
    # every name is one its bag's caption allows
    for B, s in zip(bags, caps):
        assert np.all(np.isin(cut[B][cut[B] >= 0], s))
    # without a budget the whole label step runs
    assert np.sum(full >= 0) > np.sum(cut >= 0)
