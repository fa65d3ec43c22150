"""Qwise: quadruplet-wise metric learning (Law, Thome, Cord, IJCV 2016)."""

from ._pages import PageVersions, make_page_versions
from ._problem import C_RANGE, REGULARIZERS, QwiseData, Scaling
from ._vector import LOSSES, PSI, QwiseVectorData
from .attributes import (
    AttributeGaussianClassifier,
    AttributeOrdering,
    attribute_constraints,
    fit_relative_attributes,
    oqwsl_constraints,
    pairwise_constraints,
    qwsl_constraints,
    usable_class_pairs,
)
from .exact import QwiseModel, QwiseVectorModel, solve_exact, solve_vector_exact
from .fast import ProjectedNewton, ProjectedSubgradient, QwiseDualSolver
from .structural import (
    StructuralCuttingPlane,
    StructuralData,
    solve_structural_enumerated,
    solve_structural_exact,
    solve_structural_fast,
)
from .taxonomy import ClassTree, TaxonomyQuadruplets, taxonomy_quadruplets
from .temporal import (
    LateFusionSVM,
    TemporalProblem,
    cell_descriptors,
    jaccard_distances,
    pseudo_label_pairs,
    region_distances,
    successive_pairs,
    temporal_problem,
    temporal_quadruplets,
    unsupervised_change_detector,
)

__all__ = [
    "QwiseData",
    "Scaling",
    "C_RANGE",
    "QwiseModel",
    "solve_exact",
    "QwiseDualSolver",
    "ProjectedSubgradient",
    "REGULARIZERS",
    "QwiseVectorData",
    "QwiseVectorModel",
    "solve_vector_exact",
    "ProjectedNewton",
    "PSI",
    "LOSSES",
    "StructuralData",
    "StructuralCuttingPlane",
    "solve_structural_exact",
    "solve_structural_fast",
    "solve_structural_enumerated",
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
