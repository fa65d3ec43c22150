"""The five papers' experiments, outside what ``import cvxmetric`` loads.

Each subpackage holds one paper's experiment code, built on the package's
formulations and estimators; none of the formulations imports it.

===========================================  =====================================
:mod:`cvxmetric.experiments.qwise`           the Qwise applications: web-page
                                             versions, temporal change detection,
                                             class taxonomies, relative attributes
:mod:`cvxmetric.experiments.rankdml`         RankDML's image-retrieval protocol
:mod:`cvxmetric.experiments.slr`             SLR's Euclidean and SLR baselines
:mod:`cvxmetric.experiments.omdml`           OMDML's views and fusion baselines
:mod:`cvxmetric.experiments.ldml`            LDML's verification and naming evaluation
===========================================  =====================================
"""
