"""Shared fixtures: small deterministic instances for the core and Qwise tests.

Tolerances
----------
Every comparison of objective values (method vs exact, exact vs exact, a
certificate's relative gap) is judged against the one table in
:mod:`cvxmetric._tolerances` -- ``TOLERANCES``, ``EXACT_GAP``,
``MATRIX_RTOL``.  They are re-exported here for convenience; never hard-code
another tolerance for an objective comparison in a test.  (Finite-difference
checks and exact-arithmetic identities have their own, local, round-off
tolerances: they are not objective comparisons.)

Relative objective gaps are ``|a - b| / max(1, |b|)``, the convention of
:class:`cvxmetric.result.Certificate`; the ``rel_gap`` fixture computes it.
Helpers are fixtures (not imports from this file) so that test modules never
import ``conftest`` by name.

Instances are tiny (n <= 24, d <= 4, a few dozen constraints) so that the
whole suite stays well under a few minutes on two cores.
"""

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

from cvxmetric._tolerances import EXACT_GAP, MATRIX_RTOL, TOLERANCES  # noqa: F401

# The suite is deterministic: property-based tests draw the same examples on
# every run (a CI run must not turn red on a new random draw).  To search for
# new failures, run with HYPOTHESIS_PROFILE=explore; what it finds becomes a
# regression test.
settings.register_profile("deterministic", derandomize=True)
settings.register_profile("explore", derandomize=False, max_examples=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))
from cvxmetric.constraints import (
    LabeledPairs,
    Quadruplets,
    Triplets,
    pairs_from_labels,
    quadruplets_from_labels,
    triplets_from_labels,
)
from cvxmetric.qwise import QwiseData, solve_exact


def _rel_gap(a, b):
    """``|a - b| / max(1, |b|)``: the relative gap used by every certificate."""
    return abs(float(a) - float(b)) / max(1.0, abs(float(b)))


def class_gaussian(n_per_class=6, n_classes=3, d=3, spread=1.5, seed=0):
    """Class-structured Gaussian samples: ``X = spread * centers[y] + noise``.

    Rows are distinct with probability one, so no pair built from distinct
    indices has a zero difference vector.
    """
    rng = np.random.RandomState(seed)
    y = np.repeat(np.arange(n_classes), n_per_class)
    centers = rng.randn(n_classes, d)
    X = spread * centers[y] + rng.randn(len(y), d)
    return X, y


def pd_matrix(d, seed=0, ridge=0.5):
    """A well-conditioned symmetric positive definite (d, d) matrix."""
    rng = np.random.RandomState(seed)
    B = rng.randn(d, d)
    return B @ B.T / d + ridge * np.eye(d)


# ---------------------------------------------------------------------------
# Fixtures (session scope: they are read-only, and hypothesis tests may use
# them without the function-scoped-fixture health check)
# ---------------------------------------------------------------------------


@pytest.fixture
def one_torch_thread():
    """Torch on one thread for the test (restored after): the back-end
    tests' problems are tiny, and on a shared machine torch's thread pool
    costs ten times the work."""
    try:
        import torch
    except ImportError:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def rel_gap():
    """``rel_gap(a, b) = |a - b| / max(1, |b|)``."""
    return _rel_gap


@pytest.fixture(scope="session")
def Xy():
    """(X, y): 18 samples in 3 classes, d = 3."""
    return class_gaussian()


@pytest.fixture(scope="session")
def X(Xy):
    return Xy[0]


@pytest.fixture(scope="session")
def y(Xy):
    return Xy[1]


@pytest.fixture(scope="session")
def quads(Xy):
    """20 quadruplets (i, j, k, l) with y_i == y_j and y_k != y_l, delta = 1."""
    X, y = Xy
    idx = quadruplets_from_labels(y, 20, random_state=0)
    return Quadruplets.create(X, idx, 1.0)


@pytest.fixture(scope="session")
def triplets(Xy):
    """15 triplets (i, j, k) with y_i == y_j != y_k."""
    X, y = Xy
    return Triplets.create(X, triplets_from_labels(y, 15, random_state=0))


@pytest.fixture(scope="session")
def pairs(Xy):
    """14 labelled pairs: 7 similar (+1), 7 dissimilar (-1)."""
    X, y = Xy
    idx, lab = pairs_from_labels(y, 14, random_state=1)
    return LabeledPairs.create(X, idx, lab)


@pytest.fixture(scope="session")
def u_l():
    """Bounds (u, l) for similar / dissimilar pair distances."""
    return 1.0, 3.0


@pytest.fixture(scope="session")
def A_S(X):
    """A positive definite matrix for the ``"similar"`` regulariser.

    Passed explicitly wherever two formulations must share the regulariser
    (the default ``A_S`` depends on which sets are given).
    """
    return pd_matrix(X.shape[1], seed=3)


