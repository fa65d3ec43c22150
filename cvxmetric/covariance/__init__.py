"""The covariance metric: ``M = Sigma^+``, metric-learn's ``Covariance`` baseline."""

from .estimator import Covariance, CovarianceData, covariance_metric

__all__ = ["Covariance", "CovarianceData", "covariance_metric"]
