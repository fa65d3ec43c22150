"""The real-data conformance suite: a slice of it, its verdicts and its command.

The slice is the suite's matrix generated from the registry of formulations
(:func:`cvxmetric.formulations`): every estimator of every formulation the
suite runs, with every method, on standardised iris and wine, with the
constraints a user would generate (500 tuples for the tuple learners instead
of the benchmark's 2000), in this process; the command line runs the whole
matrix (``cvxmetric bench --suite real``).  It asserts what the package
promises there: the exact fit is certified, a fast fit converges and agrees
with it within the family's tolerance, a paper's algorithm answers (its gap
reported), and a family's refusal is agreed by its partner method.  Timing
("not slower than exact") is left to the benchmark command: it is too noisy
on a shared machine for a test.
"""

import json

import numpy as np
import pytest

from cvxmetric import formulation, formulations
from cvxmetric._tolerances import tolerance
from cvxmetric.bench import conformance
from cvxmetric.cli import main


def _group(dataset, seed, estimator, methods):
    """Run ``methods`` of one estimator in this process; judged rows."""
    family = next(f for f, ests in conformance.FAMILIES.items() if estimator in ests)
    rows = []
    for case in conformance.cases([dataset], [seed], [family], methods=methods,
                                  estimators=[estimator]):
        # fewer tuples than the benchmark's, to keep the slice to seconds
        row = dict(case, n_tuples=500)
        row.update(conformance.run_case(row))
        if row.get("error") is not None:
            row["status"] = "error"
        rows.append(row)
    return conformance.judge(rows)


def _matrix():
    """``(dataset, estimator, methods)``: every estimator of every formulation
    the suite runs, with all its methods, read from the registry, on iris
    and on wine."""
    return [(dataset, estimator, tuple(m.name for m in f.methods))
            for dataset in ("iris", "wine") for f in formulations() if f.suite
            for estimator in f.estimators]


SLICE = _matrix()


def _not_timing(why):
    """The reasons a row fails, less "slower than exact" (timing is left to
    the benchmark command)."""
    return [w for w in why.split("; ") if w and not w.startswith("slower")]


def _assert_answered(r, what):
    """What the package promises of one judged row on real data."""
    method = formulation(r["family"]).method(r["method"])
    assert not _not_timing(r["why"]), what
    if r["refusal"] == "agreed":  # the family's certified refusal, its partner's too
        assert r["error_type"] == conformance.REFUSALS[r["family"]][0], what
        return
    if r["refusal"] == "size":  # a documented size limit: nothing to certify
        assert r["role"] == "exact" and r["error_type"] == "ProblemSizeError", what
        return
    assert r.get("error") is None, what
    if r["role"] == "exact":
        assert r["certified"], what
        assert r["status"] == "optimal" and r["passed"], what
        return
    if r["role"] in ("fast", "paper-optimal"):
        assert r["converged"], what
    # the gap is the family's own definition, against the tolerance table;
    # a method without a tolerance (a paper's algorithm) is reported only
    assert r["tolerance"] == (None if method.tolerance is None
                              else tolerance(r["family"], method.tolerance)), what
    if r["tolerance"] is not None and r["gap"] is not None:
        assert r["agreeing"], what
        assert abs(r["gap"]) <= r["tolerance"], what


@pytest.mark.parametrize(("dataset", "estimator", "methods"), SLICE,
                         ids=[f"{d}-{e}" for d, e, _ in SLICE])
def test_slice_certified_converged_agreeing(dataset, estimator, methods):
    rows = _group(dataset, 0, estimator, methods)
    assert sorted(r["method"] for r in rows) == sorted(methods)
    for r in rows:
        _assert_answered(r, f"{dataset}/{estimator}/{r['method']}: {r['why']}")
    # every fast method with a tolerance is judged against an exact answer
    # unless that answer is a refusal
    judged = [r for r in rows if r["role"] == "fast" and r["refusal"] is None]
    exact_refused = any(r["refusal"] == "size" for r in rows)
    assert exact_refused or all(r["gap"] is not None for r in judged)


# -- verdicts on hand-made rows ------------------------------------------------


def _row(method, family="qwise", estimator="Qwise", **kw):
    row = {"dataset": "iris", "seed": 0, "family": family, "estimator": estimator,
           "method": method, "status": "optimal", "passed": True, "seconds": 1.0,
           "objective": 10.0}
    row.update(kw)
    return row


def test_judge_gap_is_relative_to_max_one_and_mmc_to_the_value():
    rows = conformance.judge([
        _row("exact", objective=0.5), _row("fast", objective=0.5 + 2e-6),
        _row("exact", family="mmc", estimator="MMC", objective=1e-3),
        _row("fast", family="mmc", estimator="MMC", objective=1e-3 * (1 + 2e-6)),
    ])
    # Qwise: absolute below 1 -> 2e-6 > 1e-6 fails
    assert rows[1]["gap"] == pytest.approx(2e-6)
    assert rows[1]["agreeing"] is False and rows[1]["failed"]
    # MMC: relative to r* = 1e-3 -> 2e-6 < 1e-5 agrees
    assert rows[3]["gap"] == pytest.approx(2e-6)
    assert rows[3]["agreeing"] is True and not rows[3]["failed"]


