"""The "Prototype a variant" example of each family page runs and prints
what the page shows.

Each page has a section "## Prototype a variant" whose ```python block is
run in a fresh namespace; its standard output must equal the ```text block
after it, line by line, with printed numbers compared to a relative
tolerance (solver round-off across machines) and integers (ranks, counts)
exactly.
"""

import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("docs/qwise/estimators.md", "docs/mmc/estimators.md", "docs/rankdml/estimators.md", "docs/slr/estimators.md",
         "docs/ldml/estimators.md", "docs/omdml/estimators.md", "docs/constraintdml/estimators.md", "docs/lmnn.md",
         "docs/scml.md", "docs/sdml.md", "docs/gmml.md", "docs/itml.md")
HEADING = "## Prototype a variant"

#: Every file of those family pages: a page split into sub-pages
#: (docs/<family>/) counts with all the files of its folder.
FILES = tuple(sorted({str(f.relative_to(ROOT)) for page in PAGES
                      for f in ([ROOT / page] if Path(page).parent.name == "docs"
                                else (ROOT / page).parent.glob("*.md"))}))

#: Relative tolerance of printed decimals.
RTOL = 2e-3


def section(page):
    text = (ROOT / page).read_text()
    start = text.find(HEADING)
    assert start >= 0, f"{page} has no '{HEADING}' section"
    nxt = re.search(r"^## ", text[start + len(HEADING):], re.MULTILINE)
    end = start + len(HEADING) + nxt.start() if nxt else len(text)
    return text[start:end]


def test_line_comparison_is_strict(docs_helpers):
    def same_line(got, want):
        return docs_helpers.same_numbers(got, want, RTOL)

    assert same_line("objective 0.1053, rank 7", "objective 0.1054, rank 7")
    assert not same_line("objective 0.1053, rank 6", "objective 0.1053, rank 7")
    assert not same_line("objective 0.1153, rank 7", "objective 0.1053, rank 7")
    assert not same_line("certified False", "certified True")


@pytest.mark.parametrize("page", PAGES)
def test_prototype_prints_what_the_page_shows(docs_helpers, page):
    pairs = docs_helpers.python_text_pairs(section(page), page)
    assert pairs, f"{page}: no ```python block in '{HEADING}'"
    code, expected = pairs[0]
    assert "declared_problem(" in code, f"{page}: the prototype starts from declared_problem"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = docs_helpers.run_code(code, f"{page} (prototype)")
    want = expected.splitlines()
    assert len(got) == len(want), "\n".join(got)
    for g, w in zip(got, want):
        assert docs_helpers.same_numbers(g, w, RTOL), \
            f"{page}: printed {g!r}, the page shows {w!r}"


@pytest.mark.parametrize("page", FILES)
def test_pages_import_no_private_module(docs_helpers, page):
    """Examples of the family pages use public names only."""
    for lang, body in docs_helpers.fenced_blocks((ROOT / page).read_text()):
        if lang != "python":
            continue
        for line in body.splitlines():
            if line.startswith(("import ", "from ")):
                assert not re.search(r"\b_[a-z]", line.split(" import ")[0]), \
                    f"{page}: private module in {line!r}"
