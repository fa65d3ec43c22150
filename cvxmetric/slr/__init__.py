"""SLR: similarity learning via adaptive regression (Qian, Baytas, Jin, Jain, Zhu 2015).

A bilinear similarity ``x_i^T M x_j`` with a general ``M`` (not symmetric,
not PSD).  Exact (CVXPY) and fast solvers of Eq. 4, the paper's Algorithm 1,
its randomized (Algorithm 2) and low-rank (Algorithm 3) variants, the OASIS
and Euclid baselines, and the :class:`SLR` estimator.
"""

from .._lazy import lazy_exports
from ._problem import SLRData, eq3_closed_form
from .estimator import SLR, SOLVER_NAMES
from .exact import FORMS, SLRModel, solve_eq1, solve_exact
from .fast import AdaptiveRegression, SemismoothNewton
from .lowrank import lowrank_slr
from .oasis import oasis, triplet_hinge_loss
from .randomized import (
    randomized_slr,
    sketch_matrix,
    theorem1_bound,
    theorem1_check,
)

# the papers' experiments: imported on first use, not with the package
__getattr__, __dir__ = lazy_exports(__name__, {
    "euclidean_scores": "cvxmetric.experiments.slr.baselines",
    "slr_fixed": "cvxmetric.experiments.slr.baselines",
    "slr_whole": "cvxmetric.experiments.slr.baselines",
})

__all__ = [
    "SLR",
    "SOLVER_NAMES",
    "SLRData",
    "SLRModel",
    "FORMS",
    "solve_exact",
    "solve_eq1",
    "eq3_closed_form",
    "AdaptiveRegression",
    "SemismoothNewton",
    "randomized_slr",
    "sketch_matrix",
    "theorem1_bound",
    "theorem1_check",
    "lowrank_slr",
    "oasis",
    "triplet_hinge_loss",
    "euclidean_scores",
    "slr_whole",
    "slr_fixed",
]
