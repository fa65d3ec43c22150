"""The Qwise vector model's projected Newton method (Algorithm 2) on
array-API namespaces (array-api-strict, PyTorch on the CPU): the same
certified optimum as NumPy, counted transfers (nothing of the number of
terms after construction), float64 certificates of float32 input, and the
exact path refusing by name."""

import subprocess
import sys

import numpy as np
import pytest

from cvxmetric._backend import to_numpy
from cvxmetric._tolerances import tolerance
from cvxmetric.bench.qwise import vector_bench_data
from cvxmetric.constraints import (
    LabeledPairs,
    Quadruplets,
    pairs_from_labels,
    quadruplets_from_labels,
)
from cvxmetric.qwise_vector import (
    ProjectedNewton,
    QwiseVectorData,
    QwiseVectorModel,
    declared_problem,
    solve_exact,
)

pytestmark = [pytest.mark.array_api, pytest.mark.usefixtures("one_torch_thread")]

NAMESPACES = ("array_api_strict", "torch")
NEWTON_RTOL = tolerance("qwise_vector", "newton")


def _instance(psi="squared", *, n=60, d=6, n_quads=400, n_pairs=80, dtype=float):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, n)
    X = rng.normal(size=(n, d))
    X[:, 0] += labels
    X = X.astype(dtype)
    Xf = X.astype(float)
    delta = (np.arange(n_quads) % 2 == 0).astype(float)
    quads = Quadruplets.create(Xf, quadruplets_from_labels(labels, n_quads, random_state=0),
                               delta)
    p, lab = pairs_from_labels(labels, n_pairs, random_state=1)
    data = QwiseVectorData.from_sets(quads, LabeledPairs.create(Xf, p, lab), psi=psi,
                                     loss="huber", h=0.05, C_q=0.7, C_p=1.3)
    return X, data


def _module(name):
    pytest.importorskip("array_api_compat")
    return pytest.importorskip(name)


def _on(name, data, X):
    # a writable copy: torch warns on a read-only NumPy buffer
    return data.on_device(_module(name).asarray(np.array(X)))


def _same_optimum(res, ref):
    assert ref.status == res.status == "optimal"
    assert res.objective == pytest.approx(ref.objective, rel=NEWTON_RTOL)
    assert res.certificate.rel_gap <= NEWTON_RTOL
    assert isinstance(res.M, np.ndarray) and isinstance(res.info["w"], np.ndarray)
    np.testing.assert_allclose(res.M, ref.M, atol=1e-6 * max(np.abs(ref.M).max(), 1.0))
    assert res.info["b"] == pytest.approx(ref.info["b"], abs=1e-6)


def _check_transfers(res, X, data):
    """Construction moves ``X`` to the host once (the check of the samples)
    and the index sets, margins and pair signs to the device; after it only
    vectors of ``d + 1`` entries and the ``(|F|, |F|)`` Newton system move:
    per line-search trial the point out, per iteration the adjoint and the
    Newton system back (the free set out when some variable is bound)."""
    t = res.info["transfers"]
    e = data.n_features + 1
    N, P = data.n_quadruplets, data.n_pairs
    assert t["to_host"] <= 4 * res.n_iter + 10
    assert t["to_host_bytes"] <= X.astype(float).nbytes + 8 * e * e * t["to_host"]
    # nothing of the number of terms comes back after the samples' check
    assert 8 * e * e < 8 * (N + P)
    construction = 8 * (4 * N + 2 * P) + 8 * (N + P)
    assert t["to_device_bytes"] <= construction + 8 * e * t["to_device"]
    # one point per trial (a halving is rare here), the free set
    assert t["to_device"] <= 10 + 4 * res.n_iter


@pytest.mark.parametrize("psi", ["squared", "linear"])
@pytest.mark.parametrize("name", NAMESPACES)
def test_newton_certifies_the_numpy_objective(name, psi):
    X, data = _instance(psi)
    ref = ProjectedNewton().run(data)
    res = ProjectedNewton().run(_on(name, data, X))
    _same_optimum(res, ref)
    assert res.info["backend"].endswith("torch" if name == "torch" else name)
    _check_transfers(res, X, data)


