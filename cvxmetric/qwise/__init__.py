"""Qwise: quadruplet-wise metric learning (Law, Thome, Cord, IJCV 2016)."""

from .._lazy import lazy_exports
from ._problem import C_RANGE, REGULARIZERS, QwiseData, Scaling
from .exact import QwiseModel, solve_exact
from .fast import ProjectedSubgradient, QwiseDualSolver

# the papers' experiments: imported on first use, not with the package
__getattr__, __dir__ = lazy_exports(__name__, {
    "PageVersions": "cvxmetric.experiments.qwise.pages",
    "make_page_versions": "cvxmetric.experiments.qwise.pages",
    "AttributeGaussianClassifier": "cvxmetric.experiments.qwise.attributes",
    "AttributeOrdering": "cvxmetric.experiments.qwise.attributes",
    "attribute_constraints": "cvxmetric.experiments.qwise.attributes",
    "fit_relative_attributes": "cvxmetric.experiments.qwise.attributes",
    "oqwsl_constraints": "cvxmetric.experiments.qwise.attributes",
    "pairwise_constraints": "cvxmetric.experiments.qwise.attributes",
    "qwsl_constraints": "cvxmetric.experiments.qwise.attributes",
    "usable_class_pairs": "cvxmetric.experiments.qwise.attributes",
    "ClassTree": "cvxmetric.experiments.qwise.taxonomy",
    "TaxonomyQuadruplets": "cvxmetric.experiments.qwise.taxonomy",
    "taxonomy_quadruplets": "cvxmetric.experiments.qwise.taxonomy",
    "LateFusionSVM": "cvxmetric.experiments.qwise.temporal",
    "TemporalProblem": "cvxmetric.experiments.qwise.temporal",
    "cell_descriptors": "cvxmetric.experiments.qwise.temporal",
    "jaccard_distances": "cvxmetric.experiments.qwise.temporal",
    "pseudo_label_pairs": "cvxmetric.experiments.qwise.temporal",
    "region_distances": "cvxmetric.experiments.qwise.temporal",
    "successive_pairs": "cvxmetric.experiments.qwise.temporal",
    "temporal_problem": "cvxmetric.experiments.qwise.temporal",
    "temporal_quadruplets": "cvxmetric.experiments.qwise.temporal",
    "unsupervised_change_detector": "cvxmetric.experiments.qwise.temporal",
})

__all__ = [
    "QwiseData",
    "Scaling",
    "C_RANGE",
    "QwiseModel",
    "solve_exact",
    "QwiseDualSolver",
    "ProjectedSubgradient",
    "REGULARIZERS",
    # Sec. 5: webpage versions (temporal metric learning)
    "temporal_quadruplets",
    "successive_pairs",
    "cell_descriptors",
    "region_distances",
    "TemporalProblem",
    "temporal_problem",
    "jaccard_distances",
    "pseudo_label_pairs",
    "LateFusionSVM",
    "unsupervised_change_detector",
    "PageVersions",
    "make_page_versions",
    # Sec. 6: hierarchical metric learning from a class taxonomy
    "ClassTree",
    "TaxonomyQuadruplets",
    "taxonomy_quadruplets",
    # Sec. 7: relative attributes
    "AttributeOrdering",
    "usable_class_pairs",
    "pairwise_constraints",
    "qwsl_constraints",
    "oqwsl_constraints",
    "attribute_constraints",
    "fit_relative_attributes",
    "AttributeGaussianClassifier",
]
