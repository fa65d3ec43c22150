"""Qwise's dual solver on a ``dask.array`` (cvxmetric/qwise/_dask.py): the
full passes as Dask tasks over chunks of pairs, the iterations on host
restrictions; the same certified objective as NumPy, the distances and
partial sums of NumPy, counted transfers, and bad input refused by name."""

import numpy as np
import pytest

from cvxmetric._tolerances import tolerance
from cvxmetric.collection import gaussian_classes, standardize
from cvxmetric.constraints import Quadruplets, quadruplets_from_labels
from cvxmetric.qwise import ProjectedSubgradient, QwiseData, QwiseDualSolver

pytestmark = pytest.mark.dask

N_SAMPLES, D, ROWS = 60, 5, 20  # three row chunks of X: three chunks of pairs


def _instance(n_quadruplets, *, scale=1.0):
    X, y = gaussian_classes(np.random.RandomState(0), N_SAMPLES, D, 3, 1.5)
    X = standardize(X) * scale
    quads = quadruplets_from_labels(y, n_quadruplets, random_state=0)
    return X, QwiseData.from_sets(Quadruplets.create(X, quads, 1.0))


def _on_dask(data, X):
    da = pytest.importorskip("dask.array")
    return data.on_device(da.from_array(X, chunks=(ROWS, D)))


def _same_optimum(res, ref):
    assert ref.status == res.status == "optimal"
    assert res.certificate.passed and res.certificate.rel_gap <= QwiseDualSolver().tol
    assert res.objective == pytest.approx(ref.objective, rel=tolerance("qwise", "fast"))
    assert isinstance(res.M, np.ndarray) and isinstance(res.info["alpha"], np.ndarray)
    np.testing.assert_allclose(res.M, ref.M, atol=1e-4 * np.abs(ref.M).max())
    assert res.info["backend"] == "dask"


def _bounded_moves(res, data):
    """Per round: the rows of ``X`` its pairs read; per pass: one vector of
    ``P`` floats or one (d, d) partial sum per chunk -- never ``X`` to the
    host, never a per-constraint array, nothing per iteration."""
    t, P = res.info["transfers"], data.op.n_pairs
    rounds = len(res.info["working_set_rounds"])
    assert 0 < t["to_host"] < res.n_iter
    assert t["to_host_bytes"] <= 8 * (rounds * N_SAMPLES * D + t["to_host"] * max(P, D * D))
    # the problem's X once (the check of the samples), the pair indices
    # once, then factors and weights: each at most P floats
    assert t["to_device_bytes"] <= 8 * (N_SAMPLES * D + 2 * P + t["to_device"] * P)


@pytest.fixture(scope="module")
def small():
    X, data = _instance(400)
    return X, data, QwiseDualSolver().run(data)


