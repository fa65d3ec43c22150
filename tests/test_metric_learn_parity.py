"""metric-learn 0.7 parity of MMC and MMC_Supervised, by introspection.

metric-learn does not install next to current scikit-learn, so its
signatures are written here, copied from its v0.7.0 sources
(``metric_learn/mmc.py``, ``base_metric.py``): every keyword of its
constructors must be accepted by cvxmetric's counterpart, in metric-learn's
order (positional calls mean the same), every method must exist and take
metric-learn's arguments in order, and ``docs/metric_learn.md`` must list
each name.  The behaviour behind the names is tested after the tables.
"""

import ast
import inspect
import pathlib
import re
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

import cvxmetric
from cvxmetric import MMC, MMCSupervised, pairs_from_labels

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "metric_learn.md").read_text()

_PAIR_METHODS = {  # metric-learn 0.7's MahalanobisMixin, as (name, default)
    "score_pairs": [("pairs", None)],
    "pair_score": [("pairs", None)],
    "pair_distance": [("pairs", None)],
    "transform": [("X", None)],
    "get_metric": [],
    "get_mahalanobis_matrix": [],
    "get_params": [("deep", True)],
    "set_params": [],
}

#: metric-learn 0.7.0: ``__init__`` keywords with their defaults, and the
#: public methods with their arguments (``self`` left out).
METRIC_LEARN_07 = {
    "MMC": {
        "cvxmetric": "MMC",
        "init": [("max_iter", 100), ("max_proj", 10000), ("tol", 1e-3),
                 ("init", "identity"), ("diagonal", False), ("diagonal_c", 1.0),
                 ("verbose", False), ("preprocessor", None),
                 ("random_state", None), ("convergence_threshold", "deprecated")],
        "methods": {
            **_PAIR_METHODS,
            "fit": [("pairs", None), ("y", None), ("calibration_params", None)],
            "predict": [("pairs", None)],
            "decision_function": [("pairs", None)],
            "score": [("pairs", None), ("y", None)],
            "set_threshold": [("threshold", None)],
            "calibrate_threshold": [("pairs_valid", None), ("y_valid", None),
                                    ("strategy", "accuracy"), ("min_rate", None),
                                    ("beta", 1.0)],
        },
    },
    "MMC_Supervised": {
        "cvxmetric": "MMCSupervised",
        "init": [("max_iter", 100), ("max_proj", 10000), ("tol", 1e-6),
                 ("n_constraints", None), ("init", "identity"),
                 ("diagonal", False), ("diagonal_c", 1.0), ("verbose", False),
                 ("preprocessor", None), ("random_state", None),
                 ("num_constraints", "deprecated"),
                 ("convergence_threshold", "deprecated")],
        "methods": {
            **_PAIR_METHODS,
            "fit": [("X", None), ("y", None)],
            "fit_transform": [("X", None), ("y", None)],
        },
    },
}

METRIC_LEARN_07["Covariance"] = {
    "cvxmetric": "Covariance",
    "init": [("preprocessor", None)],
    "methods": {
        **_PAIR_METHODS,
        "fit": [("X", None), ("y", None)],
        "fit_transform": [("X", None), ("y", None)],
    },
}

_FIT_XY = {"fit": [("X", None), ("y", None)],
           "fit_transform": [("X", None), ("y", None)]}
METRIC_LEARN_07["RCA"] = {
    "cvxmetric": "RCA",
    "init": [("n_components", None), ("preprocessor", None)],
    "methods": {**_PAIR_METHODS, "fit": [("X", None), ("chunks", None)],
                "fit_transform": [("X", None), ("y", None)]},
}
METRIC_LEARN_07["RCA_Supervised"] = {
    "cvxmetric": "RCA_Supervised",
    "init": [("n_components", None), ("n_chunks", 100), ("chunk_size", 2),
             ("preprocessor", None), ("random_state", None),
             ("num_chunks", "deprecated")],
    "methods": {**_PAIR_METHODS, **_FIT_XY},
}
METRIC_LEARN_07["LFDA"] = {
    "cvxmetric": "LFDA",
    "init": [("n_components", None), ("k", None), ("embedding_type", "weighted"),
             ("preprocessor", None)],
    "methods": {**_PAIR_METHODS, **_FIT_XY},
}

