"""The "Prototype a variant" example of each family page runs and prints
what the page shows.

Each page has a section "## Prototype a variant" whose ```python block is
run in a fresh namespace; its standard output must equal the ```text block
after it, line by line, with printed numbers compared to a relative
tolerance (solver round-off across machines) and integers (ranks, counts)
exactly.
"""

import contextlib
import io
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("docs/qwise.md", "docs/mmc.md", "docs/rankdml.md", "docs/slr.md")
HEADING = "## Prototype a variant"

_FENCE = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_NUMBER = re.compile(r"[-+]?\d+\.\d+(?:e[-+]?\d+)?|[-+]?\d+e[-+]?\d+")

#: Relative tolerance of printed decimals.
RTOL = 2e-3


def section(page):
    text = (ROOT / page).read_text()
    start = text.find(HEADING)
    assert start >= 0, f"{page} has no '{HEADING}' section"
    nxt = re.search(r"^## ", text[start + len(HEADING):], re.MULTILINE)
    end = start + len(HEADING) + nxt.start() if nxt else len(text)
    return text[start:end]


def example(page):
    blocks = [(m.group(1), m.group(2)) for m in _FENCE.finditer(section(page))]
    for k, (lang, body) in enumerate(blocks):
        if lang == "python":
            assert k + 1 < len(blocks) and blocks[k + 1][0] == "text", \
                f"{page}: the prototype's ```python block needs a ```text block after it"
            return body, blocks[k + 1][1]
    raise AssertionError(f"{page}: no ```python block in '{HEADING}'")


def _last_digit(number):
    if "e" in number.lower() or "." not in number:
        return 1e-12
    return 1.01 * 10.0 ** -len(number.split(".")[1])


def same_line(got, want):
    if got == want:
        return True
    gn, wn = _NUMBER.findall(got), _NUMBER.findall(want)
    if _NUMBER.sub("#", got) != _NUMBER.sub("#", want) or len(gn) != len(wn):
        return False
    return all(float(g) == pytest.approx(float(w), rel=RTOL, abs=_last_digit(w))
               for g, w in zip(gn, wn))


def test_line_comparison_is_strict():
    assert same_line("objective 0.1053, rank 7", "objective 0.1054, rank 7")
    assert not same_line("objective 0.1053, rank 6", "objective 0.1053, rank 7")
    assert not same_line("objective 0.1153, rank 7", "objective 0.1053, rank 7")
    assert not same_line("certified False", "certified True")


@pytest.mark.parametrize("page", PAGES)
def test_prototype_prints_what_the_page_shows(page):
    code, expected = example(page)
    assert "declared_problem(" in code, f"{page}: the prototype starts from declared_problem"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(code, f"{page} (prototype)", "exec"), {"__name__": "__docs__"})
    got, want = buf.getvalue().splitlines(), expected.splitlines()
    assert len(got) == len(want), "\n".join(got)
    for g, w in zip(got, want):
        assert same_line(g, w), f"{page}: printed {g!r}, the page shows {w!r}"


@pytest.mark.parametrize("page", PAGES)
def test_pages_import_no_private_module(page):
    """Examples of the family pages use public names only."""
    text = (ROOT / page).read_text()
    for m in _FENCE.finditer(text):
        if m.group(1) != "python":
            continue
        for line in m.group(2).splitlines():
            if line.startswith(("import ", "from ")):
                assert not re.search(r"\b_[a-z]", line.split(" import ")[0]), \
                    f"{page}: private module in {line!r}"