def test_passes_equal_numpy(small, dask_client):
    """A sweep is one task per chunk of pairs, gathered as one vector of
    ``P`` distances: NumPy's, for an indefinite ``M`` too; ``S(w)`` is the
    sum of the chunks' partial sums."""
    X, data, _ = small
    dev = _on_dask(data, X)
    assert type(dev).__name__ == "QwiseDaskData" and dev.op.n_chunks == 3
    rng = np.random.default_rng(0)
    A = rng.standard_normal((D, D))
    for M in (A @ A.T, A + A.T):
        before = dev.transfers.to_host_count
        dist = dev.op.sqdist(M)
        assert isinstance(dist, np.ndarray) and dist.shape == (data.op.n_pairs,)
        assert dev.transfers.to_host_count == before + 3
        np.testing.assert_allclose(dist, data.op.sqdist(M), rtol=1e-12,
                                   atol=1e-12 * np.abs(dist).max())
        np.testing.assert_allclose(dev.margins(M), data.margins(M), rtol=1e-12,
                                   atol=1e-12 * np.abs(dist).max())
    w = rng.standard_normal(data.op.n_pairs)
    w[: data.op.n_pairs // 2] = 0.0  # the first chunk has no weight: skipped
    S = data.op.gram(w)
    np.testing.assert_allclose(dev.op.gram(w), S, rtol=1e-12, atol=1e-12 * np.abs(S).max())
    alpha = rng.uniform(0, 1, data.n_constraints)
    cert, ref = (d.certificate(A @ A.T, alpha, solver="x") for d in (dev, data))
    assert cert.objective == pytest.approx(ref.objective, rel=1e-12)
    assert cert.dual_bound == pytest.approx(ref.dual_bound, rel=1e-10)


def test_dual_solver_certifies_the_numpy_objective(small, dask_client):
    """Within ``working_set``: one set of every constraint, iterated on the
    host, certified by the full passes on the cluster; the registry's fast
    method takes the Dask data as it is."""
    from cvxmetric.formulations import formulation

    X, data, ref = small
    dev = _on_dask(data, X)
    res = QwiseDualSolver().run(dev)
    _same_optimum(res, ref)
    assert res.info["working_set_rounds"][0]["size"] == data.n_constraints
    _bounded_moves(res, data)
    # no working set asked for: the rounds are over every constraint
    _same_optimum(QwiseDualSolver(working_set=None).run(dev), ref)
    _same_optimum(formulation("qwise").method("fast").load_collection()(dev), ref)


def test_working_set_rounds_certify_the_numpy_objective(dask_client):
    X, data = _instance(3000)
    solver = QwiseDualSolver(working_set=500)
    ref = solver.run(data)
    res = solver.run(_on_dask(data, X))
    _same_optimum(res, ref)
    rounds = res.info["working_set_rounds"]
    assert len(rounds) >= 2 and rounds[0]["size"] < data.n_constraints
    _bounded_moves(res, data)


def test_scale_free_twin_shares_the_vectors(dask_client):
    """Data far from unit scale: the iterations run on the scale-free twin,
    whose passes are the same persisted vectors with the factors and partial
    sums scaled by powers of two."""
    X, data = _instance(300, scale=1e3)
    dev = _on_dask(data, X)
    twin, scaling = dev.normalized()
    assert not scaling.identity and twin.op.Z is dev.op.Z
    host_twin, _ = data.normalized()
    M = np.eye(D)
    np.testing.assert_allclose(twin.op.sqdist(M), host_twin.op.sqdist(M), rtol=1e-10)
    # on a working set (the NumPy path's plain iterations need ~10^5 of
    # them on this twin, whose scale-free weight C s^2 is 2^24)
    solver = QwiseDualSolver(working_set=100)
    res = solver.run(dev)
    _same_optimum(res, solver.run(data))
    assert res.info["scaling"] == scaling.as_dict()


def test_any_scheduler_address(small, dask_client):
    """A client connected by the scheduler's address runs the passes."""
    distributed = pytest.importorskip("distributed")
    X, data, ref = small
    with distributed.Client(dask_client.scheduler.address) as client:
        dev = _on_dask(data, X)
        assert distributed.get_client() is client
        np.testing.assert_allclose(dev.op.sqdist(ref.M), data.op.sqdist(ref.M),
                                   rtol=1e-12, atol=1e-12)


def test_float32_input_is_cast_to_float64(small, dask_client):
    X, base, _ = small
    X32 = X.astype(np.float32)
    data = QwiseData.from_sets(Quadruplets.create(X32.astype(float),
                                                  base.quadruplets.indices, 1.0))
    dev = _on_dask(data, X32)
    assert dev.X.dtype == np.float64
    M = np.eye(D)
    np.testing.assert_allclose(dev.op.sqdist(M), data.op.sqdist(M), rtol=1e-12, atol=1e-12)


def test_bad_input_is_refused_by_name(small, dask_client):
    X, data, _ = small
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="X: contains NaN or infinite values"):
        _on_dask(data, bad)
    with pytest.raises(ValueError, match="X: its values differ"):
        _on_dask(data, X + 1.0)
    with pytest.raises(ValueError, match="X: expected the problem's samples"):
        _on_dask(data, X[:40])
    dev = _on_dask(data, X)
    from cvxmetric.qwise import solve_exact

    with pytest.raises(TypeError, match="X: Qwise's projected subgradient"):
        ProjectedSubgradient().run(dev)
    with pytest.raises(TypeError, match="X: Qwise's exact"):
        solve_exact(dev)


def test_estimator_keeps_a_dask_X_on_the_cluster(dask_client):
    da = pytest.importorskip("dask.array")
    from cvxmetric import QwiseSupervised

    X, y = gaussian_classes(np.random.RandomState(0), N_SAMPLES, D, 3, 1.5)
    ref = QwiseSupervised(n_constraints=400, random_state=0).fit(X, y)
    est = QwiseSupervised(n_constraints=400, random_state=0).fit(
        da.from_array(X, chunks=(ROWS, D)), y)
    _same_optimum(est.result_, ref.result_)
