"""Every Python block of the documentation pages is either run by a test,
which checks what it prints, or marked as an excerpt.

A block takes one of two forms, and no other:

* **runnable** -- a plain ```python block followed by a ```text block with
  what it prints.  Its page is listed in ``RUNNERS`` with the number of such
  blocks and the test modules that run them and compare their output; a
  block added to a page, or a page with a first block, fails here until a
  test runs it and the table says so.
* **excerpt** -- a MyST ``{code-block} python`` whose caption reads
  ``Excerpt from PATH[, PATH ...]``: not run, cut from those files of the
  repository (every line of it is in one of them); the site shows the
  caption above the block.  The CVXPY declarations of the family pages are
  such excerpts (tests/test_docs_declarations.py checks them verbatim).

The one block no page test ran before (docs/formats.md, writing a problem
instance) is run here; it solves nothing.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: Pages with runnable blocks: ``page: (number of blocks, test modules that
#: run them and check their output)``.
RUNNERS = {
    "add_a_formulation.md": (8, ("tests/test_add_a_formulation.py",)),
    "architecture.md": (2, ("tests/test_architecture_docs.py",)),
    "certify.md": (2, ("tests/test_certify_docs.py",)),
    "closed_forms.md": (1, ("tests/rca/test_docs.py",)),
    "constraintdml/estimators.md": (2, ("tests/constraintdml/test_docs.py",
                                        "tests/test_docs_prototype.py")),
    "formats.md": (1, ("tests/test_docs_blocks.py",)),
    "gmml.md": (2, ("tests/gmml/test_docs.py", "tests/test_docs_prototype.py")),
    "guide/model_selection.md": (1, ("tests/test_docs_guide.py",)),
    "index.md": (1, ("tests/test_docs_guide.py",)),
    "itml.md": (2, ("tests/itml/test_docs.py", "tests/test_docs_prototype.py")),
    "ldml/estimators.md": (2, ("tests/ldml/test_docs.py",
                               "tests/test_docs_prototype.py")),
    "lmnn.md": (2, ("tests/lmnn/test_docs.py", "tests/test_docs_prototype.py")),
    "mmc/estimators.md": (3, ("tests/mmc/test_docs.py",
                              "tests/test_docs_prototype.py")),
    "model.md": (4, ("tests/test_model_docs.py",)),
    "omdml/estimators.md": (2, ("tests/omdml/test_docs.py",
                                "tests/test_docs_prototype.py")),
    "omdml/formulation.md": (1, ("tests/test_model_declared_more.py",)),
    "qwise/applications.md": (1, ("tests/qwise/test_applications_docs.py",)),
    "qwise/attributes.md": (1, ("tests/qwise/test_applications_docs.py",)),
    "qwise/estimators.md": (2, ("tests/test_docs.py", "tests/test_docs_prototype.py")),
    "qwise/structural.md": (1, ("tests/qwise/test_vector_docs.py",)),
    "qwise/taxonomy.md": (1, ("tests/qwise/test_applications_docs.py",)),
    "qwise/vector.md": (1, ("tests/qwise/test_vector_docs.py",)),
    "rankdml/estimators.md": (2, ("tests/rankdml/test_docs_example.py",
                                  "tests/test_docs_prototype.py")),
    "scml.md": (1, ("tests/test_docs_prototype.py",)),
    "sdml.md": (2, ("tests/sdml/test_docs.py", "tests/test_docs_prototype.py")),
    "slr/estimators.md": (2, ("tests/slr/test_docs.py", "tests/test_docs_prototype.py")),
}

#: Folders of docs/ that the build writes (not pages of the repository).
BUILT = {"_build", "auto_examples", "generated"}
PAGES = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")
               if not BUILT & set(p.relative_to(DOCS).parts))

#: Any fence that opens a Python block, in whatever form: the language
#: (``python``, ``py``, ``python3``, ``ipython``...) alone or as the
#: argument of a MyST directive (``{code-block}``, ``{code}``, ...).
_PYTHON = re.compile(r"^(`{3,}|~{3,})[ \t]*(\{[\w-]+\}[ \t]*)?(i?py(?:thon)?3?)\b",
                     re.IGNORECASE)
_EXCERPT = re.compile(r"^```\{code-block\} python\n:caption: Excerpt from (.+)\n\n")


def python_blocks(text):
    """``(opening line, kind, body)`` of every Python block of ``text``:
    kind ``"runnable"`` (```python), ``"excerpt"`` (a captioned
    ``{code-block} python``) or ``"other"`` (any other form)."""
    lines = text.splitlines(keepends=True)
    out, k = [], 0
    while k < len(lines):
        m = re.match(r"^(`{3,}|~{3,})", lines[k])
        if not m:
            k += 1
            continue
        end = next((j for j in range(k + 1, len(lines))
                    if lines[j].strip() == m.group(1)), len(lines))
        block = "".join(lines[k:end + 1])
        if _PYTHON.match(lines[k]):
            if lines[k].rstrip() == "```python":
                kind = "runnable"
            elif _EXCERPT.match(block):
                kind = "excerpt"
            else:
                kind = "other"
            out.append((k + 1, kind, "".join(lines[k + 1:end])))
        k = end + 1
    return out


