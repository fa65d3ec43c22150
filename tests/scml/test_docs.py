"""docs/scml.md names the code it describes."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCML_DOC = ROOT / "docs" / "scml.md"


def test_scml_page_names_existing_code():
    text = SCML_DOC.read_text()
    import cvxmetric.scml as scml

    for name in scml.__all__:
        assert name in text, f"docs/scml.md does not mention {name}"
    for path in ("cvxmetric/scml/_problem.py", "cvxmetric/scml/exact.py",
                 "cvxmetric/scml/estimator.py", "cvxmetric/scml/_collection.py"):
        assert path in text and (ROOT / path).is_file()
