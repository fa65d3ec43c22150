"""The GPU rows' functions run tiny on the CPU."""

import importlib.util
from pathlib import Path

import pytest

from cvxmetric._tolerances import tolerance

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_ldml_lmnn.py"


def _module():
    spec = importlib.util.spec_from_file_location("gpu_ldml_lmnn", _PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_ldml_step_numpy_and_lmnn_letter_quick():
    mod = _module()
    row = mod.bench_ldml_step("numpy", quick=True)
    assert row["seconds"] > 0 and row["gap"] is None and row["device"] == "numpy"
    row = mod.bench_lmnn_letter("numpy", quick=True)
    assert row["status"] == "optimal" and row["gap"] is not None and row["seconds"] > 0


@pytest.mark.array_api
def test_ldml_step_torch_cpu_quick():
    pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    row = _module().bench_ldml_step("cpu", quick=True)
    assert row["seconds"] > 0 and row["device"] == "cpu"


@pytest.mark.array_api
def test_ldml_pairs_torch_cpu_quick_certifies_numpys_objective():
    pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    mod = _module()
    ref, row = mod.bench_ldml_pairs("numpy", quick=True), mod.bench_ldml_pairs("cpu", quick=True)
    assert ref["status"] == row["status"] == "optimal" and row["transfers"]["to_host"] > 0
    assert row["objective"] == pytest.approx(ref["objective"], rel=tolerance("ldml", "fast"))
