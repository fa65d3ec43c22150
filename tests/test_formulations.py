"""The registry of formulations (cvxmetric.formulations): what it states holds.

Every estimator of the package belongs to one formulation; every dotted name
imports; every method's parameters are parameters of its estimators, its
tolerance key resolves, its capabilities are true of the code; the real-data
suite's tables and the command line's option estimators are the registry's.
"""

import inspect

import pytest
from sklearn.base import BaseEstimator

import cvxmetric
from cvxmetric import Formulation, Method, formulation, formulations
from cvxmetric._tolerances import tolerance
from cvxmetric.bench import conformance
from cvxmetric.cli import _ESTIMATORS
from cvxmetric.model import DeclaredProblem

FORMULATIONS = formulations()
NAMES = [f.name for f in FORMULATIONS]


def _estimators_of_the_package():
    out = set()
    for name in cvxmetric.__all__:
        obj = getattr(cvxmetric, name)
        # model: fitted metrics of a given M; lfda: a generalised eigenproblem,
        # not an optimisation formulation (docs/closed_forms.md)
        if (inspect.isclass(obj) and issubclass(obj, BaseEstimator)
                and obj.__module__.split(".")[1] not in ("model", "lfda")):
            out.add(name)
    return out


def test_every_estimator_belongs_to_one_formulation():
    listed = [e for f in FORMULATIONS for e in f.estimators]
    assert len(listed) == len(set(listed))
    assert set(listed) == _estimators_of_the_package()


def test_names_are_unique_and_looked_up():
    assert len(set(NAMES)) == len(NAMES)
    for f in FORMULATIONS:
        assert formulation(f.name) is f
    with pytest.raises(ValueError, match="^name: unknown formulation"):
        formulation("bogus")


@pytest.mark.parametrize("name", NAMES)
def test_dotted_names_import(name):
    f = formulation(name)
    assert inspect.isclass(f.load("data"))
    for what in ("exact", "declared"):
        if getattr(f, what) is None:
            with pytest.raises(ValueError, match=f"^{what}: "):
                f.load(what)
        else:
            assert callable(f.load(what))


@pytest.mark.parametrize("name", NAMES)
def test_methods_are_what_the_code_offers(name):
    f = formulation(name)
    classes = [getattr(cvxmetric, e) for e in f.estimators]
    for m in f.methods:
        assert f.method(m.name) is m
        # every parameter selects something the estimators take
        for cls in classes:
            assert set(m.params) <= set(cls().get_params()), (m.name, cls.__name__)
        if m.tolerance is not None:
            assert tolerance(f.name, m.tolerance) > 0
        if "warm_start" in m.capabilities:
            params = inspect.signature(f.load("exact")).parameters
            assert "init" in params or "warm_start" in params
    if f.warm_start is not None:
        # a formulation that states a warm start says so of its exact method
        assert "warm_start" in f.method("exact").capabilities
        if "partial_fit" in m.capabilities:
            assert all(hasattr(cls, "partial_fit") for cls in classes)
        if "max_time" in m.capabilities:
            assert all("max_time" in cls().get_params() for cls in classes)
    with pytest.raises(ValueError, match="^method: unknown"):
        f.method("bogus")


def test_declared_problems_are_declared_problems():
    import numpy as np
    from sklearn.datasets import load_iris

    from sklearn.preprocessing import StandardScaler

    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X[::5])
    y = y[::5]
    for f in FORMULATIONS:
        if f.declared is None:
            continue
        est = getattr(cvxmetric, f.estimators[-1])
        kwargs = {"random_state": 0} if "random_state" in est().get_params() else {}
        args = (X, y)
        if f.name == "sdml":  # metric-learn's balance_param = 0.5: unbounded here
            kwargs["balance_param"] = 1e-4
        if f.name == "omdml":  # views and triplets, not (X, y)
            args = ([X[:, :2], X[:, 2:]],
                    cvxmetric.triplets_from_labels(y, 40, random_state=0))
        dp = est(**kwargs).declared_problem(*args)
        assert isinstance(dp, DeclaredProblem) and dp.family == f.name
        assert np.isfinite(dp.solve()) and dp.certificate().passed


def test_the_suite_and_the_cli_read_the_registry():
    suite = [f for f in FORMULATIONS if f.suite]
    assert list(conformance.FAMILIES) == [f.name for f in suite]
    for f in suite:
        assert conformance.FAMILIES[f.name] == f.estimators
        assert list(conformance.METHODS[f.name]) == [m.name for m in f.methods]
    assert conformance.REFUSALS == {f.name: f.refusal for f in suite if f.refusal}
    assert _ESTIMATORS == {f.name: f.options_estimator for f in FORMULATIONS
                           if f.options_estimator}