_PAIR_CLASSIFIER = {
    "fit": [("pairs", None), ("y", None), ("calibration_params", None)],
    "predict": [("pairs", None)],
    "decision_function": [("pairs", None)],
    "score": [("pairs", None), ("y", None)],
    "set_threshold": [("threshold", None)],
    "calibrate_threshold": [("pairs_valid", None), ("y_valid", None),
                            ("strategy", "accuracy"), ("min_rate", None), ("beta", 1.0)],
}
_SCML_INIT = [("beta", 1e-5), ("basis", "triplet_diffs"), ("n_basis", None),
              ("gamma", 5e-3), ("max_iter", 10000), ("output_iter", 500),
              ("batch_size", 10), ("verbose", False), ("preprocessor", None),
              ("random_state", None)]
METRIC_LEARN_07["SCML"] = {
    "cvxmetric": "SCML",
    "init": _SCML_INIT,
    "methods": {**_PAIR_METHODS, "fit": [("triplets", None)],
                "predict": [("triplets", None)],
                "decision_function": [("triplets", None)],
                "score": [("triplets", None)]},
}
METRIC_LEARN_07["SCML_Supervised"] = {
    "cvxmetric": "SCML_Supervised",
    "init": [("k_genuine", 3), ("k_impostor", 10), _SCML_INIT[0], ("basis", "lda"),
             *_SCML_INIT[2:]],
    "methods": {**_PAIR_METHODS, **_FIT_XY},
}
METRIC_LEARN_07["SDML"] = {
    "cvxmetric": "SDML",
    "init": [("balance_param", 0.5), ("sparsity_param", 0.01), ("prior", "identity"),
             ("verbose", False), ("preprocessor", None), ("random_state", None)],
    "methods": {**_PAIR_METHODS, **_PAIR_CLASSIFIER},
}
METRIC_LEARN_07["SDML_Supervised"] = {
    "cvxmetric": "SDML_Supervised",
    "init": [("balance_param", 0.5), ("sparsity_param", 0.01), ("prior", "identity"),
             ("n_constraints", None), ("verbose", False), ("preprocessor", None),
             ("random_state", None), ("num_constraints", "deprecated")],
    "methods": {**_PAIR_METHODS, **_FIT_XY},
}

_ITML_INIT = [("gamma", 1.0), ("max_iter", 1000), ("tol", 1e-3)]
METRIC_LEARN_07["ITML"] = {
    "cvxmetric": "ITML",
    "init": [*_ITML_INIT, ("prior", "identity"), ("verbose", False),
             ("preprocessor", None), ("random_state", None),
             ("convergence_threshold", "deprecated")],
    "methods": {**_PAIR_METHODS, **_PAIR_CLASSIFIER,
                "fit": [("pairs", None), ("y", None), ("bounds", None),
                        ("calibration_params", None)]},
}
METRIC_LEARN_07["ITML_Supervised"] = {
    "cvxmetric": "ITML_Supervised",
    "init": [*_ITML_INIT, ("n_constraints", None), ("prior", "identity"),
             ("verbose", False), ("preprocessor", None), ("random_state", None),
             ("num_constraints", "deprecated"), ("convergence_threshold", "deprecated")],
    "methods": {**_PAIR_METHODS, "fit": [("X", None), ("y", None), ("bounds", None)],
                "fit_transform": [("X", None), ("y", None)]},
}

#: metric-learn 0.7's non-convex estimators: no certificate exists; the
#: docs say so and name the alternatives.
NON_CONVEX = ["NCA", "MLKR", "LSML", "LSML_Supervised"]

#: metric-learn 0.7's other estimators (``metric_learn.__all__``), which
#: cvxmetric does not cover; the docs must say so.
NOT_COVERED = []

def _section(ml_name):
    """The docs' section of one metric-learn estimator."""
    start = DOC.index(f"### `{ml_name}` ")
    end = DOC.find("\n### ", start + 1)
    return DOC[start:end if end > 0 else None]


