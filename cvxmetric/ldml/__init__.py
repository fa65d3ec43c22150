"""LDML / MildML (Guillaumin, Verbeek, Schmid, ECCV 2010): the parts built so far.

Today: LDML's Eq. 2 solved exactly and certified (or refused as not
attained, :mod:`cvxmetric.ldml.exact`), the instance labelling of Sec. 2.3
(Eq. 9-11) by per-bag bipartite matching, and labelled bags built from the
digits in the three annotation settings of Sec. 4.1.  The fast and
low-rank solvers, MildML and the estimators are not built yet.
"""

from ._bags import SETTINGS, LabelledBags, digits_bags
from ._naming import assign_bag, clustering_objective, label_instances
from .exact import LDMLData, solve_exact

__all__ = ["LDMLData", "solve_exact", "assign_bag", "label_instances", "clustering_objective", "digits_bags",
           "LabelledBags", "SETTINGS"]