def test_judge_verdicts():
    rows = conformance.judge([
        _row("exact", status="optimal_inaccurate", passed=False),
        _row("fast", status="max_iter_reached", passed=False, objective=10.0,
             seconds=3.0),
        _row("subgradient", status="max_iter_reached", passed=False,
             objective=10.2, seconds=30.0),
    ])
    exact, fast, sub = rows
    assert exact["certified"] is False and "not certified" in exact["why"]
    # no certified yardstick: the fast row's agreement is not judged
    assert fast["gap"] is None and fast["agreeing"] is None
    assert fast["converged"] is False and fast["slower"] is True
    assert "slower than exact" in fast["why"]
    # a paper's algorithm is not blamed for time or its status
    assert sub["converged"] is None and not sub["failed"]
    s = conformance.summarize(rows)
    assert s["certified"] == [0, 1] and s["converged"] == [0, 1]
    assert s["slower"] == [2, 2] and s["failing"] == 2


def test_judge_slower_has_a_noise_margin_and_errors_fail():
    rows = conformance.judge([
        _row("exact", seconds=1.0),
        _row("fast", seconds=1.0 + 0.5 * conformance.SLOWER_MARGIN),
        _row("subgradient", error="killed after 60 s", timeout=True, status="timeout",
             seconds=60.0),
    ])
    assert rows[1]["slower"] is False and not rows[1]["failed"]
    assert rows[2]["failed"] and "killed" in rows[2]["why"]
    assert conformance.summarize(rows)["timeouts"] == 1


def test_judge_proven_infeasible_counts_as_certified():
    rows = conformance.judge([
        _row("exact", family="constraintdml", estimator="ConstraintDML",
             error="InfeasibleError: ...", status="error", proven_infeasible=True),
        _row("exact", family="constraintdml", estimator="ConstraintDMLSupervised",
             error="InfeasibleError: ...", status="error", proven_infeasible=False),
    ])
    assert rows[0]["certified"] and not rows[0]["failed"]
    assert not rows[1]["certified"] and rows[1]["failed"]


def test_load_dataset_is_a_training_fold_standardised():
    X, y = conformance.load_dataset("digits-pca30", 3)
    assert X.shape == (1438, 30) and y.shape == (1438,)
    X, y = conformance.load_dataset("wine", 0)
    assert X.shape[0] == 142
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-12)
    with pytest.raises(ValueError, match="dataset"):
        conformance.load_dataset("mnist", 0)


def test_cases_refuse_unknown_names():
    with pytest.raises(ValueError, match="families"):
        conformance.cases(["iris"], [0], ["mildml"])
    with pytest.raises(ValueError, match="methods"):
        conformance.cases(["iris"], [0], ["mmc"], methods=["sgd"])
    assert len(conformance.cases(["iris"], [0, 1], ["slr"])) == 10


# -- the command -----------------------------------------------------------------