def _params(func):
    return [p for p in inspect.signature(func).parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


@pytest.mark.parametrize("ml_name", sorted(METRIC_LEARN_07))
def test_constructor_takes_metric_learn_keywords_in_order(ml_name):
    spec = METRIC_LEARN_07[ml_name]
    cls = getattr(cvxmetric, spec["cvxmetric"])
    params = _params(cls.__init__)
    names = [p.name for p in params]
    ml_names = [name for name, _ in spec["init"]]
    # metric-learn's keywords first, in its order: positional calls agree
    assert names[:len(ml_names)] == ml_names
    rows = _keyword_rows(_section(ml_name))
    mmc_rows = _keyword_rows(_section("MMC"))
    for (name, default), p in zip(spec["init"], params):
        if p.default != default:  # a different default is stated in a row
            cells = rows[name] or mmc_rows[name]
            assert _literal(cells[1]) == p.default, name
    for name in names:  # every keyword, cvxmetric's own too, is documented
        assert name in rows, name
    for (name, ml_default), p in zip(spec["init"], params):
        cells = rows[name]
        if cells is None:  # a row of several keywords ("as MMC")
            continue
        # the row states both defaults, as Python literals
        assert _literal(cells[0]) == ml_default, name
        assert _literal(cells[1]) == p.default, name


def _keyword_rows(section):
    """``{keyword: (metric-learn default, cvxmetric default) or None}`` from
    the section's keyword table (None: a row naming several keywords)."""
    table = section[section.index("| keyword |"):]
    table = table[:table.index("\n\n")]
    rows = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        names = re.findall(r"`(\w+)`", cells[0])
        for name in names:
            rows[name] = tuple(cells[1:3]) if len(names) == 1 else None
    return rows


def _literal(cell):
    """A documented default: a Python literal in backticks, or "—" (none)."""
    if cell == "—":
        return inspect.Parameter.empty
    text = re.fullmatch(r"`([^`]*)`(?: \(.*\))?", cell).group(1)
    return ast.literal_eval(text)


@pytest.mark.parametrize("ml_name", sorted(METRIC_LEARN_07))
def test_methods_take_metric_learn_arguments(ml_name):
    spec = METRIC_LEARN_07[ml_name]
    cls = getattr(cvxmetric, spec["cvxmetric"])
    section = _section(ml_name)
    for method, args in spec["methods"].items():
        assert callable(getattr(cls, method, None)), method
        params = _params(getattr(cls, method))
        assert [p.name for p in params][:len(args)] == [a for a, _ in args], method
        for (name, default), p in zip(args, params):
            if default is not None:
                assert p.default == default, (method, name)
        # any further argument of cvxmetric's has a default: metric-learn's
        # calls still bind
        assert all(p.default is not p.empty for p in params[len(args):]), method
        assert f"`{method}`" in section, method


def test_docs_name_the_estimators_not_covered():
    text = DOC[DOC.index("### Not covered"):]
    for name in NOT_COVERED:
        assert f"`{name}`" in text, name
    text = DOC[DOC.index("### Non-convex"):DOC.index("### Not covered")]
    for name in NON_CONVEX:
        assert f"**`{name}`**" in text, name


def test_every_metric_learn_estimator_is_placed():
    """metric-learn 0.7's ``__all__`` (its estimators), each covered, named
    non-convex or named not covered."""
    ml_all = ["Covariance", "ITML", "ITML_Supervised", "LMNN", "LSML",
              "LSML_Supervised", "SDML", "SDML_Supervised", "NCA", "LFDA", "RCA",
              "RCA_Supervised", "MLKR", "MMC", "MMC_Supervised", "SCML",
              "SCML_Supervised"]
    placed = set(METRIC_LEARN_07) | set(NON_CONVEX) | set(NOT_COVERED) | {"LMNN"}
    assert placed == set(ml_all)


# -- the behaviour behind the names -------------------------------------------


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    _, keep = np.unique(X, axis=0, return_index=True)  # iris repeats samples
    keep = np.sort(keep)
    return StandardScaler().fit_transform(X[keep]), y[keep]


def test_metric_learn_script_runs(iris, caplog):
    """The steps of a typical metric-learn MMC script, keywords as written
    for metric-learn."""
    X, y = iris
    P, L = pairs_from_labels(y, 120, random_state=0)
    with caplog.at_level("INFO", logger="cvxmetric"):
        mmc = MMC(verbose=True, preprocessor=X, random_state=0).fit(P, L)
    assert any("status=" in r.getMessage() for r in caplog.records)
    assert mmc.score(P, L) > 0.8
    sup = MMCSupervised(diagonal_c=0.5, init="identity", convergence_threshold=1e-3,
                        max_iter=100, max_proj=1000, n_constraints=200,
                        random_state=0, solver="fast")
    # tol = 1e-3 is a loosened target: the fit says it stopped short of the
    # package's certificate (status optimal_inaccurate, ConvergenceWarning)
    # one recorder for both (nested pytest.warns only re-emits the other
    # category from pytest 8 on)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sup.fit(X, y)
    assert any(issubclass(w.category, FutureWarning)
               and "convergence_threshold" in str(w.message) for w in caught)
    assert any(issubclass(w.category, ConvergenceWarning) for w in caught)
    assert sup.status_ == "optimal_inaccurate"
    assert sup.certificate_.rel_gap <= 1e-3
    assert sup.transform(X).shape == X.shape
    with pytest.warns(FutureWarning, match="score_pairs"):
        d = mmc.score_pairs(P[:5])
    np.testing.assert_allclose(d, mmc.pair_distance(P[:5]))
    np.testing.assert_allclose(mmc.pair_score(P[:5]), -d)
    with pytest.raises(ValueError, match="convergence_threshold"):
        MMC(tol=1e-3, convergence_threshold=1e-3, preprocessor=X).fit(P, L)


def test_init_starts_the_fast_solver_not_the_optimum(iris):
    X, y = iris
    full = MMCSupervised(n_constraints=120, random_state=0, solver="fast").fit(X, y)
    rng = np.random.RandomState(1)
    B = rng.randn(4, 4)
    for diagonal in (False, True):
        ref = MMCSupervised(n_constraints=120, random_state=0, solver="fast",
                            diagonal=diagonal).fit(X, y)
        for init in ("identity", "covariance", "random", B @ B.T):
            est = MMCSupervised(n_constraints=120, random_state=0, solver="fast",
                                diagonal=diagonal, init=init).fit(X, y)
            assert est.status_ == "optimal"
            assert est.objective_ == pytest.approx(ref.objective_, rel=1e-6)
    exact = MMCSupervised(n_constraints=120, random_state=0, init="covariance").fit(X, y)
    assert exact.objective_ == pytest.approx(full.objective_, rel=1e-5)
    for bad, match in ((np.eye(3), "init"), (-np.eye(4), "init: matrix is not positive"),
                       ("pca", "init")):
        with pytest.raises(ValueError, match=match):
            MMCSupervised(n_constraints=60, init=bad, solver="fast").fit(X, y)


def test_diagonal_c_only_scales_metric_learns_solution(iris):
    """Any c > 0 has the same minimiser of Xing's diagonal objective up to
    the factor c; the metric here is normalised, so it does not change."""
    X, y = iris
    fits = [MMCSupervised(n_constraints=120, random_state=0, diagonal=True,
                          solver="fast", diagonal_c=c).fit(X, y) for c in (0.1, 1.0, 7.0)]
    for est in fits[1:]:
        np.testing.assert_allclose(est.get_mahalanobis_matrix(),
                                   fits[0].get_mahalanobis_matrix(), rtol=1e-10, atol=0)
    for bad in (0.0, -1.0, np.inf):
        with pytest.raises(ValueError, match="diagonal_c"):
            MMCSupervised(diagonal_c=bad, n_constraints=60).fit(X, y)


def test_callable_preprocessor(iris):
    X, y = iris
    names = np.array([f"sample-{i}" for i in range(len(y))])
    table = dict(zip(names, X))

    def load(keys):
        return np.array([table[k] for k in keys])

    P, L = pairs_from_labels(y, 120, random_state=0)
    by_array = MMC(preprocessor=X, solver="fast").fit(P, L)
    by_call = MMC(preprocessor=load, solver="fast").fit(names[P], L)
    np.testing.assert_allclose(by_call.get_mahalanobis_matrix(),
                               by_array.get_mahalanobis_matrix(), rtol=1e-8, atol=1e-12)
    np.testing.assert_array_equal(by_call.predict(names[P]), by_array.predict(P))
    assert by_call.score(names[P], L) == pytest.approx(by_array.score(P, L))
    np.testing.assert_allclose(by_call.transform(names[:3]), by_array.transform(X[:3]))

    sup = MMCSupervised(preprocessor=load, n_constraints=120, random_state=0,
                        solver="fast").fit(names, y)
    plain = MMCSupervised(n_constraints=120, random_state=0, solver="fast").fit(X, y)
    np.testing.assert_allclose(sup.get_mahalanobis_matrix(),
                               plain.get_mahalanobis_matrix(), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(sup.fit_transform(names, y), plain.transform(X))
    assert sup.score(names, y) == pytest.approx(plain.score(X, y))
    rows = MMCSupervised(preprocessor=X, n_constraints=120, random_state=0,
                         solver="fast").fit(np.arange(len(y)), y)
    np.testing.assert_allclose(rows.components_, plain.components_)

    def broken(keys):
        raise KeyError("no such sample")

    with pytest.raises(ValueError, match="preprocessor: the callable raised KeyError"):
        MMC(preprocessor=broken).fit(names[P], L)
    with pytest.raises(ValueError, match="preprocessor"):
        MMC(preprocessor=lambda keys: np.ones(3)).fit(names[P], L)


def test_max_proj_and_verbose_are_checked(iris):
    X, y = iris
    for kwargs in ({"max_proj": 0}, {"verbose": -1}, {"init": 3}):
        with pytest.raises(ValueError):
            MMCSupervised(n_constraints=60, **kwargs).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        MMCSupervised(n_constraints=60, max_proj=1, verbose=2, random_state=0,
                      solver="fast").fit(X, y)
