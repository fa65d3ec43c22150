"""docs/rankdml.md is executable: its first ```python block runs and prints
the ```text block that follows it (the exact objective compared numerically)."""

import contextlib
import io
import math
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "rankdml.md"
_FENCE = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
#: printed lines compared numerically, with this relative tolerance
NUMERIC = {"exact objective:": 1e-6}


def _example():
    blocks = [(m.group(1), m.group(2)) for m in _FENCE.finditer(DOC.read_text())]
    for k, (lang, body) in enumerate(blocks):
        if lang == "python":
            assert k + 1 < len(blocks) and blocks[k + 1][0] == "text", (
                "the first ```python block must be followed by a ```text block")
            return body, blocks[k + 1][1]
    raise AssertionError("docs/rankdml.md has no ```python block")


def _same(got, want):
    for prefix, rtol in NUMERIC.items():
        if want.startswith(prefix):
            return got.startswith(prefix) and math.isclose(
                float(got[len(prefix):]), float(want[len(prefix):]), rel_tol=rtol)
    return got == want


@pytest.fixture(scope="module")
def printed():
    code, expected = _example()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOC), "exec"), {"__name__": "__docs_example__"})
    return out.getvalue().splitlines(), expected.splitlines()


def test_example_prints_the_documented_output(printed):
    got, want = printed
    assert len(got) == len(want), (got, want)
    for g, w in zip(got, want):
        assert _same(g, w), f"printed {g!r}, the page shows {w!r}"


def test_numeric_comparison_is_strict():
    assert _same("exact objective: 137.259", "exact objective: 137.259")
    assert not _same("exact objective: 137.26", "exact objective: 137.259")
    assert not _same("certificate passed: False", "certificate passed: True")


def test_page_has_the_retrieval_and_baseline_sections():
    text = DOC.read_text()
    assert "## Retrieval experiment (CMC)" in text
    assert "## Constraint-based baseline" in text
