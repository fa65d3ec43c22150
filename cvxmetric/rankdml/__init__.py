"""RankDML: rank-based distance metric learning (Lee, Jin, Jain 2008).

Eq. 7 (Frobenius), Eq. 9 (Burg as printed or in its spectral form, and the
LogDet variant) and Eq. 11 (diagonal, Laplacian, as printed or trace-fixed)
as one canonical problem (:class:`RankData`), its
certified CVXPY form (:func:`solve_exact`), the fast solvers
(:class:`RankDualSolver`, :class:`DiagonalInteriorPoint`), the critical
pair selection of Sec. 5 (:func:`critical_triplets`) and the estimators
(:class:`RankDML`, :class:`RankDMLSupervised`).  The paper's
constraint-based baseline (Sec. 3.1) is its own formulation,
:mod:`cvxmetric.constraintdml`.  See docs/rankdml/index.md.
"""

from ._pairs import critical_triplets
from ._problem import (
    FORMS,
    REGULARIZERS,
    TRACE_FIXED,
    RankData,
    burg_divergence,
    logdet_divergence,
    paper_divergence,
)
from .estimator import RankDML, RankDMLSupervised
from .exact import RankDMLModel, solve_exact
from .fast import DiagonalInteriorPoint, RankDualSolver, solve_fast

__all__ = [
    "RankData",
    "RankDMLModel",
    "solve_exact",
    "solve_fast",
    "RankDualSolver",
    "DiagonalInteriorPoint",
    "critical_triplets",
    "RankDML",
    "RankDMLSupervised",
    "REGULARIZERS",
    "FORMS",
    "TRACE_FIXED",
    "burg_divergence",
    "logdet_divergence",
    "paper_divergence",
]
