"""The input plumbing of the labelled-pair learners built on one pair
formulation (SDML, GMML): ``fit(pairs, y)`` validated as every pairs
learner of the package does, and ``fit(X, y)`` drawing metric-learn's
``20 n_classes^2`` pairs."""

from sklearn.utils import check_random_state

from ._base import form_samples, form_tuples, renamed_keyword, validate_labelled
from ._base import fit_tuples
from ._validation import check_pair_labels, check_samples
from .constraints import pairs_from_labels, tuples_to_indices

__all__ = ["PairsInputMixin", "PairsLearnerMixin", "SupervisedPairsMixin"]


class PairsInputMixin:
    """``_validated_pairs`` and ``_sampled_pairs``: each returns ``(X, idx,
    labels)`` for the estimator's ``_data``."""

    def _validated_pairs(self, pairs, y, calibration_params):
        """Pairs given as indicators into ``preprocessor`` (an array or a
        callable) or as points, and their +1 / -1 labels."""
        self._check_calibration_params(calibration_params)
        fit_tuples(self, pairs, "pairs", 2, keep_namespace=False)
        X = self.preprocessor
        if callable(X):  # indicators formed into points (metric-learn)
            pairs, X = form_tuples(pairs, X, "pairs", 2), None
        elif X is not None:
            X = check_samples(X, "preprocessor")
        X, idx = tuples_to_indices(pairs, "pairs", width=2, preprocessor=X)
        return X, idx, check_pair_labels(y, idx.shape[0], "y")

    def _sampled_pairs(self, X, y):
        """``n_constraints`` pairs (default ``20 n_classes^2``) drawn from
        the class labels with ``random_state``."""
        X = form_samples(X, self.preprocessor)
        X, y, classes, _ = validate_labelled(self, X, y, ensure_min_samples=2)
        # metric-learn's older spelling, on the learners that take it
        n = renamed_keyword("n_constraints", self.n_constraints, "num_constraints",
                            getattr(self, "num_constraints", "deprecated"))
        if n is None:
            n = 20 * classes.size ** 2
        idx, lab = pairs_from_labels(y, n, random_state=check_random_state(
            self.random_state))
        return X, idx, lab


class PairsLearnerMixin(PairsInputMixin):
    """``fit(pairs, y)`` of a pairs learner: validated pairs, the
    estimator's ``_data`` and ``_solve``, then the threshold; ``_declare``
    hands the same data to ``_declared``."""

    def fit(self, pairs, y, calibration_params=None):
        """Learn ``M`` from labelled pairs, then calibrate ``threshold_``.

        Parameters
        ----------
        pairs : array_like
            Indicators (n_pairs, 2) formed by ``preprocessor`` (integer
            indices into an array, or keys of a callable), or points
            (n_pairs, 2, n_features).
        y : array_like of shape (n_pairs,)
            +1 (similar) or -1 (dissimilar).
        calibration_params : dict, optional
            Arguments of :meth:`calibrate_threshold` (``strategy``,
            ``min_rate``, ``beta``) used on the training pairs; default:
            strategy ``"accuracy"``.

        Returns
        -------
        self
        """
        self._solve(self._data(*self._validated_pairs(pairs, y, calibration_params)))
        return self._calibrate_after_fit(pairs, y, calibration_params)

    def _declare(self, pairs, y, calibration_params):
        return self._declared(
            self._data(*self._validated_pairs(pairs, y, calibration_params)))


class SupervisedPairsMixin(PairsInputMixin):
    """``fit(X, y)`` (through :class:`~cvxmetric._base.LabelledMixin`) of a
    supervised pairs learner: sampled pairs, ``_data``, ``_solve``."""

    def _fit(self, X, y):
        return self._solve(self._data(*self._sampled_pairs(X, y)))

    def _declare(self, X, y):
        return self._declared(self._data(*self._sampled_pairs(X, y)))
