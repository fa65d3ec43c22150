"""The constraint-based baseline of RankDML's paper (Lee, Jin, Jain 2008, Sec. 3.1).

Eq. 1 (hard constraints), Eq. 4 (slacks) or Eq. 6 (hinge), and the diagonal
Eq. 10, as one canonical problem (:class:`ConstraintData`), its certified
CVXPY form (:func:`solve_constraint_exact`), the dual Newton solver
(:class:`ConstraintDualSolver`) and the estimators (:class:`ConstraintDML`,
:class:`ConstraintDMLSupervised`).  See docs/constraintdml/index.md.
"""

from ._problem import ConstraintData, solve_constraint_exact
from .estimator import ConstraintDML, ConstraintDMLSupervised
from .fast import ConstraintDualSolver

__all__ = [
    "ConstraintData",
    "solve_constraint_exact",
    "ConstraintDualSolver",
    "ConstraintDML",
    "ConstraintDMLSupervised",
]
