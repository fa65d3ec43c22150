"""Relative attributes (Sec. 7): orderings, the samplers of Eq. 25-26, the
Gaussian class model, and the example."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import multivariate_normal
from sklearn.utils.estimator_checks import parametrize_with_checks

from cvxmetric.experiments.qwise.attributes import (
    AttributeGaussianClassifier,
    AttributeOrdering,
    attribute_constraints,
    fit_relative_attributes,
    oqwsl_constraints,
    pairwise_constraints,
    qwsl_constraints,
    usable_class_pairs,
)

ROOT = Path(__file__).resolve().parents[2]


def rows(out):
    idx, delta = out
    return [tuple(int(v) for v in r) + (float(d),) for r, d in zip(idx, delta)]


# ---------------------------------------------------------------------------
# Orderings
# ---------------------------------------------------------------------------


def test_ordering_levels_parse_and_relations_agree():
    a = AttributeOrdering([0, (1, 2), 3])
    assert a.levels == ((0,), (1, 2), (3,))
    assert a.classes == (0, 1, 2, 3)
    assert a.rank == {0: 0, 1: 1, 2: 1, 3: 2}
    assert a.relation(1, 2) == "~" and a.relation(0, 3) == "<" and a.relation(3, 1) == ">"
    b = AttributeOrdering.parse("e < f ~ g < h")
    assert b.levels == (("e",), ("f", "g"), ("h",))
    c = AttributeOrdering.from_relations([("f", "~", "g"), ("h", ">", "g"), ("e", "<", "f")])
    assert c == b
    assert str(b) == "'e' < 'f' ~ 'g' < 'h'"


@pytest.mark.parametrize("levels, match", [
    ([0], "at least two classes"),
    ([(0, 1)], "at least two levels"),
    ([0, 1, 0], "listed twice"),
    ([0, (1, 1)], "listed twice"),
    ([0, ()], "empty group"),
    ([0, ((1, 2), 3)], "nests a group"),
    ("0 < 1", "AttributeOrdering.parse"),
])
def test_ordering_refuses_bad_levels(levels, match):
    with pytest.raises(ValueError, match=match):
        AttributeOrdering(levels)


def test_ordering_refuses_an_unknown_class():
    with pytest.raises(ValueError, match="classes: .*'z'"):
        AttributeOrdering(["a", "z"], classes=["a", "b"])
    with pytest.raises(ValueError, match="y: .*3"):
        pairwise_constraints([0, 0, 1, 1], [0, 1, 3])


@pytest.mark.parametrize("relations, match", [
    ([("a", "<", "b"), ("b", "<", "c"), ("c", "<", "a")], "cycle"),
    ([("a", "<", "b"), ("a", "~", "b")], "cycle"),
    ([("a", "<", "b"), ("b", "~", "c"), ("c", "<", "a")], "cycle"),
    ([("a", "<", "b"), ("a", "<", "c")], "not ordered"),
    ([("a", "<<", "b")], "relation"),
    ([("a", "<", "a")], "itself"),
    ([], "empty"),
])
def test_relations_refuse_cycles_and_partial_orders(relations, match):
    with pytest.raises(ValueError, match=match):
        AttributeOrdering.from_relations(relations)


# ---------------------------------------------------------------------------
# Samplers against hand-enumerated cases
# ---------------------------------------------------------------------------

# 0 < 1 ~ 2 < 3, two images per class: class c holds images 2c, 2c + 1
Y2 = np.repeat([0, 1, 2, 3], 2)
ORD = AttributeOrdering([0, (1, 2), 3])

ORDERED_0_1_2_3 = [  # (i, i, j, i), delta 1, for the ordered class pairs
    (0, 0, 2, 0, 1.0), (0, 0, 3, 0, 1.0), (1, 1, 2, 1, 1.0), (1, 1, 3, 1, 1.0),  # 0<1
    (0, 0, 4, 0, 1.0), (0, 0, 5, 0, 1.0), (1, 1, 4, 1, 1.0), (1, 1, 5, 1, 1.0),  # 0<2
    (0, 0, 6, 0, 1.0), (0, 0, 7, 0, 1.0), (1, 1, 6, 1, 1.0), (1, 1, 7, 1, 1.0),  # 0<3
]
ORDERED_TAIL = [
    (2, 2, 6, 2, 1.0), (2, 2, 7, 2, 1.0), (3, 3, 6, 3, 1.0), (3, 3, 7, 3, 1.0),  # 1<3
    (4, 4, 6, 4, 1.0), (4, 4, 7, 4, 1.0), (5, 5, 6, 5, 1.0), (5, 5, 7, 5, 1.0),  # 2<3
]


def test_pairwise_baseline_by_hand():
    equiv = [  # 1 ~ 2: (i, j, i, i) and (j, i, i, i), delta 0
        (2, 4, 2, 2, 0.0), (4, 2, 2, 2, 0.0), (2, 5, 2, 2, 0.0), (5, 2, 2, 2, 0.0),
        (3, 4, 3, 3, 0.0), (4, 3, 3, 3, 0.0), (3, 5, 3, 3, 0.0), (5, 3, 3, 3, 0.0),
    ]
    assert rows(pairwise_constraints(Y2, ORD)) == ORDERED_0_1_2_3 + equiv + ORDERED_TAIL
    assert (rows(pairwise_constraints(Y2, ORD, equivalences=False))
            == ORDERED_0_1_2_3 + ORDERED_TAIL)


def test_qwsl_by_hand_single_image_neighbours():
    # 0 < 1 ~ 2 < 3 with one image in the border classes: k = 5, l = 0 always
    y = np.array([0, 1, 1, 2, 2, 3])
    got = rows(qwsl_constraints(y, ORD, random_state=0))
    expected = [
        (0, 0, 1, 0, 1.0), (0, 0, 2, 0, 1.0),  # 0 < 1
        (0, 0, 3, 0, 1.0), (0, 0, 4, 0, 1.0),  # 0 < 2
        (0, 0, 5, 0, 1.0),  # 0 < 3
        # 1 ~ 2 by Eq. 26: (i, j, k, l) and (j, i, k, l)
        (1, 3, 5, 0, 1.0), (3, 1, 5, 0, 1.0), (1, 4, 5, 0, 1.0), (4, 1, 5, 0, 1.0),
        (2, 3, 5, 0, 1.0), (3, 2, 5, 0, 1.0), (2, 4, 5, 0, 1.0), (4, 2, 5, 0, 1.0),
        (1, 1, 5, 1, 1.0), (2, 2, 5, 2, 1.0),  # 1 < 3
        (3, 3, 5, 3, 1.0), (4, 4, 5, 4, 1.0),  # 2 < 3
    ]
    assert got == expected


def test_qwsl_two_images_per_class_draws_k_l_from_the_neighbour_levels():
    idx, delta = qwsl_constraints(Y2, ORD, random_state=3)
    head, tail = idx[:12], idx[20:]
    assert [tuple(r) + (1.0,) for r in head.tolist()] == ORDERED_0_1_2_3
    assert [tuple(r) + (1.0,) for r in tail.tolist()] == ORDERED_TAIL
    eq = idx[12:20]
    assert np.all(delta == 1.0)
    assert [tuple(r) for r in eq[:, :2].tolist()] == [
        (2, 4), (4, 2), (2, 5), (5, 2), (3, 4), (4, 3), (3, 5), (5, 3)]
    assert set(eq[:, 2]) <= {6, 7} and set(eq[:, 3]) <= {0, 1}
    # the two quadruplets of one image pair share their (k, l) (Eq. 26)
    assert np.array_equal(eq[0::2, 2:], eq[1::2, 2:])


def test_oqwsl_by_hand():
    y = np.array([0, 1, 1, 2, 2, 3])
    o = AttributeOrdering([0, 1, 2, 3])
    # only 1 < 2 has both neighbour levels: (j, i, k, l) with k = 5, l = 0 (Eq. 25)
    assert rows(oqwsl_constraints(y, o)) == [
        (3, 1, 5, 0, 1.0), (4, 1, 5, 0, 1.0), (3, 2, 5, 0, 1.0), (4, 2, 5, 0, 1.0)]
    with_border = rows(oqwsl_constraints(y, o, border_pairs=True))
    assert with_border == [
        (0, 0, 1, 0, 1.0), (0, 0, 2, 0, 1.0),  # 0 < 1
        (0, 0, 3, 0, 1.0), (0, 0, 4, 0, 1.0),  # 0 < 2
        (0, 0, 5, 0, 1.0),  # 0 < 3
        (3, 1, 5, 0, 1.0), (4, 1, 5, 0, 1.0), (3, 2, 5, 0, 1.0), (4, 2, 5, 0, 1.0),
        (1, 1, 5, 1, 1.0), (2, 2, 5, 2, 1.0),  # 1 < 3
        (3, 3, 5, 3, 1.0), (4, 4, 5, 4, 1.0),  # 2 < 3
    ]


def test_p_selects_the_pth_closest_levels_by_hand():
    # 0 < 1 < 2 < 3 < 4 < 5; p = 2: only 2 < 3 has levels 0 and 5 two steps out
    y = np.array([0, 1, 2, 2, 3, 3, 4, 5])
    o = AttributeOrdering(range(6))
    assert rows(oqwsl_constraints(y, o, p=2)) == [
        (4, 2, 7, 0, 1.0), (5, 2, 7, 0, 1.0), (4, 3, 7, 0, 1.0), (5, 3, 7, 0, 1.0)]
    # QWSL-2: 2 ~ 3 now, at level 2 of 0 < 1 < 2~3 < 4 < 5: k from 5, l from 0
    oq = AttributeOrdering([0, 1, (2, 3), 4, 5])
    idx, _ = qwsl_constraints(y, oq, p=2)
    eq = idx[idx[:, 0] != idx[:, 1]]  # the ordered rows are (i, i, j, i)
    assert [tuple(r) for r in eq.tolist()] == [
        (2, 4, 7, 0), (4, 2, 7, 0), (2, 5, 7, 0), (5, 2, 7, 0),
        (3, 4, 7, 0), (4, 3, 7, 0), (3, 5, 7, 0), (5, 3, 7, 0)]
    # ordered rows: every image pair of the 14 ordered class pairs,
    # sum_{a < b} n_a n_b - n_2 n_3 = (8^2 - 12) / 2 - 4 = 22
    assert len(idx) == len(eq) + 22


def test_a_level_of_several_classes_pools_their_images():
    # 0 < 1 ~ 2 < 3 ~ 4: k for 1 ~ 2 comes from classes 3 and 4 together
    y = np.repeat([0, 1, 2, 3, 4], 2)
    o = AttributeOrdering([0, (1, 2), (3, 4)])
    idx, _ = oqwsl_constraints(y, o, n_per_relation=400, random_state=0)
    assert set(idx[:, 2]) == {6, 7, 8, 9} and set(idx[:, 3]) == {0, 1}


def test_usable_class_pairs():
    o = AttributeOrdering([0, (1, 2), 3])
    assert usable_class_pairs(o, "qwsl") == [
        (0, 1, "ordered pair"), (0, 2, "ordered pair"), (0, 3, "ordered pair"),
        (1, 2, "equivalent quadruplet"), (1, 3, "ordered pair"), (2, 3, "ordered pair")]
    assert usable_class_pairs(o, "oqwsl") == [(1, 2, "equivalent quadruplet")]
    assert usable_class_pairs(o, "pairwise")[3] == (1, 2, "equivalent pair")
    # C(C - 2, 2) = 15 for OQWSL on 8 strictly ordered classes (Sec. 7.2.1)
    assert len(usable_class_pairs(list(range(8)), "oqwsl")) == 15
    assert len(usable_class_pairs(list(range(8)), "pairwise")) == 28


def test_sampling_counts_and_determinism():
    y = np.repeat(np.arange(5), 6)
    o = AttributeOrdering([0, 1, (2, 3), 4])
    a = qwsl_constraints(y, o, n_per_relation=7, n_class_pairs=4, random_state=1)
    b = qwsl_constraints(y, o, n_per_relation=7, n_class_pairs=4, random_state=1)
    c = qwsl_constraints(y, o, n_per_relation=7, n_class_pairs=4, random_state=2)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])
    # 4 class pairs x 7 image pairs, two rows for the equivalent pair if drawn
    assert len(a[0]) in (28, 35)
    rank = np.array([o.rank[c] for c in range(5)])
    idx = a[0]
    ordered = idx[:, 0] == idx[:, 1]  # the (i, i, j, i) rows
    assert np.all(idx[ordered, 3] == idx[ordered, 0])
    assert np.all(rank[y[idx[ordered, 0]]] < rank[y[idx[ordered, 2]]])
    eq = ~ordered  # Eq. 26 rows: i ~ j, k above and l below their level
    assert np.all(rank[y[idx[eq, 0]]] == rank[y[idx[eq, 1]]])
    assert np.all(rank[y[idx[eq, 2]]] == rank[y[idx[eq, 0]]] + 1)
    assert np.all(rank[y[idx[eq, 3]]] == rank[y[idx[eq, 0]]] - 1)
    with pytest.raises(ValueError, match="n_class_pairs: 11 exceeds the 10"):
        pairwise_constraints(y, o, n_class_pairs=11)


def test_attribute_constraints_is_deterministic_per_seed():
    y = np.repeat(np.arange(4), 3)
    orderings = {"a": [0, (1, 2), 3], "b": "3 < 2 < 1 < 0"}
    with pytest.raises(ValueError, match="y: .*'3'"):
        attribute_constraints(y, orderings)
    orderings["b"] = [3, 2, 1, 0]
    q1, d1 = attribute_constraints(y, orderings, "oqwsl", n_per_relation=5, random_state=0)
    q2, d2 = attribute_constraints(y, orderings, "oqwsl", n_per_relation=5, random_state=0)
    assert list(q1) == ["a", "b"]
    assert all(np.array_equal(q1[k], q2[k]) and np.array_equal(d1[k], d2[k]) for k in q1)


@pytest.mark.parametrize("kwargs, match", [
    ({"method": "ranksvm"}, "method"),
    ({"p": 0}, "p: "),
    ({"p": 1.5}, "p: "),
    ({"border_pairs": True}, "border_pairs"),
    ({"equivalences": 1}, "equivalences"),
    ({"n_per_relation": 0}, "n_per_relation"),
    ({"n_class_pairs": True}, "n_class_pairs"),
])
def test_samplers_refuse_bad_options(kwargs, match):
    method = kwargs.pop("method", "qwsl")
    with pytest.raises(ValueError, match=match):
        attribute_constraints(Y2, {"a": ORD}, method, **kwargs)


def test_no_usable_pair_and_bad_y():
    with pytest.raises(ValueError, match="no usable class pair"):
        oqwsl_constraints(Y2, ORD, p=2)
    with pytest.raises(ValueError, match="y: expected a non-empty 1-D"):
        pairwise_constraints(np.zeros((2, 2)), ORD)
    with pytest.raises(ValueError, match="orderings: .*listed twice"):
        attribute_constraints(Y2, {"a": [0, 0, 1]})


# ---------------------------------------------------------------------------
# Learning L and the Gaussian model
# ---------------------------------------------------------------------------


def test_fit_relative_attributes_recovers_the_attribute_directions():
    rng = np.random.RandomState(0)
    y = np.repeat(np.arange(5), 8)
    # attribute "a" grows with the class, along x0; "b" shrinks with the
    # class (class 4 least), along x1 = -class
    X = np.column_stack([y + 0.2 * rng.randn(40), -y + 0.2 * rng.randn(40),
                         rng.randn(40)])
    orderings = {"a": [0, 1, 2, 3, 4], "b": [4, 3, (2, 1), 0]}
    for method in ("pairwise", "qwsl", "oqwsl"):
        est = fit_relative_attributes(X, y, orderings, method, C_q=1.0, random_state=0)
        assert est.status_ == "optimal"
        assert est.attributes_ == ["a", "b"]
        L = est.coef_
        assert L.shape == (2, 3)
        assert L[0, 0] > 5 * abs(L[0, 2]) and L[1, 1] > 5 * abs(L[1, 2])
        h = est.transform(X)
        means = np.array([h[y == c].mean(0) for c in range(5)])
        assert np.all(np.diff(means[:, 0]) > 0) and np.all(np.diff(means[:, 1]) < 0)


def test_gaussian_classifier_separable_and_likelihood():
    rng = np.random.RandomState(0)
    centers = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    y = np.repeat([2, 5, 7], 20)
    H = centers[np.repeat(np.arange(3), 20)] + rng.randn(60, 2) * [1.0, 0.3]
    g = AttributeGaussianClassifier(reg=0.0).fit(H, y)
    assert np.array_equal(g.predict(H), y)
    assert g.score(centers + 0.1, [2, 5, 7]) == 1.0
    for s in range(3):
        Hs = H[y == g.classes_[s]]
        assert np.allclose(g.means_[s], Hs.mean(0))
        assert np.allclose(g.covariances_[s], np.cov(Hs.T, bias=True))
        ref = multivariate_normal(g.means_[s], g.covariances_[s]).logpdf(H)
        assert np.allclose(g.log_likelihood(H)[:, s], ref)


def test_gaussian_classifier_uses_the_covariance_not_the_mean_distance():
    # class 0 is wide in x, class 1 narrow: a point nearer mean 1 in x
    # belongs to the wide class by likelihood
    H = np.array([[-10.0, 0.0], [10.0, 0.0], [-10.0, 0.1], [10.0, 0.1],
                  [3.0, 0.0], [3.2, 0.0], [3.0, 0.1], [3.2, 0.1]])
    y = [0, 0, 0, 0, 1, 1, 1, 1]
    g = AttributeGaussianClassifier().fit(H, y)
    assert g.predict([[1.5, 0.05]])[0] == 0


@parametrize_with_checks([AttributeGaussianClassifier()])
def test_gaussian_classifier_is_a_scikit_learn_classifier(estimator, check):
    check(estimator)


def test_gaussian_classifier_bad_inputs():
    with pytest.raises(ValueError, match="one sample"):
        AttributeGaussianClassifier().fit([[0.0], [1.0], [2.0]], [0, 0, 1])
    with pytest.raises(ValueError, match="constant"):
        AttributeGaussianClassifier().fit(np.ones((4, 2)), [0, 0, 1, 1])
    with pytest.raises(ValueError, match="two classes"):
        AttributeGaussianClassifier().fit([[0.0], [1.0]], [0, 0])
    with pytest.raises(ValueError, match="reg"):
        AttributeGaussianClassifier(reg=-1).fit([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1])


# ---------------------------------------------------------------------------
# The example
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_example_small_run():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "qwise_attributes.py"), "--seeds", "1",
         "--n-train", "10", "--no-figures"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "Gaussian-model accuracy (%)" in out

    def first(name):  # the clean column of the first row named ``name``
        line = next(s for s in out.splitlines() if s.startswith(name + "  "))
        return float(line[len(name):].split()[0])

    # ten classes: chance is 10 %
    assert 50.0 < first("QWSL-1") <= 100.0
    # Table 8's LMNN rows: LMNN on the pixels (3-NN) and in each attribute space
    for row in ("LMNN (pixels)", "RA + LMNN", "QWSL-1 + LMNN", "Q+Pwise + LMNN"):
        assert 50.0 < first(row) <= 100.0, row
    for row in ("LMNN-G (pixels)", "OQWSL-1 + LMNN-G", "Q+Pwise + LMNN-G"):
        assert 10.0 < first(row) <= 100.0, row
    assert "paired difference of X + LMNN to X" in out
    assert "paired difference to RA + LMNN" in out


@pytest.mark.parametrize("levels", [[0, float("nan")], [0, None], [(0, np.nan), 1]])
def test_missing_labels_in_levels_are_refused(levels):
    # 0 < nan was accepted: NaN matches no class and is unequal to itself
    with pytest.raises(ValueError, match="levels: level .* missing label"):
        AttributeOrdering(levels)
