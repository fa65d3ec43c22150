"""docs/rankdml/estimators.md is executable: its first ```python block runs and prints
the ```text block that follows it (the exact objective compared numerically;
runner and line checks from tests/test_docs.py, via ``docs_helpers``)."""

from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "rankdml" / "estimators.md"
#: The sub-page with the retrieval experiment and the link to the baseline.
EXPERIMENTS = DOC.with_name("experiments.md")


@pytest.fixture(scope="module")
def printed(docs_helpers):
    return docs_helpers.run_example(DOC.read_text(), DOC)


def test_example_prints_the_documented_output(printed, docs_helpers):
    got, want = printed
    assert any(w.startswith("exact objective:") for w in want)
    docs_helpers._check_lines(got, want, lambda w: True)


def test_numeric_comparison_is_strict(docs_helpers):
    same = docs_helpers._same_line
    assert same("exact objective: 137.259", "exact objective: 137.259")
    assert not same("exact objective: 137.26", "exact objective: 137.259")
    assert not same("certificate passed: False", "certificate passed: True")


def test_page_has_the_retrieval_and_baseline_sections():
    text = EXPERIMENTS.read_text()
    assert "## Retrieval experiment (CMC)" in text
    assert "(../constraintdml/index.md)" in text
