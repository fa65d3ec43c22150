"""Shared docstring fragments (cvxmetric._docs): filled where they are named,
never left as a placeholder, indented as the placeholder."""

import importlib
import inspect
import re

import pytest

from cvxmetric._docs import FRAGMENTS, fill_doc

#: The modules whose docstrings name fragments.
MODULES = ["cvxmetric._base", "cvxmetric._extend", "cvxmetric.qwise_structural.exact"] + [
    f"cvxmetric.{family}.estimator"
    for family in ("constraintdml", "ldml", "mmc", "omdml", "qwise", "qwise_vector",
                   "qwise_structural", "rankdml", "slr")]

_LEFT = re.compile(r"^\s*\{\w+\}\s*$", re.MULTILINE)


def _documented(module):
    """(qualified name, docstring) of the module's classes, their methods
    (inherited ones included) and its functions."""
    mod = importlib.import_module(module)
    for name, obj in vars(mod).items():
        if getattr(obj, "__module__", None) != module:
            continue
        if inspect.isclass(obj):
            yield f"{module}.{name}", obj.__doc__
            for attr in dir(obj):
                member = inspect.getattr_static(obj, attr)
                member = getattr(member, "__func__", member)
                if callable(member) and not inspect.isclass(member):
                    yield f"{module}.{name}.{attr}", getattr(member, "__doc__", None)
        elif inspect.isfunction(obj):
            yield f"{module}.{name}", obj.__doc__


@pytest.mark.parametrize("module", MODULES)
def test_no_placeholder_is_left(module):
    left = [name for name, doc in _documented(module)
            if isinstance(doc, str) and _LEFT.search(doc)]
    assert not left


def test_fragments_are_filled_where_named():
    from cvxmetric import MMC, Qwise, QwiseSupervised, RankDML

    doc = inspect.getdoc(Qwise)
    assert "verbose : bool or int, default=False" in doc
    assert "    ``L`` with ``M = L^T L``." in doc
    assert ">>> from cvxmetric import Qwise" in doc
    assert "``L`` with ``A = L^T L``." in inspect.getdoc(RankDML)
    assert "As in :class:`Qwise`." in inspect.getdoc(QwiseSupervised)
    # a method's fragment, and its parameters read from the signature
    fit = inspect.getdoc(MMC.fit)
    assert "calibration_params : dict, optional\n    Arguments of" in fit
    declared = inspect.getdoc(Qwise.declared_problem)
    assert "quadruplets, y, delta, pairs, pair_labels\n    As in :meth:`fit`." in declared
    assert "Returns\n-------\nDeclaredProblem\n    The problem in the user's" in declared


def test_fill_doc_indents_and_leaves_other_braces():
    @fill_doc(learner="Base")
    class Example:
        """Summary with {braces} and {"a", "b"} left alone.

        Attributes
        ----------
        {supervised_attributes}
        """

        def method(self, X, y=None, *, weights=None):
            """Do.

            {params_as_in_fit}
            """

    doc = Example.__doc__
    assert "{braces} and {\"a\", \"b\"}" in doc
    assert "\n        components_, mahalanobis_matrix_" in doc
    assert "\n            As in :class:`Base`." in doc
    assert "\n            X, y, weights\n                As in :meth:`fit`." in \
        Example.method.__doc__
    assert FRAGMENTS["feature_names_in_"].splitlines()[0] in doc


def test_unknown_placeholder_and_missing_field_are_errors():
    with pytest.raises(KeyError, match="nope"):
        @fill_doc
        def f():
            """Doc.

            {nope}
            """

    with pytest.raises(KeyError, match="matrix"):
        @fill_doc
        class C:
            """Doc.

            {mahalanobis_attributes}
            """


def test_no_docstring_stays_none():
    @fill_doc
    def g():
        pass

    assert g.__doc__ is None
