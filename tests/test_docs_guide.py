"""The site's own pages (docs/index.md, docs/guide/*.md): every ```python
block runs as written, in a fresh namespace, and prints the ```text block
after it (numbers to a relative tolerance), and every registered
estimator (``cvxmetric.formulations()``) has a row in the "which estimator" table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import cvxmetric

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = [DOCS / "index.md", *sorted((DOCS / "guide").glob("*.md"))]
BLOCKS = [(p, k) for p in PAGES
          for k in range(len(re.findall(r"^```python\n", p.read_text(), re.M)))]

#: Relative tolerance of printed decimals.
RTOL = 1e-4


@pytest.mark.parametrize("page, k", BLOCKS,
                         ids=[f"{p.relative_to(DOCS)}-{k}" for p, k in BLOCKS])
def test_python_block_prints_what_the_page_shows(docs_helpers, page, k):
    where = f"{page.relative_to(DOCS)} block {k + 1}"
    pairs = docs_helpers.python_text_pairs(page.read_text(), where)
    assert len(pairs) == sum(1 for p, _ in BLOCKS if p == page)
    code, expected = pairs[k]
    got = docs_helpers.run_code(code, where)
    want = expected.splitlines()
    assert len(got) == len(want), "\n".join(got)
    for g, w in zip(got, want):
        assert docs_helpers.same_numbers(g, w, RTOL), \
            f"{where}: printed {g!r}, the page shows {w!r}"


def test_choosing_table_covers_every_estimator():
    table = (DOCS / "guide" / "choosing.md").read_text()
    rows = set(re.findall(r"^\|[^|]*\| `(\w+)` \|", table, re.M))
    estimators = {e if isinstance(e, str) else e.__name__
                  for f in cvxmetric.formulations() for e in f.estimators}
    assert estimators - rows == set()
