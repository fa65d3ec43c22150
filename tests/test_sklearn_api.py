"""scikit-learn and metric-learn conventions shared by every estimator.

Pair learners classify pairs by a calibrated distance threshold
(``predict``, ``decision_function``, ``score`` = ROC-AUC,
``set_threshold``, ``calibrate_threshold``); tuple learners score the
fraction of tuples whose order the metric satisfies; the ``fit(X, y)``
learners score the ROC-AUC of same- vs different-class pairs (among the
samples and against a reference sample of the training set); ``transform``
supports ``set_output`` and ``get_feature_names_out``.  Model selection
works without a ``scoring`` argument.
"""

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from cvxmetric import (
    MMC,
    ConstraintDML,
    ConstraintDMLSupervised,
    MMCSupervised,
    Qwise,
    QwiseSupervised,
    RankDMLSupervised,
    pairs_from_labels,
    quadruplets_from_labels,
)

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    # iris repeats a few samples: a pair of identical points carries no
    # information and the pair learners refuse it
    _, keep = np.unique(X, axis=0, return_index=True)
    keep = np.sort(keep)
    return StandardScaler().fit_transform(X[keep]), y[keep]


def pair_learners(X):
    return [MMC(preprocessor=X, solver="fast"),
            ConstraintDML(preprocessor=X, solver="fast")]


@pytest.mark.parametrize("which", [0, 1])
def test_pair_classifier(iris, which):
    X, y = iris
    P, L = pairs_from_labels(y, 120, random_state=0)
    est = pair_learners(X)[which].fit(P, L)
    assert list(est.classes_) == [-1, 1]
    d = est.pair_distance(P)
    np.testing.assert_allclose(est.decision_function(P), -d)
    # the threshold fitted by "accuracy" is the best cut of the sorted
    # training distances
    pred = est.predict(P)
    assert set(np.unique(pred)) <= {-1, 1}
    np.testing.assert_array_equal(pred, np.where(d <= est.threshold_, 1, -1))
    best = max(np.mean(np.where(d <= t, 1, -1) == L) for t in np.r_[d, d.min() - 1])
    assert np.mean(pred == L) == pytest.approx(best)
    assert est.score(P, L) == pytest.approx(roc_auc_score(L, -d))
    # set_threshold / calibrate_threshold
    est.set_threshold(np.median(d))
    assert np.mean(est.predict(P) == 1) == pytest.approx(0.5, abs=0.02)
    est.calibrate_threshold(P, L, strategy="max_tpr", min_rate=0.9)
    pred = est.predict(P)
    assert np.mean(pred[L == -1] == -1) >= 0.9
    tpr = np.mean(pred[L == 1] == 1)
    # no threshold with TNR >= 0.9 has a higher TPR
    for t in np.r_[d, d.min() - 1]:
        p = np.where(d <= t, 1, -1)
        if np.mean(p[L == -1] == -1) >= 0.9:
            assert np.mean(p[L == 1] == 1) <= tpr + 1e-12
    est.calibrate_threshold(P, L, strategy="max_tnr", min_rate=0.95)
    assert np.mean(est.predict(P)[L == 1] == 1) >= 0.95
    est.calibrate_threshold(P, L, strategy="f_beta", beta=1.0)
    assert np.isfinite(est.threshold_)


def test_pair_classifier_bad_arguments(iris):
    X, y = iris
    P, L = pairs_from_labels(y, 60, random_state=1)
    est = MMC(preprocessor=X, solver="fast")
    with pytest.raises(ValueError, match="calibration_params"):
        est.fit(P, L, calibration_params={"strategy": "accuracy", "bta": 2})
    with pytest.raises(ValueError, match="min_rate"):
        est.fit(P, L, calibration_params={"strategy": "max_tpr"})
    assert not hasattr(est, "components_")  # refused before solving
    est.fit(P, L)
    with pytest.raises(ValueError, match="strategy"):
        est.calibrate_threshold(P, L, strategy="auc")
    with pytest.raises(ValueError, match="beta"):
        est.calibrate_threshold(P, L, strategy="f_beta", beta=-1)
    with pytest.raises(ValueError, match="threshold"):
        est.set_threshold(np.nan)
    with pytest.raises(ValueError, match="threshold"):
        est.set_threshold("x")
    with pytest.raises(ValueError, match=r"y: must be \+1") as err:
        est.score(P, np.zeros(len(P)))
    assert "[[" not in str(err.value) and "array(" not in str(err.value)
    with pytest.raises(ValueError, match="both similar"):
        est.score(P[L == 1], L[L == 1])


