"""Taxonomy quadruplets of Sec. 6.1 (cvxmetric.experiments.qwise.taxonomy)."""

import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cvxmetric.constraints import Quadruplets, informative
from cvxmetric.qwise.estimator import Qwise
from cvxmetric.qwise_vector.estimator import QwiseVector
from cvxmetric.experiments.qwise.taxonomy import ClassTree, taxonomy_quadruplets

# Four classes in two super-classes, on a line:
#   A: class 0 at 0, 1, 3 (rows 0-2)    class 1 at 10, 11 (rows 3-4)
#   B: class 2 at 20, 22 (rows 5-6)     class 3 at 30, 31, 35 (rows 7-9)
X_TINY = np.array([0, 1, 3, 10, 11, 20, 22, 30, 31, 35], float)[:, None]
Y_TINY = np.array([0, 0, 0, 1, 1, 2, 2, 3, 3, 3])
PARENT = {0: "A", 1: "A", 2: "B", 3: "B"}

# k = 1, worked out by hand from the positions above.
# Type (1): the nearest other member of the anchor's class.
NN_CLASS = {0: 1, 1: 0, 2: 1, 3: 4, 4: 3, 5: 6, 6: 5, 7: 8, 8: 7, 9: 8}
# Type (2): the nearest member of the sibling class.
NN_SIBLING = {0: 3, 1: 3, 2: 3, 3: 2, 4: 2, 5: 7, 6: 7, 7: 6, 8: 6, 9: 6}


def _enumerate(nn, kind):
    """Every quadruplet a k = 1 draw can produce, by brute force."""
    sup = {c: PARENT[c] for c in PARENT}
    out = set()
    for i, j in nn.items():
        ca = Y_TINY[i]
        for k_, l_ in itertools.product(range(10), range(10)):
            if Y_TINY[k_] != ca:
                continue
            cl = Y_TINY[l_]
            sibling = cl != ca and sup[cl] == sup[ca]
            cousin = sup[cl] != sup[ca]
            if (kind == 1 and sibling) or (kind == 2 and cousin):
                out.add((i, j, k_, l_))
    return out


def _tiny(n1=4000, n2=4000, k=1, **kw):
    return taxonomy_quadruplets(X_TINY, Y_TINY, PARENT, n_type1=n1,
                                n_type2=n2, k=k, random_state=0, **kw)


# --- the class tree --------------------------------------------------------


def test_tree_from_dict_and_array_agree():
    t1 = ClassTree.create({0: 7, 1: 7, 2: 9, 3: 9})
    t2 = ClassTree.create([7, 7, 9, 9])
    np.testing.assert_array_equal(t1.leaves, t2.leaves)
    np.testing.assert_array_equal(t1.parent_code, [0, 0, 1, 1])
    np.testing.assert_array_equal(t2.parent_code, [0, 0, 1, 1])
    assert t1.parent == {0: 7, 1: 7, 2: 9, 3: 9}
    assert ClassTree.create(t1) is t1


def test_tree_string_labels_and_relation():
    tree = ClassTree.create({"dog": "animal", "cat": "animal",
                             "car": "vehicle", "bus": "vehicle"})
    np.testing.assert_array_equal(tree.leaves, ["bus", "car", "cat", "dog"])
    codes = tree.encode(["dog", "cat", "bus", "dog"])
    np.testing.assert_array_equal(codes, [3, 2, 0, 3])
    # same, sibling, cousin (twice Eq. 24's Delta)
    np.testing.assert_array_equal(tree.relation(codes[0], codes), [0, 1, 2, 0])
    # codes, not labels, and in range
    with pytest.raises(ValueError, match="a: expected integer leaf codes"):
        tree.relation("dog", codes)
    with pytest.raises(ValueError, match=r"b: leaf codes must be in \[0, 4\)"):
        tree.relation(codes[0], [4])


def test_tree_dict_order_does_not_matter():
    a = ClassTree.create({3: "y", 1: "x", 0: "x", 2: "y"})
    np.testing.assert_array_equal(a.leaves, [0, 1, 2, 3])
    np.testing.assert_array_equal(a.parent_code, [0, 0, 1, 1])


@pytest.mark.parametrize("parent, match", [
    ({0: "a"}, "at least two leaf classes"),
    ([3], "at least two leaf classes"),
    ({0: "a", 1: None}, "without a super-class"),
    ([0.0, np.nan, 1.0], "without a super-class"),
    ("abc", "got a string"),
    ([[0, 1], [1, 0]], "1-D array"),
    ({0: "a", "x": "b"}, "leaf classes of types"),
    ({0: "a", 1: 2}, "super-classes of types"),
])
def test_tree_refuses(parent, match):
    with pytest.raises(ValueError, match=rf"parent: .*{match}"):
        ClassTree.create(parent)


