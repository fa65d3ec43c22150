"""Shared numpydoc fragments of the estimators' docstrings, written once.

Estimators describe the same parameters, fitted attributes and ``Returns``
sections in the same words (``verbose``, ``components_``, the declared
problem ...).  Each such fragment is kept here once; a docstring names it on
a line of its own, ``{verbose}``, and :func:`fill_doc` replaces that line by
the fragment, indented as the placeholder is, when the class (its docstring
and those of the methods its body defines) or function is defined.  What
``help()``, ``inspect.getdoc`` and numpydoc read is the filled text.

Only whole-line placeholders are filled: braces anywhere else (set
notation, dict literals) are left alone, so docstrings need no escaping.  A
fragment may itself hold ``{field}`` names, filled from the keyword
arguments of :func:`fill_doc`, from ``name`` (the decorated class or
function's ``__name__``) and from ``params`` (a function's or method's
parameter names).  An unknown placeholder or a missing field is an error
when the module is imported, not a docstring that silently reads
``{verbose}``.
"""

import inspect
import re
import textwrap

__all__ = ["FRAGMENTS", "fill_doc"]


def _verbose(progress):
    """The ``verbose`` parameter of an estimator whose ``progress`` (who
    prints progress lines) is named."""
    return f"""\
verbose : bool or int, default=False
    ``True`` / ``1``: {progress} progress lines and a summary
    of the fit at INFO on the ``cvxmetric`` logger (shown on standard
    error when ``logging`` is not configured); ``2``: also the conic
    solver's own log (``"exact"``); ``3``: DEBUG."""


def _declared_returns(description):
    """The ``Returns`` section of a ``declared_problem``: a
    :class:`~cvxmetric.model.DeclaredProblem` and its ``description``."""
    return "Returns\n-------\nDeclaredProblem\n" + textwrap.indent(description, "    ")


_PAIRS = """\
pairs : array_like
    Points of shape (n_pairs, 2, n_features), or indicators of
    shape (n_pairs, 2): integer indices into an array
    ``preprocessor``, or keys a callable ``preprocessor`` forms into
    points."""

_FEATURE_NAMES = """\
feature_names_in_ : ndarray of str
    Present when ``X`` has string column names."""

#: The fragments :func:`fill_doc` inserts, by placeholder name.
FRAGMENTS = {
    "verbose": _verbose("the fast solver's"),
    "verbose_iterative": _verbose("the iterative solvers'"),
    # components_ and mahalanobis_matrix_ of a full Mahalanobis learner;
    # ``matrix`` names the learned matrix as its paper does (M or A)
    "mahalanobis_attributes": """\
components_ : ndarray of shape (n_features, n_features)
    ``L`` with ``{matrix} = L^T L``.
mahalanobis_matrix_ : ndarray of shape (n_features, n_features)
    The learned ``{matrix}`` (PSD, round-off negative eigenvalues clipped).""",
    # the pairs of a pair learner's methods (MahalanobisMixin.pair_distance's
    # contract), as a Parameters section and as an entry
    "pairs_parameters": "Parameters\n----------\n" + _PAIRS,
    "pairs_parameter": _PAIRS,
    "matrix_returns": """\
Returns
-------
M : ndarray of shape (n_features, n_features)""",
    # the contract of a declared_problem that takes what fit takes
    "takes_what_fit_takes": """\
Takes exactly what :meth:`fit` takes and validates it as ``fit``
does; the estimator is not changed.""",
    # the Parameters section of a method that takes what fit takes;
    # ``params``: the method's parameters, read from its signature
    "params_as_in_fit": """\
Parameters
----------
{params}
    As in :meth:`fit`.""",
    "feature_names_in_": _FEATURE_NAMES,
    # the fitted state of a fit(X, y) learner that solves the problem of
    # ``learner``, its tuple learner
    "supervised_attributes": """\
components_, mahalanobis_matrix_, objective_, status_, n_iter_, \
certificate_, result_, n_features_in_
    As in :class:`{learner}`.
""" + _FEATURE_NAMES,
    "status_": """\
status_ : str
    A :class:`~cvxmetric.result.Status` word.""",
    "result_": """\
result_ : SolverResult
    The full solver result (without the CVXPY model object).""",
    "calibration_params": """\
calibration_params : dict, optional
    Arguments of :meth:`calibrate_threshold` (``strategy``,
    ``min_rate``, ``beta``) used on the training pairs; default:
    strategy ``"accuracy"``.""",
    "declared_returns": _declared_returns("""\
See :mod:`cvxmetric.model`; its optimal value is the
``objective_`` of an exact ``fit``."""),
    "declared_returns_units": _declared_returns("""\
The problem in the user's units (:mod:`cvxmetric.model`); its
optimal value is the ``objective_`` of an exact ``fit``."""),
    "declared_returns_certified": _declared_returns("""\
The problem in the user's units (:mod:`cvxmetric.model`); its
optimal value is the ``objective_`` of a certified ``fit``."""),
    "declared_returns_model": _declared_returns("""\
See :mod:`cvxmetric.model`."""),
    "declared_returns_ldml": _declared_returns("""\
See :func:`cvxmetric.ldml.exact.declared_problem`; its optimal
value is the ``objective_`` of an exact ``fit``."""),
    # the start of the example of a quadruplet learner (``name`` importable
    # from cvxmetric) on four points; the docstring shows the fitted state
    "quadruplets_example": """\
Examples
--------
>>> import numpy as np
>>> from cvxmetric import {name}
>>> X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 3.0]])
>>> est = {name}(preprocessor=X).fit([[0, 1, 2, 3]])""",
    # the example of a fit(X, y) learner on iris (``name`` importable from
    # cvxmetric)
    "iris_example": """\
Examples
--------
>>> from sklearn.datasets import load_iris
>>> from cvxmetric import {name}
>>> X, y = load_iris(return_X_y=True)
>>> est = {name}(n_constraints=100, random_state=0).fit(X, y)
>>> est.transform(X).shape
(150, 4)""",
}

