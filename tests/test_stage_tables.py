"""Each formulation's docs page states what its learners run, in order, in
one table under "## What runs" (columns: estimator, solver, stages); a
traced fit of every row must give exactly those stages."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("docs/qwise/estimators.md", "docs/mmc/estimators.md", "docs/constraintdml/estimators.md", "docs/rankdml/estimators.md",
         "docs/slr/estimators.md", "docs/omdml/estimators.md", "docs/ldml/estimators.md", "docs/lmnn.md",
         "docs/closed_forms.md", "docs/scml.md", "docs/sdml.md", "docs/gmml.md", "docs/itml.md")
HEADING = "## What runs"

#: Parameters a table's fits take besides the defaults (stated on the page):
#: SDML's default balance_param = 0.5 is unbounded on standardised iris.
PARAMS = {"SDML_Supervised": {"balance_param": 1e-4}}


def section(page):
    text = (ROOT / page).read_text()
    start = text.find(HEADING)
    if start < 0:
        return None
    nxt = re.search(r"^## ", text[start + len(HEADING):], re.MULTILINE)
    return text[start:start + len(HEADING) + nxt.start()] if nxt else text[start:]


def rows(page):
    out = []
    for line in (section(page) or "").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            out.append((page, cells[0].strip("`"), cells[1].strip("`"), cells[2]))
    return out


ROWS = [r for page in PAGES for r in rows(page)]


def collapsed(trace):
    """``"name (kind), ..."`` with a repeated stage written ``xN`` once."""
    out = []
    for stage in trace:
        item = f"{stage.name} ({stage.kind})"
        if out and out[-1].startswith(item):
            out[-1] = f"{item} xN"
        else:
            out.append(item)
    return ", ".join(out)


def fit_args(estimator):
    """The data of the tables: standardised iris (every third sample for
    SLR and the LDML learners), two views of it with 200 triplets for
    OMDML, labelled bags of the digits for MildML and LDMLStar."""
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import StandardScaler

    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    if estimator in ("SLR", "LDMLSupervised"):
        return X[::3], y[::3]
    if estimator == "OMDML":
        from cvxmetric import triplets_from_labels

        return [X[:, :2], X[:, 2:]], triplets_from_labels(y, 200, random_state=0)
    if estimator in ("MildML", "LDMLStar"):
        from cvxmetric.ldml import digits_bags

        A, _ = digits_bags(n_per_class=12, random_state=0)
        return [A.X[b] for b in A.bags], A.captions
    return X, y


def test_every_page_has_its_table():
    for page in PAGES:
        assert rows(page), f"{page}: no '{HEADING}' table"


def test_every_learner_of_the_registry_is_in_a_table():
    from cvxmetric import formulations

    learners = {e for f in formulations() for e in f.estimators}
    tabled = {r[1] for r in ROWS}
    # one learner per formulation is enough: the pair / tuple learner runs
    # what its supervised sibling runs
    # the covariance baseline solves nothing: no stage runs
    for f in formulations():
        if f.name != "covariance":
            assert tabled & set(f.estimators), f.name
    assert tabled <= learners


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("page, estimator, solver, stages", ROWS,
                         ids=[f"{r[1]}-{r[2]}" for r in ROWS])
def test_the_table_is_what_runs(page, estimator, solver, stages):
    import cvxmetric

    cls = getattr(cvxmetric, estimator)
    params = cls().get_params()
    kwargs = {"solver": solver} if solver != "-" else {}
    if "random_state" in params:
        kwargs["random_state"] = 0
    kwargs.update(PARAMS.get(estimator, {}))
    est = cls(**kwargs).fit(*fit_args(estimator))
    assert collapsed(est.result_.trace) == stages, page
