"""LMNN's canonical data: target neighbours, the blockwise objective and the
certificate's dual bound (weak duality against the exact optimum)."""

import numpy as np
import pytest

from cvxmetric._tolerances import EXACT_GAP
from cvxmetric.lmnn import _problem
from cvxmetric.lmnn._problem import LMNNData, target_neighbors
from cvxmetric.lmnn.exact import solve_exact
from cvxmetric.qwise._problem import QwiseData
from cvxmetric.constraints import Quadruplets


def blobs(n_per_class=8, n_classes=3, d=3, seed=0, spread=1.0):
    rng = np.random.RandomState(seed)
    y = np.repeat(np.arange(n_classes), n_per_class)
    X = spread * rng.randn(n_classes, d)[y] + rng.randn(y.size, d)
    return X, y


def dense_objective(data, M):
    """JMLR 2009's objective from one row per triplet (small data)."""
    X = data.X
    _, ijl = data.triplets()
    i, j, l = ijl.T

    def D(a, b):
        diff = X[a] - X[b]
        return np.einsum("pi,ij,pj->p", diff, M, diff)

    valid = data.targets >= 0
    anchors = np.repeat(np.arange(data.n_samples), data.k)[valid.ravel()]
    pull = D(anchors, data.targets[valid]).sum()
    hinge = np.maximum(0.0, 1.0 + D(i, j) - D(i, l)).sum()
    return (1 - data.mu) * pull + data.mu * hinge


def random_psd(d, seed):
    B = np.random.RandomState(seed).randn(d, d)
    return B @ B.T / d


# -- target neighbours --------------------------------------------------------


def test_targets_are_the_k_nearest_same_class_points():
    X, y = blobs(seed=1)
    T = target_neighbors(X, y, 3)
    for i in range(len(y)):
        same = np.flatnonzero((y == y[i]) & (np.arange(len(y)) != i))
        dist = np.sum((X[same] - X[i]) ** 2, axis=1)
        assert set(T[i]) == set(same[np.argsort(dist, kind="stable")[:3]])
        assert np.all(y[T[i]] == y[i]) and i not in T[i]


def test_ties_are_broken_by_index():
    # four points at distance 1 from the origin, same class: index order
    X = np.array([[0.0, 0], [1, 0], [0, 1], [-1, 0], [0, -1], [9, 9], [9, 8]])
    y = np.array([0, 0, 0, 0, 0, 1, 1])
    T = target_neighbors(X, y, 2)
    assert list(T[0]) == [1, 2]
    # ... and under M0 = diag(1, 4) the x-axis points come first
    T = target_neighbors(X, y, 2, np.diag([1.0, 4.0]))
    assert list(T[0]) == [1, 3]


def test_small_classes_use_all_their_other_points():
    X, y = blobs(n_per_class=5, seed=2)
    y = y.copy()
    y[:3] = 7   # a class of 3 points: 2 targets each at k = 3
    y[3] = 8    # a class of one point: no target
    data = LMNNData(X, y, k=3)
    codes = data.codes
    for i in range(3):
        assert sorted(data.targets[i, :2]) == sorted({0, 1, 2} - {i})
        assert data.targets[i, 2] == -1
    assert np.all(data.targets[3] == -1)
    # the singleton is still an impostor of everyone else
    _, ijl = data.triplets()
    assert np.any(ijl[:, 2] == 3)
    counts = np.bincount(codes)
    k_i = (data.targets >= 0).sum(axis=1)
    assert data.n_triplets == int(np.sum(k_i * (len(y) - counts[codes]))) == len(ijl)


# -- the blockwise objective ----------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_blockwise_objective_equals_dense(seed, monkeypatch):
    X, y = blobs(seed=seed, d=4)
    data = LMNNData(X, y, k=3, mu=0.3)
    M = random_psd(4, seed)
    want = dense_objective(data, M)
    assert data.objective(M) == pytest.approx(want, rel=1e-12)
    # many blocks of a few anchors each give the same sums
    monkeypatch.setattr(_problem, "TRIPLET_BLOCK", 50)
    assert data.objective(M) == pytest.approx(want, rel=1e-12)
    assert data.pull(M) == pytest.approx(np.sum(data.A_T * M), rel=1e-12)


def test_is_qwise_eq8_divided_by_one_minus_mu():
    X, y = blobs(seed=3)
    data = LMNNData(X, y, k=2, mu=0.25)
    _, ijl = data.triplets()
    quads = np.column_stack([ijl[:, 0], ijl[:, 1], ijl[:, 0], ijl[:, 2]])
    q = QwiseData.from_sets(Quadruplets.create(X, quads, 1.0), regularizer="similar",
                            C_q=data.C, A_S=data.A_T)
    M = random_psd(3, 4)
    assert data.objective(M) == pytest.approx((1 - data.mu) * q.objective(M), rel=1e-12)
    # the same multipliers give the same bound, in LMNN's units
    alpha = np.random.RandomState(0).uniform(0, data.C, len(quads))
    ids, _ = data.triplets()
    lmnn = data.dual_bound(M, ids, (1 - data.mu) * alpha)
    assert lmnn >= (1 - data.mu) * q.dual_bound(alpha) - 1e-9 * abs(lmnn)


