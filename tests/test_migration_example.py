"""The metric-learn migration example runs and does what its docs say."""

import pathlib
import runpy

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_migration_example_runs(capsys):
    module = runpy.run_path(str(ROOT / "examples" / "metric_learn_migration.py"))
    out = module["main"]()
    text = capsys.readouterr().out
    assert "5-NN accuracy" in text and "ROC-AUC" in text
    assert 0.9 < out["auc"] <= 1.0
    assert out["best"]["diagonal"] in (False, True)
    # the only line naming the package is the import (metric-learn's names)
    src = (ROOT / "examples" / "metric_learn_migration.py").read_text()
    code = [l for l in src.splitlines() if "cvxmetric" in l and not l.startswith((" ", '"'))]
    assert code == ["from cvxmetric import MMC, MMCSupervised as MMC_Supervised  # the one changed line"]


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
