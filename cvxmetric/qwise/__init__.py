"""Qwise: quadruplet-wise metric learning (Law, Thome, Cord, IJCV 2016)."""

from ._problem import C_RANGE, REGULARIZERS, QwiseData, Scaling
from ._vector import LOSSES, PSI, QwiseVectorData
from .exact import QwiseModel, QwiseVectorModel, solve_exact, solve_vector_exact
from .fast import ProjectedNewton, ProjectedSubgradient, QwiseDualSolver
from .structural import (
    StructuralCuttingPlane,
    StructuralData,
    solve_structural_enumerated,
    solve_structural_exact,
    solve_structural_fast,
)

__all__ = [
    "QwiseData",
    "Scaling",
    "C_RANGE",
    "QwiseModel",
    "solve_exact",
    "QwiseDualSolver",
    "ProjectedSubgradient",
    "REGULARIZERS",
    "QwiseVectorData",
    "QwiseVectorModel",
    "solve_vector_exact",
    "ProjectedNewton",
    "PSI",
    "LOSSES",
    "StructuralData",
    "StructuralCuttingPlane",
    "solve_structural_exact",
    "solve_structural_fast",
    "solve_structural_enumerated",
]
