"""The evaluation of Guillaumin, Verbeek, Schmid (2010), Sec. 4: verification
pairs, AP at ten recall values (hand-computed cases and a brute-force
reference), the naming curve's dichotomic search, the held-out split, bad
input, and ``examples/ldml_bags.py`` (its default run and ``--data digits``)."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cvxmetric.ldml import digits_bags
from cvxmetric.experiments.ldml import evaluation as ev
from cvxmetric.experiments.ldml.evaluation import (RECALL_LEVELS, average_precision_10, naming_curve,
                                       pair_scores, restrict_bags, split_bags,
                                       verification_ap, verification_map,
                                       verification_pairs)

ROOT = Path(__file__).resolve().parents[2]

#: Subprocess timeout of the example runs: ten times the idle default run.
_TIMEOUT = 200


# ---------------------------------------------------------------------------
# average_precision_10
# ---------------------------------------------------------------------------

def _ap10_reference(scores, labels):
    """The definition written out: thresholds at each distinct score, p_interp
    at r = k/10 as the best precision with recall >= r."""
    scores = np.asarray(scores, float)
    pos = np.asarray(labels) == 1
    P = pos.sum()
    curve = []
    for t in np.unique(scores):
        called = scores >= t
        tp = np.sum(pos & called)
        curve.append((tp / P, tp / called.sum()))
    total = 0.0
    for k in range(1, 11):
        total += max(p for r, p in curve if r >= k / 10 - 1e-12)
    return total / 10


def test_recall_levels_are_the_ten_values():
    assert np.allclose(RECALL_LEVELS, [0.1 * k for k in range(1, 11)])


@pytest.mark.parametrize("labels, expected", [
    # perfect ranking
    ([1, 1, -1, -1], 1.0),
    # precision 1 up to recall 0.5, 2/3 at recall 1: (5 * 1 + 5 * 2/3) / 10
    ([1, -1, 1, -1], 5 / 6),
    # negatives first: precision 1/3 at recall 0.5, 1/2 at recall 1, and
    # the interpolation takes 1/2 at every level
    ([-1, -1, 1, 1], 0.5),
    # ranks of the positives 1, 4, 5, 9 (P = 4): p_interp is 1 at r <= 0.25
    # (k = 1, 2), 3/5 at 0.25 < r <= 0.75 (k = 3..7), 4/9 at r > 0.75
    # (k = 8, 9, 10)
    ([1, -1, -1, 1, 1, -1, -1, -1, 1, -1], (2 * 1 + 5 * 0.6 + 3 * 4 / 9) / 10),
    # one positive at rank 3 of 3
    ([-1, -1, 1], 1 / 3),
])
def test_ap10_hand_computed(labels, expected):
    scores = np.arange(len(labels), 0, -1, dtype=float)  # rank order
    assert average_precision_10(scores, labels) == pytest.approx(expected, abs=1e-12)


def test_ap10_ties_enter_together():
    # a constant score calls everything at once: AP = fraction of positives
    assert average_precision_10([1.0] * 4, [1, -1, -1, -1]) == pytest.approx(0.25)
    # the order of tied items does not matter
    a = average_precision_10([2.0, 1.0, 1.0], [-1, 1, -1])
    b = average_precision_10([2.0, 1.0, 1.0], [-1, -1, 1])
    assert a == b == pytest.approx(1 / 3)


def test_ap10_exact_recall_boundaries():
    # P = 10: recall k/10 is hit exactly by the k-th positive; the positives
    # at ranks 1..10 interleaved with one negative after the fifth
    labels = [1] * 5 + [-1] + [1] * 5
    scores = np.arange(11, 0, -1, dtype=float)
    expected = (5 * 1.0 + 5 * 10 / 11) / 10
    assert average_precision_10(scores, labels) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_ap10_matches_the_written_definition(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    labels = np.where(rng.random(n) < 0.4, 1, -1)
    labels[0] = 1
    scores = rng.integers(0, 8, size=n).astype(float)  # many ties
    assert average_precision_10(scores, labels) == pytest.approx(
        _ap10_reference(scores, labels), abs=1e-12)
    perm = rng.permutation(n)
    assert average_precision_10(scores[perm], labels[perm]) == pytest.approx(
        average_precision_10(scores, labels), abs=1e-15)


def test_ap10_accepts_booleans_and_is_in_unit_interval():
    v = average_precision_10([0.3, 0.2, 0.1], [False, True, False])
    assert v == pytest.approx(0.5)
    assert 0.0 <= v <= 1.0


@pytest.mark.parametrize("scores, labels, word", [
    ([], [], "scores"),
    ([0.1, np.nan], [1, -1], "scores"),
    ([[0.1, 0.2]], [1, -1], "scores"),
    ([0.1, 0.2], [1, -1, 1], "labels"),
    ([0.1, 0.2], [1, 0], "labels"),
    ([0.1, 0.2], [2, -1], "labels"),
    ([0.1, 0.2], [-1, -1], "labels"),
])
def test_ap10_bad_input(scores, labels, word):
    with pytest.raises(ValueError, match=word):
        average_precision_10(scores, labels)


# ---------------------------------------------------------------------------
# verification_pairs
# ---------------------------------------------------------------------------

def _check_pairs(y, pairs, labels, n_pairs):
    y = np.asarray(y)
    assert pairs.shape == (n_pairs, 2) and labels.shape == (n_pairs,)
    assert np.issubdtype(pairs.dtype, np.integer)
    assert np.all(pairs[:, 0] < pairs[:, 1])
    assert len({tuple(p) for p in pairs.tolist()}) == n_pairs  # distinct
    same = y[pairs[:, 0]] == y[pairs[:, 1]]
    assert np.array_equal(same, labels == 1)
    assert np.sum(labels == 1) == n_pairs // 2
    assert np.sum(labels == -1) == n_pairs - n_pairs // 2


@pytest.mark.parametrize("n_pairs", [2, 7, 400])
def test_verification_pairs_balance_and_validity(n_pairs):
    y = np.repeat(np.arange(5), 20)
    pairs, labels = verification_pairs(y, n_pairs, random_state=3)
    _check_pairs(y, pairs, labels, n_pairs)


def test_verification_pairs_is_deterministic():
    y = np.random.default_rng(0).integers(0, 6, size=200)
    p1, l1 = verification_pairs(y, 500, random_state=7)
    p2, l2 = verification_pairs(y, 500, random_state=7)
    p3, _ = verification_pairs(y, 500, random_state=8)
    assert np.array_equal(p1, p2) and np.array_equal(l1, l2)
    assert not np.array_equal(p1, p3)
    # a RandomState instance is advanced, not reset
    rs = np.random.RandomState(7)
    assert np.array_equal(verification_pairs(y, 500, random_state=rs)[0], p1)
    assert not np.array_equal(verification_pairs(y, 500, random_state=rs)[0], p1)


def test_verification_pairs_rejection_path(monkeypatch):
    # with enumeration off, pairs are drawn by rejection: still distinct,
    # balanced, and roughly uniform over the classes' pairs
    monkeypatch.setattr(ev, "_ENUMERATE_MAX", 0)
    y = np.repeat([0, 1, 2], [100, 50, 10])
    pairs, labels = verification_pairs(y, 2000, random_state=0)
    _check_pairs(y, pairs, labels, 2000)
    cls = y[pairs[labels == 1, 0]]
    share = np.bincount(cls, minlength=3) / 1000
    expected = np.array([4950, 1225, 45]) / 6220
    assert np.allclose(share, expected, atol=0.05)


def test_verification_pairs_can_take_every_pair():
    y = [0, 0, 1, 1]  # 2 positive, 4 negative pairs
    pairs, labels = verification_pairs(y, 4, random_state=0)
    _check_pairs(y, pairs, labels, 4)
    assert {tuple(p) for p in pairs[labels == 1].tolist()} == {(0, 1), (2, 3)}


@pytest.mark.parametrize("y, n_pairs, word, exc", [
    ([], 4, "y", ValueError),
    ([[0, 1], [1, 0]], 4, "y", ValueError),
    ([0.0, np.nan, 1.0], 2, "y", ValueError),
    ([1, 1, 1], 2, "y", ValueError),             # one class: no negative pair
    ([0, 1, 2], 2, "y", ValueError),             # no positive pair
    ([0, 0, 1, 1], 6, "n_pairs", ValueError),    # 3 positives wanted, 2 exist
    ([0, 0, 1, 1], 1, "n_pairs", ValueError),
    ([0, 0, 1, 1], 2.0, "n_pairs", TypeError),
])
def test_verification_pairs_bad_input(y, n_pairs, word, exc):
    with pytest.raises(exc, match=word):
        verification_pairs(y, n_pairs, random_state=0)


# ---------------------------------------------------------------------------
# verification_ap / verification_map
# ---------------------------------------------------------------------------

def test_pair_scores_and_verification_ap():
    Z = np.array([[0.0, 0.0], [0.0, 1.0], [3.0, 0.0]])
    pairs = np.array([[0, 1], [0, 2], [1, 2]])
    assert np.allclose(pair_scores(Z, pairs), [-1.0, -9.0, -10.0])
    assert verification_ap(Z, pairs, [1, -1, -1]) == 1.0
    assert verification_ap(Z, pairs, [-1, -1, 1]) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="pairs"):
        pair_scores(Z, [[0, 3]])
    with pytest.raises(ValueError, match="pairs"):
        pair_scores(Z, [[0.0, 1.0]])
    with pytest.raises(ValueError, match="Z"):
        pair_scores([[np.nan, 0.0]], [[0, 0]])


def test_verification_map_of_the_identity_is_l2():
    A, B = digits_bags("instances", n_per_class=20, random_state=0)
    pairs = (verification_pairs(A.y, 200, random_state=1),
             verification_pairs(B.y, 200, random_state=2))
    res = verification_map(lambda train, test: test.X, A, B, pairs=pairs)
    assert res.ap_train_A == pytest.approx(verification_ap(B.X, *pairs[1]))
    assert res.ap_train_B == pytest.approx(verification_ap(A.X, *pairs[0]))
    assert res.map == pytest.approx(0.5 * (res.ap_train_A + res.ap_train_B))
    # sampled pairs: deterministic under random_state
    r1 = verification_map(lambda tr, te: te.X, A, B, n_pairs=100, random_state=5)
    r2 = verification_map(lambda tr, te: te.X, A, B, n_pairs=100, random_state=5)
    assert r1 == r2
    # the callable sees the training set first
    seen = []
    verification_map(lambda tr, te: seen.append((tr is A, te is B)) or te.X, A, B,
                     pairs=pairs)
    assert seen == [(True, True), (False, False)]


def test_verification_map_bad_input():
    A, B = digits_bags("instances", n_per_class=10, random_state=0)
    with pytest.raises(TypeError, match="fit_and_embed"):
        verification_map("identity", A, B)
    with pytest.raises(ValueError, match="fit_and_embed"):
        verification_map(lambda tr, te: te.X[:-1], A, B, n_pairs=20, random_state=0)
    with pytest.raises(ValueError, match="A"):
        verification_map(lambda tr, te: te.X, object(), B)
    with pytest.raises(ValueError, match="pairs"):
        verification_map(lambda tr, te: te.X, A, B, pairs=((1, 2, 3),))


# ---------------------------------------------------------------------------
# split_bags / restrict_bags
# ---------------------------------------------------------------------------

def test_split_and_restrict_keep_whole_bags():
    A, _ = digits_bags("noisy", n_per_class=30, max_bag=3, random_state=0)
    train, test = split_bags(A, 0.5, random_state=0)
    assert np.intersect1d(train, test).size == 0
    assert np.array_equal(np.union1d(train, test), np.arange(len(A.y)))
    n_bags = len(A.bags)
    for part in (train, test):
        S = restrict_bags(A, part)
        assert np.array_equal(S.X, A.X[part]) and np.array_equal(S.y, A.y[part])
        assert sum(len(b) for b in S.bags) == len(part)
        assert S.setting == "noisy"
    assert len(restrict_bags(A, test).bags) == round(0.5 * n_bags)
    # the captions travel with their bags
    S = restrict_bags(A, train)
    caption_of = {tuple(b.tolist()): c.tolist() for b, c in zip(A.bags, A.captions)}
    for b, c in zip(S.bags, S.captions):
        assert caption_of[tuple(train[b].tolist())] == c.tolist()
    assert np.array_equal(split_bags(A, 0.5, random_state=0)[0], train)


def test_split_and_restrict_bad_input():
    A, _ = digits_bags("bags", n_per_class=10, random_state=0)
    for bad in (0.0, 1.0):
        with pytest.raises(ValueError, match="test_size"):
            split_bags(A, bad)
    with pytest.raises(ValueError, match="S"):
        split_bags(object())
    with pytest.raises(ValueError, match="instances"):
        restrict_bags(A, [len(A.y)])
    with pytest.raises(ValueError, match="instances"):
        restrict_bags(A, [])


# ---------------------------------------------------------------------------
# naming_curve
# ---------------------------------------------------------------------------

def _separated(seed=0, n_bags=40):
    """Three far-apart classes; bags of 1-2 instances of distinct classes,
    captions correct."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    Z, y, bags, caps = [], [], [], []
    for _ in range(n_bags):
        k = int(rng.integers(1, 3))
        cls = rng.choice(3, size=k, replace=False)
        start = len(y)
        for c in cls:
            Z.append(centres[c] + 0.5 * rng.normal(size=2))
            y.append(int(c))
        bags.append(np.arange(start, start + k))
        caps.append(np.sort(cls))
    return np.array(Z), bags, caps, np.array(y)


