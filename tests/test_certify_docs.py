"""docs/certify.md: every ```python block runs and prints the ```text block after it."""

import warnings
from pathlib import Path

import pytest

PAGE = "docs/certify.md"
ROOT = Path(__file__).resolve().parents[1]
#: Relative tolerance of printed decimals (solver round-off across machines).
RTOL = 2e-3


def _pairs(docs_helpers):
    return docs_helpers.python_text_pairs((ROOT / PAGE).read_text(), PAGE)


def test_page_has_examples(docs_helpers):
    assert len(_pairs(docs_helpers)) == 2


@pytest.mark.parametrize("k", [0, 1])
def test_example_prints_what_the_page_shows(docs_helpers, k):
    code, expected = _pairs(docs_helpers)[k]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = docs_helpers.run_code(code, f"{PAGE} block {k}")
    want = expected.splitlines()
    assert len(got) == len(want), "\n".join(got)
    for g, w in zip(got, want):
        assert docs_helpers.same_numbers(g, w, RTOL), f"printed {g!r}, the page shows {w!r}"