def _runnable_counts():
    return {page: n for page in PAGES
            if (n := sum(kind == "runnable" for _, kind, _ in
                         python_blocks((DOCS / page).read_text())))}


def test_the_block_reader_sees_every_form():
    text = ("```python\nx = 1\n```\n\n```text\n```\n\n"
            "```{code-block} python\n:caption: Excerpt from a.py\n\nx = 2\n```\n\n"
            "```py\nx = 3\n```\n\n```{code-block} python\nx = 4\n```\n\n"
            "````python\nx = 5\n````\n\n```bash\nls\n```\n")
    assert [kind for _, kind, _ in python_blocks(text)] == [
        "runnable", "excerpt", "other", "other", "other"]


@pytest.mark.parametrize("page", PAGES)
def test_every_block_is_runnable_or_an_excerpt(docs_helpers, page):
    text = (DOCS / page).read_text()
    blocks = python_blocks(text)
    other = [line for line, kind, _ in blocks if kind == "other"]
    assert not other, (
        f"docs/{page}, lines {other}: a Python block is a ```python block "
        f"followed by a ```text block with what it prints, or a "
        f"```{{code-block}} python captioned 'Excerpt from PATH'")
    runnable = sum(kind == "runnable" for _, kind, _ in blocks)
    # each runnable block has its printed output after it
    assert len(docs_helpers.python_text_pairs(text, f"docs/{page}")) == runnable


@pytest.mark.parametrize("page", PAGES)
def test_excerpts_are_cut_from_the_files_they_name(page):
    for line, kind, body in python_blocks((DOCS / page).read_text()):
        if kind != "excerpt":
            continue
        caption, code = body.split("\n\n", 1)
        paths = caption.removeprefix(":caption: Excerpt from ").split(", ")
        missing = [p for p in paths if not (ROOT / p).is_file()]
        assert not missing, f"docs/{page}:{line}: no file {missing}"
        source = "\n".join((ROOT / p).read_text() for p in paths)
        for row in code.splitlines():
            row = row.strip()
            assert not row or row == "# ..." or row in source, (
                f"docs/{page}:{line}: {row!r} is not in {', '.join(paths)}")


def test_every_runnable_block_has_a_runner():
    """The table above is the pages' own count: a new runnable block (or
    page) needs a test that runs it, and an entry here."""
    assert _runnable_counts() == {page: n for page, (n, _) in RUNNERS.items()}


@pytest.mark.parametrize("page", sorted(RUNNERS))
def test_runners_read_the_page(page):
    """Each runner names the page it runs: its folder, and its file name or
    every page of the folder (``*.md``)."""
    folder, name = (["docs", *page.split("/")][-2:])
    for module in RUNNERS[page][1]:
        src = (ROOT / module).read_text().replace('" / "', "/")
        assert f"{folder}/" in src and (name in src or "*.md" in src), \
            f"{module} does not read docs/{page}"


def test_formats_page_writes_the_instance_it_shows(docs_helpers, tmp_path,
                                                   monkeypatch):
    """docs/formats.md's "Bring your own instance" (it writes to the current
    directory: run in a temporary one)."""
    monkeypatch.chdir(tmp_path)
    pairs = docs_helpers.python_text_pairs((DOCS / "formats.md").read_text(),
                                           "docs/formats.md")
    assert len(pairs) == 1
    code, expected = pairs[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = docs_helpers.run_code(code, "docs/formats.md")
    assert got == expected.splitlines()
    assert (tmp_path / "my_collection").is_dir()