def _make_data(quadruplets, pairs=None, *, regularizer="trace", A_S=None, **kw):
    """``QwiseData.from_sets`` with ``A_S`` only forwarded for "similar"."""
    if regularizer != "similar":
        A_S = None
    return QwiseData.from_sets(quadruplets, pairs, regularizer=regularizer,
                               A_S=A_S, **kw)


@pytest.fixture(scope="session")
def make_data():
    """Helper building :class:`QwiseData` (``A_S`` ignored unless "similar")."""
    return _make_data


@pytest.fixture(scope="session", params=["trace", "frobenius", "similar"])
def regularizer(request):
    return request.param


@pytest.fixture(scope="session")
def eq8_data(quads, regularizer, A_S):
    """Eq. 8 (quadruplets only), C_q = 1, for each regulariser."""
    return _make_data(quads, regularizer=regularizer, A_S=A_S, C_q=1.0)


@pytest.fixture(scope="session")
def eq11_data(quads, pairs, u_l, regularizer, A_S):
    """Eq. 11 (quadruplets + pairs), C_q = 1, C_p = 0.5, for each regulariser."""
    u, l = u_l
    return _make_data(quads, pairs, regularizer=regularizer, A_S=A_S,
                      C_q=1.0, C_p=0.5, u=u, l=l)


@pytest.fixture(scope="session")
def exact_eq8(eq8_data):
    """Certified exact solution of ``eq8_data`` (declared model, Clarabel)."""
    return solve_exact(eq8_data, reduce=False)


@pytest.fixture(scope="session")
def exact_eq11(eq11_data):
    """Certified exact solution of ``eq11_data`` (declared model, Clarabel)."""
    return solve_exact(eq11_data, reduce=False)


def _check_repository_collection(family, *, regenerate=True, exact=True,
                                 objective_rel=1e-9):
    """The repository's ``problems/<family>`` and ``reference/<family>``
    are current: the instances are what their generator makes
    (``regenerate``), the exact path certifies each reference's objective to
    1e-7 (``exact``), the family's objective at each reference ``M`` is the
    stored one to ``objective_rel`` (``None``: not checked), and ``verify``
    passes every row."""
    import cvxmetric.collection as col

    root = col.find_root()
    if not (col.problems_dir(root, family) / "manifest.json").is_file():
        pytest.skip(f"no {family} collection in this checkout")
    if regenerate:
        for row in col.make_problems(root, family, check=True):
            assert not row["changed"], f"{row['name']} differs from its generator"
    for inst in col.iter_instances(root, family):
        ref = col.read_reference(root, inst)
        if exact:
            res = inst.spec.exact(inst.to_data())
            assert res.status == "optimal"
            assert abs(res.objective - ref.objective) <= 1e-7 * max(1.0, abs(ref.objective))
        if objective_rel is not None:
            assert inst.spec.objective(inst.to_data(), ref.M) == pytest.approx(
                ref.objective, rel=objective_rel)
    rows = col.verify(root, family)
    assert rows and all(r.passed for r in rows), [(r.instance, r.error) for r in rows]


@pytest.fixture(scope="session")
def check_repository_collection():
    """:func:`_check_repository_collection`: the check every family's
    collection test makes of the repository's instances and references."""
    return _check_repository_collection