def test_pair_learners_in_model_selection(iris):
    X, y = iris
    P, L = pairs_from_labels(y, 120, random_state=2)
    scores = cross_val_score(MMC(preprocessor=X, solver="fast"), P, L, cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.8)
    grid = GridSearchCV(ConstraintDML(preprocessor=X, solver="fast"),
                        {"lam": [0.1, 1.0]}, cv=3).fit(P, L)
    assert grid.best_params_["lam"] in (0.1, 1.0)
    assert 0.5 < grid.best_score_ <= 1.0


def test_quadruplet_learner(iris):
    X, y = iris
    Q = quadruplets_from_labels(y, 200, random_state=0)
    est = Qwise(preprocessor=X, solver="fast").fit(Q)
    pts = X[Q]
    near = np.sqrt(np.sum(((pts[:, 0] - pts[:, 1]) @ est.components_.T) ** 2, 1))
    far = np.sqrt(np.sum(((pts[:, 2] - pts[:, 3]) @ est.components_.T) ** 2, 1))
    np.testing.assert_allclose(est.decision_function(Q), far - near, atol=1e-12)
    np.testing.assert_array_equal(est.predict(Q), np.where(far > near, 1, -1))
    assert est.score(Q) == pytest.approx(np.mean(far > near))
    assert est.score(pts) == est.score(Q)  # 3-D points as well as indices
    with pytest.raises(ValueError, match="y: Qwise.score takes no labels"):
        est.score(Q, np.ones(len(Q)))
    # a second positional argument is no longer taken as margins
    with pytest.raises(ValueError, match="delta=") as err:
        Qwise(preprocessor=X).fit(Q, np.ones(len(Q)))
    assert "[" not in str(err.value)
    grid = GridSearchCV(Qwise(preprocessor=X, solver="fast"), {"C_q": [0.1, 1.0]},
                        cv=2).fit(Q)
    assert 0.5 < grid.best_score_ <= 1.0


def _reference_auc(est, X, y):
    """The score's definition, computed here without chunks or sampling:
    pairs among ``X`` and of ``X`` with the training reference, pairs of
    identical points left out."""
    R, yR = est._score_reference_X, est._score_reference_y
    Z, ZR = est.transform(X), est.transform(R)
    same, dist = [], []
    for a in range(len(y)):
        for b in range(a + 1, len(y)):
            if not np.array_equal(X[a], X[b]):
                same.append(y[a] == y[b])
                dist.append(np.linalg.norm(Z[a] - Z[b]))
        for b in range(len(yR)):
            if not np.array_equal(X[a], R[b]):
                same.append(y[a] == yR[b])
                dist.append(np.linalg.norm(Z[a] - ZR[b]))
    return roc_auc_score(same, -np.array(dist))


@pytest.mark.parametrize("cls", [MMCSupervised, QwiseSupervised,
                                 ConstraintDMLSupervised, RankDMLSupervised])
def test_supervised_score_and_cross_val(iris, cls):
    X, y = iris
    est = cls(solver="fast", random_state=0).fit(X, y)
    # the training set is the reference (iris has fewer samples than the cap)
    np.testing.assert_array_equal(est._score_reference_X, X)
    assert est.score(X, y) == pytest.approx(_reference_auc(est, X, y))
    fold = np.r_[0:10, 60:70]
    assert est.score(X[fold], y[fold]) == pytest.approx(
        _reference_auc(est, X[fold], y[fold]))
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    scores = cross_val_score(cls(solver="fast", random_state=0), X, y, cv=cv)
    assert np.all(scores > 0.7)


