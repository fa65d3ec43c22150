"""The site's own pages (docs/index.md, docs/guide/*.md): every ```python
block runs as written, in a fresh namespace, and every registered
estimator (``cvxmetric.formulations()``) has a row in the "which estimator" table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import cvxmetric

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = [DOCS / "index.md", *sorted((DOCS / "guide").glob("*.md"))]
BLOCKS = [(p, k, code) for p in PAGES
          for k, code in enumerate(re.findall(r"```python\n(.*?)```",
                                              p.read_text(), re.S))]


@pytest.mark.parametrize("page, k, code", BLOCKS,
                         ids=[f"{p.relative_to(DOCS)}-{k}" for p, k, _ in BLOCKS])
def test_python_block_runs(page, k, code):
    exec(compile(code, f"{page.name} block {k + 1}", "exec"), {})


def test_choosing_table_covers_every_estimator():
    table = (DOCS / "guide" / "choosing.md").read_text()
    rows = set(re.findall(r"^\|[^|]*\| `(\w+)` \|", table, re.M))
    estimators = {e if isinstance(e, str) else e.__name__
                  for f in cvxmetric.formulations() for e in f.estimators}
    assert estimators - rows == set()
