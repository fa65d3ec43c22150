"""Qwise: quadruplet-wise metric learning (Law, Thome, Cord, IJCV 2016)."""

from ._problem import C_RANGE, REGULARIZERS, QwiseData, Scaling
from .exact import QwiseModel, solve_exact
from .fast import ProjectedSubgradient, QwiseDualSolver

__all__ = [
    "QwiseData",
    "Scaling",
    "C_RANGE",
    "QwiseModel",
    "solve_exact",
    "QwiseDualSolver",
    "ProjectedSubgradient",
    "REGULARIZERS",
]
