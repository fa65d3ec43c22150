"""docs/itml.md is executable: its first ```python block runs and prints the
```text block after it (helpers reused from tests/test_docs.py), and it
names the code it describes."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ITML_DOC = ROOT / "docs" / "itml.md"


def test_itml_example_output(docs_helpers):
    got, want = docs_helpers.run_example(ITML_DOC.read_text(), ITML_DOC)
    assert any(w.startswith("exact objective:") for w in want)
    # "exact objective:" is compared numerically (NUMERIC_PREFIXES); the
    # fast objective to the digits shown; Algorithm 1's pass count is the
    # one line that round-off may move
    docs_helpers._check_lines(got, want, lambda w: not w.startswith(("Algorithm 1",
                                                                     "fast objective")))
    fast = [float(g.split(":")[1]) for g in got if g.startswith("fast objective")]
    exact = [float(w.split(":")[1]) for w in want if w.startswith("exact objective")]
    assert fast[0] == pytest.approx(exact[0], rel=1e-6)
    line = [g for g in got if g.startswith("Algorithm 1")][0]
    assert "optimal_inaccurate" in line


def test_itml_page_names_existing_code():
    text = ITML_DOC.read_text()
    import cvxmetric.itml as itml

    for name in itml.__all__:
        assert name in text, f"docs/itml.md does not mention {name}"
    for path in ("cvxmetric/itml/_problem.py", "cvxmetric/itml/exact.py",
                 "cvxmetric/itml/fast.py", "cvxmetric/itml/estimator.py",
                 "cvxmetric/itml/_collection.py", "cvxmetric/bench/_ml_itml.py"):
        assert path in text and (ROOT / path).is_file()