def test_supervised_score_samples_large_sets(iris, monkeypatch):
    import cvxmetric._base as base

    X, y = iris
    est = MMCSupervised(solver="fast", random_state=0).fit(X, y)
    full = est.score(X, y)
    monkeypatch.setattr(base, "MAX_SCORE_PAIRS", 4000)
    a, b = est.score(X, y), est.score(X, y)
    assert a == b  # the sample is drawn with random_state
    assert abs(a - full) < 0.02
    # one class is scored against the training reference
    assert 0.5 < est.score(X[y == 0], y[y == 0]) <= 1.0
    # one sample of a label never seen in fit: no same-class pair
    with pytest.raises(ValueError, match="same-class") as err:
        est.score(X[:1], [7])
    assert "[" not in str(err.value)


def test_set_output_and_feature_names(iris):
    X, y = iris
    P, L = pairs_from_labels(y, 60, random_state=0)
    Q = quadruplets_from_labels(y, 60, random_state=0)
    fitted = [MMC(preprocessor=X, solver="fast").fit(P, L),
              Qwise(preprocessor=X, solver="fast").fit(Q),
              MMCSupervised(solver="fast", random_state=0).fit(X, y)]
    for est in fitted:
        name = type(est).__name__.lower()
        names = est.get_feature_names_out()
        assert list(names) == [f"{name}{k}" for k in range(4)]
        est.set_output(transform="pandas")
        out = est.transform(X[:5])
        assert isinstance(out, pd.DataFrame) and list(out.columns) == list(names)
        est.set_output(transform="default")
        assert isinstance(est.transform(X[:5]), np.ndarray)
    # in a pandas pipeline
    pipe = make_pipeline(StandardScaler(),
                         MMCSupervised(solver="fast", random_state=0))
    pipe.set_output(transform="pandas")
    out = pipe.fit_transform(pd.DataFrame(X, columns=list("abcd")), y)
    assert list(out.columns) == [f"mmcsupervised{k}" for k in range(4)]
    with pytest.raises(Exception, match="not fitted"):
        MMC().get_feature_names_out()


def test_slr_score_is_retrieval_map(iris):
    from cvxmetric import SLR
    from cvxmetric.metrics import mean_average_precision

    X, y = iris
    est = SLR().fit(X, y)
    R, yR = est._score_reference_X, est._score_reference_y
    np.testing.assert_array_equal(R, X)  # fewer samples than the cap

    def expected(Xq, yq):
        # each query against the other queries and the reference, its own
        # copies left out; computed here without the chunking
        items, labels = np.vstack([Xq, R]), np.r_[yq, yR]
        S = Xq @ est.get_bilinear_matrix() @ items.T
        aps = []
        for q in range(len(yq)):
            keep = ~np.all(items == Xq[q], axis=1)
            rel = labels[keep] == yq[q]
            if rel.any():
                aps.append(mean_average_precision(S[q][keep][None], rel[None]))
        return np.mean(aps)

    assert est.score(X, y) == pytest.approx(expected(X, y))
    one = y == 1  # one class: ranked against the training classes
    assert est.score(X[one], y[one]) == pytest.approx(expected(X[one], y[one]))
    assert est.score(X[one], y[one]) < 1.0
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    assert np.all(cross_val_score(SLR(), X, y, cv=cv) > 0.7)


def test_triplet_learner(iris):
    from cvxmetric import RankDML, triplets_from_labels

    X, y = iris
    T = triplets_from_labels(y, 200, random_state=0)
    est = RankDML(preprocessor=X, solver="fast").fit(T)
    Z = est.transform(X)
    near = np.linalg.norm(Z[T[:, 0]] - Z[T[:, 1]], axis=1)
    far = np.linalg.norm(Z[T[:, 0]] - Z[T[:, 2]], axis=1)
    np.testing.assert_allclose(est.decision_function(T), far - near, atol=1e-12)
    np.testing.assert_array_equal(est.predict(T), np.where(far > near, 1, -1))
    assert est.score(T) == pytest.approx(np.mean(far > near))
    with pytest.raises(ValueError, match="y: RankDML.fit takes no labels"):
        RankDML(preprocessor=X).fit(T, np.ones(len(T)))
