"""Structural Qwise (Sec. 4.4, Eq. 16-17): oracle, references, cutting plane,
estimator.

The chain of agreement checked here:

* the sort-based oracle == the brute-force maximum over every ranking of
  every query (Eq. 17 written out) == the closed-form hinge sum ``H(M)``;
* the optimum of Eq. 16 with every 1-slack constraint written out ==
  the closed-form CVXPY problem == the cutting-plane result (tiny
  instances, relative ``EXACT_GAP``);
* the closed-form CVXPY problem == the cutting-plane result on small
  seeded instances of both readings and both regularisers.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from cvxmetric._tolerances import EXACT_GAP
from cvxmetric.constraints import (
    Quadruplets,
    Triplets,
    quadruplets_from_labels,
    triplets_from_labels,
)
from cvxmetric.qwise_structural import (
    QwiseStructural,
    QwiseStructuralSupervised,
    StructuralCuttingPlane,
    StructuralData,
    solve_exact,
    solve_structural_enumerated,
    structural_constraints,
)


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


def _psd(d, rng, scale=0.5):
    B = rng.randn(d, d)
    return scale * B @ B.T / d


def _class_data(n=12, d=3, seed=0):
    rng = np.random.RandomState(seed)
    y = np.arange(n) % 3
    X = rng.randn(n, d) + 0.8 * rng.randn(3, d)[y]
    return X, y


def _tiny_quadruplets(seed=0, d=2):
    """3 queries with 1, 2 and 3 non-relevant pairs (P = 1): 3*9*27 = 729
    1-slack constraints."""
    rng = np.random.RandomState(seed)
    X = rng.randn(10, d)
    q = np.array([[0, 1, 2, 3],
                  [4, 5, 6, 7], [4, 5, 2, 8],
                  [9, 2, 3, 6], [9, 2, 1, 7], [2, 9, 0, 8]])  # (2, 9) == (9, 2)
    return Quadruplets.create(X, q, 1.0)


def _tiny_triplets(seed=0, d=2):
    """2 anchors: P = 2, N = 1 and P = 1, N = 2."""
    rng = np.random.RandomState(seed)
    X = rng.randn(7, d)
    t = np.array([[0, 1, 2], [0, 3, 2], [4, 5, 6], [4, 5, 1]])
    return Triplets.create(X, t)


# ---------------------------------------------------------------------------
# Construction
# ---------------------------------------------------------------------------


def test_queries_and_items_of_each_reading():
    data = StructuralData.from_quadruplets(_tiny_quadruplets())
    assert data.n_queries == 3
    np.testing.assert_array_equal(data.n_relevant, [1, 1, 1])
    assert sorted(data.n_irrelevant.tolist()) == [1, 2, 3]
    assert data.n_terms == 6
    # a repeated quadruplet is one item, not two
    q = _tiny_quadruplets()
    twice = Quadruplets.create(q.X, np.vstack([q.indices, q.indices[:2]]), 1.0)
    assert StructuralData.from_quadruplets(twice).n_terms == 6
    tri = StructuralData.from_triplets(_tiny_triplets())
    assert tri.n_queries == 2 and tri.n_terms == 4
    # every relevant item is compared with every non-relevant one (MLR)
    X, y = _class_data()
    pairs = np.array([[0, 3], [1, 4], [0, 1], [2, 5]])
    pw = StructuralData.from_pairs(X, pairs, [1, 1, -1, -1])
    assert pw.n_queries == 1 and pw.n_terms == 4
    np.testing.assert_allclose(pw.item_weight, 0.25)


# ---------------------------------------------------------------------------
# Oracle
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda s: StructuralData.from_quadruplets(_tiny_quadruplets(s)),
    lambda s: StructuralData.from_triplets(_tiny_triplets(s)),
    lambda s: StructuralData.from_pairs(
        np.random.RandomState(s).randn(6, 2), [[0, 1], [2, 3], [0, 4], [1, 5]],
        [1, -1, 1, -1]),
])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_oracle_is_the_most_violated_of_all_rankings(make, seed):
    data = make(seed)
    G, delta = structural_constraints(data)
    rng = np.random.RandomState(seed + 10)
    for scale in (0.0, 0.1, 1.0, 5.0):
        M = _psd(data.n_features, rng, scale)
        brute = np.max(delta - np.einsum("kab,ab->k", G, M))
        cut = data.oracle(M)
        assert cut.violation == pytest.approx(brute, abs=1e-12)
        # the cut is one of the enumerated constraints' values at M
        assert cut.delta - np.sum(cut.G * M) == pytest.approx(brute, abs=1e-12)
        # and the closed form: a sum of hinges with margin 1/2
        i, j, w, _ = data.terms()
        dist = data.distances(M)
        H = np.sum(w * np.maximum(0.0, 1 - 2 * (dist[j] - dist[i])))
        assert data.loss(M) == pytest.approx(H, abs=1e-12)
        assert cut.violation == pytest.approx(H, abs=1e-12)


@settings(deadline=None, max_examples=25)
@given(n_tuples=st.integers(1, 40), width=st.sampled_from([3, 4]),
       scale=st.floats(1e-3, 1e2), seed=st.integers(0, 2 ** 16))
def test_oracle_matches_hinge_sum(n_tuples, width, scale, seed):
    """On random instances (many queries, ties in the data): the vectorised
    oracle's violation is the sum of hinges and its cut reproduces it."""
    rng = np.random.RandomState(seed)
    X = np.round(rng.randn(8, 3), 1)  # coarse values: ties between distances
    y = np.arange(8) % 2
    if width == 4:
        idx = quadruplets_from_labels(y, n_tuples, random_state=rng)
        ok = ~(np.all(np.sort(idx[:, :2], 1) == np.sort(idx[:, 2:], 1), axis=1))
        data = StructuralData.from_quadruplets(Quadruplets.create(X, idx[ok], 1.0))
    else:
        idx = triplets_from_labels(y, n_tuples, random_state=rng)
        data = StructuralData.from_triplets(Triplets.create(X, idx))
    M = _psd(3, rng, scale)
    dist = data.distances(M)
    i, j, w, _ = data.terms()
    H = float(np.sum(w * np.maximum(0.0, 1 - 2 * (dist[j] - dist[i]))))
    cut = data.oracle(M, dist=dist)
    assert cut.violation == pytest.approx(H, rel=1e-10, abs=1e-12)
    assert cut.delta - np.sum(cut.G * M) == pytest.approx(H, rel=1e-9, abs=1e-10)
    # counts: every flipped pair is seen from both of its items
    counts = data.flips(dist)
    assert counts[data.item_relevant].sum() == counts[~data.item_relevant].sum()
    assert cut.n_flipped == int(np.sum(1 - 2 * (dist[j] - dist[i]) > 0))


