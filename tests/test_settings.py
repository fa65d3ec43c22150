"""Numeric settings live in one place (cvxmetric._settings), each documented.

The modules of the package import their thresholds, block sizes, budgets
and ladders from :mod:`cvxmetric._settings`; none assigns a number at its
top level (the tolerances that judge results are
:mod:`cvxmetric._tolerances`; a file format's version is not a setting).
"""

import ast
import pathlib

import cvxmetric
from cvxmetric import _settings

ROOT = pathlib.Path(cvxmetric.__file__).parent
#: Numbers that are not settings: the collection's file format.
NOT_SETTINGS = {("collection.py", "FORMAT_VERSION"), ("collection.py", "_ZIP_DATE")}


def _numeric(node):
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _numeric(node.operand)
    if isinstance(node, ast.BinOp):
        return _numeric(node.left) and _numeric(node.right)
    if isinstance(node, ast.Tuple):
        return bool(node.elts) and all(_numeric(e) for e in node.elts)
    return False


def _numeric_assignments(path):
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and _numeric(node.value):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    yield target.id, node.lineno


def test_no_module_assigns_a_number_at_its_top_level():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in ("experiments", "bench") or path.name in (
                "_settings.py", "_tolerances.py"):
            continue
        found += [f"{rel}:{line} {name}" for name, line in _numeric_assignments(path)
                  if (path.name, name) not in NOT_SETTINGS]
    assert found == []


def test_every_setting_is_documented_and_read():
    path = pathlib.Path(_settings.__file__)
    lines = path.read_text().splitlines()
    sources = "\n".join(p.read_text() for p in ROOT.rglob("*.py") if p != path)
    names = list(_numeric_assignments(path))
    assert len(names) > 50
    for name, line in names:
        if "#" in lines[line - 1]:
            continue  # documented on its own line
        # a comment block right above it (a group may share one)
        k = line - 2
        while k >= 0 and not lines[k].startswith("#") and lines[k].strip() and (
                "=" in lines[k]):
            k -= 1
        assert lines[k].startswith("#"), name
        assert name in sources, f"{name} is not read by any module"
