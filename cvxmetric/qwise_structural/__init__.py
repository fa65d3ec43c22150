"""Qwise, structural model: Law, Thome, Cord (IJCV 2016), Sec. 4.4, Eq. 16-17.

The 1-slack structural formulation (after Metric Learning to Rank) with the
AUC loss: the data, oracle and dual bound (:class:`StructuralData`), the
exact CVXPY path of its closed form (:func:`solve_exact`,
:func:`declared_problem`, and :func:`solve_structural_enumerated` with every
constraint written out), the paper's cutting-plane method
(:class:`StructuralCuttingPlane`), the closed form by the Qwise dual solver
(:func:`solve_structural_fast`) and the estimators :class:`QwiseStructural`,
:class:`QwiseStructuralSupervised`.
"""

from ._problem import READINGS, STRUCTURAL_REGULARIZERS, Cut, StructuralData
from .estimator import QwiseStructural, QwiseStructuralSupervised
from .exact import (
    declared_problem,
    solve_exact,
    solve_structural_enumerated,
    structural_constraints,
)
from .fast import StructuralCuttingPlane, solve_structural_fast

__all__ = [
    "StructuralData",
    "Cut",
    "STRUCTURAL_REGULARIZERS",
    "READINGS",
    "solve_exact",
    "declared_problem",
    "structural_constraints",
    "solve_structural_enumerated",
    "StructuralCuttingPlane",
    "solve_structural_fast",
    "QwiseStructural",
    "QwiseStructuralSupervised",
]
