"""The CVXPY declarations shown in the family pages are the source's own.

The lines that declare each family's problem are marked in the source::

    # [declare:NAME]
    ...the declaring lines...
    # [/declare]

and a page shows them as an excerpt (a block that is not run: it names
the file it is cut from, and the site shows that name as its caption)

    <!-- declare: NAME [NAME ...] -->
    ```{code-block} python
    :caption: Excerpt from SOURCE[, SOURCE ...]

    ...the marked lines of NAME, dedented (several names: joined by "# ...")...
    ```

These tests check that every such block equals the marked source lines
verbatim, that its caption names the files of its regions, that every
marked region is shown on a page, and that each family page has its "The
CVXPY declaration" section. After an edit of a marked
region, regenerate the blocks with

    python tests/test_docs_declarations.py --write
"""

import re
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The files whose declaring lines are marked.
SOURCES = (
    "cvxmetric/qwise/exact.py",
    "cvxmetric/qwise_vector/exact.py",
    "cvxmetric/qwise_structural/exact.py",
    "cvxmetric/qwise_structural/fast.py",
    "cvxmetric/mmc/exact.py",
    "cvxmetric/rankdml/exact.py",
    "cvxmetric/constraintdml/_problem.py",
    "cvxmetric/slr/estimator.py",
    "cvxmetric/omdml/exact.py",
    "cvxmetric/ldml/exact.py",
    "cvxmetric/lmnn/exact.py",
    "cvxmetric/rca/exact.py",
    "cvxmetric/scml/exact.py",
    "cvxmetric/sdml/exact.py",
    "cvxmetric/gmml/exact.py",
    "cvxmetric/itml/exact.py",
)

#: Family pages, each with a "## The CVXPY declaration" section (of a
#: theory page split into sub-pages, the sub-page that holds it).
PAGES = ("docs/qwise/formulation.md", "docs/mmc/formulation.md", "docs/rankdml/formulation.md", "docs/constraintdml/formulation.md",
         "docs/slr/formulation.md",
         "docs/omdml/formulation.md", "docs/ldml/formulation.md", "docs/lmnn.md", "docs/closed_forms.md", "docs/scml.md", "docs/sdml.md", "docs/gmml.md", "docs/itml.md")
#: Every page that shows declaration blocks: the pages above and the
#: sub-pages with a declaration section of their own (the Qwise vector and
#: structural models).
BLOCK_PAGES = PAGES + ("docs/qwise/vector.md", "docs/qwise/structural.md")

HEADING = "## The CVXPY declaration"
JOIN = "# ..."

