"""The examples of the "Applications (Sec. 5-7)" section of the Qwise theory
page (docs/qwise/applications.md, taxonomy.md and attributes.md, in order)
run and print what the page shows: one per generator (webpage versions,
class taxonomy, relative attributes)."""

import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEADING = "## Applications (Sec. 5-7)"
#: The sub-pages of docs/qwise/ that hold the section, in order.
SUBPAGES = ("applications.md", "taxonomy.md", "attributes.md")
SUBSECTIONS = ("### Webpage versions", "### Hierarchical metric learning",
               "### Relative attributes")

#: Relative tolerance of printed decimals (solver round-off across machines);
#: a difference of one unit in the last printed digit is also accepted.
RTOL = 1e-4


def _section():
    text = "\n".join((ROOT / "docs" / "qwise" / p).read_text() for p in SUBPAGES)
    start = text.index(HEADING)
    body = start + len(HEADING)
    nxt = re.search(r"^## ", text[body:], re.MULTILINE)
    return text[start:body + nxt.start()] if nxt else text[start:]


def _subsection(heading):
    text = _section()
    start = text.index(heading)
    nxt = re.search(r"^###? ", text[start + len(heading):], re.MULTILINE)
    return text[start:start + len(heading) + nxt.start()] if nxt else text[start:]


def test_one_example_per_generator():
    for heading in SUBSECTIONS:
        assert "#### Example" in _subsection(heading), heading


@pytest.mark.parametrize("heading", SUBSECTIONS)
def test_example_prints_what_the_page_shows(docs_helpers, heading):
    where = f"docs/qwise ({heading[4:]})"
    pairs = docs_helpers.python_text_pairs(_subsection(heading), where)
    assert len(pairs) == 1, where
    code, expected = pairs[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = docs_helpers.run_code(code, where)
    want = expected.splitlines()
    assert len(got) == len(want), "\n".join(got)
    for g, w in zip(got, want):
        assert docs_helpers.same_numbers(g, w, RTOL), f"printed {g!r}, the page shows {w!r}"


def test_figures_exist():
    names = re.findall(r"\]\(\.\./(img/qwise_[a-z_]+\.png)\)", _section())
    assert names, "the applications show no figure"
    for name in names:
        assert (ROOT / "docs" / name).is_file(), name
