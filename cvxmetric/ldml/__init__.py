"""LDML / MildML (Guillaumin, Verbeek, Schmid, ECCV 2010): "Multiple instance
metric learning from automatically labeled bags of faces".

* LDML's Eq. 2 solved exactly and certified, or refused as not attained
  (:mod:`cvxmetric.ldml.exact`);
* its full-rank fast solver and the low-rank gradient method of Eq. 4-6
  (:mod:`cvxmetric.ldml.fast`);
* MildML, Eq. 7-8 (:class:`MildMLSolver`);
* instance labels from bag labels by the constrained clustering of Sec. 2.3
  (Eq. 9-11), per-bag bipartite matching, and LDML* built on it;
* labelled bags from the digits in the three annotation settings of
  Sec. 4.1, and the paper's evaluation (:mod:`cvxmetric.experiments.ldml.evaluation`);
* the estimators :class:`LDML`, :class:`LDMLSupervised`, :class:`MildML`,
  :class:`LDMLStar`.
"""

from ._bags import SETTINGS, LabelledBags, digit_people_bags, digits_bags
from ._mildml import BagPairs, MildMLSolver, fit_mildml
from ._naming import assign_bag, clustering_objective, label_instances
from .estimator import LDML, LDMLStar, LDMLSupervised, MildML
from .exact import LDMLData, solve_exact
from .fast import (
    AllPairs,
    LowRankLDML,
    PairSet,
    ProjectedGradient,
    certify_point,
    fit_lowrank,
    solve_fast,
)

__all__ = ["LDMLData", "solve_exact", "solve_fast", "ProjectedGradient", "LowRankLDML", "AllPairs",
           "PairSet", "fit_lowrank", "certify_point", "BagPairs", "MildMLSolver",
           "fit_mildml", "assign_bag", "label_instances", "clustering_objective",
           "digits_bags", "digit_people_bags", "LabelledBags", "SETTINGS", "LDML", "LDMLSupervised",
           "MildML", "LDMLStar"]
