"""GMML: Zadeh, Hosseini, Sra, "Geometric mean metric learning" (ICML 2016).

``M = A^{-1} #_t B`` with ``A = A_S + lam M0^{-1}``, ``B = A_D + lam M0``:
the canonical data, closed form and lower bounds (:class:`GMMLData`,
:func:`geometric_mean`), the certified exact path of Eq. 13
(:func:`solve_exact`, :func:`declared_problem`), the certified closed form
(:func:`solve_fast`) and the estimators :class:`GMML` and
:class:`GMMLSupervised`.
"""

from ._problem import GMMLData, geometric_mean
from .estimator import GMML, GMMLSupervised
from .exact import declared_problem, solve_exact
from .fast import solve_fast

__all__ = ["GMMLData", "geometric_mean", "solve_exact", "declared_problem",
           "solve_fast", "GMML", "GMMLSupervised"]
