"""The documentation is executable: its example runs and its commands agree.

* The first ```python block of docs/qwise/estimators.md is run in a fresh namespace and
  its standard output must equal the ```text block that follows it (line by
  line; the exact objective is compared numerically).
* The test command of README.md's quick start is the command .ci/run runs.
"""

import contextlib
import io
import math
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
QWISE_DOC = ROOT / "docs" / "qwise" / "estimators.md"
CI_RUN = ROOT / ".ci" / "run"

#: A fenced block: its language (``python``, ``text``, ...; a MyST directive
#: with its argument, ``{code-block} python`` for an excerpt, ``{toctree}``)
#: and its body.
_FENCE = re.compile(r"^```(\{[\w-]+\}(?:[ \t]+\w+)?|\w*)[ \t]*\n(.*?)^```[ \t]*$",
                    re.MULTILINE | re.DOTALL)

#: Printed lines whose value is compared numerically, with this relative
#: tolerance, instead of as a string.
NUMERIC_PREFIXES = {"exact objective:": 1e-6}


def fenced_blocks(text):
    """``(language, body)`` of every fenced code block, in order.  An
    excerpt (``{code-block} python``) is not a ``python`` block: it is not
    run."""
    return [(m.group(1), m.group(2)) for m in _FENCE.finditer(text)]


def example_and_expected(text):
    """The first python block and the text block right after it."""
    blocks = fenced_blocks(text)
    for n, (lang, body) in enumerate(blocks):
        if lang == "python":
            rest = blocks[n + 1:]
            if not rest or rest[0][0] != "text":
                raise AssertionError(
                    "the first ```python block must be followed by a ```text "
                    "block with its expected output"
                )
            return body, rest[0][1]
    raise AssertionError("no ```python block found")


def python_text_pairs(text, where):
    """Every ```python block of ``text`` with the ```text block right after
    it (its expected output); ``where`` names the page in the failure."""
    blocks = fenced_blocks(text)
    pairs = []
    for n, (lang, body) in enumerate(blocks):
        if lang == "python":
            assert n + 1 < len(blocks) and blocks[n + 1][0] == "text", \
                f"{where}: every ```python block needs a ```text block after it"
            pairs.append((body, blocks[n + 1][1]))
    return pairs


def run_code(code, name):
    """Run ``code`` in a fresh namespace; its printed lines."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, name, "exec"), {"__name__": "__docs_example__"})
    return out.getvalue().splitlines()


_NUMBER = re.compile(r"[-+]?\d+\.\d+(?:e[-+]?\d+)?|[-+]?\d+e[-+]?\d+")


def _last_digit(number):
    """One unit of the last printed decimal of a fixed-point ``number``."""
    if "e" in number.lower() or "." not in number:
        return 1e-12
    return 1.01 * 10.0 ** -len(number.split(".")[1])


def same_numbers(got, want, rtol):
    """``got`` equals ``want`` but for printed decimals, which agree to
    ``rtol`` (or to one unit of the last printed digit); integers exactly."""
    if got == want:
        return True
    gn, wn = _NUMBER.findall(got), _NUMBER.findall(want)
    if _NUMBER.sub("#", got) != _NUMBER.sub("#", want) or len(gn) != len(wn):
        return False
    return all(float(g) == pytest.approx(float(w), rel=rtol, abs=_last_digit(w))
               for g, w in zip(gn, wn))


def quick_start_commands(text):
    """Command lines of the first shell block under the quick-start heading."""
    match = re.search(r"^#+\s*Quick start\s*$", text, re.MULTILINE | re.IGNORECASE)
    assert match, "README.md has no 'Quick start' section"
    for lang, body in fenced_blocks(text[match.end():]):
        if lang in ("bash", "sh", "shell", "console"):
            return [ln.strip() for ln in body.splitlines() if ln.strip()]
    raise AssertionError("no shell block in README.md's quick start")


def readme_test_command():
    commands = [c for c in quick_start_commands(README.read_text()) if "pytest" in c]
    assert len(commands) == 1, f"expected one test command, got {commands}"
    return commands[0]


# ---------------------------------------------------------------------------
# docs/qwise/estimators.md example
# ---------------------------------------------------------------------------


def run_example(text, path):
    """Run the first ```python block of ``text`` (from the file ``path``) in a
    fresh namespace: ``(printed lines, lines of the ```text block after it)``.
    The per-page docs tests use it through the ``docs_helpers`` fixture."""
    code, expected = example_and_expected(text)
    return run_code(code, str(path)), expected.splitlines()


@pytest.fixture(scope="module")
def qwise_example():
    """Run the example once: ``(printed lines, expected lines)``."""
    return run_example(QWISE_DOC.read_text(), QWISE_DOC)


def _same_line(got, want):
    for prefix, rtol in NUMERIC_PREFIXES.items():
        if want.startswith(prefix):
            if not got.startswith(prefix):
                return False
            g = float(got[len(prefix):])
            w = float(want[len(prefix):])
            return math.isclose(g, w, rel_tol=rtol, abs_tol=0.0)
    return got == want


def _check_lines(got, want, selected):
    assert len(got) == len(want), (
        f"the example printed {len(got)} lines, the page shows {len(want)}:\n"
        f"printed: {got}\nexpected: {want}"
    )
    for g, w in zip(got, want):
        if selected(w):
            assert _same_line(g, w), f"printed {g!r}, the page shows {w!r}"


def test_qwise_example_exact_lines(qwise_example):
    got, want = qwise_example
    _check_lines(got, want, lambda w: not w.startswith("fast "))


def test_qwise_example_fast_line(qwise_example):
    got, want = qwise_example
    assert any(w.startswith("fast ") for w in want)
    _check_lines(got, want, lambda w: w.startswith("fast "))


def test_numeric_comparison_is_strict():
    assert _same_line("exact objective: 7.41154", "exact objective: 7.41154")
    assert not _same_line("exact objective: 7.41155", "exact objective: 7.41154")
    assert not _same_line("certificate passed: False", "certificate passed: True")


# ---------------------------------------------------------------------------
# README.md and .ci/run
# ---------------------------------------------------------------------------


def test_readme_quick_start_is_two_commands():
    commands = quick_start_commands(README.read_text())
    assert commands == [
        "pip install -e . && cvxmetric verify",
        'pip install -e ".[test]" && python -m pytest -q',
    ]


def test_readme_mentions_verify():
    assert "cvxmetric verify" in README.read_text()


def test_ci_runs_the_readme_test_command():
    command = readme_test_command()
    lines = [ln.strip() for ln in CI_RUN.read_text().splitlines()]
    run = [ln for ln in lines if ln and not ln.startswith("#")]
    assert command in run, (
        f".ci/run must run README's test command verbatim: {command!r}"
    )


def test_ci_script_is_strict_and_executable():
    text = CI_RUN.read_text()
    assert text.startswith("#!/usr/bin/env bash") or text.startswith("#!/bin/bash")
    assert "set -euo pipefail" in text
    assert os.access(CI_RUN, os.X_OK), ".ci/run must be executable"


def test_readme_python_example_prints_what_it_shows():
    got, want = run_example(README.read_text(), README)
    assert want, "README.md's Python example has no ```text block after it"
    _check_lines(got, want, lambda w: True)
