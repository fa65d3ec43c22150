"""MMC's fast solvers on array-API namespaces (array-api-strict, PyTorch on
the CPU): the same certified optimum as NumPy, the pair sweeps on the data's
device in float64, bounded transfers (nothing of the pairs' size per
iteration); the exact path and Dask input are refused by name."""

import os
import subprocess
import sys

import numpy as np
import pytest

from cvxmetric._tolerances import tolerance
from cvxmetric.constraints import pairs_from_labels
from cvxmetric.mmc import MMCData
from cvxmetric.mmc.fast import (JACOBI, JACOBI_DIAGONAL, WHITEN, MMCNewton,
                                MMCProjectedGradient, _NewtonProblem)

pytestmark = pytest.mark.array_api

#: (diagonal, solver) of every ported method: the registry's ``fast`` (full
#: whitened, full in Jacobi units, diagonal) and ``newton``
CASES = {
    "fast-full": (False, MMCProjectedGradient),
    "fast-jacobi": (False, lambda: MMCProjectedGradient(precondition=False)),
    "fast-diagonal": (True, MMCProjectedGradient),
    "newton": (True, MMCNewton),
}


def _module(name):
    pytest.importorskip("array_api_compat")
    return pytest.importorskip(name)


def _instance(n=160, d=7, n_pairs=400, seed=0):
    """Gaussian classes with features on scales 0.01 to 100, and pairs:
    about n_pairs / 2 dissimilar ones, far more than d^2 floats."""
    rng = np.random.RandomState(seed)
    y = np.arange(n) % 4
    X = (rng.normal(scale=1.5, size=(4, d))[y] + rng.normal(size=(n, d))) \
        * np.logspace(-2, 2, d)
    pairs, labels = pairs_from_labels(y, n_pairs, random_state=seed)
    return X, pairs, labels


