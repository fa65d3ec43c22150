"""LMNN: Weinberger and Saul, "Distance metric learning for large margin
nearest neighbor classification" (JMLR 2009), Eq. 13-14.

``min_{M PSD} (1 - mu) sum_{j ~> i} D_M(i, j) + mu sum_{j ~> i, l} [1 +
D_M(i, j) - D_M(i, l)]_+`` with fixed target neighbours: the canonical data
and its blockwise certificate (:class:`LMNNData`,
:func:`target_neighbors`), the certified exact path (:func:`solve_exact`,
:func:`declared_problem`), the fast solvers (:class:`LMNNWorkingSet`,
certified; :class:`LMNNSubgradient`, the paper's) and the estimator
:class:`LMNN`.
"""

from ._problem import LMNNData, target_neighbors
from .estimator import LMNN
from .exact import EXACT_MAX_TRIPLETS, declared_problem, solve_exact
from .fast import LMNNSubgradient, LMNNWorkingSet

__all__ = ["LMNNData", "target_neighbors", "solve_exact", "declared_problem",
           "EXACT_MAX_TRIPLETS", "LMNN", "LMNNWorkingSet", "LMNNSubgradient"]
