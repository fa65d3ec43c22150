"""SLR on array-API namespaces (array-api-strict, PyTorch on the CPU): Newton
and Algorithm 1 reach the same certified optimum as NumPy, the sketched
Algorithms 2 and 3 the same iterates on the same random draws; the passes
run on the data's device with bounded transfers; the methods without a
device path refuse such input by name."""

import subprocess
import sys

import numpy as np
import pytest

from cvxmetric._tolerances import MATRIX_RTOL, tolerance
from cvxmetric.slr import SLRData
from cvxmetric.slr.fast import AdaptiveRegression, SemismoothNewton
from cvxmetric.slr.lowrank import lowrank_slr
from cvxmetric.slr.randomized import eq4_objective_factored, randomized_slr

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


# -- the sketched algorithms (Algorithms 2 and 3) ---------------------------

_SKETCHED = {
    "alg2-columns": lambda X, y, **kw: randomized_slr(X, y, 40, "columns", n_iter=3,
                                                      random_state=0, **kw),
    "alg2-gaussian": lambda X, y, **kw: randomized_slr(X, y, 20, "gaussian", n_iter=2,
                                                       random_state=0, **kw),
    "alg3": lambda X, y, **kw: lowrank_slr(X, y, 4, n_iter=3, random_state=0, **kw),
    "alg3-columns": lambda X, y, **kw: lowrank_slr(X, y, 4, n_iter=3, n_sketch=40,
                                                   random_state=0, **kw),
    "alg3-gaussian": lambda X, y, **kw: lowrank_slr(X, y, 4, n_iter=2, n_sketch=40,
                                                    sketch="gaussian", random_state=0,
                                                    **kw),
    "slr-fixed": lambda X, y, **kw: lowrank_slr(X, y, 3, n_iter=3, target="fixed",
                                                random_state=0, **kw),
}
_FAMILY_TOL = tolerance("slr", "lowrank")


def _history(res):
    return np.asarray(res.info.get("sampled_objective", res.info.get("objective_history")))


@pytest.fixture(scope="module")
def sketched_problem():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((400, 10)) * np.logspace(-1, 1, 10)
    y = rng.integers(0, 4, 400)
    return X, y


@pytest.mark.parametrize("module", _namespaces() or [pytest.param(
    None, marks=pytest.mark.skip(reason="the [array-api] extra is not installed"))])
@pytest.mark.parametrize("case", sorted(_SKETCHED))
def test_sketched_algorithms_match_numpy_on_the_same_draws(sketched_problem, module,
                                                           case):
    X, y = sketched_problem
    run = _SKETCHED[case]
    ref = run(X, y)
    got = run(_convert(module, X), y)
    # the same random draws (on the host), the same iterations to round-off
    assert got.objective == pytest.approx(ref.objective, rel=_FAMILY_TOL)
    assert np.allclose(_history(got), _history(ref), rtol=_FAMILY_TOL)
    assert isinstance(got.M, np.ndarray)
    assert np.allclose(got.M, ref.M, rtol=MATRIX_RTOL, atol=MATRIX_RTOL * np.abs(ref.M).max())
    assert got.info["backend"].endswith(module) and ref.info["backend"] == "numpy"
    assert ref.info["transfers"]["to_device"] == 0 == ref.info["transfers"]["to_host"]
    assert got.status == ref.status == "max_iter_reached"


def _per_iteration(run, Xd, y, sketch_bytes=0):
    """Bytes each way per iteration: the difference of 3 and 1 iterations."""
    one = run(Xd, y, n_iter=1).info["transfers"]
    three = run(Xd, y, n_iter=3).info["transfers"]
    return ((three["to_device_bytes"] - one["to_device_bytes"]) / 2 - sketch_bytes,
            (three["to_host_bytes"] - one["to_host_bytes"]) / 2,
            (three["to_host"] - one["to_host"]) / 2)


@pytest.mark.parametrize("module", _namespaces() or [pytest.param(
    None, marks=pytest.mark.skip(reason="the [array-api] extra is not installed"))])
def test_sketched_transfers_have_nothing_n_sized_per_iteration(sketched_problem, module):
    X, y = sketched_problem
    n, m = X.shape[0], 40
    Xd = _convert(module, X)
    n_vector = 8 * n  # one float64 value per sample
    cases = [
        # column sampling: the m sampled indices of each side go down
        (lambda X, y, n_iter: randomized_slr(X, y, m, "columns", n_iter=n_iter,
                                             random_state=0), 0),
        # exact alternating steps: nothing goes down at all
        (lambda X, y, n_iter: lowrank_slr(X, y, 4, n_iter=n_iter, random_state=0), 0),
        (lambda X, y, n_iter: lowrank_slr(X, y, 4, n_iter=n_iter, n_sketch=m,
                                          random_state=0), 0),
        # a Gaussian sketch is drawn on the host (NumPy's draws): its n x m
        # entries per side are the only n-sized move
        (lambda X, y, n_iter: randomized_slr(X, y, m, "gaussian", n_iter=n_iter,
                                             random_state=0), 2 * 8 * n * m),
    ]
    for run, sketch_bytes in cases:
        down, up, up_count = _per_iteration(run, Xd, y, sketch_bytes)
        assert 0 <= down < n_vector and 0 < up < n_vector
        assert up_count <= 8  # eigenvalues for the ranks, the sums of the passes


