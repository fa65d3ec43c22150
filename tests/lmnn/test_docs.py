"""docs/lmnn.md is executable: its first ```python block runs and prints the
```text block after it (helpers reused from tests/test_docs.py), and it
names the code it describes."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LMNN_DOC = ROOT / "docs" / "lmnn.md"


def test_lmnn_example_output(docs_helpers):
    got, want = docs_helpers.run_example(LMNN_DOC.read_text(), LMNN_DOC)
    assert any(w.startswith("exact objective:") for w in want)
    # "exact objective:" is compared numerically (NUMERIC_PREFIXES)
    docs_helpers._check_lines(got, want, lambda w: True)


def test_lmnn_page_names_existing_code():
    text = LMNN_DOC.read_text()
    import cvxmetric.lmnn as lmnn

    for name in lmnn.__all__:
        assert name in text, f"docs/lmnn.md does not mention {name}"
    for path in ("cvxmetric/lmnn/_problem.py", "cvxmetric/lmnn/exact.py",
                 "cvxmetric/lmnn/estimator.py", "cvxmetric/lmnn/_collection.py"):
        assert path in text and (ROOT / path).is_file()
