"""Every tuples learner under scikit-learn's ``array_api_dispatch``, given
its points on a torch device (a torch ``preprocessor`` or torch tuples of
points): it either keeps them on their namespace (its result says the
back end) or refuses them with a ``TypeError`` naming the argument --
never a silent conversion to NumPy.  Run in a fresh interpreter
(``SCIPY_ARRAY_API=1`` before SciPy is imported)."""

import pytest

pytestmark = pytest.mark.array_api


def test_tuple_learners_keep_or_refuse_device_points(dispatched_python):
    dispatched_python("""
import numpy as np, sklearn, torch
import cvxmetric as cm
rng = np.random.default_rng(0)
X = rng.standard_normal((40, 3))
y = np.arange(40) % 2
T = torch.asarray(X)

def tuples(width, n=60):
    t = np.stack([rng.permutation(40)[:width] for _ in range(n)])
    if width == 2:
        return t, np.where(y[t[:, 0]] == y[t[:, 1]], 1, -1)
    return t, None

learners = [(cm.MMC, 2, {}), (cm.ConstraintDML, 2, {}), (cm.LDML, 2, {}),
            (cm.SDML, 2, {}), (cm.GMML, 2, {}), (cm.ITML, 2, {}),
            (cm.RankDML, 3, {}), (cm.SCML, 3, {}), (cm.Qwise, 4, {}),
            (cm.QwiseStructural, 4, {"reading": "quadruplets"}),
            (cm.QwiseVector, 4, {"solver": "newton"}), (cm.QwiseVector, 4, {})]
for cls, width, kw in learners:
    t, lab = tuples(width)
    name = {2: "pairs", 3: "triplets", 4: "quadruplets"}[width]
    for arg, est, data in (("preprocessor", cls(preprocessor=T, **kw), t),
                           (name, cls(**kw), T[t])):
        with sklearn.config_context(array_api_dispatch=True):
            try:
                est.fit(data, lab) if lab is not None else est.fit(data)
            except TypeError as exc:
                assert str(exc).startswith(arg + ": "), (cls.__name__, arg, str(exc))
                continue
        backend = getattr(est, "result_", None) and est.result_.info.get("backend", "")
        assert backend and "torch" in backend, (cls.__name__, arg, "converted silently")
print("ok")
""")
