"""Qwise's dual solver on array-API namespaces (array-api-strict, PyTorch on
the CPU): the same certified optimum as NumPy, bounded transfers, float64
certificates of float32 input, and the NumPy-only methods refusing by name."""

import numpy as np
import pytest

from cvxmetric._tolerances import tolerance
from cvxmetric.collection import gaussian_classes, standardize
from cvxmetric.constraints import Quadruplets, quadruplets_from_labels
from cvxmetric.qwise import ProjectedSubgradient, QwiseData, QwiseDualSolver

pytestmark = [pytest.mark.array_api, pytest.mark.usefixtures("one_torch_thread")]

NAMESPACES = ("array_api_strict", "torch")


def _instance(n_quadruplets, *, n=60, d=5, dtype=float):
    X, y = gaussian_classes(np.random.RandomState(0), n, d, 3, 1.5)
    X = standardize(X).astype(dtype)
    quads = quadruplets_from_labels(y, n_quadruplets, random_state=0)
    return X, QwiseData.from_sets(Quadruplets.create(X.astype(float), quads, 1.0))


def _module(name):
    pytest.importorskip("array_api_compat")
    return pytest.importorskip(name)


def _on(name, data, X):
    return data.on_device(_module(name).asarray(X))


def _same_optimum(res, ref):
    assert ref.status == res.status == "optimal"
    assert res.objective == pytest.approx(ref.objective, rel=tolerance("qwise", "fast"))
    assert isinstance(res.M, np.ndarray) and isinstance(res.info["alpha"], np.ndarray)
    np.testing.assert_allclose(res.M, ref.M, atol=1e-4 * np.abs(ref.M).max())


def _moves(res):
    t = res.info["transfers"]
    return t["to_host"] + t["to_device"]


@pytest.mark.parametrize("name", NAMESPACES)
def test_dual_solver_certifies_the_numpy_objective(name):
    X, data = _instance(400)
    ref = QwiseDualSolver().run(data)
    res = QwiseDualSolver().run(_on(name, data, X))
    _same_optimum(res, ref)
    assert res.info["backend"].endswith(name.split("_")[-1] if name == "torch" else name)
    # construction (X once to the host, the problem's arrays to the device),
    # the start and the result -- nothing per iteration or per gap check
    assert _moves(res) <= 16 + 5 * res.info["polish_attempts"] < res.n_iter
    N, P = data.n_constraints, data.op.n_pairs
    assert res.info["transfers"]["to_device_bytes"] <= 8 * (6 * N + 4 * P + 2 * 25) + 5 * 8 * (
        N + 25) * res.info["polish_attempts"]


@pytest.mark.parametrize("name", NAMESPACES)
def test_working_set_rounds_certify_the_numpy_objective(name):
    X, data = _instance(3000)
    solver = QwiseDualSolver(working_set=500)
    ref = solver.run(data)
    res = solver.run(_on(name, data, X))
    _same_optimum(res, ref)
    rounds = len(res.info["working_set_rounds"])
    assert rounds >= 2
    # per round: the restricted problem's arrays and start to the device,
    # one margin per constraint and its result to the host (and the full
    # certificate's multipliers); per endgame attempt the face's point --
    # never anything per iteration
    assert _moves(res) <= 20 + 16 * rounds + 5 * rounds * 4 < res.n_iter
    N = data.n_constraints
    assert res.info["transfers"]["to_host_bytes"] <= X.nbytes + (rounds + 2) * 8 * (N + 25) * 3


@pytest.mark.parametrize("name", NAMESPACES)
def test_float32_input_is_certified_in_float64(name):
    X, data = _instance(400, dtype=np.float32)
    mod = _module(name)
    dev = data.on_device(mod.asarray(X))
    assert dev.X.dtype == dev.xp.float64 and dev.R.dtype == dev.xp.float64
    ref = QwiseDualSolver().run(data)
    res = QwiseDualSolver().run(dev)
    _same_optimum(res, ref)
    # the certificate is the float64 one of the float32-rounded data
    cert = data.certificate(res.M, res.info["alpha"], solver="check")
    assert cert.objective == pytest.approx(res.objective, rel=1e-12)
    assert res.certificate.rel_gap <= QwiseDualSolver().tol