def test_entries_are_validated():
    with pytest.raises(ValueError, match="^role:"):
        Method("x", {}, "bogus")
    with pytest.raises(ValueError, match="^capabilities:"):
        Method("x", {}, "exact", capabilities={"gpu"})
    with pytest.raises(ValueError, match="^reference:"):
        Method("x", {}, "fast")
    with pytest.raises(ValueError, match="^methods:"):
        Formulation("f", "p", "Eq. 1", ("E",), "m:D",
                    methods=(Method("fast", {}, "fast", "exact"),
                             Method("exact", {}, "exact")))


def test_the_collection_loads_its_families_from_the_registry():
    import subprocess
    import sys

    from cvxmetric import collection as col

    with_collection = [f.name for f in FORMULATIONS if f.collection]
    assert list(col.FAMILIES) == with_collection
    assert list(col.METHODS) == with_collection
    # the methods verify checks are the registry's methods with a collection
    # solve, in its order, each running that solve and judged by a tolerance
    for name in with_collection:
        stated = [m for m in formulation(name).methods if m.collection is not None]
        assert list(col.METHODS[name]) == [m.name for m in stated]
        for m in stated:
            assert col.METHODS[name][m.name].solve is m
            assert callable(m.load_collection())
            assert tolerance(name, m.name) > 0
    # importing the collection imports no family's collection module: the
    # first read does (no import circle held together by import order)
    code = ("import sys, cvxmetric.collection as col; "
            "print(any(m.endswith('._collection') for m in sys.modules)); "
            "col.FAMILIES['mmc']; "
            "print(any(m.endswith('._collection') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "True"]


def test_a_family_registered_from_a_script_reads_its_entry():
    import numpy as np

    from cvxmetric import collection as col
    from cvxmetric.formulations import registered

    def solve(data):
        return {"M": data}

    def other(data):
        return {"M": -data}

    def stored(result):
        return result["M"] * 2

    entry = Formulation("toy_formulation", "a paper", "Eq. 1", ("Toy",), data=dict,
                        methods=(Method("exact", {}, "exact"),
                                 Method("fast", {}, "fast", "exact", collection=solve),
                                 Method("slow", {}, "paper", "exact")),
                        suite=False)
    spec = col.FamilySpec("toy_formulation", (), {}, None, None, None, None, None,
                          stored=stored)
    with registered(entry):
        # the entry's method with a collection solve, then register_family's
        col.register_family(spec, {"other": other})
        assert list(col.METHODS["toy_formulation"]) == ["fast", "other"]
        assert col.METHODS["toy_formulation"]["fast"](np.ones(2)).tolist() == [2, 2]
        assert col.run_method("toy_formulation", "other", 1.0) == -2.0
        with pytest.raises(ValueError, match="^methods: \\['fast'\\] of family"):
            col.register_family(spec, {"fast": other})
        with pytest.raises(ValueError, match="^collection: method 'slow' has no "):
            entry.method("slow").load_collection()
    assert "toy_formulation" not in col.METHODS


def test_every_tolerance_entry_names_a_registered_method():
    from cvxmetric import collection as col
    from cvxmetric._tolerances import TOLERANCES

    generic = {m.tolerance for f in FORMULATIONS for m in f.methods} | {"exact"}
    for key in TOLERANCES:
        family, _, method = key.rpartition("/")
        if not family:
            assert key in generic | {"subgradient"}, key
            continue
        f = formulation(family)
        known = {m.name for m in f.methods} | set(col.METHODS.get(family, {}))
        assert method in known, key


def test_solve_exact_hands_the_exact_path_what_the_formulation_declares():
    seen = {}

    def exact(data, *, warm_start=None, bound_polish=None, tol=1e-9):
        seen.update(data=data, warm_start=warm_start, bound_polish=bound_polish,
                    tol=tol)
        return "result"

    def warm(data):
        return "warm"

    def polish(data, x):
        return 0.0, 0

    f = Formulation("composed", "p", "Eq. 1", ("E",), "m:D", exact=exact,
                    warm_start=warm, bound_polish=polish, suite=False)
    assert f.load("warm_start") is warm and f.load("bound_polish") is polish
    assert f.solve_exact("data", tol=1e-6) == "result"
    assert seen == {"data": "data", "warm_start": warm, "bound_polish": polish,
                    "tol": 1e-6}
    # the caller's own choice wins
    f.solve_exact("data", warm_start=None)
    assert seen["warm_start"] is None
    bare = Formulation("bare", "p", "Eq. 1", ("E",), "m:D", exact=exact,
                       suite=False)
    bare.solve_exact("data")
    assert seen["warm_start"] is None and seen["bound_polish"] is None
    with pytest.raises(ValueError, match="^warm_start: "):
        bare.load("warm_start")
    with pytest.raises(ValueError, match="^what: "):
        bare.load("bogus")