def test_encode_refuses_unknown_labels():
    tree = ClassTree.create(PARENT)
    with pytest.raises(ValueError, match=r"y: 1 label\(s\) .* \(first: 5\)"):
        tree.encode([0, 5, 1])
    with pytest.raises(ValueError, match="y: expected a non-empty 1-D"):
        tree.encode([])
    with pytest.raises(ValueError, match="y: expected a non-empty 1-D"):
        tree.encode([[0, 1]])


# --- the generator on the hand-enumerated case -----------------------------


def test_type_conditions_hold_for_every_quadruplet():
    q = _tiny(k=2)
    tree = ClassTree.create(PARENT)
    c = tree.encode(Y_TINY)
    i, j, k, l = q.quadruplets.T
    one, two = q.type == 1, q.type == 2
    assert one.sum() == 4000 and two.sum() == 4000
    assert np.all(q.type[:4000] == 1)  # type (1) rows first
    # type (1): (i, j) in c_a, (k, l) in c_a x sibling
    assert np.all(tree.relation(c[i], c[j])[one] == 0)
    assert np.all(i[one] != j[one])
    assert np.all(c[k][one] == c[i][one])
    assert np.all(tree.relation(c[k], c[l])[one] == 1)
    # type (2): (i, j) in c_a x sibling, (k, l) in c_a x cousin
    assert np.all(tree.relation(c[i], c[j])[two] == 1)
    assert np.all(c[k][two] == c[i][two])
    assert np.all(tree.relation(c[k], c[l])[two] == 2)
    np.testing.assert_array_equal(q.delta, np.ones(8000))


def test_k1_gives_exactly_the_hand_enumerated_quadruplets():
    q = _tiny(k=1)
    got1 = set(map(tuple, q.quadruplets[q.type == 1].tolist()))
    got2 = set(map(tuple, q.quadruplets[q.type == 2].tolist()))
    assert got1 == _enumerate(NN_CLASS, 1)
    assert got2 == _enumerate(NN_SIBLING, 2)


def test_k2_neighbour_sets():
    q = _tiny(k=2)
    # by hand: the two nearest of row 2 (x = 3) in class 0 are rows 1, 0;
    # class 1 has two members, so each row's only neighbour is the other;
    # in the sibling class 3 the two nearest of row 5 (x = 20) are 7, 8
    pairs = {}
    for (i, j, _, _), t in zip(q.quadruplets.tolist(), q.type.tolist()):
        pairs.setdefault((t, i), set()).add(j)
    assert pairs[(1, 2)] == {0, 1}
    assert pairs[(1, 3)] == {4}
    assert pairs[(2, 5)] == {7, 8}
    assert pairs[(2, 0)] == {3, 4}
    assert pairs[(2, 9)] == {5, 6}


def test_far_pairs_are_uniform_over_the_pools():
    q = _tiny(n1=20000, n2=20000, k=1)
    one = q.quadruplets[q.type == 1]
    # anchors in class 0: l uniform over the two members of class 1
    l = one[Y_TINY[one[:, 0]] == 0, 3]
    freq = np.bincount(l, minlength=10)[3:5] / l.size
    np.testing.assert_allclose(freq, [0.5, 0.5], atol=0.03)
    two = q.quadruplets[q.type == 2]
    # anchors in class 2: l uniform over the five rows of classes 0 and 1
    l = two[Y_TINY[two[:, 0]] == 2, 3]
    freq = np.bincount(l, minlength=10)[:5] / l.size
    np.testing.assert_allclose(freq, np.full(5, 0.2), atol=0.03)
    # anchors uniform over the rows that can anchor (all ten here)
    freq = np.bincount(one[:, 0], minlength=10) / len(one)
    np.testing.assert_allclose(freq, np.full(10, 0.1), atol=0.015)


def test_same_anchor():
    q = _tiny(same_anchor=True)
    np.testing.assert_array_equal(q.quadruplets[:, 2], q.quadruplets[:, 0])


def test_delta_per_type():
    q = _tiny(n1=3, n2=2, delta=(1.0, 0.5))
    np.testing.assert_array_equal(q.delta, [1, 1, 1, 0.5, 0.5])
    q = _tiny(n1=0, n2=2, delta=2)
    np.testing.assert_array_equal(q.delta, [2, 2])
    np.testing.assert_array_equal(q.type, [2, 2])


