"""The one table of tolerances every check in cvxmetric is judged against.

Tests, ``cvxmetric verify`` and ``cvxmetric reference`` import from here; a
tolerance is stated once.
"""

__all__ = ["TOLERANCES", "REFERENCE_AGREEMENT", "EXACT_GAP", "MATRIX_RTOL",
           "tolerance"]

#: Relative objective gap ``(f_method - f_exact) / max(1, |f_exact|)`` a
#: method must reach on every collection instance and in the tests.  A key
#: ``"family/method"`` overrides the method's entry for one family (an issue's
#: own figure); :func:`tolerance` does the lookup.
TOLERANCES = {
    # solvers that converge to the optimum in principle: tight
    "exact": 1e-6,
    "fast": 1e-6,
    # Algorithm 1 is a subgradient method (O(1/sqrt(t))): what it reaches
    # within its default iteration budget on the collection
    "subgradient": 5e-2,
}

#: Clarabel and SCS must agree on the objective to this relative accuracy
#: before a reference solution is written.
REFERENCE_AGREEMENT = 1e-6

#: Relative duality gap an exact certificate must show.
EXACT_GAP = 1e-6

#: Matrices are compared loosely (optima are often low-rank and not unique).
MATRIX_RTOL = 1e-3


def tolerance(family, method):
    """The tolerance of ``method`` on ``family``'s instances.

    ``TOLERANCES["family/method"]`` when present, else ``TOLERANCES[method]``.

    Raises
    ------
    KeyError
        When neither entry exists.
    """
    key = f"{family}/{method}"
    if key in TOLERANCES:
        return TOLERANCES[key]
    return TOLERANCES[method]
