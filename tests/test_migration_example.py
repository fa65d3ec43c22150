"""The metric-learn migration example runs and does what its docs say."""

import pathlib
import runpy

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_migration_example_runs(capsys):
    module = runpy.run_path(str(ROOT / "examples" / "metric_learn_migration.py"))
    out = module["main"](["--no-figures"])
    text = capsys.readouterr().out
    assert "5-NN accuracy" in text and "ROC-AUC" in text
    assert 0.9 < out["auc"] <= 1.0
    assert out["best"]["diagonal"] in (False, True)
    # the only line naming the package's learners is the import
    # (metric-learn's names); the other is the gallery's figure plumbing,
    # which every example shares and a metric-learn script has no need of
    src = (ROOT / "examples" / "metric_learn_migration.py").read_text()
    code = [l for l in src.splitlines() if "cvxmetric" in l and not l.startswith((" ", '"'))]
    plumbing = [l for l in code if l.startswith("from cvxmetric.experiments._figures import")]
    assert len(plumbing) == 1
    assert [l for l in code if l not in plumbing] == [
        "from cvxmetric import MMC, MMCSupervised as MMC_Supervised  # the one changed line"]


def test_docs_table_names_exist():
    import cvxmetric

    text = (ROOT / "docs" / "metric_learn.md").read_text()
    for name in ("MMC", "MMCSupervised", "Qwise", "RankDML"):
        assert f"`{name}`" in text and hasattr(cvxmetric, name)
    for method in ("predict", "decision_function", "score", "set_threshold",
                   "calibrate_threshold", "get_metric", "pair_distance",
                   "pair_score", "score_pairs"):
        assert hasattr(cvxmetric.MMC, method)
    # signatures against metric-learn 0.7's: tests/test_metric_learn_parity.py