def test_host_eigh_fallback_is_counted():
    """A namespace without ``linalg.eigh``: the (d, d) eigendecompositions
    run on the host, each one counted (d x d per iteration, nothing larger
    but the per-constraint vectors of the final certificate and of each
    endgame attempt, whose count depends on the iterates' path)."""
    X, data = _instance(200)
    dev = _on("torch", data, X)
    dev.where.has_eigh = False
    ref = QwiseDualSolver().run(data)
    res = QwiseDualSolver().run(dev)
    _same_optimum(res, ref)
    t = res.info["transfers"]
    assert t["to_host"] >= res.n_iter
    vectors = 3 * data.n_constraints * (1 + res.info["polish_attempts"])
    assert t["to_host_bytes"] <= X.nbytes + 8 * (vectors + 25 * t["to_host"])


@pytest.mark.parametrize("name", NAMESPACES)
def test_numpy_only_methods_refuse_by_name(name):
    from cvxmetric.qwise import solve_exact

    X, data = _instance(100)
    dev = _on(name, data, X)
    with pytest.raises(TypeError, match="X: Qwise's projected subgradient"):
        ProjectedSubgradient().run(dev)
    with pytest.raises(TypeError, match="X: Qwise's exact"):
        solve_exact(dev)


def test_on_device_checks_the_samples():
    X, data = _instance(100)
    torch = _module("torch")
    with pytest.raises(ValueError, match="X: expected the problem's samples"):
        data.on_device(torch.asarray(X[:10]))
    with pytest.raises(ValueError, match="X: its values differ"):
        data.on_device(torch.asarray(X + 1.0))
    # a caller's host copy of X (an estimator's) is checked instead of a
    # second copy, and counted as the one move of X to the host
    with pytest.raises(ValueError, match="X: its values differ"):
        data.on_device(torch.asarray(X), host_copy=np.asarray(X) + 1.0)
    with pytest.raises(ValueError, match="host_copy: expected a NumPy copy of X"):
        data.on_device(torch.asarray(X), host_copy=np.asarray(X)[:10])
    for copy in (None, np.array(X, dtype=float)):
        t = data.on_device(torch.asarray(X), host_copy=copy).transfers
        assert (t.to_host_count, t.to_host_bytes) == (1, X.astype(float).nbytes)


def test_gpu_benchmark_rows_run_on_the_cpu(capsys, repo_module):
    """``benchmarks/gpu.py``'s Qwise rows, tiny, with torch on the CPU:
    both certified, the same objective."""
    torch = _module("torch")
    mod = repo_module("benchmarks/gpu.py")
    mod.QWISE_SIZES["quick"] = [(5, 1500, True)]
    mod.qwise(torch, "cpu", quick=True)
    rows = [line for line in capsys.readouterr().out.splitlines() if " gap " in line]
    assert [r.split()[3] for r in rows] == ["torch:cpu", "numpy"]
    assert all("optimal" in r for r in rows)
    objectives = [float(r.split(" f ")[1].split()[0]) for r in rows]
    assert objectives[0] == pytest.approx(objectives[1], rel=tolerance("qwise", "fast"))


@pytest.mark.parametrize("regularizer", ["frobenius", "similar"])
def test_eq11_regularizers_certify_the_numpy_objective(regularizer):
    """Eq. 11 (labelled pairs) with the quadratic regulariser (the dual
    bound's eigenvalues on the device) and ``A_S`` (its Loewner scale on
    the host)."""
    from cvxmetric.constraints import LabeledPairs

    _, base = _instance(300)
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, 60, (80, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    labels = np.where(rng.random(len(pairs)) < 0.5, 1, -1)
    data = QwiseData.from_sets(base.quadruplets, LabeledPairs.create(base.X, pairs, labels),
                               regularizer=regularizer, u=1.0, l=2.0)
    _same_optimum(QwiseDualSolver().run(_on("torch", data, data.X)),
                  QwiseDualSolver().run(data))
