"""ITML: Davis, Kulis, Jain, Sra, Dhillon, "Information-theoretic metric
learning" (ICML 2007).

``min_{M PD, xi} D_ld(M, M0) + gamma D_ld(diag xi, diag xi0)`` subject to
``D_M <= xi`` on similar pairs and ``D_M >= xi`` on dissimilar ones: the
canonical data, its objective and dual bound (:class:`ITMLData`), the
certified exact path (:func:`solve_exact`, :func:`declared_problem`), the
fast solvers (:class:`ITMLDualNewton`, certified; :class:`ITMLBregman`,
the paper's Algorithm 1) and the estimators :class:`ITML` and
:class:`ITML_Supervised`.
"""

from ._problem import ITMLData, default_bounds
from .estimator import ITML, ITML_Supervised
from .exact import declared_problem, solve_exact
from .fast import ITMLBregman, ITMLDualNewton

__all__ = ["ITMLData", "default_bounds", "solve_exact", "declared_problem", "ITML",
           "ITML_Supervised", "ITMLDualNewton", "ITMLBregman"]
