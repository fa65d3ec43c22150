"""LDML's estimators under scikit-learn's ``array_api_dispatch``: the
solvers whose passes run on an array-API namespace ("fast", "lowrank",
"auto") keep a torch ``X`` there and learn NumPy's metric; the NumPy-only
paths ("exact", the kernel form, MildML, LDML*) refuse it by name.

Each test runs in a fresh interpreter (``dispatched_python``): the
dispatch needs ``SCIPY_ARRAY_API=1`` before SciPy is imported."""

import pytest

pytestmark = pytest.mark.array_api

_SETUP = """
import warnings
import numpy as np, sklearn, torch
from cvxmetric.ldml import LDML, LDMLSupervised, LDMLStar, MildML
rng = np.random.default_rng(0)
X = rng.standard_normal((48, 4)); X[:, 0] *= 20.0; X[7] = X[3]
y = rng.integers(0, 3, 48)
pairs = rng.integers(0, 48, (140, 2)); pairs = pairs[np.any(X[pairs[:, 0]] != X[pairs[:, 1]], axis=1)]
s = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)

def same(est, ref):
    same_fit(est, ref, "ldml")
    assert set(est.result_.info["transfers"]) >= {"to_host", "to_device"}
    assert est.lam_ == pytest_approx(ref.lam_)

def pytest_approx(v):
    class A:
        def __eq__(self, o):
            return abs(o - v) <= 1e-9 * max(1.0, abs(v))
    return A()
"""


def test_ldml_supervised_keeps_a_torch_x(dispatched_python):
    dispatched_python(_SETUP + """
for solver in ("fast", "lowrank", "auto"):
    ref = LDMLSupervised(solver=solver, random_state=0).fit(X, y)
    with sklearn.config_context(array_api_dispatch=True):
        est = LDMLSupervised(solver=solver, random_state=0).fit(torch.asarray(X),
                                                                torch.asarray(y))
        Z = est.transform(torch.asarray(X))
    same(est, ref)
    assert isinstance(Z, torch.Tensor) and Z.dtype == torch.float64
    np.testing.assert_allclose(Z.numpy(), X @ est.components_.T, rtol=1e-12, atol=1e-9)
print("ok")
""")


def test_ldml_pairs_keep_a_torch_preprocessor_and_torch_points(dispatched_python):
    dispatched_python(_SETUP + """
for solver in ("fast", "lowrank"):
    ref = LDML(solver=solver, preprocessor=X, random_state=0).fit(pairs, s)
    with sklearn.config_context(array_api_dispatch=True):
        est = LDML(solver=solver, preprocessor=torch.asarray(X), random_state=0).fit(
            pairs, torch.asarray(s))
        pts = LDML(solver=solver, random_state=0).fit(torch.asarray(X[pairs]), s)
        pred = est.predict(pairs)
        proba = est.predict_proba(pairs)
        dist = pts.pair_distance(torch.asarray(X[pairs]))
    same(est, ref)
    same(pts, ref)
    assert isinstance(pred, torch.Tensor) and isinstance(dist, torch.Tensor)
    assert isinstance(proba, torch.Tensor)
    np.testing.assert_allclose(proba.numpy(), ref.predict_proba(pairs), atol=1e-5)
    np.testing.assert_array_equal(pred.numpy(), ref.predict(pairs))
    np.testing.assert_allclose(dist.numpy(), ref.pair_distance(pairs), rtol=1e-5)
print("ok")
""")


def test_numpy_only_ldml_paths_refuse_a_device_x_by_name(dispatched_python):
    dispatched_python(_SETUP + """
T = torch.asarray(X)
bags = [np.arange(k, k + 4) for k in range(0, 48, 4)]
labels = [[k % 3] for k in range(12)]
cases = [("X", "LDMLSupervised(solver='exact')", LDMLSupervised(solver="exact"), (T, y)),
         ("X", "LDMLSupervised(kernel='rbf')",
          LDMLSupervised(solver="lowrank", kernel="rbf"), (T, y)),
         ("preprocessor", "LDML(solver='exact')", LDML(solver="exact", preprocessor=T),
          (pairs, s)),
         ("pairs", "LDML(solver='exact')", LDML(solver="exact"), (T[pairs], s)),
         ("preprocessor", "MildML", MildML(preprocessor=T), (bags, labels)),
         ("preprocessor", "LDMLStar", LDMLStar(preprocessor=T), (bags, labels)),
         ("bags[0]", "MildML", MildML(), ([T[b] for b in bags], labels))]
with sklearn.config_context(array_api_dispatch=True):
    for arg, name, est, data in cases:
        try:
            est.fit(*data)
        except TypeError as exc:
            assert str(exc).startswith(arg + ": " + name + " runs on NumPy"), exc
        else:
            raise AssertionError(name + " took a torch " + arg)
print("ok")
""")
