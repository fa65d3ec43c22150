"""The Qwise applications (Sec. 5-7) are exported by ``cvxmetric.qwise``."""

import cvxmetric.qwise as qwise
from cvxmetric.experiments.qwise import attributes, pages, taxonomy, temporal

APPLICATIONS = {
    temporal: {"LateFusionSVM", "TemporalProblem", "cell_descriptors",
               "jaccard_distances", "pseudo_label_pairs", "region_distances",
               "successive_pairs", "temporal_problem", "temporal_quadruplets",
               "unsupervised_change_detector"},
    pages: {"PageVersions", "make_page_versions"},
    taxonomy: {"ClassTree", "TaxonomyQuadruplets", "taxonomy_quadruplets"},
    attributes: {"AttributeGaussianClassifier", "AttributeOrdering",
                 "attribute_constraints", "fit_relative_attributes",
                 "oqwsl_constraints", "pairwise_constraints", "qwsl_constraints",
                 "usable_class_pairs"},
}


def test_every_name_of_all_resolves_once():
    assert len(qwise.__all__) == len(set(qwise.__all__))
    for name in qwise.__all__:
        assert hasattr(qwise, name), name


def test_applications_are_exported_as_the_modules_define_them():
    for module, names in APPLICATIONS.items():
        assert names <= set(module.__all__), module.__name__
        for name in names:
            assert name in qwise.__all__, name
            assert getattr(qwise, name) is getattr(module, name), name
