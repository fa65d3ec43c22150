"""OMDML: online multi-modal distance metric learning (Wu, Hoi et al., TKDE 2016)."""

from .._lazy import lazy_exports
from ._problem import OMDMLData
from .estimator import OMDML
from .exact import (
    OMDMLModel,
    solve_exact,
    solve_joint_alternating,
    solve_joint_grid,
)
from .fast import LowRankOMDML, OMDMLOnline, mistake_bound, pa_step, project_rank2

# the papers' experiments: imported on first use, not with the package
__getattr__, __dir__ = lazy_exports(__name__, {
    "digits_views": "cvxmetric.experiments.omdml.views",
    "retrieval_split": "cvxmetric.experiments.omdml.views",
    "scale_views": "cvxmetric.experiments.omdml.views",
    "synthetic_views": "cvxmetric.experiments.omdml.views",
})

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
