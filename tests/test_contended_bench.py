"""``cvxmetric bench --contended``: the threading benchmark (cvxmetric.bench.contended)."""

import inspect
import json

import pytest

from cvxmetric.bench import contended as ct
from cvxmetric.cli import main


def run(capsys, *argv):
    """``main(argv)`` -> (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _row(family, condition, policy, one, every):
    return {"family": family, "solver": ct.CASES[family][0],
            "problem": ct.CASES[family][1], "condition": condition,
            "policy": policy, "one": one, "all": every,
            "ratio": policy / min(one, every), "status": "optimal"}


def test_every_family_has_a_case_and_sizes():
    assert set(ct.CASES) == set(ct.SIZES)
    with pytest.raises(ValueError, match="family"):
        ct._problem("nope", 0)


def test_run_case_times_a_forced_single_thread_solve(monkeypatch):
    # the smallest real case: MMC at d = 300 takes well under a second
    out = ct.run_case({"family": "mmc", "threads": 1, "seed": 0})
    assert out["status"] == "optimal" and out["seconds"] > 0
    assert out["rel_gap"] <= 1e-6


def test_run_contended_ratio_and_neighbour(monkeypatch):
    # the solves are stubbed: the ratio is policy / best forced time, and
    # the neighbour process of the loaded condition is gone afterwards
    times = {"policy": 2.0, 1: 1.0, "all": 4.0}
    monkeypatch.setattr(ct, "run_isolated", lambda case, *a: {
        "seconds": times[case["threads"]], "status": "optimal"})
    started = []
    real_popen = ct.subprocess.Popen

    def popen(*a, **k):
        started.append(real_popen(*a, **k))
        return started[-1]

    monkeypatch.setattr(ct.subprocess, "Popen", popen)
    monkeypatch.setattr(ct.time, "sleep", lambda s: None)
    rows = ct.run_contended(("mmc",), repeat=2)
    assert [r["condition"] for r in rows] == ["idle", "contended"]
    assert all(r["ratio"] == pytest.approx(2.0) for r in rows)
    assert len(started) == 1 and started[0].poll() is not None
    assert "mmc" in ct.format_contended(rows)


def test_cli_contended(capsys, monkeypatch):
    real = inspect.signature(ct.run_contended)
    seen = {}

    def fake(families, **kw):
        real.bind(families, **kw)
        seen.update(families=families, **kw)
        rows = [_row("mmc", "idle", 1.0, 1.0, 2.0)]
        kw["callback"](rows[0])
        return rows

    monkeypatch.setattr(ct, "run_contended", fake)
    code, out, err = run(capsys, "bench", "--contended", "--families", "mmc",
                         "--repeat", "2", "--max-seconds", "9")
    assert code == 0 and seen["families"] == ("mmc",)
    assert seen["repeat"] == 2 and seen["max_seconds"] == 9.0
    assert "MMCProjectedGradient" in out and "ratio" in out and "done: mmc" in err
    code, out, _ = run(capsys, "bench", "--contended", "--json")
    assert json.loads(out)[0]["ratio"] == pytest.approx(1.0)
    assert seen["families"] == tuple(ct.CASES)


@pytest.mark.parametrize("argv, name", [
    (("--families", "nope"), "--families"),
    (("--sizes", "20x1000"), "--sizes"),
    (("--scaling",), "--scaling"),
])
def test_cli_contended_refuses(capsys, argv, name):
    code, _, err = run(capsys, "bench", "--contended", *argv)
    assert code == 2 and name in err


def test_the_whole_fit_case_times_the_estimator(monkeypatch):
    # mmc-fit times MMC(solver="fast").fit from the samples: the whitening
    # and the calibration are inside the timed region
    from cvxmetric.mmc import _problem as mmc_problem

    calls = []
    real = mmc_problem._whiten
    monkeypatch.setattr(mmc_problem, "_whiten", lambda *a: calls.append(1) or real(*a))
    out = ct.run_case({"family": "mmc-fit", "threads": 1, "seed": 0})
    assert out["status"] == "optimal" and out["rel_gap"] <= 1e-6
    assert calls and "mmc-fit" in ct.FIT_CASES


def test_a_failing_run_is_an_error_row_and_exit_1(capsys, monkeypatch):
    # a run that raised is reported as such (status error, its message) and
    # the command exits 1; a run killed at the budget is a time, not an error
    def fake(case, *a):
        if case["threads"] == 1:
            return {"error": "exit code 1: boom"}
        return {"seconds": 1.0, "status": "optimal"}

    monkeypatch.setattr(ct, "run_isolated", fake)
    rows = ct.run_contended(("mmc",), conditions=("idle",))
    assert rows[0]["status"] == "error" and "boom" in rows[0]["error"]
    monkeypatch.setattr(ct, "run_isolated", lambda case, *a: {
        "error": "killed after 9 s", "timeout": True, "seconds": 9.0})
    assert ct.run_contended(("mmc",), conditions=("idle",))[0]["error"] is None

    def fake_contended(families, **kw):
        return [dict(rows[0])]

    monkeypatch.setattr(ct, "run_contended", fake_contended)
    code, out, err = run(capsys, "bench", "--contended", "--family", "mmc")
    assert code == 1 and "boom" in err
