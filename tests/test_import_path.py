"""``import cvxmetric`` loads the formulations and estimators, not the papers'
experiments (they import on first use, cvxmetric._lazy) nor the collection,
the benches, the conformance suite or the command line."""

import subprocess
import sys

import pytest

EXPERIMENTS = ("cvxmetric.qwise._pages", "cvxmetric.qwise.attributes",
               "cvxmetric.qwise.taxonomy", "cvxmetric.qwise.temporal",
               "cvxmetric.slr.baselines", "cvxmetric.omdml._views",
               "cvxmetric.omdml._baselines", "cvxmetric.rankdml.retrieval",
               "cvxmetric.ldml.evaluation")
INFRASTRUCTURE = ("cvxmetric.collection", "cvxmetric.conformance", "cvxmetric.bench",
                  "cvxmetric.cli", "cvxmetric._scaling", "cvxmetric._contended")


def test_import_cvxmetric_loads_no_experiment_and_no_infrastructure():
    code = ("import sys, cvxmetric; "
            "print(' '.join(m for m in sys.modules if m.startswith('cvxmetric.')))")
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                text=True, check=True).stdout.split())
    assert not loaded & set(EXPERIMENTS + INFRASTRUCTURE)
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
