"""MMC: Xing, Ng, Jordan, Russell (2002), as stated in Law et al. (2016), Eq. 2.

``min_{M PSD} sum_S D2_M  s.t.  sum_D sqrt(D2_M) >= 1`` (full or diagonal):
the exact CVXPY path (:func:`solve_exact`, :class:`MMCModel`), Xing's
projected gradient ascent with an exact projection
(:class:`MMCProjectedGradient`), Xing's diagonal Newton method
(:class:`MMCNewton`) and the estimators :class:`MMC`, :class:`MMCSupervised`.
"""

from ._problem import MMCData, project_nonneg_halfspace, project_psd_halfspace
from .estimator import MMC, MMCSupervised
from .exact import MMCModel, solve_exact
from .fast import MMCNewton, MMCProjectedGradient

__all__ = [
    "MMCData",
    "MMCModel",
    "solve_exact",
    "MMCProjectedGradient",
    "MMCNewton",
    "MMC",
    "MMCSupervised",
    "project_psd_halfspace",
    "project_nonneg_halfspace",
]
