"""The array back ends' shared module (cvxmetric/_backend.py)."""

import os
import subprocess
import sys

import numpy as np
import pytest

from cvxmetric import _backend


def test_import_cvxmetric_loads_no_optional_array_library():
    code = ("import cvxmetric, cvxmetric.formulations\n"
            "from cvxmetric._backend import loaded_backends\n"
            "print(','.join(loaded_backends()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == ""


def test_numpy_input_is_the_numpy_namespace_without_imports():
    xp, numpy_like = _backend.namespace(np.ones(3), None, np.zeros((2, 2)))
    assert xp is np and numpy_like
    assert _backend.device_of(np.ones(2)) == "cpu"
    t = _backend.Transfers()
    a = np.arange(3.0)
    assert t.to_host(a) is a or np.shares_memory(t.to_host(a), a)
    assert t.to_device(a, np) is a or np.shares_memory(t.to_device(a, np), a)
    assert t.as_dict() == {"to_host": 0, "to_host_bytes": 0, "to_device": 0,
                           "to_device_bytes": 0}


@pytest.mark.array_api
def test_strict_namespace_and_counted_transfers():
    strict = pytest.importorskip("array_api_strict")
    pytest.importorskip("array_api_compat")
    x = strict.asarray(np.arange(6.0).reshape(2, 3))
    xp, numpy_like = _backend.namespace(x)
    assert not numpy_like and xp.__name__ == "array_api_strict"
    t = _backend.Transfers()
    y = t.to_device(np.ones((4, 2)), xp, _backend.device_of(x))
    back = t.to_host(y)
    assert isinstance(back, np.ndarray) and back.shape == (4, 2)
    assert t.as_dict() == {"to_host": 1, "to_host_bytes": 64, "to_device": 1,
                           "to_device_bytes": 64}
    x32 = strict.asarray(np.ones(3, dtype=np.float32))
    assert _backend.float64(x32).dtype == strict.float64


def test_every_family_moves_through_one_device_class():
    # one class counts the moves: each family's data answer from their
    # Device (OnDevice), or are a Device with the family's operations
    from cvxmetric.ldml._xp import PairsXP
    from cvxmetric.ldml.fast import AllPairs, PairSet
    from cvxmetric.lmnn._problem import LMNNData
    from cvxmetric.mmc._problem import MMCData
    from cvxmetric.qwise._xp import QwiseXPData
    from cvxmetric.qwise_vector._xp import QwiseVectorXPData
    from cvxmetric.slr._problem import SLRData
    from cvxmetric.slr.randomized import _Arrays

    for cls in (AllPairs, PairSet, LMNNData, MMCData, QwiseXPData, QwiseVectorXPData,
                SLRData):
        assert issubclass(cls, _backend.OnDevice), cls.__name__
    for cls in (PairsXP, _Arrays):
        assert issubclass(cls, _backend.Device), cls.__name__


@pytest.mark.array_api
def test_on_device_answers_from_its_device():
    strict = pytest.importorskip("array_api_strict")
    pytest.importorskip("array_api_compat")
    x = strict.asarray(np.ones((2, 2)))
    xp, _ = _backend.namespace(x)

    class Data(_backend.OnDevice):
        def __init__(self, where):
            self.where = where

    on = Data(_backend.Device.of(x))
    assert on.xp is xp and not on.on_host
    assert on.where.device == _backend.device_of(x)
    back = on.where.host(on.where.dev(np.zeros(3)))
    assert back.shape == (3,)
    info = on.backend_info()
    assert info["backend"] == "array_api_strict"
    assert info["transfers"] == {"to_host": 1, "to_host_bytes": 24, "to_device": 1,
                                 "to_device_bytes": 24}
    total = _backend.Transfers(to_host_count=2, to_host_bytes=16)
    total.add(on.transfers)
    assert total.as_dict() == {"to_host": 3, "to_host_bytes": 40, "to_device": 1,
                               "to_device_bytes": 24}
    host = Data(_backend.Device())
    assert host.on_host and host.xp is np
    assert host.where.dev(np.zeros(3)) is not None and host.transfers.as_dict()["to_device"] == 0


@pytest.mark.array_api
def test_mixed_libraries_are_refused_by_name():
    torch = pytest.importorskip("torch")
    strict = pytest.importorskip("array_api_strict")
    with pytest.raises(TypeError, match="array_api_strict, torch"):
        _backend.namespace(torch.ones(2), strict.ones(2))


@pytest.mark.dask
def test_dask_array_is_recognised_and_computed_on_the_host():
    da = pytest.importorskip("dask.array")
    x = da.ones((10, 3), chunks=(5, 3))
    assert _backend.is_dask(x) and not _backend.is_dask(np.ones(2))
    t = _backend.Transfers()
    assert t.to_host(x).shape == (10, 3)
    assert t.as_dict()["to_host"] == 1


@pytest.mark.dask
def test_every_family_on_dask_sits_on_one_cluster(dask_client):
    # one Device for the cluster: every family's Dask data report "dask"
    # from it and count their moves in its transfers
    da = pytest.importorskip("dask.array")
    from cvxmetric.constraints import Quadruplets
    from cvxmetric.ldml.fast import AllPairs
    from cvxmetric.lmnn._problem import LMNNData
    from cvxmetric.qwise import QwiseData
    from cvxmetric.slr._problem import SLRData

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    y = np.repeat([0, 1], 20)
    Xd = da.from_array(X, chunks=(20, 3))
    quads = Quadruplets.create(X, np.array([[0, 25, 0, 1], [2, 30, 2, 3]]))
    loss = AllPairs(Xd, y)
    loss.value_grad(np.eye(3), 1.0)
    datas = [loss, LMNNData(Xd, y, k=2), SLRData.from_labels(Xd, y),
             QwiseData.from_sets(quads).on_device(Xd)]
    for data in datas:
        name = type(data).__name__
        assert isinstance(data.where, _backend.Cluster), name
        assert data.xp is np and not data.on_host, name
        info = data.backend_info()
        assert (info["backend"], info["device"]) == ("dask", "dask"), name
        assert info["transfers"] == data.where.transfers.as_dict(), name
    # the all-pairs gradient sends L and the labels, and gathers G (3, 3)
    t = loss.transfers.as_dict()
    assert t["to_device"] >= 2 and t["to_host_bytes"] >= 9 * 8
    cluster = _backend.Cluster()
    assert cluster.device is None and cluster.dev(np.ones(2)).shape == (2,)
    assert cluster.transfers.as_dict()["to_device"] == 0  # NumPy host side: no move


def test_missing_optional_library_names_the_extra(monkeypatch):
    # a None entry in sys.modules makes the import fail as if not installed
    monkeypatch.setitem(sys.modules, "array_api_compat", None)
    with pytest.raises(ImportError, match=r"cvxmetric\[array-api\]"):
        _backend.require("array_api_compat")
    with pytest.raises(ImportError, match=r"cvxmetric\[array-api\]"):
        _backend.namespace(object())


@pytest.mark.array_api
def test_dispatch_transform_on_the_device_and_numpy_paths_refuse_by_name():
    """Under ``array_api_dispatch``: ``transform`` of a fitted learner maps a
    torch ``X`` where it is (float64, the fitted features checked); a
    learner whose chosen path runs on NumPy refuses a torch ``X`` naming
    ``X`` and the learner, not with scikit-learn's dtype error."""
    pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    code = """
import numpy as np, sklearn, torch
from cvxmetric import ITML_Supervised, MMCSupervised as MMC_Supervised
rng = np.random.default_rng(0)
X = rng.standard_normal((90, 4)); y = rng.integers(0, 3, 90)
with sklearn.config_context(array_api_dispatch=True):
    est = MMC_Supervised(solver="fast", random_state=0).fit(torch.asarray(X), torch.asarray(y))
    Z = est.transform(torch.asarray(X, dtype=torch.float32))
    assert isinstance(Z, torch.Tensor) and Z.dtype == torch.float64, type(Z)
    np.testing.assert_allclose(Z.numpy(), X @ est.components_.T, rtol=1e-6, atol=1e-6)
    for bad, what in ((torch.asarray(X[:, :3]), "3 features"),
                      (torch.asarray(np.where(X > 1, np.nan, X)), "NaN")):
        try:
            est.transform(bad)
        except ValueError as exc:
            assert what in str(exc), exc
        else:
            raise AssertionError("accepted " + what)
    for learner in (ITML_Supervised(), MMC_Supervised(solver="exact")):
        try:
            learner.fit(torch.asarray(X), torch.asarray(y))
        except TypeError as exc:
            msg = str(exc)
            assert msg.startswith("X: ") and type(learner).__name__ in msg, msg
        else:
            raise AssertionError(type(learner).__name__ + " took a torch X")
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "SCIPY_ARRAY_API": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"
