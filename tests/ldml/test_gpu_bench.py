"""The GPU rows' functions run tiny on the CPU."""

import pytest

from cvxmetric._tolerances import tolerance

_SCRIPT = "benchmarks/gpu_ldml_lmnn.py"


def test_ldml_step_numpy_and_lmnn_letter_quick(repo_module):
    mod = repo_module(_SCRIPT)
    row = mod.bench_ldml_step("numpy", quick=True)
    assert row["seconds"] > 0 and row["gap"] is None and row["device"] == "numpy"
    row = mod.bench_lmnn_letter("numpy", quick=True)
    assert row["status"] == "optimal" and row["gap"] is not None and row["seconds"] > 0


@pytest.mark.array_api
def test_ldml_step_torch_cpu_quick(repo_module):
    pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    row = repo_module(_SCRIPT).bench_ldml_step("cpu", quick=True)
    assert row["seconds"] > 0 and row["device"] == "cpu"


@pytest.mark.array_api
def test_ldml_pairs_torch_cpu_quick_certifies_numpys_objective(repo_module):
    pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    mod = repo_module(_SCRIPT)
    ref, row = mod.bench_ldml_pairs("numpy", quick=True), mod.bench_ldml_pairs("cpu", quick=True)
    assert ref["status"] == row["status"] == "optimal" and row["transfers"]["to_host"] > 0
    assert row["objective"] == pytest.approx(ref["objective"], rel=tolerance("ldml", "fast"))
