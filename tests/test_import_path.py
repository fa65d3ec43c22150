"""``import cvxmetric`` loads the formulations and estimators, not the papers'
experiments (cvxmetric.experiments; a family's namespace names them and
imports them on first use, cvxmetric._lazy) nor the collection, the benches
and the conformance suite (cvxmetric.bench) or the command line."""

import subprocess
import sys

import pytest

EXPERIMENTS = ("cvxmetric.experiments.qwise.pages", "cvxmetric.experiments.qwise.attributes",
               "cvxmetric.experiments.qwise.taxonomy", "cvxmetric.experiments.qwise.temporal",
               "cvxmetric.experiments.slr.baselines", "cvxmetric.experiments.omdml.views",
               "cvxmetric.experiments.omdml.baselines", "cvxmetric.experiments.rankdml.retrieval",
               "cvxmetric.experiments.ldml.evaluation")
BENCH = ("cvxmetric.bench", "cvxmetric.bench.conformance", "cvxmetric.bench.scaling",
         "cvxmetric.bench.contended", "cvxmetric.bench.qwise", "cvxmetric.bench.mmc",
         "cvxmetric.bench.slr", "cvxmetric.bench.rankdml", "cvxmetric.bench.omdml",
         "cvxmetric.bench.ldml", "cvxmetric.bench.lmnn", "cvxmetric.bench.metric_learn",
         "cvxmetric.bench.rca", "cvxmetric.bench.scml",
         "cvxmetric.bench.sdml", "cvxmetric.bench.gmml",
         "cvxmetric.bench.itml")
INFRASTRUCTURE = ("cvxmetric.collection", "cvxmetric.cli") + BENCH


def test_import_cvxmetric_loads_no_experiment_and_no_infrastructure():
    code = ("import sys, cvxmetric; "
            "print(' '.join(m for m in sys.modules if m.startswith('cvxmetric.')))")
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                text=True, check=True).stdout.split())
    assert not loaded & set(EXPERIMENTS + INFRASTRUCTURE)
    assert not any(m.startswith(("cvxmetric.experiments", "cvxmetric.bench")) for m in loaded)
    assert "cvxmetric.formulations" in loaded


@pytest.mark.parametrize("package, name", [
    ("cvxmetric.qwise", "taxonomy_quadruplets"),
    ("cvxmetric.qwise", "AttributeOrdering"),
    ("cvxmetric.slr", "slr_fixed"),
    ("cvxmetric.omdml", "scale_views")])
def test_experiments_stay_in_their_family_namespace(package, name):
    import importlib

    module = importlib.import_module(package)
    assert name in module.__all__ and name in dir(module)
    assert callable(getattr(module, name))
    with pytest.raises(AttributeError, match="no attribute 'bogus'"):
        module.bogus  # noqa: B018


def test_every_experiment_module_is_listed():
    from pathlib import Path

    import cvxmetric.experiments as ex

    root = Path(ex.__file__).parent
    found = {"cvxmetric.experiments." + ".".join(p.relative_to(root).with_suffix("").parts)
             for p in root.rglob("*.py") if not p.name.startswith("_")}
    assert found == set(EXPERIMENTS)


def test_every_bench_module_is_listed():
    from pathlib import Path

    import cvxmetric

    root = Path(cvxmetric.__file__).parent / "bench"
    found = {"cvxmetric.bench" + "".join("." + p for p in path.relative_to(root)
                                         .with_suffix("").parts if p != "__init__")
             for path in root.rglob("*.py")}
    # the side-by-side's plugins are listed where it reads them
    from cvxmetric.bench.metric_learn import PLUGINS

    plugins = {f"cvxmetric.bench._ml_{name}" for name in PLUGINS}
    plugins.add("cvxmetric.bench._ml_common")
    assert plugins <= found
    assert found - plugins == set(BENCH)


@pytest.mark.parametrize("package, name, module", [
    ("cvxmetric.qwise", "AttributeOrdering", "cvxmetric.experiments.qwise.attributes"),
    ("cvxmetric.slr", "slr_fixed", "cvxmetric.experiments.slr.baselines"),
    ("cvxmetric.omdml", "digits_views", "cvxmetric.experiments.omdml.views")])
def test_family_names_are_the_experiments_objects(package, name, module):
    import importlib

    assert getattr(importlib.import_module(package), name) is getattr(
        importlib.import_module(module), name)
