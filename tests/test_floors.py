"""The declared minimum versions are the ones CI tests against."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
tomllib = pytest.importorskip("tomllib")


def _floors():
    pins = {}
    for line in (ROOT / ".ci" / "floors.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def _minimums():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"]) + list(project["optional-dependencies"]["test"])
    mins = {}
    for req in reqs:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9][0-9A-Za-z.]*)", req.replace(" ", ""))
        assert m, f"pyproject.toml: {req!r} must be 'name>=version'"
        mins[m.group(1).lower()] = m.group(2)
    return mins


def test_floors_file_pins_exactly_the_declared_minimums():
    assert _floors() == _minimums()


def test_ci_installs_the_floors_and_runs_the_marked_subset():
    text = (ROOT / ".ci" / "run").read_text()
    assert "-c .ci/floors.txt" in text and "-m floors" in text