def test_naming_curve_on_separated_classes():
    Z, bags, caps, y = _separated()
    c = naming_curve(Z, bags, caps, y, n_points=8)
    assert c.n_nameable == len(y)  # captions are exact: every instance nameable
    assert len(c.b) >= 3
    assert np.all(np.diff(c.b) > 0)
    assert np.all((c.n_named >= 1) & (c.n_named <= c.n_nameable))
    assert np.all((c.precision >= 0) & (c.precision <= 1))
    # more threshold, more names
    assert np.all(np.diff(c.n_named) >= 0)
    # the largest threshold names (nearly) everything, and correctly
    assert c.n_named[-1] >= 0.9 * c.n_nameable
    assert c.precision[-1] >= 0.95
    # deterministic
    c2 = naming_curve(Z, bags, caps, y, n_points=8)
    assert np.array_equal(c.b, c2.b) and np.array_equal(c.n_named, c2.n_named)


def test_naming_curve_respects_its_budget():
    Z, bags, caps, y = _separated(1)
    calls = []
    orig = ev.label_instances

    def counting(*a, **k):
        calls.append(1)
        return orig(*a, **k)

    ev.label_instances = counting
    try:
        naming_curve(Z, bags, caps, y, n_points=10, max_evals=7)
    finally:
        ev.label_instances = orig
    assert len(calls) <= 7