# ---------------------------------------------------------------------------
# Eq. 16 written out == closed form == cutting plane
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("regularizer", ["trace", "frobenius"])
@pytest.mark.parametrize("kind", ["quadruplets", "triplets"])
def test_enumerated_equals_closed_form_and_cutting_plane(kind, regularizer):
    if kind == "quadruplets":
        data = StructuralData.from_quadruplets(_tiny_quadruplets(), C=3.0,
                                               regularizer=regularizer)
    else:
        data = StructuralData.from_triplets(_tiny_triplets(), C=3.0,
                                            regularizer=regularizer)
    full = solve_structural_enumerated(data)
    exact = solve_exact(data)
    cut = StructuralCuttingPlane().run(data)
    for res in (full, exact, cut):
        assert res.status == "optimal" and res.certificate.passed
    assert full.info["n_constraints"] in (729, 81)
    assert _rel(full.objective, exact.objective) <= EXACT_GAP
    assert _rel(cut.objective, exact.objective) <= EXACT_GAP
    # the enumerated problem's slack is the closed form's loss at its M
    assert full.info["xi"] == pytest.approx(data.loss(full.M), abs=1e-6)
    assert cut.method == "structural"
    assert cut.info["n_cuts"] == cut.info["rounds"] == cut.n_iter


def test_enumeration_refuses_large_instances():
    X, y = _class_data(12)
    data = StructuralData.from_quadruplets(
        Quadruplets.create(X, quadruplets_from_labels(y, 40, random_state=0), 1.0))
    with pytest.raises(ValueError, match="max_constraints|too many"):
        structural_constraints(data)


@pytest.mark.parametrize("regularizer,C", [("trace", 1.0), ("frobenius", 1.0),
                                           ("trace", 20.0)])