@pytest.mark.parametrize("module", _namespaces() or [pytest.param(
    None, marks=pytest.mark.skip(reason="the [array-api] extra is not installed"))])
def test_sketched_precisions_on_the_device(sketched_problem, module):
    X, y = sketched_problem
    lib = __import__(module)
    # float32 input is cast to float64 on its device: the float64 problem
    # on the float32-rounded data, as NumPy solves it
    X32 = X.astype(np.float32)
    ref = lowrank_slr(X32.astype(float), y, 4, n_iter=3, random_state=0)
    got = lowrank_slr(lib.asarray(X32), y, 4, n_iter=3, random_state=0)
    assert got.objective == pytest.approx(ref.objective, rel=_FAMILY_TOL)
    # float32 pair products (sums in float64); the reported Eq. 4 is float64
    ref = randomized_slr(X, y, 40, "columns", n_iter=3, random_state=0, dtype="float32")
    got = randomized_slr(_convert(module, X), y, 40, "columns", n_iter=3,
                         random_state=0, dtype="float32")
    assert got.objective == pytest.approx(ref.objective, rel=1e-5)
    # above objective_max_n: the same row-sampled estimate
    ref = randomized_slr(X, y, 40, "columns", n_iter=2, random_state=0, objective_max_n=100)
    got = randomized_slr(_convert(module, X), y, 40, "columns", n_iter=2, random_state=0,
                         objective_max_n=100)
    assert np.isnan(got.objective)
    assert got.info["objective_estimate"] == pytest.approx(
        ref.info["objective_estimate"], rel=_FAMILY_TOL)
    L, R = ref.info["L"], ref.info["R"]
    assert eq4_objective_factored(_convert(module, X), y, L, R) == pytest.approx(
        eq4_objective_factored(X, y, L, R), rel=1e-12)


def test_numpy_only_methods_refuse_other_namespaces_by_name(problem):
    strict = pytest.importorskip("array_api_strict")
    pytest.importorskip("array_api_compat")
    from cvxmetric.experiments.slr.baselines import slr_whole
    from cvxmetric.slr.oasis import oasis
    from cvxmetric.slr.randomized import theorem1_check

    X, y = problem
    Xs = strict.asarray(X)
    with pytest.raises(TypeError, match="X: OASIS runs on NumPy arrays only"):
        oasis(Xs, y, 10)
    with pytest.raises(TypeError, match="X: slr_whole runs on NumPy arrays only"):
        slr_whole(Xs, y)
    with pytest.raises(TypeError, match="X: theorem1_check runs on NumPy arrays only"):
        theorem1_check(Xs, y, 20)


@pytest.mark.dask
def test_sketched_algorithms_refuse_dask_by_name(problem):
    da = pytest.importorskip("dask.array")
    X, y = problem
    with pytest.raises(TypeError, match="X: SLR's sketched algorithms have no Dask"):
        lowrank_slr(da.from_array(X, chunks=(60, 10)), y, 2)


def test_sketched_numpy_runs_import_no_optional_library():
    code = """
import numpy as np
from cvxmetric.slr import lowrank_slr, randomized_slr
from cvxmetric._backend import loaded_backends
rng = np.random.default_rng(0)
X = rng.standard_normal((60, 4)); y = rng.integers(0, 2, 60)
randomized_slr(X, y, 20, n_iter=1, random_state=0)
lowrank_slr(X, y, 2, n_iter=1, random_state=0)
print(",".join(loaded_backends()))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == ""


def test_estimator_keeps_the_namespace_under_array_api_dispatch():
    pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    # scikit-learn's dispatch needs SciPy's array API flag before import
    code = """
import warnings
import numpy as np, sklearn, torch
from cvxmetric import SLR
warnings.simplefilter("ignore")  # the sketched fits' ConvergenceWarning
rng = np.random.default_rng(0)
X = rng.standard_normal((120, 6)); y = rng.integers(0, 3, 120)
with sklearn.config_context(array_api_dispatch=True):
    est = SLR().fit(torch.asarray(X), torch.asarray(y))
ref = SLR().fit(X, y)
assert est.result_.info["backend"].endswith("torch"), est.result_.info["backend"]
assert est.status_ == "optimal" and isinstance(est.bilinear_matrix_, np.ndarray)
assert abs(est.objective_ - ref.objective_) <= 1e-9 * ref.objective_
# the sketched algorithms keep it too, with the same draws as NumPy
with sklearn.config_context(array_api_dispatch=True):
    est = SLR(solver="lowrank", rank=3, n_iter=2, random_state=0).fit(
        torch.asarray(X), torch.asarray(y))
ref = SLR(solver="lowrank", rank=3, n_iter=2, random_state=0).fit(X, y)
assert est.result_.info["backend"].endswith("torch"), est.result_.info["backend"]
assert abs(est.objective_ - ref.objective_) <= 1e-9 * ref.objective_
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__("os").environ, "SCIPY_ARRAY_API": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"