def test_metric_changes_the_neighbours():
    # under a metric that ignores the first coordinate, row 0's nearest
    # class mate is the one whose second coordinate is closest
    X = np.array([[0, 0], [1, 5], [9, 1], [20, 0], [21, 0], [40, 0], [41, 0],
                  [60, 0], [61, 0]], float)
    y = np.array([0, 0, 0, 1, 1, 2, 2, 3, 3])
    q = taxonomy_quadruplets(X, y, PARENT, n_type1=3000, n_type2=0, k=1,
                             random_state=0)
    j0 = set(q.quadruplets[q.quadruplets[:, 0] == 0, 1].tolist())
    assert j0 == {1}
    q = taxonomy_quadruplets(
        X, y, PARENT, n_type1=3000, n_type2=0, k=1, random_state=0,
        metric=lambda a, b: abs(a[1] - b[1]))
    j0 = set(q.quadruplets[q.quadruplets[:, 0] == 0, 1].tolist())
    assert j0 == {2}


def test_single_leaf_super_class_is_a_cousin_only():
    X = np.arange(9.0)[:, None]
    y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    q = taxonomy_quadruplets(X, y, {0: "A", 1: "A", 2: "B"}, n_type1=500,
                             n_type2=500, random_state=0)
    assert not np.any(y[q.quadruplets[:, 0]] == 2)  # class 2 never anchors
    two = q.quadruplets[q.type == 2]
    assert np.all(y[two[:, 3]] == 2)  # ... but is the cousin of 0 and 1


def test_leaf_absent_from_y_takes_no_part():
    parent = {**PARENT, 4: "B"}
    q = taxonomy_quadruplets(X_TINY, Y_TINY, parent, n_type1=200, n_type2=200,
                             random_state=0)
    assert q.quadruplets.max() < 10


def test_deterministic():
    a, b = _tiny(k=2), _tiny(k=2)
    np.testing.assert_array_equal(a.quadruplets, b.quadruplets)
    c = taxonomy_quadruplets(X_TINY, Y_TINY, PARENT, n_type1=4000,
                             n_type2=4000, k=2, random_state=1)
    assert not np.array_equal(a.quadruplets, c.quadruplets)
    rng = np.random.RandomState(3)
    d = taxonomy_quadruplets(X_TINY, Y_TINY, PARENT, n_type1=50, n_type2=50,
                             random_state=rng)
    e = taxonomy_quadruplets(X_TINY, Y_TINY, PARENT, n_type1=50, n_type2=50,
                             random_state=3)
    np.testing.assert_array_equal(d.quadruplets, e.quadruplets)


def test_duplicates_across_classes_are_redrawn():
    # class 0 is two copies of the point 0 and class 1 holds a third copy:
    # (i, j) of type (1) has length zero, so a far pair (k, l) joining two
    # copies would compare nothing and is drawn again
    X = np.array([0, 0, 0, 5, 20, 21, 30, 31], float)[:, None]
    y = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    q = taxonomy_quadruplets(X, y, PARENT, n_type1=400, n_type2=400,
                             random_state=0)
    assert informative(X, q.quadruplets).all()
    Quadruplets.create(X, q.quadruplets, q.delta)  # accepted as a set
    # four copies of one point: no type (1) quadruplet can constrain a metric
    with pytest.raises(ValueError, match=r"X: .*type \(1\).*duplicated"):
        taxonomy_quadruplets(np.zeros((4, 1)), [0, 0, 1, 1], PARENT,
                             n_type1=10, n_type2=0, random_state=0)


# --- bad input --------------------------------------------------------------


@pytest.mark.parametrize("kw, match", [
    (dict(n_type1=0, n_type2=0), "n_type1, n_type2: ask for at least one"),
    (dict(n_type1=-1), "n_type1: must be >= 0, got -1"),
    (dict(n_type2=2.0), "n_type2: expected an integer, got 2.0"),
    (dict(n_type1=True), "n_type1: expected an integer, got True"),
    (dict(k=0), "k: must be >= 1, got 0"),
    (dict(k=1.5), "k: expected an integer, got 1.5"),
    (dict(delta=np.nan), "delta: must be finite"),
    (dict(delta=[1.0, np.inf]), "delta: contains 1 NaN"),
    (dict(delta=(1, 2, 3)), r"delta: expected a number or a pair"),
    (dict(delta="1"), "delta: expected numbers"),
    (dict(same_anchor=1), "same_anchor: expected a bool"),
])
def test_bad_arguments(kw, match):
    args = dict(n_type1=5, n_type2=5, random_state=0)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        taxonomy_quadruplets(X_TINY, Y_TINY, PARENT, **args)


