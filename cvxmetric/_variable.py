"""The solver variable shared by the RankDML problems: a symmetric (d, d)
matrix ``A``, or its diagonal ``a`` (d,) for the diagonal problems (Eq. 10,
Eq. 11 and diagonal Eq. 7)."""

import numpy as np

from ._data import Samples

__all__ = ["FullOrDiagonal"]


class FullOrDiagonal(Samples):
    """Mixin of :class:`~.RankData` and :class:`~.ConstraintData`: needs the
    attributes ``X`` (the samples, one per row) and ``diagonal``."""

    def as_variable(self, A):
        """``A`` as the solvers hold it: a symmetric (d, d) matrix, or ``a``
        (d,) for diagonal problems (from a vector or a matrix's diagonal)."""
        A = np.asarray(A, dtype=float)
        d = self.n_features
        if self.diagonal:
            if A.shape == (d,):
                return A
            if A.shape != (d, d):
                raise ValueError(f"A: expected shape ({d},) or ({d}, {d}), got {A.shape}.")
            return np.diag(A).copy()
        if A.shape != (d, d):
            raise ValueError(f"A: expected shape ({d}, {d}), got {A.shape}.")
        return 0.5 * (A + A.T)

    def to_matrix(self, a):
        """The (d, d) matrix of a solver variable."""
        return np.diag(a) if self.diagonal else a

    def off_diagonal(self, A):
        """Largest off-diagonal magnitude of a matrix (0 for full problems)."""
        A = np.asarray(A, dtype=float)
        if not self.diagonal or A.ndim == 1:
            return 0.0
        return float(np.max(np.abs(A - np.diag(np.diag(A)))))
