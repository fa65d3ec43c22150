"""The constraint-based baseline's page (docs/constraintdml/) is executable:
the first ```python block of its estimators page runs and prints the ```text block after it (helpers
from tests/test_docs.py)."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "constraintdml"
#: The theory page: its overview and sub-pages, in the order of its toctree.
FILES = ("index.md", "formulation.md", "decisions.md", "estimators.md")
#: The sub-page with the example.
EXAMPLE = PAGE / "estimators.md"
HEADING = "# The constraint-based baseline"


def section_text():
    """``(path, text)`` of the constraint-based page, all its files."""
    text = "\n".join((PAGE / f).read_text() for f in FILES)
    start = text.find(HEADING)
    if start < 0:
        pytest.fail(f"no '{HEADING}' section in {PAGE}")
    return PAGE, text[start:]


@pytest.fixture(scope="module")
def example(docs_helpers):
    return docs_helpers.run_example(EXAMPLE.read_text(), EXAMPLE)


def test_example_output(example, docs_helpers):
    got, want = example
    assert any(w.startswith("exact objective:") for w in want)
    docs_helpers._check_lines(got, want, lambda w: True)


def test_section_names_existing_code():
    _, text = section_text()
    for path in ("cvxmetric/constraintdml/_problem.py",
                 "cvxmetric/constraintdml/fast.py",
                 "cvxmetric/constraintdml/estimator.py",
                 "cvxmetric/constraintdml/_collection.py"):
        assert path in text and (ROOT / path).is_file()
    for name in ("ConstraintData", "ConstraintDMLModel", "solve_constraint_exact",
                 "ConstraintDualSolver", "ConstraintDML", "ConstraintDMLSupervised",
                 "constraintdml/fast"):
        assert name in text
