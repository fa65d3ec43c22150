"""Qwise: quadruplet-wise metric learning (Law, Thome, Cord, IJCV 2016)."""

from ._problem import REGULARIZERS, QwiseData
from .exact import QwiseModel, solve_exact
from .fast import ProjectedSubgradient, QwiseDualSolver

__all__ = [
    "QwiseData",
    "QwiseModel",
    "solve_exact",
    "QwiseDualSolver",
    "ProjectedSubgradient",
    "REGULARIZERS",
]
