"""The LDML-family estimators: conventions, the threshold, bad input."""

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.utils.estimator_checks import parametrize_with_checks

from cvxmetric import LDML, LDMLStar, LDMLSupervised, MildML, ProblemSizeError
from cvxmetric.ldml import digits_bags, solve_exact
from cvxmetric.ldml.fast import AllPairs


def _iris_pairs(n=30, seed=0):
    X, y = load_iris(return_X_y=True)
    idx = np.random.default_rng(seed).choice(len(y), n, replace=False)
    i, j = np.triu_indices(n, 1)
    pairs = np.column_stack([idx[i], idx[j]])
    return X, pairs, np.where(y[idx[i]] == y[idx[j]], 1, -1), idx, y


# the defaults (lam="auto", solver="auto": "lowrank" at full rank, certified)
# with no expected failure, and the low-rank method
@parametrize_with_checks([LDMLSupervised(),
                          LDMLSupervised(solver="lowrank", n_init=1, max_iter=30,
                                         random_state=0)])
def test_sklearn_conventions(estimator, check):
    check(estimator)


@pytest.mark.parametrize("solver", ["exact", "fast", "lowrank"])
def test_ldml_solvers_agree_and_threshold_is_b(solver):
    X, pairs, y, idx, labels = _iris_pairs()
    est = LDML(lam=0.1, solver=solver, preprocessor=X, random_state=0).fit(pairs, y)
    ref = solve_exact(AllPairs(X[idx], labels[idx], lam=0.1).pair_data())
    assert abs(est.objective_ - ref.objective) <= 1e-6 * abs(ref.objective)
    assert est.components_.shape[1] == 4
    # p(same) = sigma(b - d^2) >= 1/2 exactly when predict says +1
    proba = est.predict_proba(pairs)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    d = est.pair_distance(pairs)
    np.testing.assert_allclose(proba[:, 1], 1 / (1 + np.exp(-(est.b_ - d ** 2))), rtol=1e-10)
    pred = est.predict(pairs)
    assert np.array_equal(pred == 1, d <= est.threshold_)
    assert np.array_equal(pred == 1, proba[:, 1] >= 0.5 - 1e-12)
    assert est.score(pairs, y) > 0.9
    # calibration moves threshold_ only
    b = est.b_
    est.calibrate_threshold(pairs, y, strategy="max_tpr", min_rate=0.9)
    assert est.b_ == b


def test_ldml_points_and_calibration_in_fit():
    X, pairs, y, _, _ = _iris_pairs(20, 1)
    a = LDML(lam=0.1, preprocessor=X).fit(pairs, y)
    b = LDML(lam=0.1).fit(X[pairs], y, calibration_params={"strategy": "accuracy"})
    assert np.isclose(a.objective_, b.objective_, rtol=1e-6)
    assert np.mean(b.predict(X[pairs]) == y) >= np.mean(a.predict(pairs) == y) - 1e-12


def test_low_rank_and_kernel_supervised():
    X, y = load_iris(return_X_y=True)
    est = LDMLSupervised(n_components=2, lam=0.1, random_state=0).fit(X, y)
    assert est.components_.shape == (2, 4) and est.transform(X).shape == (150, 2)
    assert est.score(X, y) > 0.9
    ker = LDMLSupervised(kernel="rbf", kernel_params={"gamma": 0.5}, n_components=3,
                         lam=0.1, max_iter=300, random_state=0).fit(X[::3], y[::3])
    assert ker.components_.shape == (3, 50)
    assert ker.transform(X).shape == (150, 3)
    assert ker.score(X, y) > 0.9
    with pytest.raises(ValueError, match="kernel"):
        LDMLSupervised(kernel="rbf", solver="fast").fit(X, y)


