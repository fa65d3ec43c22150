"""The ``cvxmetric`` command and the benchmark.

``verify`` is tested on a tiny temporary collection with a fake method
registry (one method returning the exact answer, one a perturbed answer), so
these tests do not depend on the accuracy of the fast solvers.
"""

import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cvxmetric import bench
from cvxmetric.bench import qwise as qbench
from cvxmetric import collection as col
from cvxmetric._tolerances import TOLERANCES
from cvxmetric.cli import main
from cvxmetric.constraints import quadruplets_from_labels
from cvxmetric.qwise import solve_exact

REPO = Path(__file__).resolve().parents[1]
SMALL = "synthetic_pairs_frobenius"  # a bundled instance (d = 5, N = 200)


def run(capsys, *argv):
    """``main(argv)`` -> (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def tiny_root(tmp_path):
    """One tiny Qwise instance with its certified reference."""
    rng = np.random.RandomState(0)
    y = np.repeat(np.arange(3), 5)
    X = 1.5 * rng.randn(3, 3)[y] + rng.randn(len(y), 3)
    q = quadruplets_from_labels(y, 15, random_state=0)
    col.write_instance(tmp_path, "qwise", "tiny",
                       {"X": X, "quadruplets": q, "delta": np.ones(len(q))},
                       hyperparameters={"regularizer": "trace", "C_q": 1.0},
                       source="synthetic")
    (outcome,) = col.make_references(tmp_path, "qwise")
    assert outcome.written, outcome.reasons
    return tmp_path


def _exact_copy(data):
    res = solve_exact(data, reduce=False, solvers=("CLARABEL",))
    res.method = "exact_copy"
    return res


def _perturbed(data):
    res = _exact_copy(data)
    res.M = 1.5 * res.M  # PSD, but clearly suboptimal
    res.objective = data.objective(res.M)
    res.method = "perturbed"
    return res


@pytest.fixture
def fake_methods(monkeypatch):
    monkeypatch.setitem(col.METHODS, "qwise",
                        {"exact_copy": _exact_copy, "perturbed": _perturbed})
    monkeypatch.setitem(TOLERANCES, "exact_copy", 1e-6)
    monkeypatch.setitem(TOLERANCES, "perturbed", 1e-6)


# ---------------------------------------------------------------------------
# list / solve on the bundled collection
# ---------------------------------------------------------------------------


def test_list(capsys):
    code, out, _ = run(capsys, "list", "--root", REPO)
    assert code == 0
    for name in col.instance_names(REPO, "qwise"):
        line = next(ln for ln in out.splitlines() if f" {name} " in ln)
        assert "current" in line


def test_solve_exact_json_matches_reference(capsys):
    path = REPO / "problems" / "qwise" / f"{SMALL}.npz"
    code, out, _ = run(capsys, "solve", path, "--method", "exact", "--json")
    assert code == 0
    doc = json.loads(out)
    inst = col.load_instance(REPO, "qwise", SMALL)
    ref = col.read_reference(REPO, inst)
    gap = abs(doc["objective"] - ref.objective) / max(1.0, abs(ref.objective))
    assert gap <= TOLERANCES["exact"]
    assert doc["status"] == "optimal" and doc["certificate"]["passed"]
    assert doc["reference"]["status"] == "current"
    d = inst.sizes["d"]
    M = np.array(doc["M"])
    assert M.shape == (d, d) and np.linalg.eigvalsh(M)[0] >= -1e-7
    assert doc["instance"]["sha256"] == inst.sha256
    assert doc["time"] > 0


def test_solve_bare_file_summary(tmp_path, capsys):
    path = tmp_path / "bare.npz"
    rng = np.random.RandomState(0)
    np.savez(path, X=rng.randn(8, 3), quadruplets=np.array([[0, 1, 2, 3],
                                                            [4, 5, 6, 7]]),
             delta=np.ones(2))
    code, out, _ = run(capsys, "solve", path, "--method", "exact",
                       "--regularizer", "frobenius", "--C-q", "2")
    assert code == 0
    assert "objective" in out and "passed True" in out


@pytest.mark.parametrize("option, value, match", [
    ("--u", "nan", "--u: must be finite, got nan"),
    ("--u", "inf", "--u: must be finite, got inf"),
    ("--l", "-inf", "--l: must be finite"),
    ("--u", "-1", r"--u: must be a float in the range \[0"),
    ("--C-q", "-0.5", r"--C-q: must be a float in the range \[0"),
    ("--C-q", "1e400", "--C-q: must be finite"),
    ("--C-p", "nan", "--C-p: must be finite"),
    ("--regularizer", "nuclear", "--regularizer: must be a str among"),
])
def test_solve_refuses_bad_hyperparameters(tmp_path, capsys, option, value, match):
    path = tmp_path / "bare.npz"
    rng = np.random.RandomState(0)
    np.savez(path, X=rng.randn(8, 3), quadruplets=np.array([[0, 1, 2, 3]]),
             delta=np.ones(1))
    # "--l=-inf": argparse would read a bare "-inf" as an option
    code, out, err = run(capsys, "solve", path, "--method", "exact",
                         f"{option}={value}")
    assert code == 2 and out == ""
    assert re.search(match, err), err
    # the collection's own instances get the same check
    code, out, err = run(capsys, "solve", REPO / "problems" / "qwise" / f"{SMALL}.npz",
                         f"{option}={value}")
    assert code == 2 and re.search(match, err), err


def test_reference_refuses_a_bad_scs_tol(tiny_root, capsys):
    for value in ("nan", "0", "-1e-9", "inf"):
        code, out, err = run(capsys, "reference", "--root", tiny_root,
                             f"--scs-tol={value}")
        assert code == 2 and "--scs-tol: must be" in err and out == ""


def test_solve_errors_are_clean(tmp_path, capsys):
    path = tmp_path / "bad.npz"
    np.savez(path, X=np.zeros((3, 2)), quadruplets=np.zeros((1, 4)),
             delta=np.ones(1))
    code, _, err = run(capsys, "solve", path)
    assert code == 2 and "bad.npz" in err and "'quadruplets'" in err
    code, _, err = run(capsys, "solve", tmp_path / "missing.npz")
    assert code == 2 and "not found" in err


# ---------------------------------------------------------------------------
# verify
# ---------------------------------------------------------------------------


def test_verify_passes_with_exact_answers(tiny_root, fake_methods, capsys):
    code, out, _ = run(capsys, "verify", "--root", tiny_root, "--method",
                       "exact_copy", "--no-progress")
    assert code == 0, out
    row = next(ln for ln in out.splitlines() if ln.split()[:2] == ["qwise", "tiny"])
    assert "exact_copy" in row and row.rstrip().endswith("ok")
    assert "1/1 passed" in out


def test_verify_fails_with_a_perturbed_answer(tiny_root, fake_methods, capsys):
    code, out, _ = run(capsys, "verify", "--root", tiny_root, "--no-progress")
    assert code == 1
    rows = {ln.split()[2]: ln for ln in out.splitlines()
            if ln.split()[:2] == ["qwise", "tiny"]}
    assert set(rows) == {"exact_copy", "perturbed"}
    assert rows["exact_copy"].rstrip().endswith("ok")
    assert "FAIL" in rows["perturbed"] and "exceeds tolerance" in rows["perturbed"]


def test_verify_rows(tiny_root, fake_methods):
    rows = col.verify(tiny_root, "qwise")
    by = {r.method: r for r in rows}
    ok, bad = by["exact_copy"], by["perturbed"]
    assert ok.passed and abs(ok.gap) <= 1e-6 and ok.psd_violation <= 1e-9
    assert ok.seconds > 0 and ok.status == "optimal"
    # no exact solve in this run: no speedup (never against stored times)
    assert np.isnan(ok.speedup) and np.isnan(ok.exact_seconds)
    assert not bad.passed and bad.gap > TOLERANCES["perturbed"]
    json.dumps([r.as_dict() for r in rows], allow_nan=False)
    # with the exact path in the same run: both times from this run
    rows = col.verify(tiny_root, "qwise", with_exact=True)
    assert [r.method for r in rows] == ["exact", "exact_copy", "perturbed"]
    exact, ok = rows[0], rows[1]
    assert exact.passed and exact.tolerance == TOLERANCES["exact"]
    assert np.isnan(exact.speedup) and exact.exact_seconds == exact.seconds
    assert ok.exact_seconds == exact.seconds
    assert ok.speedup == pytest.approx(exact.seconds / ok.seconds)


def test_verify_json_output(tiny_root, fake_methods, capsys):
    code, out, _ = run(capsys, "verify", "--root", tiny_root, "--only", "tiny",
                       "--method", "exact_copy", "--json", "--no-progress")
    assert code == 0
    (row,) = json.loads(out)
    assert row["instance"] == "tiny" and row["passed"]


def test_verify_fails_on_missing_or_stale_reference(tiny_root, fake_methods,
                                                    capsys):
    inst = col.load_instance(tiny_root, "qwise", "tiny")
    col.write_instance(tiny_root, "qwise", "tiny", inst.arrays,
                       hyperparameters={"regularizer": "trace", "C_q": 3.0})
    code, out, _ = run(capsys, "verify", "--root", tiny_root, "--method",
                       "exact_copy", "--no-progress")
    assert code == 1 and "reference stale" in out
    (col.reference_dir(tiny_root, "qwise") / "tiny.json").unlink()
    code, out, _ = run(capsys, "verify", "--root", tiny_root, "--no-progress")
    assert code == 1 and "reference missing" in out


def test_verify_reports_a_crashing_method(tiny_root, monkeypatch, capsys):
    def crash(data):
        raise RuntimeError("boom")

    monkeypatch.setitem(col.METHODS, "qwise", {"fast": crash})
    code, out, _ = run(capsys, "verify", "--root", tiny_root, "--no-progress")
    assert code == 1 and "RuntimeError: boom" in out


def test_verify_reports_an_instance_its_family_refuses(tiny_root, fake_methods,
                                                       monkeypatch, capsys):
    """An instance the family's checks now refuse is a failed row, not the
    end of the run."""
    import dataclasses

    spec = col.FAMILIES["qwise"]

    def refuse(arrays, hp):
        raise ValueError("A_S: not positive definite on the span.")

    monkeypatch.setitem(col.FAMILIES, "qwise", dataclasses.replace(spec, to_data=refuse))
    code, out, _ = run(capsys, "verify", "--root", tiny_root, "--no-progress")
    assert code == 1
    rows = [ln for ln in out.splitlines() if ln.split()[:2] == ["qwise", "tiny"]]
    assert len(rows) == 2
    assert all("FAIL: instance invalid" in r and "tiny.npz" in r for r in rows)


# ---------------------------------------------------------------------------
# reference / make-problems
# ---------------------------------------------------------------------------


def test_reference_command(tiny_root, capsys):
    ref_json = col.reference_dir(tiny_root, "qwise") / "tiny.json"
    ref_json.unlink()
    code, out, err = run(capsys, "list", "--root", tiny_root)
    assert code == 0 and "missing" in out
    code, out, err = run(capsys, "reference", "--root", tiny_root, "--only", "tiny")
    assert code == 0 and "written" in out
    assert ref_json.is_file()
    code, out, _ = run(capsys, "reference", "--root", tiny_root, "--only", "nope")
    assert code == 2


def test_reference_command_exits_nonzero_on_rejection(tiny_root, monkeypatch,
                                                      capsys):
    import dataclasses

    spec = col.FAMILIES["qwise"]

    def inaccurate_scs(data, solver, tol):
        res = spec.reference_solve(data, solver, tol)
        if solver == "SCS":
            res.objective += 1.0
        return res

    monkeypatch.setitem(col.FAMILIES, "qwise",
                        dataclasses.replace(spec, reference_solve=inaccurate_scs))
    before = (col.reference_dir(tiny_root, "qwise") / "tiny.json").read_bytes()
    code, out, err = run(capsys, "reference", "--root", tiny_root)
    assert code == 1
    assert "REJECTED" in out and "disagree" in err
    assert (col.reference_dir(tiny_root, "qwise") / "tiny.json").read_bytes() == before


def _reference_killed_between_writes(root):
    """In a forked child: ``cvxmetric reference``, ended by ``os._exit`` just
    after its first file was moved into place."""
    real = os.replace
    calls = []

    def replace(src, dst):
        if calls:
            os._exit(17)
        calls.append(dst)
        real(src, dst)

    os.replace = replace
    main(["reference", "--root", str(root), "--only", "tiny"])
    os._exit(0)


@pytest.mark.skipif(col.fcntl is None, reason="needs POSIX flock")
def test_reference_command_killed_between_its_two_files(tiny_root, capsys):
    """Once left a record whose matrix was not its own: ``invalid``."""
    folder = col.reference_dir(tiny_root, "qwise")
    # an older reference (another matrix) to be replaced
    inst = col.load_instance(tiny_root, "qwise", "tiny")
    ref = col.read_reference(tiny_root, inst)
    col.write_reference(tiny_root, inst, 2 * ref.M,
                        {k: v for k, v in ref.record.items() if k != "matrix"})
    child = multiprocessing.get_context("fork").Process(
        target=_reference_killed_between_writes, args=(tiny_root,))
    child.start()
    child.join(120)
    assert child.exitcode == 17
    code, out, _ = run(capsys, "list", "--root", tiny_root)
    line = next(ln for ln in out.splitlines() if " tiny " in ln)
    assert code == 0 and "current" in line
    status, now = col.reference_status(tiny_root, inst)
    assert status == "current"
    assert np.array_equal(now.M, 2 * ref.M)  # the old pair, whole
    # a rerun completes and clears the staged copy
    code, _, _ = run(capsys, "reference", "--root", tiny_root)
    assert code == 0
    assert sorted(p.name for p in folder.iterdir()) == ["tiny.json", "tiny.npz"]
    assert np.allclose(col.read_reference(tiny_root, inst).M, ref.M, atol=1e-6)


def test_make_problems_check(tmp_path, capsys):
    code, out, _ = run(capsys, "make-problems", "qwise", "--root", tmp_path,
                       "--check")
    assert code == 1 and "changed" in out  # nothing on disk yet
    assert not (tmp_path / "problems").exists()


# ---------------------------------------------------------------------------
# bench
# ---------------------------------------------------------------------------


def test_bench_tiny_in_process():
    rows = qbench.run_bench([(5, 50)], qbench.MODEL_METHODS["matrix"], isolate=False,
                            subgradient_maxiter=50)
    assert [r["method"] for r in rows] == [
        "exact", "straightforward", "fast", "fast@1e-4",
        "subgradient(maxiter=50)"]
    by = {r["method"]: r for r in rows}
    assert by["exact"]["error"] is None and by["exact"]["gap"] == 0.0
    assert abs(by["straightforward"]["gap"]) <= TOLERANCES["exact"]
    for r in rows:
        assert r["d"] == 5 and r["N"] == 50 and r["n"] == 200
        assert r["peak_mb"] is None or r["peak_mb"] > 0
        if r["error"] is None:
            assert r["gap_kind"] == "vs exact" and r["seconds"] >= 0
    # speedups: the exact / declared model's seconds over the row's
    for r in rows:
        assert r["speedup_exact"] == pytest.approx(
            by["exact"]["seconds"] / r["seconds"])
        assert r["speedup_declared"] == pytest.approx(
            by["straightforward"]["seconds"] / r["seconds"])
    table = bench.format_table(rows)
    assert "peak MB" in table and "subgradient(maxiter=50)" in table
    assert "x exact" in table and "x declared" in table


def test_bench_vector_model_in_process():
    rows = qbench.run_bench([(6, 80)], ("vector-exact", "newton"), isolate=False)
    assert [(r["problem"], r["method"]) for r in rows] == [
        ("qwise-vector", "vector-exact"), ("qwise-vector", "newton")]
    by = {r["method"]: r for r in rows}
    assert by["vector-exact"]["gap"] == 0.0 and by["newton"]["gap_kind"] == "vs exact"
    assert abs(by["newton"]["gap"]) <= TOLERANCES["qwise_vector/newton"]
    assert by["newton"]["status"] == "optimal"
    # above VECTOR_EXACT_MAX entries no CVXPY solve: Newton's own certificate
    assert qbench._too_large("vector-exact", 1000, 10_000)
    assert not qbench._too_large("newton", 1000, 10_000)


def test_bench_isolated_and_certified_gap():
    rows = qbench.run_bench([(4, 30)], methods=("exact",), isolate=True,
                           max_seconds=300)
    (row,) = rows
    assert row["error"] is None, row["error"]
    assert row["status"] == "optimal" and row["peak_mb"] > 0
    # without an exact run the gap column is the solver's certified gap
    rows = qbench.run_bench([(4, 30)], methods=("straightforward",), isolate=False,
                           skip_straightforward=True)
    assert rows == []


def test_bench_data_is_deterministic():
    a = qbench.bench_data(6, 40, random_state=3)
    b = qbench.bench_data(6, 40, random_state=3)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.quadruplets.indices, b.quadruplets.indices)


def test_bench_cli_and_sizes(capsys):
    assert qbench.parse_sizes("20x1000, 100x1e5") == [(20, 1000), (100, 100000)]
    with pytest.raises(ValueError, match="DxN"):
        qbench.parse_sizes("20-1000")
    code, out, _ = run(capsys, "bench", "--sizes", "4x30", "--methods", "exact",
                       "--no-isolate")
    assert code == 0 and "qwise-synthetic" in out and "vs exact" in out
    code, _, err = run(capsys, "bench", "--sizes", "oops")
    assert code == 2 and "DxN" in err


def test_bench_large_sizes_skip_exact(monkeypatch):
    seen = []

    def fake_case(case):
        seen.append(case)
        return {"n": 1, "objective": 1.0, "cert_rel_gap": 1e-7, "seconds": 0.1,
                "status": "optimal", "n_iter": 1, "peak_mb": 1.0, "base_mb": 1.0}

    monkeypatch.setattr(qbench, "run_case", fake_case)
    rows = qbench.run_bench([(100, 100_000)], qbench.MODEL_METHODS["matrix"],
                            isolate=False)
    assert [c["method"] for c in seen] == ["fast", "fast@1e-4", "subgradient"]
    # large solves run under the time budget, Algorithm 1 with its defaults
    assert all(c["max_time"] == qbench.LARGE_SOLVER_SECONDS for c in seen)
    assert seen[-1]["subgradient_maxiter"] is None
    # the certified fast optimum is the yardstick of the rows after it
    assert rows[0]["gap_kind"] == "certified" and rows[0]["gap"] == 1e-7
    assert all(r["gap_kind"] == "vs fast" and r["gap"] == 0.0 for r in rows[1:])
    # no exact solve at this size: no speedup
    assert all(r["speedup_exact"] is None and r["speedup_declared"] is None
               for r in rows)


def test_bench_large_sizes_without_certified_fast(monkeypatch):
    def fake_case(case):
        gap = 1e-3 if case["method"] == "fast" else 2e-3
        return {"n": 1, "objective": 1.0, "cert_rel_gap": gap, "seconds": 0.1,
                "status": "time_limit_reached", "n_iter": 1, "peak_mb": 1.0,
                "base_mb": 1.0}

    monkeypatch.setattr(qbench, "run_case", fake_case)
    rows = qbench.run_bench([(100, 100_000)], qbench.MODEL_METHODS["matrix"],
                            isolate=False)
    # an uncertified fast run is no yardstick: every row has its own gap
    assert [r["gap_kind"] for r in rows] == ["certified"] * 3
    assert [r["gap"] for r in rows] == [1e-3, 2e-3, 2e-3]


# ---------------------------------------------------------------------------
# console script
# ---------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("cvxmetric") is None,
                    reason="console script not installed")
def test_console_script(tmp_path):
    proc = subprocess.run(["cvxmetric", "list", "--root", str(REPO)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert SMALL in proc.stdout


def test_no_subcommand_is_a_usage_error(capsys):
    assert main([]) == 2  # argparse's usage error, returned as the exit status
    assert sys.modules["cvxmetric.cli"].main is main
