"""The scaling benchmark (``cvxmetric bench --scaling``) on tiny sizes only:
its helpers on hand-computed numbers, real runs of tiny cases, the CLI's
refusals.  The benchmark's own grids take minutes and are not run here."""

import json
import math

import numpy as np
import pytest

from cvxmetric.bench import scaling as sc
from cvxmetric.cli import main


def run(capsys, *argv):
    """``main(argv)`` -> (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------------
# Slopes
# ---------------------------------------------------------------------------


def test_loglog_slope_recovers_a_power_law():
    N = np.array([1e3, 1e4, 1e5])
    assert sc.loglog_slope(N, 3 * N ** 1.5) == pytest.approx(1.5)
    assert sc.loglog_slope([25, 50, 100], [0.1, 0.1, 0.1]) == pytest.approx(0.0)
    # one distinct size (or none finished) has no slope
    assert sc.loglog_slope([100], [1.0]) is None
    assert sc.loglog_slope([10, 20], [1.0, math.nan]) is None
    with pytest.raises(ValueError, match="seconds"):
        sc.loglog_slope([1, 2, 3], [1, 2])


def _fake_row(family, axes, sizes, seconds, error=None):
    return {"family": family, "axes": axes, "sizes": sizes, "seconds": seconds,
            "error": error}


def test_scaling_slopes_skip_failed_runs():
    grids = {"qwise": {"N": ((10, 100, 1000), {"d": 5}),
                       "d": ((5, 10), {"N": 100})}}
    rows = [_fake_row("qwise", ["N"], {"d": 5, "N": 10}, 2 * 10 ** 2),
            _fake_row("qwise", ["N", "d"], {"d": 5, "N": 100}, 2 * 100 ** 2),
            # a timeout's seconds are the budget: not a point of the fit
            _fake_row("qwise", ["N"], {"d": 5, "N": 1000}, 1.0, "killed"),
            _fake_row("qwise", ["d"], {"d": 10, "N": 100}, None, "boom")]
    slopes = {s["axis"]: s for s in sc.scaling_slopes(rows, grids)}
    assert slopes["N"]["slope"] == pytest.approx(2.0) and slopes["N"]["runs"] == 2
    assert slopes["d"]["slope"] is None and slopes["d"]["runs"] == 1
    assert slopes["N"]["fixed"] == {"d": 5}


def test_monotone_seconds_along_an_axis():
    out = sc.monotone_seconds([50, 25, 100], [0.44, 0.58, 2.29])
    assert out["monotone"] is False
    assert out["ratios"] == pytest.approx([0.44 / 0.58, 2.29 / 0.44])
    assert sc.monotone_seconds([25, 50, 100], [0.4, 0.4, 2.0])["monotone"] is True
    assert sc.monotone_seconds([25], [0.4]) == {"monotone": None, "ratios": []}
    grids = {"qwise": {"d": ((5, 10), {"N": 100})}}
    rows = [_fake_row("qwise", ["d"], {"d": 5, "N": 100}, 2.0),
            _fake_row("qwise", ["d"], {"d": 10, "N": 100}, 1.0)]
    (slope,) = sc.scaling_slopes(rows, grids)
    assert slope["monotone"] is False and slope["ratios"] == pytest.approx([0.5])
    assert "no (0.50)" in sc.format_scaling({"runs": [], "slopes": [slope]})


def test_grids_share_runs_between_axes():
    assert set(sc.GRIDS) == set(sc.SOLVERS)
    runs = sc.grid_runs("qwise")
    assert len(runs) == 5  # (d = 50, N = 10^4) is on both axes, run once
    shared = [axes for sizes, axes in runs if sizes == {"d": 50, "N": 10_000}]
    assert shared == [["N", "d"]]
    with pytest.raises(ValueError, match="families"):
        sc.grid_runs("nope")


# ---------------------------------------------------------------------------
# The floor
# ---------------------------------------------------------------------------


def test_floor_formulas_by_hand():
    # 1 GF/s: 1e-9 s per flop
    # qwise: 2 P d r + 2 P d^2 = 2*3*2*1 + 2*3*4 = 36 flops, plus eigh
    assert sc.qwise_floor(2, 3, 1, 1.0, 0.5) == pytest.approx(0.5 + 36e-9)
    # mmc: 2 n_D r^2 = 2*5*9 = 90 flops, plus eigh(r)
    assert sc.mmc_floor(3, 5, 1.0, 0.25) == pytest.approx(0.25 + 90e-9)
    # slr: (n_iter + 1 passes + 6 products) * 2 n^2 r = 11 * 400 flops / 4
    assert sc.slr_floor(10, 2, 4, 6, 1.0) == pytest.approx(4400e-9 / 4)
    assert sc.slr_floor(10, 2, 0, 0, 1.0) is None
    # the rate scales the product terms only
    assert sc.qwise_floor(2, 3, 1, 2.0, 0.0) == pytest.approx(18e-9)


def test_numerical_rank():
    assert sc.numerical_rank(np.diag([1.0, 1e-3, 1e-9, -1.0])) == 2
    assert sc.numerical_rank(np.zeros((3, 3))) == 0
    assert sc.numerical_rank(np.array([2.0, 0.0, 1.0])) == 2  # a diagonal


def test_machine_measurements_are_positive():
    assert 0 < sc.dgemm_gflops() < 1e5
    assert sc.eigh_seconds(20) > 0 and sc.eigh_seconds(0) == 0.0


# ---------------------------------------------------------------------------
# Real runs (tiny)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("family,sizes", [
    ("qwise", {"d": 10, "N": 200}),
    ("mmc", {"n": 200, "d": 10, "pairs": 200}),
])
def test_run_case_tiny(family, sizes):
    out = sc.run_case({"family": family, "sizes": sizes, "seed": 0})
    assert "error" not in out, out
    assert math.isfinite(out["seconds"]) and out["seconds"] > 0
    assert out["n_iter"] > 0 and out["status"] == "optimal"
    assert out["rel_gap"] <= 1e-6 and out["gflops"] > 0
    assert math.isfinite(out["floor"]) and out["floor"] > 0
    row = sc._row(family, sizes, ["d"], out, 10.0)
    assert row["s_per_iter"] == pytest.approx(out["seconds"] / out["n_iter"])
    assert row["x_floor"] == pytest.approx(row["s_per_iter"] / out["floor"])


def test_run_case_reports_errors():
    out = sc.run_case({"family": "mmc", "sizes": {"n": 20, "d": 3, "pairs": 1}})
    assert "n_pairs" in out["error"]
    with pytest.raises(ValueError, match="family"):
        sc.run_case({"family": "nope", "sizes": {}})


def test_run_scaling_isolated_tiny():
    grids = {"qwise": {"N": ((100, 200), {"d": 5})}}
    result = sc.run_scaling(("qwise",), max_seconds=60, grids=grids)
    assert [r["sizes"]["N"] for r in result["runs"]] == [100, 200]
    for r in result["runs"]:
        assert r["error"] is None and r["floor"] > 0 and r["x_floor"] > 0
    (slope,) = result["slopes"]
    assert slope["axis"] == "N" and math.isfinite(slope["slope"])
    text = sc.format_scaling(result)
    assert "x floor" in text and "slope" in text and "N=200" in text
    with pytest.raises(ValueError, match="families"):
        sc.run_scaling(("nope",), grids=grids)
    with pytest.raises(ValueError, match="max_seconds"):
        sc.run_scaling(("qwise",), max_seconds=0, grids=grids)


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------


def test_cli_scaling_refusals(capsys):
    code, out, err = run(capsys, "bench", "--scaling", "--families", "qwise,nope")
    assert code == 2 and "--families" in err and "nope" in err and out == ""
    code, out, err = run(capsys, "bench", "--scaling", "--sizes", "20x1000")
    assert code == 2 and "--sizes" in err and "--scaling" in err and out == ""
    code, _, err = run(capsys, "bench", "--scaling", "--contended")
    assert code == 2 and "--contended" in err
    code, _, err = run(capsys, "bench", "--scaling", "--max-seconds", "-1")
    assert code == 2 and "--max-seconds" in err


def test_cli_scaling_output(capsys, monkeypatch):
    seen = {}

    import inspect

    real = inspect.signature(sc.run_scaling)

    def fake(families, **kw):
        real.bind(families, **kw)  # the CLI passes only what run_scaling takes
        seen.update(families=families, **kw)
        row = sc._row("mmc", {"n": 2000, "d": 50, "pairs": 800}, ["d"],
                      {"seconds": 1.0, "n_iter": 10, "status": "optimal",
                       "rel_gap": 1e-9, "gflops": 50.0, "floor": 0.01,
                       "floor_inputs": {"r": 50}}, 300.0)
        kw["callback"](row)
        return {"runs": [row], "slopes": sc.scaling_slopes([row])}

    monkeypatch.setattr(sc, "run_scaling", fake)
    code, out, err = run(capsys, "bench", "--scaling", "--families", "mmc",
                         "--max-seconds", "7", "--seed", "3")
    assert code == 0 and seen["families"] == ("mmc",)
    assert seen["max_seconds"] == 7.0 and seen["seed"] == 3
    assert "MMCProjectedGradient" in out and "slope" in out and "done: mmc" in err
    code, out, _ = run(capsys, "bench", "--scaling", "--families", "mmc", "--json")
    data = json.loads(out)
    assert data["runs"][0]["x_floor"] == pytest.approx(10.0)
    assert seen["max_seconds"] == 300.0
    assert {s["axis"] for s in data["slopes"]} == {"pairs", "d"}
