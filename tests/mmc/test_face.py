"""MMC exact on the face of a fast solution (``solve_exact(reduce=...)``).

The reduced model is the declared model restricted to ``Mw = V Z V^T``; its
point is certified on the declared problem, so a face that misses the
optimum cannot pass and the declared model is solved instead.
"""

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.preprocessing import StandardScaler

from cvxmetric.constraints import pairs_from_labels
from cvxmetric.formulations import formulation
from cvxmetric.mmc import MMC, MMCData
from cvxmetric.mmc.exact import MMCModel
from cvxmetric.result import CertificateError

solve_exact = formulation("mmc").solve_exact  # the registry's warm start, polish


def blobs(seed=0, n=80, d=24, classes=4, n_pairs=240):
    rng = np.random.RandomState(seed)
    y = rng.randint(classes, size=n)
    X = 2.0 * rng.randn(classes, d)[y] + rng.randn(n, d)
    P, L = pairs_from_labels(y, n_pairs, random_state=seed)
    return MMCData.create(X, P, L)


def rel(a, b):
    return abs(a - b) / abs(b)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_face_equals_declared(seed):
    data = blobs(seed)
    full = solve_exact(data, reduce=False)
    face = solve_exact(data, reduce=True)
    assert full.status == face.status == "optimal"
    assert "face" not in full.info and full.info["model"].basis is None
    info = face.info["face"]
    assert face.info["model"].basis.shape == (data.psi.shape[1], info["k"])
    assert info["k"] < info["r"]
    assert rel(face.objective, full.objective) <= 1e-6
    # certified on the declared problem: the bound is over the whole space
    assert face.certificate.dual_bound <= full.objective * (1 + 1e-9)


def test_wrong_face_is_not_certified():
    data = blobs(0)
    good = solve_exact(data, reduce=False)
    lam, V = np.linalg.eigh(data.to_white(good.M))
    # the directions the optimum does not use: the face misses it
    with pytest.raises(CertificateError):
        MMCModel(data, basis=V[:, :2]).solve()


def test_face_falls_back_to_declared(monkeypatch):
    import cvxmetric.mmc.exact as exact

    data = blobs(1)
    # a face too narrow to hold the optimum: every face fails, the declared
    # model answers
    monkeypatch.setattr(exact, "FACE_MARGIN", 0)
    monkeypatch.setattr(exact, "FACE_RTOL", 0.9)
    orig = exact.MMCModel.solve
    calls = []

    def spy(self, **kw):
        calls.append(None if self.basis is None else self.basis.shape[1])
        return orig(self, **kw)

    monkeypatch.setattr(exact.MMCModel, "solve", spy)
    res = solve_exact(data, reduce=True)
    assert res.status == "optimal"
    assert calls[0] is not None and calls[0] < data.psi.shape[1]
    ref = solve_exact(data, reduce=False)
    assert rel(res.objective, ref.objective) <= 1e-6


def test_bad_arguments():
    data = blobs(0)
    with pytest.raises(ValueError, match="reduce"):
        solve_exact(data, reduce="yes")
    with pytest.raises(ValueError, match="basis"):
        MMCModel(data, basis=np.ones((3, 2)))
    diag = MMCData.create(data.X, np.vstack([data.similar, data.dissimilar]),
                          np.r_[np.ones(len(data.similar)),
                                -np.ones(len(data.dissimilar))].astype(int),
                          diagonal=True)
    with pytest.raises(ValueError, match="basis"):
        MMCModel(diag, basis=np.eye(diag.n_features))


def test_raw_digits_face():
    # raw digits, metric-learn's 20 C^2 pairs: the declared model did not
    # finish in 120 s; the optimum has rank 3 of 61 whitened directions
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X[:1437])
    y = y[:1437]
    P, L = pairs_from_labels(y, 2000, random_state=0)
    exact = MMC(preprocessor=X, solver="exact").fit(P, L)
    fast = MMC(preprocessor=X, solver="fast").fit(P, L)
    assert exact.status_ == "optimal" and fast.status_ == "optimal"
    face = exact.result_.info["face"]
    assert face["k"] <= 20 < face["r"]
    assert rel(fast.scale_free_objective_, exact.scale_free_objective_) <= 1e-5
