"""docs/gmml.md is executable and names the code it describes."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "gmml.md"


def test_gmml_example_output(docs_helpers):
    got, want = docs_helpers.run_example(DOC.read_text(), DOC)
    assert any(w.startswith("exact objective:") for w in want)
    docs_helpers._check_lines(got, want, lambda w: True)


def test_gmml_page_names_existing_code():
    text = DOC.read_text()
    import cvxmetric.gmml as gmml

    for name in gmml.__all__:
        assert name in text, f"docs/gmml.md does not mention {name}"
    for path in ("cvxmetric/gmml/_problem.py", "cvxmetric/gmml/exact.py",
                 "cvxmetric/gmml/fast.py", "cvxmetric/gmml/estimator.py",
                 "cvxmetric/gmml/_collection.py"):
        assert path in text and (ROOT / path).is_file()
