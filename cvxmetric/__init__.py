"""cvxmetric: metric learning solved exactly with CVXPY, and fast, checked against it."""

from ._certify import ProblemCertificate, certified_solve, certify, conic_solve
from .constraints import (
    LabeledPairs,
    Quadruplets,
    Triplets,
    pairs_from_labels,
    quadruplets_from_labels,
    triplets_from_labels,
)
from .covariance import Covariance
from .formulations import Formulation, Method, formulation, formulations
from .ldml.estimator import LDML, LDMLStar, LDMLSupervised, MildML
from .lfda.estimator import LFDA
from .lmnn.estimator import LMNN
from .itml.estimator import ITML, ITML_Supervised
from .mmc.estimator import MMC, MMCSupervised
from .model import BilinearMetric, DeclaredProblem, MahalanobisMetric
from .omdml.estimator import OMDML
from .qwise.estimator import Qwise, QwiseSupervised
from .qwise_structural.estimator import QwiseStructural, QwiseStructuralSupervised
from .qwise_vector.estimator import QwiseVector, QwiseVectorSupervised
from .constraintdml.estimator import ConstraintDML, ConstraintDMLSupervised
from .rankdml.estimator import RankDML, RankDMLSupervised
from .rca.estimator import RCA, RCA_Supervised
from .scml.estimator import SCML, SCML_Supervised
from .result import (
    Certificate,
    CertificateError,
    InfeasibleError,
    NotAttainedError,
    ProblemSizeError,
    SolverError,
    SolverResult,
    Status,
    UnboundedError,
)
from .slr.estimator import SLR
from .sdml.estimator import SDML, SDML_Supervised
from .gmml.estimator import GMML, GMMLSupervised

__version__ = "0.1.0"

__all__ = [
    "LabeledPairs",
    "Quadruplets",
    "Triplets",
    "pairs_from_labels",
    "quadruplets_from_labels",
    "triplets_from_labels",
    "Qwise",
    "QwiseSupervised",
    "QwiseVector",
    "QwiseVectorSupervised",
    "QwiseStructural",
    "QwiseStructuralSupervised",
    "MMC",
    "MMCSupervised",
    "ConstraintDML",
    "ConstraintDMLSupervised",
    "RankDML",
    "RankDMLSupervised",
    "SLR",
    "OMDML",
    "LDML",
    "LDMLSupervised",
    "MildML",
    "LDMLStar",
    "LMNN",
    "RCA",
    "RCA_Supervised",
    "LFDA",
    "Covariance",
    "SCML",
    "SCML_Supervised",
    "SDML",
    "SDML_Supervised",
    "GMML",
    "GMMLSupervised",
    "ITML",
    "ITML_Supervised",
    "DeclaredProblem",
    "certify",
    "certified_solve",
    "conic_solve",
    "ProblemCertificate",
    "Formulation",
    "Method",
    "formulation",
    "formulations",
    "MahalanobisMetric",
    "BilinearMetric",
    "Certificate",
    "CertificateError",
    "InfeasibleError",
    "NotAttainedError",
    "ProblemSizeError",
    "SolverError",
    "SolverResult",
    "Status",
    "UnboundedError",
]