# -- the certificate ------------------------------------------------------------


CASES = [dict(seed=0, mu=0.5, k=3), dict(seed=1, mu=0.2, k=2),
         dict(seed=2, mu=0.8, k=1), dict(seed=3, mu=0.5, k=3, spread=3.0)]


@pytest.fixture(scope="module", params=range(len(CASES)))
def solved(request):
    case = dict(CASES[request.param])
    seed, spread = case.pop("seed"), case.pop("spread", 1.0)
    X, y = blobs(seed=seed, spread=spread)
    data = LMNNData(X, y, **case)
    return data, solve_exact(data)


def test_weak_duality_against_the_exact_optimum(solved):
    data, result = solved
    rng = np.random.RandomState(0)
    ids, _ = data.triplets()
    d = data.n_features
    for trial in range(5):
        M = random_psd(d, trial) * rng.uniform(0.01, 3)
        gamma = rng.uniform(0, data.mu, ids.size)
        for bound in (data.dual_bound(M, ids, gamma), data.dual_bound(M)):
            assert bound <= result.objective * (1 + 1e-9)
        # a few given multipliers, the rest read off M
        some = np.sort(rng.choice(ids.size, 10, replace=False))
        assert data.dual_bound(M, ids[some], gamma[some]) <= result.objective * (1 + 1e-9)


def test_certificate_is_tight_at_the_exact_solution(solved, monkeypatch):
    data, result = solved
    cert = result.certificate
    assert result.status == "optimal" and cert.passed
    assert cert.dual_bound <= cert.objective + 1e-9 * abs(cert.objective)
    assert cert.rel_gap <= EXACT_GAP
    assert cert.objective == pytest.approx(dense_objective(data, result.M), rel=1e-12)
    # the same certificate block by block
    monkeypatch.setattr(_problem, "TRIPLET_BLOCK", 40)
    again = data.certificate(result.M, result.info["triplet_ids"], result.info["gamma"],
                             solver="blocks")
    assert again.passed
    assert again.dual_bound == pytest.approx(cert.dual_bound, rel=1e-10)


def test_a_point_off_the_optimum_fails(solved):
    data, result = solved
    M = result.M * 1.2 + 0.05 * np.eye(data.n_features)
    cert = data.certificate(M, result.info["triplet_ids"], result.info["gamma"],
                            solver="moved")
    assert not cert.passed
    assert cert.dual_bound <= result.objective * (1 + 1e-9)


def test_multipliers_are_validated():
    X, y = blobs()
    data = LMNNData(X, y)
    ids, _ = data.triplets()
    with pytest.raises(ValueError, match="ids"):
        data.dual_bound(np.eye(3), ids[::-1].copy(), np.zeros(ids.size))
    with pytest.raises(ValueError, match="gamma"):
        data.dual_bound(np.eye(3), ids, np.zeros(3))
    # an id of a same-class l is no triplet
    same = np.int64((0 * data.k + 0) * data.n_samples + 1)
    with pytest.raises(ValueError, match="ids"):
        data.dual_bound(np.eye(3), np.array([same]), np.zeros(1))


# -- bad input --------------------------------------------------------------------


@pytest.mark.parametrize("k", [0, -1, 1.5, "3", True])
def test_bad_k(k):
    X, y = blobs()
    with pytest.raises((ValueError, TypeError), match="k"):
        LMNNData(X, y, k=k)


@pytest.mark.parametrize("mu", [0, 1, -0.1, 1.5, np.nan, np.inf, "0.5", True])
def test_bad_mu(mu):
    X, y = blobs()
    with pytest.raises(ValueError, match="mu"):
        LMNNData(X, y, mu=mu)


def test_bad_samples_and_labels():
    X, y = blobs()
    Xnan = X.copy()
    Xnan[0, 0] = np.nan
    with pytest.raises(ValueError, match="X"):
        LMNNData(Xnan, y)
    with pytest.raises(ValueError, match="y"):
        LMNNData(X, np.zeros(len(y)))          # one class
    with pytest.raises(ValueError, match="y"):
        LMNNData(X, y[:-1])                      # wrong length
    with pytest.raises(ValueError, match="y"):
        LMNNData(X[:3], [0, 1, 2])              # no class with two points
    with pytest.raises(ValueError, match="M0"):
        LMNNData(X, y, M0=-np.eye(3))
