"""docs/model.md is executable: each ```python block runs in a fresh
namespace and its standard output must equal the ```text block after it
(numbers compared with a relative tolerance)."""

import contextlib
import io
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "model.md"
_FENCE = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_NUMBER = re.compile(r"[-+]?\d+\.\d+(?:e[-+]?\d+)?|[-+]?\d+e[-+]?\d+")

#: Relative tolerance of printed numbers (solver round-off across machines).
RTOL = 1e-4


def examples():
    blocks = [(m.group(1), m.group(2)) for m in _FENCE.finditer(DOC.read_text())]
    out = []
    for k, (lang, body) in enumerate(blocks):
        if lang == "python":
            assert k + 1 < len(blocks) and blocks[k + 1][0] == "text", \
                "every ```python block of docs/model.md needs a ```text block after it"
            out.append((body, blocks[k + 1][1]))
    return out


def _same_line(got, want):
    if got == want:
        return True
    gn, wn = _NUMBER.findall(got), _NUMBER.findall(want)
    if _NUMBER.sub("#", got) != _NUMBER.sub("#", want) or len(gn) != len(wn):
        return False
    # the last printed digit may round either way
    return all(float(g) == pytest.approx(float(w), rel=RTOL, abs=_last_digit(w))
               for g, w in zip(gn, wn))


def _last_digit(number):
    """One unit of the last printed decimal of a fixed-point ``number``."""
    if "e" in number.lower() or "." not in number:
        return 1e-12
    return 1.01 * 10.0 ** -len(number.split(".")[1])


def test_there_is_one_example_per_family():
    assert len(examples()) == 4


@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")
@pytest.mark.parametrize("k", range(4))
def test_example_output(k):
    code, expected = examples()[k]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, f"docs/model.md example {k + 1}", "exec"), {})
    got = buf.getvalue().splitlines()
    want = expected.splitlines()
    assert len(got) == len(want), "\n".join(got)
    for g, w in zip(got, want):
        assert _same_line(g, w), f"got {g!r}, expected {w!r}"