def test_naming_curve_bad_input():
    Z, bags, caps, y = _separated()
    with pytest.raises(ValueError, match="y_true"):
        naming_curve(Z, bags, caps, y[:-1])
    with pytest.raises(ValueError, match="captions"):
        naming_curve(Z, bags, caps[:-1], y)
    with pytest.raises(ValueError, match="captions"):
        naming_curve(Z, bags, [[-1]] + caps[1:], y)
    with pytest.raises(ValueError, match="captions"):
        naming_curve(Z, bags, [[]] * len(bags), y)
    with pytest.raises(ValueError, match="bags"):
        naming_curve(Z, [[0, 1], [1]] + bags[2:], caps, y)
    with pytest.raises(ValueError, match="bags"):
        naming_curve(Z, [[len(y)]] + bags[1:], caps, y)
    with pytest.raises(ValueError, match="Z"):
        naming_curve(np.full_like(Z, np.nan), bags, caps, y)
    with pytest.raises(ValueError, match="named_range"):
        naming_curve(Z, bags, caps, y, named_range=(0.5, 0.2))
    for bad in (0.5, (0.1, 0.5, 0.9), ("a", 0.5)):
        with pytest.raises(ValueError, match="named_range"):
            naming_curve(Z, bags, caps, y, named_range=bad)
    with pytest.raises(ValueError, match="n_points"):
        naming_curve(Z, bags, caps, y, n_points=1)


