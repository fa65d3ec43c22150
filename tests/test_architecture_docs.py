"""docs/architecture.md is executable: each ```python block runs in a fresh
namespace and its standard output must equal the ```text block after it."""

from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def _pairs(docs_helpers):
    return docs_helpers.python_text_pairs(DOC.read_text(), "docs/architecture.md")


def test_two_examples(docs_helpers):
    assert len(_pairs(docs_helpers)) == 2


@pytest.mark.parametrize("k", range(2))
def test_example_output(docs_helpers, k):
    code, expected = _pairs(docs_helpers)[k]
    got = docs_helpers.run_code(code, f"docs/architecture.md example {k + 1}")
    assert got == expected.splitlines()
