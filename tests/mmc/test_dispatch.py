"""The pairs learner MMC under scikit-learn's ``array_api_dispatch``:
``solver="fast"`` keeps a torch ``preprocessor`` or torch pairs' points on
their namespace and learns NumPy's metric; pair scores come back on the
device; the exact path and a callable preprocessor returning device
arrays refuse by name.  Run in a fresh interpreter (``SCIPY_ARRAY_API=1``
before SciPy is imported)."""

import pytest

pytestmark = pytest.mark.array_api


def test_mmc_pairs_keep_torch_input(dispatched_python):
    dispatched_python("""
import numpy as np, sklearn, torch
from cvxmetric import MMC
rng = np.random.default_rng(0)
X = rng.standard_normal((60, 4)); X[:, 1] *= 5.0
y = rng.integers(0, 3, 60)
pairs = rng.integers(0, 60, (160, 2)); pairs = pairs[pairs[:, 0] != pairs[:, 1]]
s = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)
T = torch.asarray(X)
for diagonal in (False, True):
    ref = MMC(solver="fast", diagonal=diagonal, preprocessor=X).fit(pairs, s)
    with sklearn.config_context(array_api_dispatch=True):
        fits = [MMC(solver="fast", diagonal=diagonal, preprocessor=T).fit(pairs, s),
                MMC(solver="fast", diagonal=diagonal).fit(T[pairs], torch.asarray(s))]
        pred = fits[0].predict(pairs)
        dist = fits[1].pair_distance(T[pairs])
    for est in fits:
        same_fit(est, ref, "mmc")
    assert isinstance(pred, torch.Tensor) and isinstance(dist, torch.Tensor)
    np.testing.assert_allclose(dist.numpy(), ref.pair_distance(pairs), rtol=1e-3)
    # the same calibrated threshold; the same decisions away from it
    assert abs(fits[0].threshold_ - ref.threshold_) <= 1e-3 * abs(ref.threshold_)
    clear = np.abs(ref.pair_distance(pairs) - ref.threshold_) > 1e-3 * abs(ref.threshold_)
    np.testing.assert_array_equal(pred.numpy()[clear], ref.predict(pairs)[clear])
with sklearn.config_context(array_api_dispatch=True):
    for arg, name, est in (("preprocessor", "MMC(solver='exact')",
                            MMC(solver="exact", preprocessor=T)),
                           ("preprocessor", "a callable preprocessor",
                            MMC(solver="fast", preprocessor=lambda i: T[i]))):
        try:
            est.fit(pairs, s)
        except TypeError as exc:
            assert str(exc).startswith(arg + ": " + name + " runs on NumPy"), exc
        else:
            raise AssertionError(name + " took a torch " + arg)
    try:
        MMC(solver="exact").fit(T[pairs], s)
    except TypeError as exc:
        assert str(exc).startswith("pairs: MMC(solver='exact')"), exc
    else:
        raise AssertionError("the exact path took torch pairs")
print("ok")
""")
