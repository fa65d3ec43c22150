"""QwiseVectorSupervised and QwiseVector under scikit-learn's
``array_api_dispatch``: with ``solver="newton"`` a torch ``X`` (a torch
``preprocessor`` or torch tuples of points for QwiseVector) stays on its
namespace for Algorithm 2's passes (the constraints are built on a host
copy), the fit matches NumPy's to the family's Newton tolerance and the
fitted attributes are NumPy; ``transform`` of torch input returns torch;
the exact path refuses the argument by name.  Run in a fresh interpreter
(``SCIPY_ARRAY_API=1`` before SciPy is imported)."""

import pytest

pytestmark = pytest.mark.array_api


def test_qwise_vector_supervised_keeps_torch_input(dispatched_python):
    dispatched_python("""
import numpy as np, sklearn, torch
from cvxmetric import QwiseVectorSupervised
X, y, T = labelled_points()
for kw in ({}, {"C_p": 0.0}):  # with the pairs (threshold b), and without
    ref = QwiseVectorSupervised(solver="newton", random_state=0, **kw).fit(X, y)
    with sklearn.config_context(array_api_dispatch=True):
        est = QwiseVectorSupervised(solver="newton", random_state=0, **kw).fit(
            T, torch.asarray(y))
        Z = est.transform(T)
    same_fit(est, ref, "qwise_vector", "newton")
    info = est.result_.info
    assert info["device"] == "cpu", info
    assert info["transfers"]["to_device"] > 0, info["transfers"]
    assert isinstance(est.coef_, np.ndarray), type(est.coef_)
    assert isinstance(Z, torch.Tensor)
    np.testing.assert_allclose(Z.numpy(), est.transform(X), rtol=1e-10, atol=1e-12)
with sklearn.config_context(array_api_dispatch=True):
    try:
        QwiseVectorSupervised(solver="exact").fit(T, y)
    except TypeError as exc:
        assert str(exc).startswith(
            "X: QwiseVectorSupervised(solver='exact') runs on NumPy"), exc
    else:
        raise AssertionError("exact took a torch X")
print("ok")
""")


def test_qwise_vector_tuples_keep_torch_points(dispatched_python):
    dispatched_python("""
import numpy as np, sklearn, torch
from cvxmetric import QwiseVector, quadruplets_from_labels
X, y, T, q, p, lab = quadruplet_sets()
for psi, with_pairs in (("squared", False), ("squared", True), ("linear", True)):
    kw = {"pairs": p, "pair_labels": lab} if with_pairs else {}
    ref = QwiseVector(psi=psi, solver="newton", preprocessor=X).fit(q, **kw)
    with sklearn.config_context(array_api_dispatch=True):
        fits = [QwiseVector(psi=psi, solver="newton", preprocessor=T).fit(q, **kw),
                QwiseVector(psi=psi, solver="newton").fit(
                    T[q], **({"pairs": T[p], "pair_labels": lab} if with_pairs else {}))]
    for est in fits:
        same_fit(est, ref, "qwise_vector", "newton")
        assert isinstance(est.coef_, np.ndarray), type(est.coef_)
# one row of L per attribute (a dict of sets), each set's points on the device
q2 = quadruplets_from_labels(y, 80, random_state=2)
ref = QwiseVector(psi="linear", solver="newton").fit(
    {"a": X[q], "b": X[q2]}, pairs={"a": X[p], "b": X[p]},
    pair_labels={"a": lab, "b": -lab})
with sklearn.config_context(array_api_dispatch=True):
    est = QwiseVector(psi="linear", solver="newton").fit(
        {"a": T[q], "b": T[q2]}, pairs={"a": T[p], "b": T[p]},
        pair_labels={"a": lab, "b": -lab})
assert est.status_ == ref.status_ == "optimal", (est.status_, ref.status_)
assert all(r.info["backend"].endswith("torch") for r in est.results_)
np.testing.assert_allclose(est.objective_, ref.objective_, rtol=1e-8)
with sklearn.config_context(array_api_dispatch=True):
    for arg, est, data in (("preprocessor", QwiseVector(preprocessor=T), q),
                           ("quadruplets", QwiseVector(), T[q])):
        try:
            est.fit(data)
        except TypeError as exc:
            assert str(exc).startswith(
                f"{arg}: QwiseVector(solver='exact') runs on NumPy"), exc
        else:
            raise AssertionError("exact took a torch " + arg)
    try:
        QwiseVector(solver="newton").fit(T[q], pairs=X[p], pair_labels=lab)
    except ValueError as exc:
        assert str(exc).startswith("pairs: must be given the same way"), exc
    else:
        raise AssertionError("torch quadruplets with NumPy pairs were mixed")
print("ok")
""")