def test_bags_learners():
    A, _ = digits_bags("bags", n_per_class=30, random_state=0)
    # instances stored bag after bag: index arrays and arrays of points
    # describe the same data
    X = np.vstack([A.X[b] for b in A.bags])
    ends = np.cumsum([len(b) for b in A.bags])
    idx = [np.arange(e - len(b), e) for b, e in zip(A.bags, ends)]
    mil = MildML(n_components=4, lam=0.1, preprocessor=X, max_iter=20, random_state=0)
    mil.fit(idx, A.captions)
    assert mil.components_.shape == (4, 64)
    mil2 = MildML(n_components=4, lam=0.1, max_iter=20, random_state=0).fit(
        [A.X[b] for b in A.bags], A.captions)
    assert np.isclose(mil.objective_, mil2.objective_, rtol=1e-10)
    star = LDMLStar(n_components=4, lam=0.1, preprocessor=A.X, n_rounds=2, max_iter=50,
                    random_state=0).fit(A.bags, A.captions)
    assert star.labels_.shape == (len(A.y),) and 1 <= star.n_rounds_ <= 2
    named = star.labels_ >= 0
    # correct captions, distinct classes per bag: every instance named
    assert named.all()
    assert np.mean(star.classes_seen_[star.labels_] == A.y) > 0.5


def test_bad_input_names_the_argument():
    X, pairs, y, _, _ = _iris_pairs(10)
    with pytest.raises(ValueError, match="lam"):
        LDML(lam=-1.0, preprocessor=X).fit(pairs, y)
    with pytest.raises(ValueError, match="n_components"):
        LDML(n_components=5, solver="lowrank", preprocessor=X).fit(pairs, y)
    with pytest.raises(ValueError, match="n_components"):
        LDML(n_components=2, solver="fast", preprocessor=X).fit(pairs, y)
    with pytest.raises(ValueError, match="identical"):
        LDML(preprocessor=X).fit(np.vstack([pairs, [[3, 3]]]), np.r_[y, 1])
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="preprocessor"):
        LDML(preprocessor=Xn).fit(pairs, y)
    with pytest.raises(ValueError, match="y"):
        LDML(preprocessor=X).fit(pairs, np.ones(len(y)))
    P = np.random.default_rng(0).standard_normal((8, 2))
    with pytest.raises(ValueError, match=r"bags\[1\]: the bag is empty"):
        MildML(preprocessor=P).fit([[0, 1], [], [2]], [[0], [1], [0]])
    with pytest.raises(ValueError, match=r"bags\[0\]: index 8 is out of range"):
        MildML(preprocessor=P).fit([[8], [1], [2]], [[0], [1], [0]])
    with pytest.raises(ValueError, match="refer to nothing"):
        LDMLStar(preprocessor=P).fit([[0], [1], [2]], [[], [], []])
    with pytest.raises(ValueError, match="n_components"):
        MildML(n_components=3, preprocessor=P).fit([[0], [1], [2]], [[0], [1], [0]])
    with pytest.raises(ValueError, match="index arrays need preprocessor"):
        MildML().fit([[0], [1], [2]], [[0], [1], [0]])


def test_separable_without_regulariser_is_refused_at_low_rank():
    # every pair on its side of b at an iterate: scaling (M, b) up lowers
    # every term forever -- refused, naming lam, whatever the rank
    from cvxmetric import NotAttainedError

    A, _ = digits_bags("instances", n_per_class=30, random_state=0)
    with pytest.raises(NotAttainedError, match="lam > 0"):
        LDMLSupervised(n_components=4, lam=0, random_state=0).fit(A.X, A.y)
    B, _ = digits_bags("bags", n_per_class=30, random_state=0)
    with pytest.raises(NotAttainedError, match="lam > 0"):
        MildML(n_components=4, lam=0, preprocessor=B.X, random_state=0).fit(B.bags,
                                                                         B.captions)


def test_supervised_size_limits_raise_problem_size_error():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 10))  # 19 900 pairs x 10 features > 1e5
    y = np.arange(200) % 3
    with pytest.raises(ProblemSizeError, match="solver"):
        LDMLSupervised(solver="exact").fit(X, y)
    assert issubclass(ProblemSizeError, ValueError)