def test_bench_suite_real_prints_table_and_summary(capsys, tmp_path):
    code = main(["bench", "--suite", "real", "--datasets", "iris", "--seeds", "1",
                 "--families", "mmc", "--estimators", "MMC", "--methods",
                 "exact,fast", "--no-isolate"])
    out, _ = capsys.readouterr()
    assert code == 0, out
    assert "certified 1/1, converged 1/1, agreeing 1/1" in out
    assert out.splitlines()[0].split()[:5] == ["dataset", "seed", "family",
                                               "estimator", "method"]
    code = main(["bench", "--suite", "real", "--datasets", "iris", "--seeds", "1",
                 "--families", "mmc", "--estimators", "MMC", "--methods", "exact",
                 "--no-isolate", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["summary"]["certified"] == [1, 1]
    assert doc["rows"][0]["n_constraints"] == 20 * 3 ** 2


def test_isolated_case_killed_at_its_budget_is_a_row():
    rows = conformance.run_suite(["iris"], [0], ["slr"], methods=["exact"],
                                 max_seconds=0.05)
    (row,) = rows
    assert row["status"] == "timeout" and row["failed"]
    assert not row["certified"]


def test_paper_algorithms_are_reported_not_judged():
    rows = conformance.judge([
        _row("exact", objective=10.0),
        _row("subgradient", status="max_iter_reached", passed=False,
             objective=14.0, seconds=30.0),
    ])
    sub = rows[1]
    # Algorithm 1 40 % above the optimum: the gap is shown, no verdict
    assert sub["gap"] == pytest.approx(0.4)
    assert sub["tolerance"] is None and sub["agreeing"] is None
    assert not sub["failed"]
    for family, methods in conformance.METHODS.items():
        for name, (_, role, _, tol_key) in methods.items():
            if role == "paper":
                assert tol_key is None, (family, name)


# -- LDML: certified refusals (the maximum likelihood not attained) ------------


def _ldml(method, estimator="LDML", **kw):
    return _row(method, family="ldml", estimator=estimator, **kw)


def _refusal(method, **kw):
    return _ldml(method, error="NotAttainedError: pairs: a metric separates ...",
                 error_type="NotAttainedError", status="not_attained", **kw)


def test_judge_ldml_refusal_agreed_by_exact_and_fast_is_the_answer():
    rows = conformance.judge([_refusal("exact"), _refusal("fast"),
                              _refusal("lowrank")])
    exact, fast, lowrank = rows
    assert exact["certified"] and exact["refusal"] == "agreed" and not exact["failed"]
    assert fast["converged"] and not fast["failed"]
    # no optimum to agree with
    assert fast["gap"] is None and fast["agreeing"] is None
    assert not lowrank["failed"]
    s = conformance.summarize(rows)
    assert s["certified"] == [1, 1] and s["failing"] == 0


def test_judge_ldml_refusal_against_a_solution_fails_both():
    rows = conformance.judge([_refusal("exact"), _ldml("fast"),
                              _ldml("lowrank")])
    exact, fast, lowrank = rows
    assert exact["failed"] and "fast returned a solution" in exact["why"]
    assert fast["failed"] and "exact refused" in fast["why"]
    assert lowrank["failed"] and "exact refused" in lowrank["why"]
    # a refusal nobody confirms is not accepted either
    (alone,) = conformance.judge([_refusal("exact")])
    assert alone["failed"] and not alone["certified"]
    assert "fast was not run" in alone["why"]


def test_judge_ldml_refusal_only_where_lam_is_zero():
    # lam = 0.1 attains the optimum everywhere: a refusal there is an error
    rows = conformance.judge([_refusal("exact-lam0.1"), _refusal("fast-lam0.1")])
    assert all(r["failed"] and r["refusal"] is None for r in rows)


def test_slice_ldml_certified_or_refused():
    # iris: lam = 0 is attained; wine's 180 pairs are separated by a metric
    rows = (_group("iris", 0, "LDML", ("exact", "fast", "exact-lam0.1", "fast-lam0.1"))
            + _group("wine", 0, "LDML", ("exact", "fast")))
    for r in rows:
        # timing ("slower than exact") is left to the command, as above
        what = f"{r['dataset']}/LDML/{r['method']}: {r['why']}"
        if r["dataset"] == "wine":
            assert r["error_type"] == "NotAttainedError", what
            assert r["refusal"] == "agreed", what
            assert r["certified"] or r["converged"], what
        elif r["role"] == "fast":
            assert r["converged"] and r["agreeing"], what
            assert abs(r["gap"]) <= r["tolerance"], what
        else:
            assert r["certified"] and r["status"] == "optimal", what


def test_judge_size_refusal_is_not_judged_and_fast_stands_on_its_certificate():
    # LDMLSupervised "exact" beyond its documented size: nothing to certify;
    # the fast row is judged converged on its own certificate, with no gap
    size = _ldml("exact", estimator="LDMLSupervised",
                 error="ProblemSizeError: solver: 'exact' gives CVXPY one ...",
                 error_type="ProblemSizeError", status="beyond_size")
    fast = _ldml("fast", estimator="LDMLSupervised")
    rows = conformance.judge([size, fast])
    assert rows[0]["refusal"] == "size" and rows[0]["certified"] is None
    assert not rows[0]["failed"]
    assert rows[1]["converged"] and rows[1]["agreeing"] is None and not rows[1]["failed"]
    s = conformance.summarize(rows)
    assert s["errors"] == 0 and s["failing"] == 0 and s["certified"] == [0, 0]
    # any other error of an exact row still fails
    other = _ldml("exact", estimator="LDMLSupervised", error="ValueError: x",
                  error_type="ValueError", status="error")
    assert conformance.judge([other])[0]["failed"]


def test_gap_scales_are_read_from_the_tolerance_table():
    from cvxmetric._tolerances import GAP_SCALES, relative_gap

    assert GAP_SCALES == {"mmc": "objective"}
    assert relative_gap("mmc", 2e-4, 1e-4) == pytest.approx(1.0)
    assert relative_gap("qwise", 2e-4, 1e-4) == pytest.approx(1e-4)
    assert relative_gap("mmc", 1.0, 0.0) is None


def test_certificate_states_its_scale():
    from cvxmetric.result import Certificate

    cert = Certificate.from_bound(5.0, 4.5, max_violation=0.0, min_eig=0.0,
                                  solver="test")
    assert cert.scale == 5.0 and cert.rel_gap == pytest.approx(0.5 / cert.scale)
    small = Certificate.from_bound(0.25, 0.2, max_violation=0.0, min_eig=0.0,
                                   solver="test")
    assert small.scale == 1.0
    assert "scale" in cert.as_dict()
