"""One BLAS threading policy for the whole fit (cvxmetric._solver)."""

import numpy as np
import pytest

import cvxmetric
from cvxmetric import _solver
from cvxmetric.constraints import pairs_from_labels
from cvxmetric.mmc import _problem as mmc_problem

ESTIMATORS = [getattr(cvxmetric, name) for name in cvxmetric.__all__
              if isinstance(getattr(cvxmetric, name), type)
              and hasattr(getattr(cvxmetric, name), "fit")]


def _threads():
    return _solver._blas_thread_count()


@pytest.fixture
def loaded(monkeypatch):
    """The machine counts as loaded: every threaded decision is one thread."""
    monkeypatch.setattr(_solver, "_others_busy_cores", lambda: 2.0)


@pytest.fixture
def idle(monkeypatch):
    monkeypatch.setattr(_solver, "_others_busy_cores", lambda: 0.0)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_every_estimator_fit_is_under_the_policy(cls):
    for name in ("fit", "partial_fit", "calibrate_threshold"):
        method = getattr(cls, name, None)
        if method is not None:
            assert getattr(method, "_cvxmetric_policy", False), f"{cls.__name__}.{name}"


def test_data_preparation_runs_on_one_thread_when_loaded(monkeypatch, loaded):
    # the whitening of MMC's data (an SVD, outside any solver phase) runs
    # under the fit's decision: one thread on a loaded machine
    if _threads() is None or _threads() < 2:
        pytest.skip("BLAS has one thread here")
    seen = []
    real = mmc_problem._whiten

    def spy(*args):
        seen.append(_threads())
        return real(*args)

    monkeypatch.setattr(mmc_problem, "_whiten", spy)
    rng = np.random.RandomState(0)
    y = np.arange(300) % 3
    X = rng.normal(size=(300, 120)) + y[:, None]
    pairs, labels = pairs_from_labels(y, 400, random_state=0)
    before = _threads()
    cvxmetric.MMC(solver="fast", preprocessor=X).fit(pairs, labels)
    assert seen and set(seen) == {1}
    assert _threads() == before  # restored after the fit


def test_a_threaded_phase_gets_the_users_count_back(idle):
    # a fit whose data are small runs on one thread, but a solver phase
    # with large calls inside it threads again, with the count the user had
    n = _threads()
    if n is None or n < 2:
        pytest.skip("BLAS has one thread here")
    small = np.zeros((10, 3))
    with _solver.fit_threads(small):
        assert _threads() == 1
        with _solver.blas_threads(1e9):
            assert _threads() == n
        with _solver.blas_threads(1e3):
            assert _threads() == 1
    assert _threads() == n


def test_fit_threads_respects_a_forced_count(idle):
    with _solver.forced_blas_threads(1):
        with _solver.fit_threads(np.zeros((5000, 500))):
            assert _threads() == 1
            with _solver.blas_threads(1e9):
                assert _threads() == 1


def test_call_flops_counts_float_arrays_only():
    assert _solver._call_flops([np.zeros((100, 20)), np.zeros((5, 2), int)]) == 100 * 20 * 20
    assert _solver._call_flops([np.zeros((7, 2, 4))]) == 7 * 2 * 4 * 4
    assert _solver._call_flops([np.zeros(10), None]) == 0.0


def test_mmc_whitening_never_builds_the_left_factor(monkeypatch):
    # memory linear in the pairs: no (n_S, n_S) array is formed
    largest = []
    real_svd = np.linalg.svd

    def svd(a, *args, **kwargs):
        largest.append(a.shape)
        return real_svd(a, *args, **kwargs)

    monkeypatch.setattr(mmc_problem.np.linalg, "svd", svd)
    rng = np.random.RandomState(0)
    y = np.arange(400) % 4
    X = rng.normal(size=(400, 12)) + y[:, None]
    pairs, labels = pairs_from_labels(y, 3000, random_state=0)
    data = mmc_problem.MMCData.create(X, pairs, labels)
    assert max(s[0] for s in largest) <= 12
    # the factor still whitens: Wt^T Z_S^T Z_S Wt = I on the kept range
    G = data.Wt.T @ (data.Z_S.T @ data.Z_S) @ data.Wt
    np.testing.assert_allclose(G, np.eye(G.shape[0]), atol=1e-10)


# -- verbose: one meaning in every estimator ------------------------------------


def _wine_pairs():
    from sklearn.datasets import load_wine
    from sklearn.preprocessing import StandardScaler

    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    pairs, labels = pairs_from_labels(y, 120, random_state=0)
    return X, pairs, labels


def test_verbose_fast_solver_logs_progress_lines(caplog):
    X, pairs, labels = _wine_pairs()
    with caplog.at_level("WARNING", logger="cvxmetric"):
        cvxmetric.MMC(solver="fast", preprocessor=X).fit(pairs, labels)
    assert not [r for r in caplog.records if r.levelname == "INFO"]
    caplog.clear()
    cvxmetric.MMC(solver="fast", preprocessor=X, verbose=True).fit(pairs, labels)
    lines = [r.getMessage() for r in caplog.records if r.levelname == "INFO"]
    assert any(" iter 1 " in m and "error" in m and "elapsed" in m for m in lines)
    assert any("done: optimal" in m and "objective" in m and "relative gap" in m
               for m in lines)


def test_verbose_shows_lines_without_a_logging_configuration(monkeypatch, capsys):
    # no handler anywhere: the scope attaches one on stderr, and removes it
    log = _solver.logger
    monkeypatch.setattr(type(log), "hasHandlers", lambda self: False)
    before = list(log.handlers)
    with _solver.verbose_logging(True):
        log.info("progress")
        log.debug("detail")
    assert log.handlers == before
    err = capsys.readouterr().err
    assert "[cvxmetric] progress" in err and "detail" not in err


def test_conic_solver_logs_only_from_verbose_2(capfd):
    X, pairs, labels = _wine_pairs()
    cvxmetric.MMC(solver="exact", preprocessor=X, verbose=True).fit(pairs, labels)
    out = capfd.readouterr()
    assert "Clarabel" not in out.out + out.err
    cvxmetric.MMC(solver="exact", preprocessor=X, verbose=2).fit(pairs, labels)
    out = capfd.readouterr()
    assert "Clarabel" in out.out + out.err or "CVXPY" in out.out + out.err
    assert _solver.conic_verbose(2) and not _solver.conic_verbose(True)


# the learners (not the fixed-metric wrappers nor the covariance baseline,
# which solve nothing)
LEARNERS = [c for c in ESTIMATORS
            if c.__name__ not in ("MahalanobisMetric", "BilinearMetric", "Covariance")]


@pytest.mark.parametrize("cls", LEARNERS, ids=lambda c: c.__name__)
def test_every_estimator_takes_verbose(cls):
    import inspect

    param = inspect.signature(cls).parameters.get("verbose")
    assert param is not None and param.default is False
    assert "verbose" in (cls.__doc__ or "")


def test_verbose_never_lowers_a_configured_level():
    import logging

    log = _solver.logger
    old = log.level
    log.setLevel(logging.DEBUG)
    try:
        with _solver.verbose_logging(1):
            assert log.isEnabledFor(logging.DEBUG)
        assert log.level == logging.DEBUG
    finally:
        log.setLevel(old)
