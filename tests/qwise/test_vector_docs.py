"""The examples of the vector-model and structural pages of the Qwise theory
page (docs/qwise/vector.md, docs/qwise/structural.md) run and print what the page shows."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Each section's heading and the sub-page of docs/qwise/ that holds it.
HEADINGS = {"## The vector model": "vector.md",
            "## Structural metric learning": "structural.md"}

#: Relative tolerance of printed decimals (solver round-off across machines).
RTOL = 1e-5


def _section(heading):
    """The "### Example" subsection of the section under ``heading``."""
    text = (ROOT / "docs" / "qwise" / HEADINGS[heading]).read_text()
    start = text.index("### Example", text.index(heading))
    body = start + len("### Example")
    nxt = re.search(r"^##+ ", text[body:], re.MULTILINE)
    return text[start:body + nxt.start()] if nxt else text[start:]


@pytest.mark.parametrize("heading", list(HEADINGS))
def test_example_prints_what_the_page_shows(docs_helpers, heading):
    where = f"docs/qwise/{HEADINGS[heading]} ({heading[3:]})"
    pairs = docs_helpers.python_text_pairs(_section(heading), where)
    assert len(pairs) == 1
    code, expected = pairs[0]
    got = docs_helpers.run_code(code, where)
    want = expected.splitlines()
    assert len(got) == len(want), "\n".join(got)
    for g, w in zip(got, want):
        assert docs_helpers.same_numbers(g, w, RTOL), f"printed {g!r}, the page shows {w!r}"
