"""Exact paths take their starting guess from the caller and never import a
fast solver: each formulation's fast module declares its guess
(``Formulation.warm_start``) and :meth:`Formulation.solve_exact` hands it
over."""

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest

from cvxmetric import formulation, formulations
from cvxmetric._tolerances import EXACT_GAP, TOLERANCES

ROOT = Path(__file__).resolve().parents[1] / "cvxmetric"

#: Each family's exact module and, where the module also holds a fast path,
#: the exact functions and classes whose bodies are checked (with the
#: module's top-level imports); ``None``: the whole module.
EXACT_MODULES = [
    ("qwise/exact.py", None),
    ("qwise_vector/exact.py", None),
    ("qwise_structural/exact.py", None),
    ("rankdml/exact.py", None),
    ("slr/exact.py", None),
    ("mmc/exact.py", None),
    ("ldml/exact.py", None),
    ("omdml/exact.py", None),
    ("constraintdml/_problem.py", None),
]


def _is_fast(module):
    """Whether a dotted module name names a fast module (``fast``,
    ``_constraint_fast``, ``cvxmetric.qwise.fast``)."""
    last = module.rsplit(".", 1)[-1]
    return last == "fast" or last.endswith("_fast")


def _imported_modules(nodes):
    """The modules that the import statements and ``import_module`` /
    ``__import__`` calls among ``nodes`` (and inside them) import."""
    out = []
    for top in nodes:
        for node in ast.walk(top):
            if isinstance(node, ast.Import):
                out += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = "." * node.level + (node.module or "")
                out.append(base)
                # ``from . import fast`` imports the module named
                sep = "." if node.module else ""
                out += [f"{base}{sep}{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Call) and getattr(
                    node.func, "attr", getattr(node.func, "id", None)) in (
                    "import_module", "__import__"):
                out += [a.value for a in node.args
                        if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return out


@pytest.mark.parametrize("path, names", EXACT_MODULES)
def test_exact_modules_import_no_fast_module(path, names):
    tree = ast.parse((ROOT / path).read_text())
    if names is None:
        nodes = [tree]
    else:
        defs = {n.name: n for n in tree.body
                if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        assert set(names) <= set(defs), sorted(set(names) - set(defs))
        imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        nodes = imports + [defs[n] for n in names]
    fast = [m for m in _imported_modules(nodes) if _is_fast(m)]
    assert not fast, f"{path} imports {fast}"


def test_the_checker_sees_lazy_imports():
    tree = ast.parse("def f():\n    from .fast import Solver\n"
                     "def g():\n    from .. import _constraint_fast\n"
                     "def h():\n    importlib.import_module('cvxmetric.slr.fast')\n")
    assert [m for m in _imported_modules([tree]) if _is_fast(m)] == [
        ".fast", ".._constraint_fast", "cvxmetric.slr.fast"]


@pytest.mark.parametrize("name", ["qwise", "rankdml", "slr"])
def test_the_registry_declares_each_warm_start_in_the_fast_module(name):
    f = formulation(name)
    assert f.warm_start == f"cvxmetric.{name}.fast:warm_start"
    assert callable(f.load("warm_start"))


def test_an_exact_path_given_a_warm_start_takes_one():
    for f in formulations():
        if f.warm_start is not None:
            assert "warm_start" in inspect.signature(f.load("exact")).parameters, f.name


# ---------------------------------------------------------------------------
# What the exact paths do with and without a guess
# ---------------------------------------------------------------------------


def _iris():
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import StandardScaler

    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X[::3]), y[::3]


def _qwise_data():
    from cvxmetric import Quadruplets, quadruplets_from_labels
    from cvxmetric.qwise import QwiseData

    X, y = _iris()
    q = quadruplets_from_labels(y, 60, random_state=0)
    return QwiseData.from_sets(Quadruplets.create(X, q, 1.0))


def _rankdml_data():
    from cvxmetric import Triplets, triplets_from_labels
    from cvxmetric.rankdml import RankData

    X, y = _iris()
    return RankData.from_triplets(Triplets.create(X, triplets_from_labels(y, 60,
                                                                          random_state=0)))


def _slr_data():
    from cvxmetric.slr import SLRData

    X, y = _iris()
    return SLRData.from_labels(X, y)


DATA = {"qwise": (_qwise_data, {}), "rankdml": (_rankdml_data, {}),
        "slr": (_slr_data, {"reduce": True})}


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


@pytest.mark.parametrize("name", list(DATA))
def test_the_guess_only_changes_the_route(name):
    """Through the registry the reduction starts from the fast module's
    guess; without one, the exact path solves the whole problem: the same
    certified optimum."""
    make, options = DATA[name]
    data = make()
    f = formulation(name)
    calls = []
    guess = f.load("warm_start")

    def counted(d):
        calls.append(d)
        return guess(d)

    warm = f.solve_exact(data, warm_start=counted, **options)
    assert len(calls) == 1 and warm.info.get("reduced")
    bare = f.load("exact")(data, **options)
    assert not bare.info.get("reduced")
    for r in (warm, bare):
        assert r.status == "optimal" and r.certificate.rel_gap <= EXACT_GAP
    assert _rel(warm.objective, bare.objective) <= TOLERANCES["exact"]


@pytest.mark.parametrize("name", ["qwise", "rankdml"])
def test_an_explicit_init_wins_over_the_warm_start(name):
    make, _ = DATA[name]
    data = make()
    f = formulation(name)
    init = f.load("warm_start")(data)

    def refused(d):
        raise AssertionError("warm_start called although init was given")

    r = f.solve_exact(data, init=init, warm_start=refused)
    assert r.status == "optimal" and r.info.get("reduced")


def test_no_warm_start_is_called_without_a_reduction():
    data = _qwise_data()

    def refused(d):
        raise AssertionError("warm_start called with reduce=False")

    r = formulation("qwise").solve_exact(data, reduce=False, warm_start=refused)
    assert r.status == "optimal"
    assert np.isfinite(r.objective)
