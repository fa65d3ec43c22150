"""SLR's Newton and Algorithm 1 on array-API namespaces (array-api-strict,
PyTorch on the CPU): the same certified optimum as NumPy, the passes on the
data's device, bounded transfers; the sketched algorithms refuse such input
by name."""

import subprocess
import sys

import numpy as np
import pytest

from cvxmetric.slr import SLRData
from cvxmetric.slr.fast import AdaptiveRegression, SemismoothNewton

pytestmark = pytest.mark.array_api


def _namespaces():
    out = []
    for module in ("array_api_strict", "torch"):
        try:
            __import__(module)
            __import__("array_api_compat")
        except ImportError:
            continue
        out.append(module)
    return out


def _convert(module, a):
    lib = __import__(module)
    return lib.asarray(a)


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((240, 10)) * np.logspace(-2, 2, 10)  # raw scales
    y = rng.integers(0, 3, 240)
    return X, y


@pytest.mark.parametrize("module", _namespaces() or [pytest.param(
    None, marks=pytest.mark.skip(reason="the [array-api] extra is not installed"))])
@pytest.mark.parametrize("solver", [SemismoothNewton(hessian="dense"),
                                    SemismoothNewton(hessian="cg"),
                                    AdaptiveRegression()], ids=["dense", "cg", "alg1"])
def test_same_certified_optimum_as_numpy(problem, module, solver):
    X, y = problem
    ref = solver.run(SLRData.from_labels(X, y))
    data = SLRData.from_labels(_convert(module, X), y)
    assert not data.on_host and type(data.U).__module__.split(".")[0] == module
    got = solver.run(data)
    assert got.status == ref.status == "optimal"
    assert got.certificate.passed
    assert got.objective == pytest.approx(ref.objective, rel=1e-9)
    assert np.allclose(got.M, ref.M, rtol=1e-5, atol=1e-8 * np.abs(ref.M).max())
    info = got.info
    assert info["backend"].endswith(module) and info["transfers"]["to_device"] > 0
    # only small matrices cross: never an (n, r) array, let alone (n, n)
    n, r = X.shape[0], data.rank
    per_transfer = info["transfers"]["to_host_bytes"] / info["transfers"]["to_host"]
    assert per_transfer < n * r * 8


@pytest.mark.parametrize("module", _namespaces() or [pytest.param(
    None, marks=pytest.mark.skip(reason="the [array-api] extra is not installed"))])
def test_passes_match_numpy_gradient_and_hessian_products(problem, module):
    X, y = problem
    host = SLRData.from_labels(X, y)
    dev = SLRData.from_labels(_convert(module, X), y)
    rng = np.random.default_rng(1)
    Z = host.least_squares_Z()
    # the SVD's signs may differ between libraries: compare in M's units
    M = host.M_of_Z(Z)
    Zd = dev.Z_of_M(M)
    f0, G0, _, masks0, _ = host.pass_masks(Z)
    f1, G1, _, masks1, _ = dev.pass_masks(Zd)
    assert f1 == pytest.approx(f0, rel=1e-10)
    assert host.objective(M) == pytest.approx(dev.objective(M), rel=1e-10)
    # the gradient is checked against finite differences on the device path
    D = rng.standard_normal(Zd.shape)
    D = D + D.T
    eps = 1e-6
    fd = (dev.evaluate(Zd + eps * D)[0] - dev.evaluate(Zd - eps * D)[0]) / (2 * eps)
    assert fd == pytest.approx(float(np.sum(G1 * D)), rel=1e-6)


@pytest.mark.parametrize("module", _namespaces() or [pytest.param(
    None, marks=pytest.mark.skip(reason="the [array-api] extra is not installed"))])
def test_single_precision_input_is_certified_in_float64(problem, module):
    X, y = problem
    lib = __import__(module)
    X32 = lib.asarray(X.astype(np.float32))
    data = SLRData.from_labels(X32, y)
    assert data.U.dtype == __import__("array_api_compat").array_namespace(X32).float64
    res = SemismoothNewton().run(data)
    ref = SemismoothNewton().run(SLRData.from_labels(X.astype(np.float32).astype(float), y))
    assert res.status == "optimal"
    assert res.objective == pytest.approx(ref.objective, rel=1e-9)


def test_sketched_algorithms_refuse_other_namespaces(problem):
    strict = pytest.importorskip("array_api_strict")
    pytest.importorskip("array_api_compat")
    from cvxmetric.slr.lowrank import lowrank_slr
    from cvxmetric.slr.oasis import oasis

    X, y = problem
    Xs = strict.asarray(X)
    with pytest.raises(TypeError, match="X: SLR's sketched algorithms run"):
        lowrank_slr(Xs, y, 2)
    with pytest.raises(TypeError, match="X: SLR's sketched algorithms run"):
        oasis(Xs, y, 10)


def test_estimator_keeps_the_namespace_under_array_api_dispatch():
    pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    # scikit-learn's dispatch needs SciPy's array API flag before import
    code = """
import numpy as np, sklearn, torch
from cvxmetric import SLR
rng = np.random.default_rng(0)
X = rng.standard_normal((120, 6)); y = rng.integers(0, 3, 120)
with sklearn.config_context(array_api_dispatch=True):
    est = SLR().fit(torch.asarray(X), torch.asarray(y))
ref = SLR().fit(X, y)
assert est.result_.info["backend"].endswith("torch"), est.result_.info["backend"]
assert est.status_ == "optimal" and isinstance(est.bilinear_matrix_, np.ndarray)
assert abs(est.objective_ - ref.objective_) <= 1e-9 * ref.objective_
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__("os").environ, "SCIPY_ARRAY_API": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"
