"""QwiseSupervised and Qwise under scikit-learn's ``array_api_dispatch``:
with the default ``solver="fast"`` a torch ``X`` (a torch ``preprocessor``
or torch tuples of points for Qwise) stays on its namespace for the dual
solver's passes (the constraints are built on a host copy), the fit
matches NumPy's and the fitted attributes are NumPy; ``transform`` of
torch input returns torch; the NumPy-only solvers refuse the argument by
name.  Run in a fresh interpreter (``SCIPY_ARRAY_API=1`` before SciPy is
imported)."""

import pytest

pytestmark = pytest.mark.array_api


def test_qwise_supervised_keeps_torch_input(dispatched_python):
    dispatched_python("""
import numpy as np, sklearn, torch
from cvxmetric import QwiseSupervised
X, y, T = labelled_points()
for kw in ({}, {"u": 1.0, "l": 4.0}):  # Eq. 8, and Eq. 11 with pairs
    ref = QwiseSupervised(random_state=0, **kw).fit(X, y)
    with sklearn.config_context(array_api_dispatch=True):
        est = QwiseSupervised(random_state=0, **kw).fit(T, torch.asarray(y))
        Z = est.transform(T)
    same_fit(est, ref, "qwise")
    info = est.result_.info
    assert info["device"] == "cpu", info
    assert info["transfers"]["to_device"] > 0, info["transfers"]
    assert isinstance(est.mahalanobis_matrix_, np.ndarray)
    assert isinstance(Z, torch.Tensor)
    np.testing.assert_allclose(Z.numpy(), est.transform(X), rtol=1e-10, atol=1e-12)
with sklearn.config_context(array_api_dispatch=True):
    for solver in ("exact", "subgradient"):
        try:
            QwiseSupervised(solver=solver).fit(T, y)
        except TypeError as exc:
            assert str(exc).startswith(
                f"X: QwiseSupervised(solver='{solver}') runs on NumPy"), exc
        else:
            raise AssertionError(solver + " took a torch X")
print("ok")
""")


def test_qwise_tuples_keep_torch_points(dispatched_python):
    dispatched_python("""
import numpy as np, sklearn, torch
from cvxmetric import Qwise
X, y, T, q, p, lab = quadruplet_sets()
for kw, with_pairs in (({}, False), ({"u": 1.0, "l": 4.0}, True)):
    ref = Qwise(preprocessor=X, **kw).fit(
        q, **({"pairs": p, "pair_labels": lab} if with_pairs else {}))
    with sklearn.config_context(array_api_dispatch=True):
        fits = [Qwise(preprocessor=T, **kw).fit(
                    q, **({"pairs": p, "pair_labels": lab} if with_pairs else {})),
                Qwise(**kw).fit(
                    T[q], **({"pairs": T[p], "pair_labels": lab} if with_pairs else {}))]
    for est in fits:
        same_fit(est, ref, "qwise")
with sklearn.config_context(array_api_dispatch=True):
    for arg, solver, est, data in (
            ("preprocessor", "exact", Qwise(solver="exact", preprocessor=T), q),
            ("quadruplets", "subgradient", Qwise(solver="subgradient"), T[q])):
        try:
            est.fit(data)
        except TypeError as exc:
            assert str(exc).startswith(
                f"{arg}: Qwise(solver='{solver}') runs on NumPy"), exc
        else:
            raise AssertionError(solver + " took a torch " + arg)
    try:
        Qwise(u=1.0, l=4.0).fit(T[q], pairs=X[p], pair_labels=lab)
    except ValueError as exc:
        assert str(exc).startswith("pairs: must be given the same way"), exc
    else:
        raise AssertionError("torch quadruplets with NumPy pairs were mixed")
print("ok")
""")