@pytest.mark.parametrize("name", NAMESPACES)
def test_feature_scaling_and_printed_algorithm(name):
    """Features far from unit scale (the reduction FeatureScaling on the
    device), and the printed unit step without continuation."""
    data = vector_bench_data(5, 600)
    X = data._source[0]
    assert np.any(data.feature_scale() != 1.0)
    ref = ProjectedNewton().run(data)
    res = ProjectedNewton().run(_on(name, data, X))
    _same_optimum(res, ref)
    assert "feature_scale" in res.info
    _check_transfers(res, X, data)
    X, small = _instance("linear")
    solver = ProjectedNewton(line_search=False, continuation=False)
    _same_optimum(solver.run(_on(name, small, X)), solver.run(small))


@pytest.mark.parametrize("name", NAMESPACES)
def test_float32_input_is_certified_in_float64(name):
    X, data = _instance(dtype=np.float32)
    dev = _on(name, data, X)
    assert dev.Z.dtype == dev.xp.float64 and dev.c.dtype == dev.xp.float64
    ref = ProjectedNewton().run(data)
    res = ProjectedNewton().run(dev)
    _same_optimum(res, ref)
    # the certificate is the float64 one of the float32-rounded data
    omega = np.append(res.info["w"], res.info["b"])
    cert = data.certificate(omega, solver="check")
    assert cert.objective == pytest.approx(res.objective, rel=1e-12)
    assert cert.rel_gap <= NEWTON_RTOL


@pytest.mark.parametrize("name", NAMESPACES)
def test_device_certificate_and_bounds_match_numpy(name):
    """The device's features are NumPy's, bit for bit; its objective, dual
    bound and smoothing bounds of a point are NumPy's to round-off, for both
    losses."""
    X, data = _instance()
    dev = _on(name, data, X)
    np.testing.assert_array_equal(to_numpy(dev.Z), data.Z)
    np.testing.assert_array_equal(to_numpy(dev.P), data.P)
    omega = np.linspace(0.0, 1.0, data.n_features + 1)
    for loss in ("huber", "hinge"):
        host = data.with_loss(loss)
        dev = _on(name, host, X)
        a = host.certificate(omega, solver="check")
        b = dev.certificate(omega, solver="check")
        assert b.objective == pytest.approx(a.objective, rel=1e-13)
        assert b.dual_bound == pytest.approx(a.dual_bound, rel=1e-13)
        assert dev.smoothing_bounds() == pytest.approx(host.smoothing_bounds())


@pytest.mark.parametrize("name", NAMESPACES)
def test_exact_path_refuses_by_name(name):
    X, data = _instance()
    dev = _on(name, data, X)
    for call in (solve_exact, QwiseVectorModel, declared_problem):
        with pytest.raises(TypeError, match="X: Qwise's vector exact"):
            call(dev)


def test_on_device_checks_the_samples():
    X, data = _instance()
    torch = _module("torch")
    with pytest.raises(ValueError, match="X: expected the problem's samples"):
        data.on_device(torch.asarray(X[:10]))
    with pytest.raises(ValueError, match="X: its values differ"):
        data.on_device(torch.asarray(X + 1.0))
    # a caller's host copy of X (an estimator's) is checked instead of a
    # second copy, and counted as the one move of X to the host
    with pytest.raises(ValueError, match="X: its values differ"):
        data.on_device(torch.asarray(X), host_copy=np.asarray(X) + 1.0)
    for copy in (None, np.array(X, dtype=float)):
        t = data.on_device(torch.asarray(X), host_copy=copy).transfers
        assert (t.to_host_count, t.to_host_bytes) == (1, X.astype(float).nbytes)
    features = QwiseVectorData.from_features(data.Z, 1.0, loss="huber")
    with pytest.raises(ValueError, match="X: on_device builds the features"):
        features.on_device(torch.asarray(X))
    with pytest.raises(ValueError, match="X: on_device builds the features"):
        data.scaled(np.full(data.n_features, 2.0)).on_device(torch.asarray(X))
    da = pytest.importorskip("dask.array")
    with pytest.raises(TypeError, match="X: the Qwise vector model has no Dask"):
        data.on_device(da.from_array(X))


def test_numpy_run_imports_no_optional_array_library():
    code = ("import cvxmetric\n"
            "from cvxmetric.bench.qwise import vector_bench_data\n"
            "from cvxmetric.qwise_vector import ProjectedNewton\n"
            "res = ProjectedNewton().run(vector_bench_data(5, 300))\n"
            "assert res.status == 'optimal' and 'transfers' not in res.info\n"
            "from cvxmetric._backend import loaded_backends\n"
            "print(','.join(loaded_backends()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == ""