def _module_from_file(path, name):
    """The Python file ``path`` loaded as a fresh module ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def repo_module():
    """Load a file of the repository that is not in the package -- a
    benchmark script, an example, a CI helper -- as a module:
    ``repo_module("benchmarks/gpu.py")`` (a path relative to the
    repository root; each call loads it afresh, so a test may change the
    module's settings)."""
    root = Path(__file__).resolve().parents[1]

    def load(relative):
        path = root / relative
        return _module_from_file(path, "_cvxmetric_" + path.stem)

    return load


@pytest.fixture(scope="session")
def docs_helpers():
    """tests/test_docs.py as a module (tests are not a package): the
    docs-example runners (``run_example``, ``run_code``), the block readers
    (``fenced_blocks``, ``python_text_pairs``) and line checks
    (``_check_lines``, ``_same_line``, ``same_numbers``) shared by every
    page's docs test."""
    return _module_from_file(Path(__file__).resolve().parent / "test_docs.py",
                             "_cvxmetric_docs_helpers")


#: Test modules that .ci/run runs again at the declared minimum versions
#: (``-m floors``, .ci/floors.txt): every family's exact path, its fast
#: paths against the stored certified references, the shared solver
#: contract, the certificate of any CVXPY problem (it reads CVXPY's conic
#: form) and the scikit-learn API.
FLOORS_MODULES = (
    "test_solver_contract.py",
    "test_threads.py",
    "test_sklearn_api.py",
    "test_model.py",
    "test_certify.py",
    "test_certify_declared.py",
    "qwise/test_fast_vs_exact.py",
    "qwise_vector/test_collection.py",
    "qwise_structural/test_collection.py",
    "mmc/test_solvers.py",
    "rankdml/test_rankdml_collection.py",
    "constraintdml/test_collection.py",
    "slr/test_collection.py",
    "omdml/test_collection.py",
    "ldml/test_collection.py",
    "lmnn/test_collection.py",
    "rca/test_collection.py",
    "itml/test_collection.py",
)


def pytest_collection_modifyitems(config, items):
    root = Path(__file__).resolve().parent
    floors = {root / m for m in FLOORS_MODULES}
    for item in items:
        if Path(str(item.fspath)).resolve() in floors:
            item.add_marker(pytest.mark.floors)


@pytest.fixture
def one_blas_thread():
    """Run the test on one BLAS thread.

    The budget tests measure this thread's CPU seconds (``time.thread_time``:
    wall time depends on the machine's load).  With several BLAS threads
    the calling thread spins while its workers wait for a core, so on a
    loaded machine the spin, not the code under test, fills the measure
    (a 0.05 s budget read 4 s next to two busy processes).
    """
    from cvxmetric._solver import forced_blas_threads

    with forced_blas_threads(1):
        yield


@pytest.fixture(scope="session")
def dask_client():
    """One in-process ``distributed`` cluster of 2 workers for the session,
    shared by the families' Dask tests (skipped without the ``[dask]``
    extra)."""
    pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


#: Defined in every :func:`dispatched_python` interpreter: the data of the
#: Qwise families' tests, and a fit under dispatch against NumPy's fit of the same data (both ``optimal``, the
#: device fit's back end torch, its fitted matrix a NumPy array, the
#: objectives within the tolerance of the family's fast ``method``, the
#: matrices within ``MATRIX_RTOL``).
_SAME_FIT = """
def same_fit(est, ref, family, method="fast"):
    import numpy
    from cvxmetric._tolerances import MATRIX_RTOL, tolerance
    assert est.status_ == ref.status_ == "optimal", (est.status_, ref.status_)
    assert est.result_.info["backend"].endswith("torch"), est.result_.info
    assert isinstance(est.components_, numpy.ndarray)
    assert abs(est.objective_ - ref.objective_) <= tolerance(family, method) * max(
        1.0, abs(ref.objective_)), (est.objective_, ref.objective_)
    M, R = est.mahalanobis_matrix_, ref.mahalanobis_matrix_
    assert numpy.abs(M - R).max() <= MATRIX_RTOL * numpy.abs(R).max(), numpy.abs(M - R).max()


def labelled_points():
    # (X, y, torch X): 60 points in 4 features, one of five times the
    # others' scale, 3 classes (the Qwise families' supervised fits)
    import numpy, torch
    rng = numpy.random.default_rng(0)
    X = rng.standard_normal((60, 4)); X[:, 1] *= 5.0
    return X, rng.integers(0, 3, 60), torch.asarray(X)


def quadruplet_sets():
    # (X, y, torch X, quadruplets, pairs, pair labels): 40 points in 3
    # features, 2 classes, 120 quadruplets and the distinct-point pairs of
    # 40 (the Qwise families' tuples fits)
    import numpy, torch
    from cvxmetric import pairs_from_labels, quadruplets_from_labels
    X = numpy.random.default_rng(0).standard_normal((40, 3)); X[:, 1] *= 5.0
    y = numpy.arange(40) % 2
    q = quadruplets_from_labels(y, 120, random_state=0)
    p, _ = pairs_from_labels(y, 40, random_state=1)
    p = p[p[:, 0] != p[:, 1]]
    return X, y, torch.asarray(X), q, p, numpy.where(y[p[:, 0]] == y[p[:, 1]], 1, -1)
"""


@pytest.fixture(scope="session")
def dispatched_python():
    """``run(code)``: ``code`` in a fresh interpreter with SciPy's array API
    flag, which scikit-learn's ``array_api_dispatch`` needs before SciPy is
    imported; asserts it printed ``ok``.  ``code`` may call
    ``same_fit(est, ref, family, method="fast")``, ``labelled_points()``
    and ``quadruplet_sets()`` (:data:`_SAME_FIT`).
    Skipped without torch and array-api-compat."""
    import subprocess
    import sys

    pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")

    def run(code):
        code = _SAME_FIT + code
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**os.environ, "SCIPY_ARRAY_API": "1"}, check=False)
        assert (out.returncode, out.stdout.strip()) == (0, "ok"), out.stderr[-3000:]

    return run