_START = re.compile(r"^\s*# \[declare:([a-z0-9-]+)\]\s*$")
_END = re.compile(r"^\s*# \[/declare\]\s*$")
_BLOCK = re.compile(
    r"^<!-- declare: ([a-z0-9 -]+?) -->\n```\{code-block\} python\n"
    r":caption: Excerpt from ([^\n]*)\n\n(.*?)^```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)


def regions():
    """``{name: (source path, dedented text)}`` of every marked region."""
    out = {}
    for rel in SOURCES:
        lines = (ROOT / rel).read_text().splitlines()
        name, body = None, []
        for number, line in enumerate(lines, 1):
            start, end = _START.match(line), _END.match(line)
            if start:
                assert name is None, f"{rel}:{number}: nested [declare:] marker"
                name, body = start.group(1), []
            elif end:
                assert name is not None, f"{rel}:{number}: [/declare] without a start"
                assert name not in out, f"{rel}:{number}: region {name!r} marked twice"
                out[name] = (rel, textwrap.dedent("\n".join(body)).strip("\n") + "\n")
                name = None
            elif name is not None:
                body.append(line)
        assert name is None, f"{rel}: region {name!r} is not closed"
    return out


def render(names, marked=None):
    marked = regions() if marked is None else marked
    return f"\n{JOIN}\n".join(marked[n][1] for n in names)


def caption(names, marked=None):
    """The files the regions ``names`` are cut from, in order, once each."""
    marked = regions() if marked is None else marked
    return ", ".join(dict.fromkeys(marked[n][0] for n in names))


def page_blocks(page):
    """``[(names, block text, match)]`` of the declaration blocks of ``page``."""
    text = (ROOT / page).read_text()
    return [(m.group(1).split(), m.group(3), m) for m in _BLOCK.finditer(text)]


def write():
    """Rewrite every declaration block of the pages from the source."""
    marked = regions()
    for page in BLOCK_PAGES:
        path = ROOT / page
        text = path.read_text()
        new = _BLOCK.sub(lambda m: (
            f"<!-- declare: {m.group(1)} -->\n```{{code-block}} python\n"
            f":caption: Excerpt from {caption(m.group(1).split(), marked)}\n\n"
            f"{render(m.group(1).split(), marked)}```"), text)
        if new != text:
            path.write_text(new)
            print(f"updated {page}")


def test_markers_are_well_formed_and_few():
    marked = regions()
    assert 8 <= len(marked) <= 30, sorted(marked)  # a few per family
    for name, (rel, body) in marked.items():
        assert "cp." in body, f"{name} ({rel}) declares no CVXPY expression"


@pytest.mark.parametrize("page", PAGES)
def test_page_has_a_declaration_section(page):
    text = (ROOT / page).read_text()
    assert HEADING in text, f"{page} has no '{HEADING}' section"
    assert page_blocks(page), f"{page} shows no declaration block"


@pytest.mark.parametrize("page", BLOCK_PAGES)
def test_blocks_equal_the_marked_source(page):
    marked = regions()
    for names, body, _ in page_blocks(page):
        for n in names:
            assert n in marked, f"{page}: no source region named {n!r}"
        assert body == render(names, marked), (
            f"{page}: the block of {names} differs from the source; run "
            f"'python tests/test_docs_declarations.py --write'")


@pytest.mark.parametrize("page", BLOCK_PAGES)
def test_blocks_are_captioned_with_their_source(page):
    """Each block is marked as an excerpt of the files it is cut from."""
    marked = regions()
    for names, _, m in page_blocks(page):
        assert m.group(2) == caption(names, marked), (
            f"{page}: the caption of {names} should read "
            f"'Excerpt from {caption(names, marked)}'")


def test_every_declaration_marker_opens_an_excerpt():
    """No ``<!-- declare: -->`` marker before a block of another form (the
    block would be skipped by the checks above)."""
    for page in BLOCK_PAGES:
        text = (ROOT / page).read_text()
        assert text.count("<!-- declare:") == len(page_blocks(page)), page


@pytest.mark.parametrize("page", BLOCK_PAGES)
def test_blocks_name_their_source_file(page):
    """The prose right before a block names the file it comes from."""
    marked = regions()
    text = (ROOT / page).read_text()
    for names, _, m in page_blocks(page):
        before = text[max(0, m.start() - 400):m.start()]
        for n in names:
            assert marked[n][0] in before, (
                f"{page}: name {marked[n][0]} just before the block of {n!r}")


def test_every_region_is_shown():
    shown = {n for page in BLOCK_PAGES for names, _, _ in page_blocks(page) for n in names}
    assert shown == set(regions()), sorted(set(regions()) ^ shown)


def test_marker_lines_are_comments_only():
    """The markers change no code: removing them leaves valid Python with
    the same statements (compiled bytecode compared)."""
    for rel in SOURCES:
        src = (ROOT / rel).read_text()
        stripped = "\n".join(l for l in src.splitlines()
                             if not (_START.match(l) or _END.match(l)))
        a = compile(src, rel, "exec")
        b = compile(stripped, rel, "exec")
        assert _code_equal(a, b), rel


def _code_equal(a, b):
    """Code objects equal up to line numbers."""
    if a.co_code != b.co_code or a.co_names != b.co_names:
        return False
    plain = [c for c in a.co_consts if not hasattr(c, "co_code")]
    if plain != [c for c in b.co_consts if not hasattr(c, "co_code")]:
        return False
    ca = [c for c in a.co_consts if hasattr(c, "co_code")]
    cb = [c for c in b.co_consts if hasattr(c, "co_code")]
    if len(ca) != len(cb):
        return False
    return all(_code_equal(x, y) for x, y in zip(ca, cb))


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
    else:
        for name, (rel, body) in regions().items():
            print(f"==== {name} ({rel})\n{body}")
