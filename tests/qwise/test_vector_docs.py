"""The vector-model example of docs/qwise.md runs and prints what the page shows."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEADING = "## The vector model"

#: Relative tolerance of printed decimals (solver round-off across machines).
RTOL = 1e-5


def _section():
    """The "### Example" subsection of the vector-model section."""
    text = (ROOT / "docs" / "qwise.md").read_text()
    start = text.index("### Example", text.index(HEADING))
    body = start + len("### Example")
    nxt = re.search(r"^##+ ", text[body:], re.MULTILINE)
    return text[start:body + nxt.start()] if nxt else text[start:]


def test_vector_example_prints_what_the_page_shows(docs_helpers):
    pairs = docs_helpers.python_text_pairs(_section(), "docs/qwise.md (vector model)")
    assert len(pairs) == 1
    code, expected = pairs[0]
    got = docs_helpers.run_code(code, "docs/qwise.md (vector model)")
    want = expected.splitlines()
    assert len(got) == len(want), "\n".join(got)
    for g, w in zip(got, want):
        assert docs_helpers.same_numbers(g, w, RTOL), f"printed {g!r}, the page shows {w!r}"
