"""docs/closed_forms.md is executable: its first ```python block runs and
prints the ```text block after it (helpers reused from tests/test_docs.py),
and it names the code it describes."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "closed_forms.md"


def test_example_output(docs_helpers):
    got, want = docs_helpers.run_example(DOC.read_text(), DOC)
    docs_helpers._check_lines(got, want, lambda w: True)


def test_page_names_existing_code():
    text = DOC.read_text()
    import cvxmetric.lfda as lfda
    import cvxmetric.rca as rca

    for name in rca.__all__ + lfda.__all__:
        if name not in ("EMBEDDINGS", "neighbour_k"):
            assert name in text, f"docs/closed_forms.md does not mention {name}"
    for path in ("cvxmetric/rca/_problem.py", "cvxmetric/rca/exact.py",
                 "cvxmetric/rca/fast.py", "cvxmetric/rca/estimator.py",
                 "cvxmetric/rca/_collection.py", "cvxmetric/lfda/_problem.py",
                 "cvxmetric/lfda/estimator.py"):
        assert path in text and (ROOT / path).is_file()
