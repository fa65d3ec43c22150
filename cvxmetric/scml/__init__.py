"""SCML: Shi, Bellet, Sha, "Sparse compositional metric learning" (AAAI 2014).

``min_{w >= 0} (1/T) sum_t [1 + D_w(x_t, x_t+) - D_w(x_t, x_t-)]_+ + beta
||w||_1`` with ``M = sum_i w_i b_i b_i^T``: the canonical data and its
certificate (:class:`SCMLData`, the basis constructions), the certified
exact path (:func:`solve_exact`, :func:`declared_problem`), the fast
solvers (:class:`SCMLWorkingSet`, certified; :class:`SCMLStochastic`, the
paper's) and the estimators :class:`SCML` and :class:`SCML_Supervised`.
"""

from ._problem import SCMLData, knn_triplets, lda_basis, triplet_diffs_basis
from .estimator import SCML, SCML_Supervised
from .exact import EXACT_MAX_ENTRIES, declared_problem, solve_exact
from .fast import SCMLStochastic, SCMLWorkingSet

__all__ = ["SCMLData", "knn_triplets", "lda_basis", "triplet_diffs_basis",
           "solve_exact", "declared_problem", "EXACT_MAX_ENTRIES", "SCML",
           "SCML_Supervised", "SCMLWorkingSet", "SCMLStochastic"]
