"""LFDA: Sugiyama, "Dimensionality reduction of multimodal labeled data by
local Fisher discriminant analysis" (JMLR 2007).

The local scatter matrices (:func:`local_scatter`), the generalised
eigenproblem (:func:`lfda_components`) and metric-learn 0.7's estimator
:class:`LFDA`.  LFDA maximises a trace ratio, solved exactly by one
symmetric generalised eigendecomposition: it is not a convex program, has
no certificate and is not in the registry of formulations.
"""

from ._problem import EMBEDDINGS, LFDAData, lfda_components, local_scatter, neighbour_k
from .estimator import LFDA

__all__ = ["LFDA", "LFDAData", "local_scatter", "lfda_components", "neighbour_k", "EMBEDDINGS"]
