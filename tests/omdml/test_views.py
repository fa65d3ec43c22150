"""Multi-modal data of the OMDML experiments (cvxmetric.experiments.omdml.views).

The digits views have the documented shapes, lie in [0, 1] and are
deterministic; each descriptor is checked against a hand computation or an
invariance it must have.  The synthetic views carry the class signal in the
informative view only.  The split is stratified, disjoint and complete.
Bad input raises naming the argument.
"""

import numpy as np
import pytest
from sklearn.datasets import load_digits

from cvxmetric.experiments.omdml.views import (DIGITS_VIEW_NAMES, _intensity_histogram,
                                    _moments, _orientation_histogram, _profiles,
                                    digits_views, retrieval_split, scale_views,
                                    synthetic_views)

DIMS = (64, 16, 36, 16, 14)


@pytest.fixture(scope="module")
def digits():
    return digits_views()


@pytest.fixture(scope="module")
def images():
    return load_digits().images[:50].astype(float)


# ---------------------------------------------------------------------------
# digits_views
# ---------------------------------------------------------------------------


def test_digits_shapes_names_and_range(digits):
    views, y, names = digits
    assert names == DIGITS_VIEW_NAMES and len(views) == 5
    assert [v.shape for v in views] == [(1797, d) for d in DIMS]
    assert y.shape == (1797,) and set(np.unique(y)) == set(range(10))
    for v in views:
        assert v.min() >= 0.0 and v.max() <= 1.0
        # scaled over all samples: every non-constant feature reaches 0 and 1
        span = v.max(axis=0) - v.min(axis=0)
        assert np.allclose(span[span > 0], 1.0)


def test_digits_subset_is_deterministic():
    a, ya, _ = digits_views(n_samples=100, random_state=3)
    b, yb, _ = digits_views(n_samples=100, random_state=3)
    c, yc, _ = digits_views(n_samples=100, random_state=4)
    assert np.array_equal(ya, yb) and all(np.array_equal(u, v) for u, v in zip(a, b))
    assert [v.shape for v in a] == [(100, d) for d in DIMS]
    assert not all(np.array_equal(u, v) for u, v in zip(a, c))


def test_digits_unscaled_are_the_raw_descriptors(digits):
    raw, y, _ = digits_views(scale=False)
    imgs = load_digits().images
    assert np.array_equal(raw[0], imgs.reshape(len(y), -1))
    assert raw[0].max() == 16.0
    # scaling the raw descriptors over all samples gives the default views
    for u, v in zip(scale_views(raw), digits[0]):
        assert np.allclose(u, v)


def test_intensity_histogram_counts_pixels(images):
    h = _intensity_histogram(images)
    assert h.shape == (50, 16) and np.allclose(h.sum(axis=1), 1.0)
    # by hand for the first image: level 16 falls in the last bin
    levels = np.minimum(images[0].ravel().astype(int), 15)
    assert np.allclose(h[0], np.bincount(levels, minlength=16) / 64)


def test_orientation_histogram_is_normalised_and_contrast_free(images):
    g = _orientation_histogram(images)
    assert g.shape == (50, 36) and np.all(g >= 0)
    assert np.allclose(np.linalg.norm(g, axis=1), 1.0)
    assert np.allclose(_orientation_histogram(3.0 * images), g)
    # a vertical edge has a horizontal gradient only: orientation bin 0
    step = np.zeros((1, 8, 8))
    step[0, :, 4:] = 1.0
    h = _orientation_histogram(step).reshape(4, 9)
    assert np.all(h[:, 1:] == 0) and np.all(h[:, 0] > 0)


def test_profiles_by_hand(images):
    p = _profiles(images)
    assert p.shape == (50, 16)
    assert np.allclose(p[7, :8], images[7].mean(axis=1))
    assert np.allclose(p[7, 8:], images[7].mean(axis=0))


def test_moments_translation_invariant_and_intensity_law():
    rng = np.random.RandomState(0)
    small = rng.rand(3, 5, 5)
    a = np.zeros((3, 9, 9))
    b = np.zeros((3, 9, 9))
    a[:, :5, :5] = small
    b[:, 3:8, 4:9] = small
    ma, mb = _moments(a), _moments(b)
    assert ma.shape == (3, 14)
    assert np.allclose(ma, mb)
    # eta_pq = mu_pq / mu_00^(1 + (p+q)/2): grey levels times c scale the
    # second-order ones by 1/c, the third-order ones by c^-1.5
    c = 2.5
    law = np.r_[np.full(3, c ** -1.0), np.full(4, c ** -1.5)]
    assert np.allclose(_moments(c * a)[:, :7], ma[:, :7] * law)


def test_blank_image_has_finite_moments():
    m = _moments(np.zeros((2, 8, 8)))
    assert np.all(np.isfinite(m)) and np.all(m == 0)


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"n_samples": 1}, ValueError, "n_samples"),
    ({"n_samples": 5000}, ValueError, "n_samples"),
    ({"n_samples": 10.0}, TypeError, "n_samples"),
    ({"n_samples": True}, TypeError, "n_samples"),
    ({"scale": "yes"}, TypeError, "scale"),
])
def test_digits_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        digits_views(**kwargs)


# ---------------------------------------------------------------------------
# scale_views
# ---------------------------------------------------------------------------


