"""The constraint-based section of the RankDML docs (docs/rankdml.md, under
"## Constraint-based baseline") is executable: its first ```python block
runs and prints the ```text block after it (helpers from tests/test_docs.py)."""

import contextlib
import importlib.util
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "rankdml.md"
HEADING = "## Constraint-based baseline"


def _docs_helpers():
    """tests/test_docs.py as a module (tests are not a package)."""
    spec = importlib.util.spec_from_file_location(
        "_cvxmetric_test_docs_cdml", ROOT / "tests" / "test_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


helpers = _docs_helpers()


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
def example():
    path, text = section_text()
    code, expected = helpers.example_and_expected(text)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(path), "exec"), {"__name__": "__docs_example__"})
    return out.getvalue().splitlines(), expected.splitlines()


def test_example_output(example):
    got, want = example
    assert any(w.startswith("exact objective:") for w in want)
    helpers._check_lines(got, want, lambda w: True)


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
