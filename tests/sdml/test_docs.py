"""docs/sdml.md is executable: its first ```python block runs and prints the
```text block after it, and it names the code it describes."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "sdml.md"


def test_sdml_example_output(docs_helpers):
    got, want = docs_helpers.run_example(DOC.read_text(), DOC)
    assert any(w.startswith("exact objective:") for w in want)
    docs_helpers._check_lines(got, want, lambda w: True)


def test_sdml_page_names_existing_code():
    text = DOC.read_text()
    import cvxmetric.sdml as sdml

    for name in sdml.__all__:
        assert name in text, f"docs/sdml.md does not mention {name}"
    for path in ("cvxmetric/sdml/_problem.py", "cvxmetric/sdml/exact.py",
                 "cvxmetric/sdml/fast.py", "cvxmetric/sdml/estimator.py",
                 "cvxmetric/sdml/_collection.py"):
        assert path in text and (ROOT / path).is_file()