_PLACEHOLDER = re.compile(r"^(?P<indent>[ \t]*)\{(?P<key>\w+)\}[ \t]*$", re.MULTILINE)


def fill_doc(obj=None, **fields):
    """Replace the placeholder lines of docstrings by their fragments.

    Used as ``@fill_doc`` or ``@fill_doc(matrix="A")`` on a class or a
    function.  On a class it fills the class docstring and those of the
    methods the class body defines (wrappers included: ``fit`` wrapped by
    scikit-learn's ``_fit_context``), so that one decorator serves a class.
    A docstring stripped by ``python -OO`` stays ``None``.

    Parameters
    ----------
    obj : class or function, optional
        What is decorated (given when used without arguments).
    **fields
        Values of the ``{field}`` names inside the fragments; ``name``
        defaults to ``obj.__name__`` (a method's: its class's) and, on a
        function or method, ``params`` to its parameters' names but
        ``self`` (``"X, y"``).

    Returns
    -------
    object or callable
        ``obj``, or the decorator when ``obj`` is not given.

    Raises
    ------
    KeyError
        A placeholder names no fragment, or a fragment's field is not given.
    """
    def decorate(target):
        _fill_object(target, {"name": target.__name__, **fields})
        if isinstance(target, type):
            for member in vars(target).values():
                method = getattr(member, "__func__", member)  # static / class methods
                if callable(method) and not isinstance(method, type):
                    _fill_object(method, {"name": target.__name__, **fields})
        return target

    return decorate if obj is None else decorate(obj)


def _fill_object(target, values):
    """Fill ``target.__doc__`` (a string with placeholders; else left as
    it is)."""
    doc = getattr(target, "__doc__", None)
    if isinstance(doc, str) and _PLACEHOLDER.search(doc):
        if "params" not in values and not isinstance(target, type):
            values = {**values, "params": _parameter_names(target)}
        target.__doc__ = _fill(doc, values, target.__qualname__)


def _parameter_names(function):
    """``"a, b, c"``: the parameters of ``function`` but ``self`` / ``cls``,
    as a numpydoc entry that documents them together names them."""
    names = [p for p in inspect.signature(function).parameters if p not in ("self", "cls")]
    return ", ".join(names)


def _fill(doc, values, owner):
    """``doc`` with each placeholder line replaced by its fragment, indented
    as the placeholder."""
    def replace(match):
        key = match["key"]
        if key not in FRAGMENTS:
            raise KeyError(f"{owner}: docstring placeholder {{{key}}} names no "
                           f"fragment of cvxmetric._docs.FRAGMENTS.")
        try:
            text = FRAGMENTS[key].format_map(values)
        except KeyError as exc:
            raise KeyError(f"{owner}: fragment {key!r} needs fill_doc({exc.args[0]}=...)."
                           ) from None
        return textwrap.indent(text, match["indent"])

    return _PLACEHOLDER.sub(replace, doc)
