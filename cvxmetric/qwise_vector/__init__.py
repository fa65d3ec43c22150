"""Qwise, vector model: Law, Thome, Cord (IJCV 2016), Eq. 12-14 and Appendix A.

The diagonal (``psi="squared"``) or relative-attribute (``psi="linear"``)
metric ``omega = [w; b]`` learnt from quadruplets and labelled pairs: Eq. 14
with hinge losses and its smoothed primal Eq. 27-30.  The data and dual
bound (:class:`QwiseVectorData`), the exact CVXPY path (:func:`solve_exact`,
:class:`QwiseVectorModel`, :func:`declared_problem`), Algorithm 2
(:class:`ProjectedNewton`) and the estimators :class:`QwiseVector`,
:class:`QwiseVectorSupervised`.
"""

from ._problem import LOSSES, PSI, QwiseVectorData
from .estimator import QwiseVector, QwiseVectorSupervised
from .exact import QwiseVectorModel, declared_problem, solve_exact
from .fast import ProjectedNewton

__all__ = [
    "QwiseVectorData",
    "PSI",
    "LOSSES",
    "QwiseVectorModel",
    "solve_exact",
    "declared_problem",
    "ProjectedNewton",
    "QwiseVector",
    "QwiseVectorSupervised",
]
