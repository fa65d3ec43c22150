"""The example of docs/ldml/estimators.md runs and prints what the page shows."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Relative tolerance of printed decimals.
RTOL = 1e-4


def test_example_prints_what_the_page_shows(docs_helpers):
    text = (ROOT / "docs" / "ldml" / "estimators.md").read_text()
    start = text.index("## Example")
    end = text.find("\n## ", start + 1)
    section = text[start:] if end < 0 else text[start:end]
    pairs = docs_helpers.python_text_pairs(section, "docs/ldml/estimators.md")
    assert len(pairs) == 1
    code, expected = pairs[0]
    got = docs_helpers.run_code(code, "docs/ldml/estimators.md")
    want = expected.splitlines()
    assert len(got) == len(want), "\n".join(got)
    for g, w in zip(got, want):
        assert docs_helpers.same_numbers(g, w, RTOL), f"printed {g!r}, the page shows {w!r}"
