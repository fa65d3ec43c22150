"""docs/architecture.md is executable: each ```python block runs in a fresh
namespace and its standard output must equal the ```text block after it."""

from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def _pairs(docs_helpers):
    return docs_helpers.python_text_pairs(DOC.read_text(), "docs/architecture.md")


def test_two_examples(docs_helpers):
    assert len(_pairs(docs_helpers)) == 2


@pytest.mark.parametrize("k", range(2))
def test_example_output(docs_helpers, k):
    code, expected = _pairs(docs_helpers)[k]
    got = docs_helpers.run_code(code, f"docs/architecture.md example {k + 1}")
    assert got == expected.splitlines()


def _stage_rows():
    text = DOC.read_text()
    section = text[text.index("### Stage order"):text.index("## Declared problems")]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            rows.append((cells[0].strip("`"), cells[1].strip("`"), cells[2]))
    return rows


def _collapsed(trace):
    """``"name (kind), ..."`` with a repeated stage written ``xN`` once."""
    out = []
    for stage in trace:
        item = f"{stage.name} ({stage.kind})"
        if out and out[-1].startswith(item):
            out[-1] = f"{item} xN"
        else:
            out.append(item)
    return ", ".join(out)


def test_the_stage_table_has_every_supervised_learner():
    assert {r[0] for r in _stage_rows()} == {
        "QwiseSupervised", "QwiseVectorSupervised", "QwiseStructuralSupervised",
        "MMCSupervised", "ConstraintDMLSupervised", "RankDMLSupervised", "SLR",
        "LDMLSupervised"}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("estimator, solver, stages", _stage_rows())
def test_the_stage_table_is_what_runs(estimator, solver, stages):
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import StandardScaler

    import cvxmetric

    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    if estimator in ("SLR", "LDMLSupervised"):
        X, y = X[::3], y[::3]
    cls = getattr(cvxmetric, estimator)
    kwargs = {"solver": solver}
    if "random_state" in cls().get_params():
        kwargs["random_state"] = 0
    est = cls(**kwargs).fit(X, y)
    assert _collapsed(est.result_.trace) == stages