def test_bad_data():
    with pytest.raises(ValueError, match="y: expected 10 labels"):
        taxonomy_quadruplets(X_TINY, Y_TINY[:-1], PARENT, n_type1=5, n_type2=5)
    with pytest.raises(ValueError, match=r"y: 1 label\(s\) are not leaf"):
        taxonomy_quadruplets(X_TINY, np.r_[Y_TINY[:-1], 7], PARENT,
                             n_type1=5, n_type2=5)
    with pytest.raises(ValueError, match="X: contains 1 NaN"):
        taxonomy_quadruplets(np.r_[X_TINY[:-1], [[np.nan]]], Y_TINY, PARENT,
                             n_type1=5, n_type2=5)


def test_impossible_types_are_refused():
    X = np.arange(6.0)[:, None]
    y = np.array([0, 0, 0, 1, 1, 1])
    # every super-class has a single leaf: no sibling anywhere
    with pytest.raises(ValueError, match=r"parent: type \(1\) needs"):
        taxonomy_quadruplets(X, y, {0: "A", 1: "B"}, n_type1=5, n_type2=0)
    # one super-class: siblings but no cousin
    with pytest.raises(ValueError, match=r"parent: type \(2\) needs"):
        taxonomy_quadruplets(X, y, {0: "A", 1: "A"}, n_type1=0, n_type2=5)
    q = taxonomy_quadruplets(X, y, {0: "A", 1: "A"}, n_type1=5, n_type2=0,
                             random_state=0)
    assert len(q.type) == 5
    # siblings in the tree, but y holds one sample per class
    with pytest.raises(ValueError, match=r"parent: type \(1\) needs"):
        taxonomy_quadruplets(X[:2], [0, 1], {0: "A", 1: "A"}, n_type1=5,
                             n_type2=0)


# --- plugging into the estimators -------------------------------------------


def test_plugs_into_qwise_and_qwise_vector():
    rng = np.random.RandomState(0)
    centers = np.array([[0, 0], [1, 0], [0, 4], [1, 4]], float)
    y = np.repeat(np.arange(4), 10)
    X = centers[y] + 0.1 * rng.randn(40, 2)
    q = taxonomy_quadruplets(X, y, PARENT, n_type1=60, n_type2=60,
                             random_state=0)
    full = Qwise(preprocessor=X).fit(q.quadruplets, delta=q.delta)
    diag = QwiseVector(preprocessor=X).fit(q.quadruplets, delta=q.delta)
    assert full.status_ == "optimal" and diag.status_ == "optimal"
    # siblings differ in the first coordinate, cousins in the second: the
    # metric keeps both but must separate same-class from sibling pairs
    assert diag.coef_[0] > 0
    assert full.score(q.quadruplets) > 0.9


# --- the example ------------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "qwise_taxonomy.py"


def test_example_small_run(tmp_path):
    # about 4 s: one seed, 1 000 constraints per method, 6 PCA dimensions
    # (LMNN's fit over every impostor triplet of the 900 training digits is
    # then a second); the script turns a ConvergenceWarning into an error,
    # so every fit, LMNN's included, ended certified
    out = subprocess.run(
        [sys.executable, str(EXAMPLE), "--seeds", "1", "--n-quads", "1000",
         "--dims", "6", "--no-figures", "--json", str(tmp_path / "r.json")],
        capture_output=True, text=True, timeout=300, check=True).stdout
    assert "Table 6-like: Eq. 24 hierarchy accuracy, 10-NN" in out
    assert "paired: qwise minus triplets (neighbours)" in out
    assert "paired: qwise minus LMNN (full)" in out
    assert "lmnn full" in out and "lmnn diag" not in out
    import json
    summary = json.loads((tmp_path / "r.json").read_text())["summary"]
    for method, by_k in summary.items():
        for k, ((acc, _), (hier, _)) in by_k.items():
            # Eq. 24 forgives sibling errors: never below the plain accuracy
            assert 0 <= acc <= hier <= 100, (method, k)
    # far above chance (10 %) even with the default pixel noise
    assert summary["qwise full"]["10"][0][0] > 40
    assert summary["lmnn full"]["10"][0][0] > 40
