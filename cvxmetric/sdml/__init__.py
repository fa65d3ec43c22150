"""SDML: Qi, Tang, Zha, Chua, Zhang, "An efficient sparse metric learning in
high-dimensional space via l1-penalized log-determinant regularization"
(ICML 2009).

``min_{M PD} tr(M P) - log det M + lam ||M||_{1,off}`` with ``P = M0^{-1} +
eta sum_p y_p phi_p phi_p^T``: the canonical data and its certificate
(:class:`SDMLData`, the graphical lasso's dual bound), the certified exact
path (:func:`solve_exact`, :func:`declared_problem`), the certified fast
path (:func:`solve_fast`, scikit-learn's graphical lasso) and the
estimators :class:`SDML` and :class:`SDML_Supervised`.
"""

from ._problem import SDMLData
from .estimator import SDML, SDML_Supervised
from .exact import declared_problem, solve_exact
from .fast import solve_fast

__all__ = ["SDMLData", "solve_exact", "declared_problem", "solve_fast", "SDML",
           "SDML_Supervised"]