# ---------------------------------------------------------------------------
# The example
# ---------------------------------------------------------------------------

@pytest.mark.slow
def test_example_runs_with_its_defaults_and_its_numbers_are_sane(tmp_path):
    # the default run: the paper's cross protocol on digit_people_bags
    # (train on A, test on B's pairs and back), 120 people, ranks 4 and 16
    # no wall-clock assertion (a loaded machine is slower, not wrong); the
    # timeout is ten times the idle run (about 19 s on the 2-core machine)
    out = tmp_path / "ldml.json"
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "ldml_bags.py"),
                           "--no-figures", "--json", str(out)],
                          capture_output=True, text=True, timeout=_TIMEOUT, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "| LDML (a) |" in proc.stdout and "Table 1" in proc.stdout
    assert "Fig. 5" in proc.stdout
    res = json.loads(out.read_text())
    ranks = res["settings"]["ranks"]
    v = res["verification"]["map"]
    for name in ("L2", "PCA", "LDML (a)", "LDML (b)", "MildML (b)", "LDML (c)",
                 "MildML (c)", "LDML* (b)", "LDML* (c)"):
        assert len(v[name]) == len(ranks), name
        assert all(0.0 <= x <= 1.0 for x in v[name]), name
    # sizes: two directions, disjoint people, pairs half positive
    for s in res["verification"]["sizes"]:
        assert s["train_classes"] == res["settings"]["people"]
        assert s["test_pairs"] >= 1000
    # supervised LDML transfers to the other set's people; MildML on
    # correct captions too, at the largest rank
    for r in range(len(ranks)):
        assert v["LDML (a)"][r] > v["L2"][r] + 0.05
        assert v["LDML (a)"][r] > v["PCA"][r] + 0.05
    assert v["MildML (b)"][-1] > v["L2"][-1] + 0.02
    # LDML = one round of LDMLStar; LDML* stops within its budget
    diag = res["verification"]["ldmlstar"]
    for key in "bc":
        assert set(diag[f"LDML ({key})"]["rounds"]) == {1}
        assert all(1 <= k <= res["settings"]["rounds"]
                   for k in diag[f"LDML* ({key})"]["rounds"])
        assert all(0.0 <= a <= 1.0 for a in diag[f"LDML* ({key})"]["label_accuracy"])
    assert res["naming"]["rank"] == max(ranks)
    for name_set, curves in res["naming"]["sets"].items():
        assert set(curves) == {"PCA", "LDML (a)", "MildML (c)"}
        for name, c in curves.items():
            k = np.asarray(c["n_named"])
            p = np.asarray(c["precision"])
            assert k.size >= 3, (name_set, name)
            assert np.all((k >= 1) & (k <= c["n_nameable"]))
            assert np.all((p >= 0) & (p <= 1))
            assert c["n_nameable"] <= c["n_instances"]
    # --replot prints the saved tables without fitting, and draws the
    # figures where asked (the default run draws none: docs/img is --full's)
    assert "figures:" not in proc.stdout
    draw = (["--figures", str(tmp_path)] if importlib.util.find_spec("matplotlib")
            else ["--no-figures"])  # without matplotlib --figures ends at once
    replot = subprocess.run([sys.executable, str(ROOT / "examples" / "ldml_bags.py"),
                             "--replot", str(out)] + draw,
                            capture_output=True, text=True, timeout=_TIMEOUT, cwd=ROOT)
    assert replot.returncode == 0, replot.stderr[-2000:]
    table = [line for line in proc.stdout.splitlines() if line.startswith("| LDML (a) |")]
    assert table and all(line in replot.stdout for line in table)
    pytest.importorskip("matplotlib")
    assert (tmp_path / "ldml_map_rank.png").exists()
    assert (tmp_path / "ldml_naming.png").exists()


@pytest.mark.slow
def test_example_on_digit_classes_runs(tmp_path):
    # --data digits: the same protocol on digits_bags (A: digits 0-4, B: 5-9)
    out = tmp_path / "digits.json"
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "ldml_bags.py"),
                           "--data", "digits", "--per-class", "30", "--ranks", "4",
                           "--max-iter", "5", "--rounds", "2", "--naming-points", "4",
                           "--no-figures", "--json", str(out)],
                          capture_output=True, text=True, timeout=_TIMEOUT, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = json.loads(out.read_text())
    assert res["settings"]["data"] == "digits"
    assert all(s["train_classes"] == 5 for s in res["verification"]["sizes"])
    assert all(0.0 <= x[0] <= 1.0 for x in res["verification"]["map"].values())
