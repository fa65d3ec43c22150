"""OMDML: online multi-modal distance metric learning (Wu, Hoi et al., TKDE 2016)."""

from ._problem import OMDMLData
from ._views import digits_views, retrieval_split, scale_views, synthetic_views
from .exact import (
    OMDMLModel,
    solve_exact,
    solve_joint_alternating,
    solve_joint_grid,
)
from .estimator import OMDML
from .fast import LowRankOMDML, OMDMLOnline, mistake_bound, pa_step, project_rank2

__all__ = [
    "OMDMLData",
    "OMDMLModel",
    "solve_exact",
    "solve_joint_grid",
    "solve_joint_alternating",
    "OMDMLOnline",
    "LowRankOMDML",
    "pa_step",
    "project_rank2",
    "mistake_bound",
    "OMDML",
    "digits_views",
    "synthetic_views",
    "scale_views",
    "retrieval_split",
]