@pytest.mark.parametrize("kind", ["quadruplets", "triplets"])
def test_cutting_plane_matches_exact(kind, regularizer, C):
    X, y = _class_data(18, 4, seed=3)
    rng = np.random.RandomState(1)
    if kind == "quadruplets":
        idx = quadruplets_from_labels(y, 60, random_state=rng)
        data = StructuralData.from_quadruplets(Quadruplets.create(X, idx, 1.0),
                                               regularizer=regularizer, C=C)
    else:
        idx = triplets_from_labels(y, 60, random_state=rng)
        data = StructuralData.from_triplets(Triplets.create(X, idx),
                                            regularizer=regularizer, C=C)
    exact = solve_exact(data)
    cut = StructuralCuttingPlane().run(data)
    assert exact.status == "optimal" and cut.status == "optimal"
    assert _rel(cut.objective, exact.objective) <= EXACT_GAP
    # the certificate's bounds bracket the exact optimum
    assert cut.certificate.dual_bound <= exact.objective + 1e-9
    assert exact.certificate.dual_bound <= cut.objective + 1e-9
    assert cut.info["final_violation"] <= cut.info["epsilon"]


def test_loose_epsilon_and_max_iter_are_reported_honestly():
    X, y = _class_data(18, 4, seed=3)
    idx = quadruplets_from_labels(y, 60, random_state=0)
    data = StructuralData.from_quadruplets(Quadruplets.create(X, idx, 1.0))
    loose = StructuralCuttingPlane(epsilon=0.05).run(data, warn=False)
    assert loose.raw_status == "optimal"
    assert loose.info["final_violation"] <= 0.05 == loose.info["epsilon"]
    if not loose.certificate.passed:
        assert loose.status == "optimal_inaccurate"
    with pytest.warns(ConvergenceWarning, match="relative duality gap"):
        short = StructuralCuttingPlane(maxiter=2).run(data)
    assert short.status == "max_iter_reached" and short.n_iter == 2
    assert np.isfinite(short.certificate.gap)
    with pytest.raises(ValueError, match="epsilon"):
        StructuralCuttingPlane(epsilon=-1.0)


# ---------------------------------------------------------------------------
# Estimators
# ---------------------------------------------------------------------------


@parametrize_with_checks([
    QwiseStructuralSupervised(n_constraints=40),
    QwiseStructuralSupervised(n_constraints=30, reading="triplets",
                              regularizer="frobenius", solver="exact"),
])
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


@pytest.fixture(scope="module")
def problem():
    X, y = _class_data(15, 3, seed=5)
    quads = quadruplets_from_labels(y, 40, random_state=0)
    trips = triplets_from_labels(y, 40, random_state=0)
    return X, y, quads, trips


@pytest.mark.parametrize("reading", ["quadruplets", "triplets"])
def test_estimator_fit_score_and_points(problem, reading):
    X, _, quads, trips = problem
    tuples = quads if reading == "quadruplets" else trips
    est = QwiseStructural(reading=reading, preprocessor=X).fit(tuples)
    assert est.status_ == "optimal" and est.certificate_.passed
    assert est.result_.method == "fast"  # the default solver
    cut = clone(est).set_params(solver="cutting_plane").fit(tuples)
    assert cut.status_ == "optimal" and cut.result_.method == "structural"
    assert cut.n_iter_ == cut.result_.info["n_cuts"]
    assert _rel(cut.objective_, est.objective_) <= EXACT_GAP
    data = (StructuralData.from_quadruplets(Quadruplets.create(X, quads, 1.0))
            if reading == "quadruplets"
            else StructuralData.from_triplets(Triplets.create(X, tuples)))
    assert _rel(est.objective_, solve_exact(data).objective) <= EXACT_GAP
    score = est.score(tuples)
    assert 0.5 < score <= 1.0
    assert est.predict(tuples).shape == (len(tuples),)
    assert est.decision_function(tuples).shape == (len(tuples),)
    # points instead of indices: the same problem
    pts = clone(est).set_params(preprocessor=None).fit(X[tuples])
    assert _rel(pts.objective_, est.objective_) <= EXACT_GAP
    assert pts.score(X[tuples]) == pytest.approx(score)
    ex = clone(est).set_params(solver="exact").fit(tuples)
    assert _rel(ex.objective_, est.objective_) <= EXACT_GAP
    assert ex.result_.method == "exact"


