"""RankDML: rank-based distance metric learning (Lee, Jin, Jain 2008).

Eq. 7 (Frobenius), Eq. 9 (Burg as printed or in its spectral form, and the
LogDet variant) and Eq. 11 (diagonal, Laplacian, as printed or trace-fixed)
as one canonical problem (:class:`RankData`), its
certified CVXPY form (:func:`solve_exact`), the fast solvers
(:class:`RankDualSolver`, :class:`DiagonalInteriorPoint`), the critical
pair selection of Sec. 5 (:func:`critical_triplets`) and the estimators
(:class:`RankDML`, :class:`RankDMLSupervised`); and the constraint-based
baseline of Sec. 3.1 (Eq. 1 / 4 / 6 / 10: :class:`ConstraintDML`,
:class:`ConstraintDMLSupervised`, :class:`ConstraintData`,
:func:`solve_constraint_exact`, :class:`ConstraintDualSolver`).  See
docs/rankdml.md.
"""

from ._constraint import ConstraintData, solve_constraint_exact
from ._constraint_fast import ConstraintDualSolver
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
from .constraint_estimator import ConstraintDML, ConstraintDMLSupervised
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
    "ConstraintData",
    "solve_constraint_exact",
    "ConstraintDualSolver",
    "ConstraintDML",
    "ConstraintDMLSupervised",
]
