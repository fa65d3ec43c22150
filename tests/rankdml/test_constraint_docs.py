"""The constraint-based section of the RankDML docs (docs/rankdml.md, under
"## Constraint-based baseline") is executable: its first ```python block
runs and prints the ```text block after it (helpers from tests/test_docs.py)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "rankdml.md"
HEADING = "## Constraint-based baseline"


def section_text():
    """``(path, text)`` of the constraint-based section."""
    text = PAGE.read_text()
    start = text.find(HEADING)
    if start < 0:
        pytest.fail(f"no '{HEADING}' section in {PAGE}")
    nxt = re.search(r"^## ", text[start + len(HEADING):], re.MULTILINE)
    end = start + len(HEADING) + nxt.start() if nxt else len(text)
    return PAGE, text[start:end]


@pytest.fixture(scope="module")
def example(docs_helpers):
    path, text = section_text()
    return docs_helpers.run_example(text, path)


def test_example_output(example, docs_helpers):
    got, want = example
    assert any(w.startswith("exact objective:") for w in want)
    docs_helpers._check_lines(got, want, lambda w: True)


def test_section_names_existing_code():
    _, text = section_text()
    for path in ("cvxmetric/rankdml/_constraint.py",
                 "cvxmetric/rankdml/_constraint_fast.py",
                 "cvxmetric/rankdml/constraint_estimator.py",
                 "cvxmetric/rankdml/_constraint_collection.py"):
        assert path in text and (ROOT / path).is_file()
    for name in ("ConstraintData", "ConstraintDMLModel", "solve_constraint_exact",
                 "ConstraintDualSolver", "ConstraintDML", "ConstraintDMLSupervised",
                 "constraintdml/fast"):
        assert name in text
