"""docs/slr/estimators.md is executable: its example prints what the page shows."""

import math
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "slr" / "estimators.md"
#: The sub-page of the randomized and low-rank variants.
VARIANTS = DOC.with_name("variants.md")

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")

#: Relative tolerance of the numbers on a line, by its prefix (default 1e-2:
#: iteration counts and gaps of a linearly converging method are printed to
#: three digits).
RTOL = {"exact objective:": 1e-6}


def _same_line(got, want):
    if _NUMBER.sub("#", got) != _NUMBER.sub("#", want):
        return False
    rtol = next((t for p, t in RTOL.items() if want.startswith(p)), 1e-2)
    return all(math.isclose(float(g), float(w), rel_tol=rtol, abs_tol=1e-12)
               for g, w in zip(_NUMBER.findall(got), _NUMBER.findall(want)))


@pytest.fixture(scope="module")
def printed(docs_helpers):
    # this page compares every number on a line (see RTOL), not only the
    # exact objective: the shared runner, its own line check
    return docs_helpers.run_example(DOC.read_text(), DOC)


def test_example_prints_the_expected_output(printed):
    got, want = printed
    assert len(got) == len(want), f"printed {got}, the page shows {want}"
    for g, w in zip(got, want):
        assert _same_line(g, w), f"printed {g!r}, the page shows {w!r}"


def test_line_comparison_is_strict():
    assert _same_line("exact objective: 492.64016", "exact objective: 492.64016")
    assert not _same_line("exact objective: 492.64116", "exact objective: 492.64016")
    assert not _same_line("gap below 1e-8: False", "gap below 1e-8: True")
    assert not _same_line("relative gap: 7.1", "relative gap: 6.73")


def test_page_keeps_the_section_for_the_variants():
    text = VARIANTS.read_text()
    assert "## Randomized and low-rank variants, baselines, evaluation" in text