def test_estimator_deterministic_and_init_stores(problem):
    X, _, quads, _ = problem
    a = QwiseStructural(preprocessor=X, random_state=0).fit(quads)
    b = QwiseStructural(preprocessor=X, random_state=0).fit(quads)
    np.testing.assert_array_equal(a.components_, b.components_)
    assert a.objective_ == b.objective_
    est = QwiseStructural(reading="nope", C=-1, solver=3)  # validated in fit only
    assert est.reading == "nope" and est.C == -1
    assert repr(QwiseStructural(C=2.0)) == "QwiseStructural(C=2.0)"


@pytest.mark.parametrize("params,args,match", [
    (dict(reading="pairs"), "quads", "reading"),
    (dict(reading="nope"), "quads", "reading"),
    (dict(C=0.0), "quads", "'C'"),
    (dict(C=-1.0), "quads", "'C'"),
    (dict(regularizer="similar"), "quads", "regularizer"),
    (dict(solver="newton"), "quads", "solver"),
    (dict(epsilon=0.0), "quads", "epsilon"),
    (dict(reading="triplets"), "quads", "triplets: reading='triplets' takes tuples of 3"),
    (dict(), "trips", "quadruplets: reading='quadruplets' takes tuples of 4"),
])
def test_bad_input_names_the_argument(problem, params, args, match):
    X, _, quads, trips = problem
    tuples = quads if args == "quads" else trips
    with pytest.raises(ValueError, match=match):
        QwiseStructural(preprocessor=X, **params).fit(tuples)


def test_bad_tuples_and_labels(problem):
    X, _, quads, _ = problem
    with pytest.raises(ValueError, match="y: "):
        QwiseStructural(preprocessor=X).fit(quads, np.ones(len(quads)))
    with pytest.raises(ValueError, match="quadruplets: integer indices need preprocessor"):
        QwiseStructural().fit(quads)
    with pytest.raises(ValueError, match="quadruplets: .*compare a distance with itself"):
        QwiseStructural(preprocessor=X).fit([[0, 1, 1, 0]])
    with pytest.raises(ValueError, match="labels"):
        StructuralData.from_pairs(X, [[0, 1], [2, 3]], [1, 1])
    with pytest.raises(ValueError, match="C: must be > 0"):
        StructuralData.from_triplets(Triplets.create(X, [[0, 1, 2]]), C=0.0)


# ---------------------------------------------------------------------------
# The closed form by the Qwise dual solver (solver="fast")
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("regularizer", ["trace", "frobenius"])
@pytest.mark.parametrize("reading", ["quadruplets", "triplets"])
def test_fast_reaches_the_exact_optimum(regularizer, reading):
    from cvxmetric.qwise_structural import solve_structural_fast

    rng = np.random.default_rng(7)
    y = rng.integers(0, 3, 40)
    X = rng.normal(size=(40, 5))
    X[:, 0] += 1.5 * y
    if reading == "quadruplets":
        data = StructuralData.from_quadruplets(
            Quadruplets.create(X, quadruplets_from_labels(y, 300, random_state=7), 1.0),
            regularizer=regularizer, C=3.0)
    else:
        data = StructuralData.from_triplets(
            Triplets.create(X, triplets_from_labels(y, 300, random_state=7)),
            regularizer=regularizer, C=3.0)
    exact = solve_exact(data)
    fast = solve_structural_fast(data)
    assert fast.status == "optimal" and fast.certificate.passed
    assert abs(fast.objective - exact.objective) <= 1e-6 * max(1.0, abs(exact.objective))
    # the certificate is Eq. 16's own: a valid lower bound
    assert fast.certificate.dual_bound <= exact.objective + 1e-9
    est = QwiseStructural(reading=reading, regularizer=regularizer, C=3.0,
                          solver="fast", preprocessor=X)
    tuples = (quadruplets_from_labels(y, 300, random_state=7) if reading == "quadruplets"
              else triplets_from_labels(y, 300, random_state=7))
    est.fit(tuples)
    assert est.objective_ == pytest.approx(fast.objective, rel=1e-9)


def test_as_qwise_is_the_closed_form():
    rng = np.random.default_rng(8)
    y = rng.integers(0, 2, 30)
    X = rng.normal(size=(30, 4))
    data = StructuralData.from_quadruplets(
        Quadruplets.create(X, quadruplets_from_labels(y, 100, random_state=8), 1.0),
        regularizer="frobenius", C=2.0)
    qdata, keep = data.as_qwise()
    assert keep.all()
    for _ in range(5):
        A = rng.normal(size=(4, 4))
        M = A @ A.T
        assert qdata.objective(M) == pytest.approx(data.objective(M), rel=1e-12)