@pytest.mark.parametrize("name", ["array_api_strict", "torch"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_certified_objective_equals_numpy(name, case):
    mod = _module(name)
    diagonal, solver = CASES[case]
    X, pairs, labels = _instance()
    ref = solver().run(MMCData.create(X, pairs, labels, diagonal=diagonal))
    data = MMCData.create(mod.asarray(X), pairs, labels, diagonal=diagonal)
    assert not data.on_host and data.Z_D.dtype == data.xp.float64
    res = solver().run(data)
    assert ref.status == res.status == "optimal"
    rtol = tolerance("mmc", "newton" if case == "newton" else "fast")
    assert res.objective == pytest.approx(ref.objective, rel=rtol)
    assert res.certificate.rel_gap <= res.certificate.tol_gap
    assert isinstance(res.M, np.ndarray)
    np.testing.assert_allclose(res.M, ref.M, rtol=1e-4, atol=1e-4 * np.abs(ref.M).max())
    assert res.info["backend"].endswith(name.split("_")[0] if name == "torch" else name)


def _recording(data):
    """Record the size of every transfer of ``data`` from now on."""
    sizes = {"to_host": [], "to_device": []}
    t = data.transfers
    to_host, to_device = t.to_host, t.to_device

    def host(x):
        out = to_host(x)
        sizes["to_host"].append(out.nbytes)
        return out

    def device(a, xp, dev=None):
        sizes["to_device"].append(np.asarray(a).nbytes)
        return to_device(a, xp, dev)

    t.to_host, t.to_device = host, device
    return sizes


@pytest.mark.parametrize("case", sorted(CASES))
def test_transfers_are_small_and_bounded_per_iteration(case):
    torch = _module("torch")
    diagonal, solver = CASES[case]
    X, pairs, labels = _instance(n_pairs=1200)
    data = MMCData.create(torch.asarray(X), pairs, labels, diagonal=diagonal)
    n_D, d = data.n_dissimilar, data.n_features
    assert n_D > 4 * d * d  # an n-sized array would stand out
    built = data.transfers.as_dict()
    # the build sends X's pair indices once and brings back d-sized results
    assert built["to_device_bytes"] <= 2 * pairs.nbytes + 8 * d * d * built["to_device"]
    sizes = _recording(data)
    res = solver().run(data)
    assert res.status == "optimal"
    # the solve: only (d, d), (d,) arrays and stacked scalars cross
    assert max(sizes["to_host"]) <= 8 * d * d
    assert max(sizes["to_device"]) <= 8 * d * d
    # a few per iteration and line-search trial (Newton's trials are not
    # in its info: its allowance per iteration is larger)
    steps = res.n_iter + res.info.get("n_backtracks", 0) + 1
    assert len(sizes["to_host"]) <= 40 + 20 * steps
    assert len(sizes["to_device"]) <= 20 + 10 * steps
    t = res.info["transfers"]
    assert t["to_host"] == built["to_host"] + len(sizes["to_host"])


def _fd_check(f, grad, x, rng, h=1e-6, n=4):
    for _ in range(n):
        e = rng.standard_normal(x.shape)
        if x.ndim == 2:
            e = 0.5 * (e + e.T)
        fd = (f(x + h * e) - f(x - h * e)) / (2 * h)
        assert fd == pytest.approx(float(np.sum(grad * e)), rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("change", [WHITEN, JACOBI, JACOBI_DIAGONAL], ids=lambda c: c.name)
def test_torch_gradient_of_g_matches_finite_differences(change):
    torch = _module("torch")
    X, pairs, labels = _instance(n_pairs=200)
    data = MMCData.create(torch.asarray(X), pairs, labels,
                          diagonal=change is JACOBI_DIAGONAL)
    sp, _, _ = change.apply(data, None)
    rng = np.random.default_rng(1)
    x = sp.start()
    x = x + 0.1 * np.abs(x).max() * (np.diag(rng.random(x.shape[0])) if x.ndim == 2
                                     else rng.random(x.shape))
    grad = sp.grad(sp.dist(x))
    _fd_check(lambda z: sp.g(sp.dist(z)), grad, x, rng)
    # and the same gradient as NumPy
    ref, _, _ = change.apply(MMCData.create(X, pairs, labels, diagonal=data.diagonal), None)
    np.testing.assert_allclose(grad, ref.grad(ref.dist(x)), rtol=1e-10,
                               atol=1e-12 * np.abs(grad).max())


def test_torch_newton_derivatives_match_finite_differences():
    torch = _module("torch")
    X, pairs, labels = _instance(n_pairs=200)
    prob = _NewtonProblem(MMCData.create(torch.asarray(X), pairs, labels, diagonal=True))
    rng = np.random.default_rng(2)
    w = 0.5 * (1.0 + rng.random(len(prob.K))) / len(prob.K)
    grad, H = prob.derivatives(w, prob.dist(w))
    _fd_check(lambda v: prob.h(v)[0], grad, w, rng)
    for k in range(2):  # columns of the Hessian against differences of the gradient
        e = np.zeros_like(w)
        e[k] = 1e-6
        fd = (prob.derivatives(w + e, prob.dist(w + e))[0]
              - prob.derivatives(w - e, prob.dist(w - e))[0]) / 2e-6
        np.testing.assert_allclose(H[:, k], fd, rtol=1e-5, atol=1e-7 * np.abs(H).max())


@pytest.mark.parametrize("diagonal", [False, True])
def test_float32_input_is_certified_in_float64(diagonal):
    torch = _module("torch")
    X, pairs, labels = _instance()
    X32 = torch.asarray(X, dtype=torch.float32)
    data = MMCData.create(X32, pairs, labels, diagonal=diagonal)
    assert data.Z_D.dtype == torch.float64 and data.psi.dtype == torch.float64
    res = MMCProjectedGradient().run(data)
    # the float64 problem on the float32-rounded data, certified
    ref = MMCProjectedGradient().run(MMCData.create(
        X32.numpy().astype(np.float64), pairs, labels, diagonal=diagonal))
    assert res.status == ref.status == "optimal"
    assert res.objective == pytest.approx(ref.objective, rel=tolerance("mmc", "fast"))
    assert res.certificate.rel_gap <= res.certificate.tol_gap


def test_exact_path_and_dask_are_refused_by_name():
    strict = _module("array_api_strict")
    from cvxmetric.formulations import formulation

    X, pairs, labels = _instance(n_pairs=100)
    data = MMCData.create(strict.asarray(X), pairs, labels)
    with pytest.raises(TypeError, match="data: MMC's exact solve"):
        formulation("mmc").solve_exact(data)
    da = pytest.importorskip("dask.array")
    with pytest.raises(TypeError, match="X: MMC has no Dask back end"):
        MMCData.create(da.from_array(X, chunks=(40, 7)), pairs, labels)


def test_device_input_is_validated_by_name():
    strict = _module("array_api_strict")
    X, pairs, labels = _instance(n_pairs=100)
    bad = X.copy()
    bad[int(pairs[0, 0]), 0] = np.nan
    with pytest.raises(ValueError, match="X: contains NaN"):
        MMCData.create(strict.asarray(bad), pairs, labels)
    dup = X.copy()
    dup[int(pairs[0, 1])] = dup[int(pairs[0, 0])]
    with pytest.raises(ValueError, match="pairs: 1 pair"):
        MMCData.create(strict.asarray(dup), pairs, labels)
    with pytest.raises(ValueError, match="pairs: negative index"):
        MMCData.create(strict.asarray(X), -pairs, labels)


def test_estimator_keeps_the_namespace_under_array_api_dispatch():
    _module("torch")
    # scikit-learn's dispatch needs SciPy's array API flag before import
    code = """
import numpy as np, sklearn, torch
from sklearn.datasets import load_wine
from cvxmetric.mmc import MMCSupervised
X, y = load_wine(return_X_y=True)
for diagonal in (False, True):
    kw = dict(solver="fast", diagonal=diagonal, random_state=0)
    with sklearn.config_context(array_api_dispatch=True):
        est = MMCSupervised(**kw).fit(torch.asarray(X), torch.asarray(y))
    ref = MMCSupervised(**kw).fit(X, y)
    assert est.result_.info["backend"].endswith("torch"), est.result_.info
    assert est.status_ == ref.status_ == "optimal"
    assert isinstance(est.components_, np.ndarray)
    assert abs(est.objective_ - ref.objective_) <= 1e-5 * ref.objective_
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "SCIPY_ARRAY_API": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"
