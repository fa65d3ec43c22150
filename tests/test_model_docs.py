"""docs/model.md is executable: each ```python block runs in a fresh
namespace and its standard output must equal the ```text block after it
(numbers compared with a relative tolerance).  The block runner and the
line comparison are the docs tests' own (``docs_helpers``)."""

from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "model.md"

#: Relative tolerance of printed numbers (solver round-off across machines).
RTOL = 1e-4


def test_there_is_one_example_per_family(docs_helpers):
    assert len(docs_helpers.python_text_pairs(DOC.read_text(), "docs/model.md")) == 4


@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")
@pytest.mark.parametrize("k", range(4))
def test_example_output(docs_helpers, k):
    code, expected = docs_helpers.python_text_pairs(DOC.read_text(), "docs/model.md")[k]
    got = docs_helpers.run_code(code, f"docs/model.md example {k + 1}")
    want = expected.splitlines()
    assert len(got) == len(want), "\n".join(got)
    for g, w in zip(got, want):
        assert docs_helpers.same_numbers(g, w, RTOL), f"got {g!r}, expected {w!r}"
