"""LOMDML's ``rank``: one integer or one per view, capped at each view's
dimension (``ranks_``), validated, and consistent across ``partial_fit``."""

import numpy as np
import pytest

from cvxmetric import OMDML
from cvxmetric.omdml import LowRankOMDML, OMDMLData


def _data(dims=(81, 37, 120), n=60, T=120, seed=0):
    rng = np.random.default_rng(seed)
    views = [rng.random((n, d)) for d in dims]  # the paper's [0, 1] features
    t = np.array([rng.choice(n, 3, replace=False) for _ in range(T)])
    return views, t


def test_paper_setting_rank_50_on_a_37_dimensional_view():
    """LOMDML with r = 50 on views of dimensions (81, 37, 120) (the paper's
    setting, a 37-dimensional edge histogram): the 37-dimensional view's
    rank is capped at 37."""
    views, t = _data()
    est = OMDML(rank=50, random_state=0).fit(views, t)
    assert est.ranks_ == [50, 37, 50]
    assert [W.shape for W in est.components_] == [(50, 81), (37, 37), (50, 120)]
    assert np.isfinite(est.objective_)
    for W, M in zip(est.components_, est.metrics_):
        np.testing.assert_allclose(W.T @ W, M)


def test_one_rank_per_view():
    views, t = _data()
    est = OMDML(rank=(5, 50, 7), random_state=0).fit(views, t)
    assert est.ranks_ == [5, 37, 7]
    assert [W.shape[0] for W in est.components_] == [5, 37, 7]
    # a list of one value per view is the single integer
    a = OMDML(rank=[6, 6, 6], random_state=0).fit(views, t)
    b = OMDML(rank=6, random_state=0).fit(views, t)
    for Wa, Wb in zip(a.components_, b.components_):
        np.testing.assert_array_equal(Wa, Wb)


def test_full_matrices_and_exact_have_no_ranks():
    views, t = _data(dims=(4, 3, 5))
    assert OMDML().fit(views, t).ranks_ is None


@pytest.mark.parametrize("rank, match", [
    (True, "rank: rank must be an integer"),
    (np.True_, "rank: rank must be an integer"),
    (0, "rank: rank must be >= 1"),
    (-3, "rank: rank must be >= 1"),
    (2.5, "rank: rank must be an integer"),
    ("5", "rank: rank must be an integer"),
    ([5, 5], r"rank: one integer per view expected, got \(2,\) for 3 views"),
    ([5, True, 3], r"rank: rank\[1\] must be an integer"),
    ([5, 0, 3], r"rank: rank\[1\] must be >= 1"),
    ([[5, 5, 5]], "rank: one integer per view expected"),
])
def test_bad_rank_is_refused(rank, match):
    views, t = _data(dims=(4, 3, 5))
    with pytest.raises(ValueError, match=match):
        OMDML(rank=rank).fit(views, t)
    with pytest.raises(ValueError, match=match):
        OMDML(rank=rank).partial_fit(views, t)


def test_solver_refuses_rank_above_dimension():
    views, t = _data(dims=(4, 3, 5))
    with pytest.raises(ValueError, match=r"rank: 4 exceeds the dimension 3 of views\[1\]"):
        LowRankOMDML(rank=(2, 4, 2)).run(OMDMLData.from_views(views, t), warn=False)


@pytest.mark.parametrize("new_rank", [3, None, (2, 2, 3)])
def test_partial_fit_after_changing_rank_is_a_clear_error(new_rank):
    views, t = _data(dims=(4, 3, 5))
    est = OMDML(rank=2, random_state=0).partial_fit(views, t[:60])
    est.set_params(rank=new_rank)
    with pytest.raises(ValueError, match="rank: the stream was started with"):
        est.partial_fit(views, t[60:])
    # fit starts a new stream with the new rank; partial_fit continues it
    est.fit(views, t[:60])
    est.partial_fit(views, t[60:])


def test_partial_fit_with_the_same_ranks_continues():
    views, t = _data(dims=(4, 3, 5))
    est = OMDML(rank=2, random_state=0).partial_fit(views, t[:60])
    est.set_params(rank=[2, 2, 2])  # the same ranks, spelt per view
    est.partial_fit(views, t[60:])
    one = OMDML(rank=2, random_state=0).fit(views, t)
    for Wa, Wb in zip(est.components_, one.components_):
        np.testing.assert_allclose(Wa, Wb)