def test_scale_views_fits_on_the_training_rows_only():
    rng = np.random.RandomState(1)
    views = [rng.randn(20, 3), np.c_[rng.randn(20, 2), np.full(20, 7.0)]]
    fit_on = np.arange(10)
    out = scale_views(views, fit_on=fit_on)
    for raw, s in zip(views, out):
        assert s.shape == raw.shape and s.min() >= 0 and s.max() <= 1
        lo, hi = raw[:10].min(axis=0), raw[:10].max(axis=0)
        expect = np.clip((raw - lo) / np.where(hi > lo, hi - lo, np.inf), 0, 1)
        assert np.allclose(s, expect)
    # the constant feature is 0, not NaN
    assert np.all(out[1][:, 2] == 0)
    # a boolean mask is the same as its indices
    mask = np.zeros(20, bool)
    mask[:10] = True
    assert all(np.array_equal(u, v) for u, v in zip(scale_views(views, mask), out))


@pytest.mark.parametrize("views, fit_on, match", [
    (np.zeros((3, 2)), None, "views"),
    ([], None, "views"),
    ([np.zeros((3, 2)), np.zeros((4, 2))], None, "views"),
    ([np.array([[0.0, np.nan]])], None, r"views\[0\]"),
    ([np.zeros((3, 2))], np.array([], int), "fit_on"),
    ([np.zeros((3, 2))], np.array([0, 3]), "fit_on"),
    ([np.zeros((3, 2))], np.array([0.5]), "fit_on"),
    ([np.zeros((3, 2))], np.array([True, False]), "fit_on"),
])
def test_scale_views_bad_input(views, fit_on, match):
    with pytest.raises(ValueError, match=match):
        scale_views(views, fit_on=fit_on)


# ---------------------------------------------------------------------------
# retrieval_split
# ---------------------------------------------------------------------------


def test_retrieval_split_counts_stratified_and_deterministic():
    y = np.repeat(np.arange(4), [30, 30, 20, 20])
    tr, va, te = retrieval_split(y, 20, 0.25, random_state=0)
    assert (len(tr), len(va), len(te)) == (55, 20, 25)
    assert np.array_equal(np.sort(np.concatenate([tr, va, te])), np.arange(100))
    for part in (tr, va, te):
        assert np.all(np.diff(part) > 0)
        # stratified: each class within one sample of its share
        share = np.bincount(y[part], minlength=4) / len(part)
        assert np.all(np.abs(share * len(part) - np.bincount(y) / 100 * len(part)) <= 1)
    again = retrieval_split(y, 20, 0.25, random_state=0)
    assert all(np.array_equal(a, b) for a, b in zip((tr, va, te), again))
    other = retrieval_split(y, 20, 0.25, random_state=1)
    assert not np.array_equal(te, other[2])


@pytest.mark.parametrize("y, kwargs, exc, match", [
    (np.zeros(10), {}, ValueError, "y: need at least 2 classes"),
    (np.r_[np.zeros(10), 1, 1], {}, ValueError, "y: every class"),
    (np.zeros((4, 2)), {}, ValueError, "y"),
    (np.arange(40) % 2, {"n_test": 1.5}, ValueError, "n_test"),
    (np.arange(40) % 2, {"n_validation": 1}, ValueError, "n_validation"),
    (np.arange(40) % 2, {"n_validation": "a"}, TypeError, "n_validation"),
    (np.arange(40) % 2, {"n_validation": 20, "n_test": 19}, ValueError,
     "n_validation, n_test"),
])
def test_retrieval_split_bad_input(y, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        retrieval_split(y, **kwargs)


# ---------------------------------------------------------------------------
# synthetic_views
# ---------------------------------------------------------------------------


def _class_mean_accuracy(X, y):
    """Accuracy of the nearest class mean (on the training data itself)."""
    means = np.stack([X[y == c].mean(axis=0) for c in np.unique(y)])
    d = ((X[:, None, :] - means[None]) ** 2).sum(axis=2)
    return float(np.mean(np.argmin(d, axis=1) == y))


def test_synthetic_signal_only_in_the_informative_view():
    views, y, names = synthetic_views(300, dims=(6, 4, 5), informative=1,
                                      n_classes=3, random_state=0)
    assert names == ("view0", "view1", "view2")
    assert [v.shape for v in views] == [(300, 6), (300, 4), (300, 5)]
    assert np.array_equal(np.bincount(y), [100, 100, 100])
    assert all(v.min() >= 0 and v.max() <= 1 for v in views)
    acc = [_class_mean_accuracy(v, y) for v in views]
    assert acc[1] > 0.9 and acc[0] < 0.6 and acc[2] < 0.6


def test_synthetic_several_informative_and_determinism():
    a, ya, _ = synthetic_views(60, dims=(3, 3, 3), informative=(0, 2), random_state=5,
                               scale=False)
    b, yb, _ = synthetic_views(60, dims=(3, 3, 3), informative=(0, 2), random_state=5,
                               scale=False)
    assert np.array_equal(ya, yb) and all(np.array_equal(u, v) for u, v in zip(a, b))
    assert a[0].min() < 0  # unscaled Gaussian data


@pytest.mark.parametrize("args, kwargs, exc, match", [
    ((5,), {}, ValueError, "n_samples"),
    ((30,), {"dims": 4}, TypeError, "dims"),
    ((30,), {"dims": ()}, ValueError, "dims"),
    ((30,), {"dims": (3, 0)}, ValueError, r"dims\[1\]"),
    ((30,), {"informative": 3}, ValueError, "informative"),
    ((30,), {"informative": ()}, ValueError, "informative"),
    ((30,), {"n_classes": 1}, ValueError, "n_classes"),
    ((30,), {"separation": 0.0}, ValueError, "separation"),
    ((30,), {"scale": 1}, TypeError, "scale"),
])
def test_synthetic_bad_input(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        synthetic_views(*args, **kwargs)
