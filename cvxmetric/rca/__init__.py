"""RCA: Bar-Hillel, Hertz, Shental, Weinshall, "Learning a Mahalanobis
metric from equivalence constraints" (JMLR 2005), Sec. 4.2.

``min_M (1/p) sum_j sum_i ||x_ji - m_j||_M^2 subject to |M| >= 1`` over
the samples of the chunklets: the canonical data and its closed-form
certificate (:class:`RCAData`), the certified exact path
(:func:`solve_exact`, :func:`declared_problem`), the closed form
(:func:`solve_closed_form`, certified), metric-learn's chunklet draw
(:func:`chunks_from_labels`) and the estimators :class:`RCA` and
:class:`RCA_Supervised`.
"""

from ._problem import (
    RCAData,
    check_chunks,
    chunks_from_labels,
    rca_reduction,
    within_chunklet_covariance,
)
from .estimator import RCA, RCA_Supervised
from .exact import declared_problem, solve_exact
from .fast import solve_closed_form

__all__ = ["RCAData", "check_chunks", "chunks_from_labels", "rca_reduction",
           "within_chunklet_covariance", "solve_exact", "declared_problem",
           "solve_closed_form", "RCA", "RCA_Supervised"]
