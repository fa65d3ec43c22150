"""The image-retrieval protocol of RankDML (Sec. 4-5) on the digits.

Queries, features, distances and the cross-validation plumbing are checked
against direct definitions; the example script runs once in its quick
version.
"""

import io

import numpy as np
import pytest

from cvxmetric.experiments.rankdml.retrieval import (
    BLOCK_NAMES,
    TRANSFORMS,
    Method,
    RetrievalData,
    constraint_pairs,
    euclidean_baseline,
    histogram_intersection_baseline,
    histogram_intersection_distance,
    hu_moments,
    image_features,
    load_gallery,
    make_digits_retrieval,
    make_queries,
    query_folds,
    run_protocol,
    squared_distances,
    standardize,
    transform_image,
)
from cvxmetric.metrics import cmc_curve

# exact-arithmetic identities evaluated in floating point: round-off only
ROUNDOFF = 1e-10


@pytest.fixture(scope="module")
def gallery():
    images, labels, rows = load_gallery(20, upsample=2, random_state=0)
    return images


@pytest.fixture(scope="module")
def data():
    return make_digits_retrieval(24, upsample=2, random_state=3)


# ---------------------------------------------------------------------------
# gallery and queries
# ---------------------------------------------------------------------------


def test_load_gallery_shapes_range_and_strata():
    images, labels, rows = load_gallery(35, upsample=3, random_state=1)
    assert images.shape == (35, 24, 24)
    assert images.min() >= 0.0 and images.max() <= 1.0
    assert len(np.unique(rows)) == 35 and np.all(np.diff(rows) > 0)
    counts = np.bincount(labels, minlength=10)
    assert counts.max() - counts.min() <= 1  # round-robin over the classes


def test_load_gallery_is_deterministic():
    a = load_gallery(15, random_state=4)
    b = load_gallery(15, random_state=4)
    c = load_gallery(15, random_state=5)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[2], c[2])


def test_load_gallery_upsample_1_is_the_digits():
    from sklearn.datasets import load_digits

    images, _, rows = load_gallery(10, upsample=1, random_state=0)
    np.testing.assert_array_equal(images, load_digits().images[rows] / 16.0)


@pytest.mark.parametrize("kw, match", [
    ({"n_gallery": 5000}, "n_gallery"),
    ({"n_gallery": 0}, "n_gallery"),
    ({"n_gallery": 10, "upsample": 0}, "upsample"),
])
def test_load_gallery_bad_input(kw, match):
    with pytest.raises(ValueError, match=match):
        load_gallery(**kw)


@pytest.mark.parametrize("kind", TRANSFORMS)
def test_transform_image_each_kind(gallery, kind):
    img = gallery[0]
    out, params = transform_image(img, kind, np.random.RandomState(0))
    again, params2 = transform_image(img, kind, np.random.RandomState(0))
    assert out.shape == img.shape
    assert out.min() >= 0.0 and out.max() <= 1.0
    np.testing.assert_array_equal(out, again)
    assert params == params2
    assert np.abs(out - img).max() > 1e-3  # it changed the image


def test_illumination_is_gain_and_offset(gallery):
    out, p = transform_image(gallery[1], "illumination", np.random.RandomState(2))
    np.testing.assert_allclose(out, np.clip(p["gain"] * gallery[1] + p["offset"], 0, 1),
                               rtol=0, atol=ROUNDOFF)


def test_rotation_by_90_degrees_matches_rot90():
    # the affine resampling convention, checked where it is exact
    img = np.zeros((9, 9))
    img[1:4, 2:7] = 1.0
    from cvxmetric.experiments.rankdml.retrieval import _affine_about_centre

    t = np.pi / 2
    rot = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
    out = _affine_about_centre(img, rot)
    assert any(np.allclose(out, np.rot90(img, k), atol=1e-9) for k in (1, 3))


def test_transform_image_bad_input(gallery):
    rng = np.random.RandomState(0)
    with pytest.raises(ValueError, match="kind"):
        transform_image(gallery[0], "shear", rng)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        transform_image(gallery[0] * 2.0, "blur", rng)
    with pytest.raises(ValueError, match="NaN"):
        transform_image(np.full((5, 5), np.nan), "blur", rng)


def test_make_queries_layout_and_source_mapping(gallery):
    """Each query is the transformation of its source image, drawn in the
    documented order (image, transformation, copy) from one stream."""
    kinds = ("blur", "noise", "rotation")
    q, source, kind = make_queries(gallery[:6], kinds=kinds, per_kind=2,
                                   random_state=7)
    assert q.shape == (6 * 3 * 2,) + gallery.shape[1:]
    np.testing.assert_array_equal(source, np.repeat(np.arange(6), 6))
    np.testing.assert_array_equal(kind, np.tile(np.repeat(kinds, 2), 6))
    rng = np.random.RandomState(7)
    for t in range(len(q)):
        expected, _ = transform_image(gallery[source[t]], kind[t], rng)
        np.testing.assert_array_equal(q[t], expected)


def test_make_queries_deterministic_and_seed_dependent(gallery):
    a = make_queries(gallery[:4], random_state=1)[0]
    b = make_queries(gallery[:4], random_state=1)[0]
    c = make_queries(gallery[:4], random_state=2)[0]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_mild_queries_are_nearest_to_their_source_in_pixel_space(gallery):
    """A sanity check of the identity mapping on real images: blurred and
    noisy copies stay closest (correlation) to the image they came from."""
    q, source, _ = make_queries(gallery, kinds=("blur", "noise"), random_state=0)
    G = gallery.reshape(len(gallery), -1)
    Q = q.reshape(len(q), -1)
    G = (G - G.mean(1, keepdims=True)) / G.std(1, keepdims=True)
    Q = (Q - Q.mean(1, keepdims=True)) / Q.std(1, keepdims=True)
    nearest = np.argmax(Q @ G.T, axis=1)
    assert np.mean(nearest == source) >= 0.9


@pytest.mark.parametrize("kw, match", [
    ({"kinds": ()}, "kinds"),
    ({"kinds": ("blur", "blur")}, "repeats"),
    ({"kinds": ("warp",)}, "kinds"),
    ({"per_kind": 0}, "per_kind"),
])
def test_make_queries_bad_input(gallery, kw, match):
    with pytest.raises(ValueError, match=match):
        make_queries(gallery[:2], **kw)


# ---------------------------------------------------------------------------
# features
# ---------------------------------------------------------------------------


def test_feature_layout_and_ranges(gallery):
    F, blocks = image_features(gallery)
    assert F.shape == (len(gallery), 43)
    assert np.all(np.isfinite(F))
    assert list(blocks) == list(BLOCK_NAMES)
    cols = np.concatenate([np.arange(F.shape[1])[blocks[b]] for b in BLOCK_NAMES])
    np.testing.assert_array_equal(cols, np.arange(F.shape[1]))  # contiguous, complete
    np.testing.assert_allclose(F[:, blocks["histogram"]].sum(1), 1.0, atol=ROUNDOFF)
    corr = F[:, blocks["correlogram"]]
    assert corr.min() >= 0.0 and corr.max() <= 1.0
    edcv = F[:, blocks["edge_direction"]]
    np.testing.assert_allclose(edcv[:, :-1].sum(1), 1.0, atol=ROUNDOFF)
    assert np.all((edcv[:, -1] > 0) & (edcv[:, -1] <= 1))


def test_feature_length_follows_options(gallery):
    F, blocks = image_features(gallery[:3], n_bins=5, n_levels=3, distances=(1, 2),
                               n_directions=6)
    assert F.shape[1] == 5 + 3 * 2 + 14 + 2 * 6 + 1
    assert blocks["edge_direction"].stop == F.shape[1]


def test_histogram_and_correlogram_by_hand():
    # 4 x 4 image: left half level 0, right half the top level
    img = np.zeros((1, 4, 4))
    img[0, :, 2:] = 1.0
    F, blocks = image_features(img, n_bins=2, n_levels=2, distances=(1,))
    np.testing.assert_allclose(F[0, blocks["histogram"]], [0.5, 0.5])
    # pixel (r, c) of level 0 (c in {0, 1}): neighbours at chessboard
    # distance 1 inside the image, and how many of them are level 0
    same = total = 0
    for r in range(4):
        for c in range(2):
            for dr in (-1, 0, 1):
                for dc in (-1, 0, 1):
                    rr, cc = r + dr, c + dc
                    if (dr or dc) and 0 <= rr < 4 and 0 <= cc < 4:
                        total += 1
                        same += cc < 2
    np.testing.assert_allclose(F[0, blocks["correlogram"]], [same / total] * 2,
                               rtol=0, atol=ROUNDOFF)


def test_hu_moments_of_a_square():
    """Discrete square of side s: eta20 = eta02 = (s^2 - 1) / (12 s^2),
    everything else zero by symmetry."""
    s = 6
    img = np.zeros((1, 14, 14))
    img[0, 3:3 + s, 5:5 + s] = 0.7  # the max-normalisation removes the 0.7
    h = hu_moments(img)[0]
    np.testing.assert_allclose(h[0], (s * s - 1) / (6.0 * s * s), rtol=1e-12)
    np.testing.assert_allclose(h[1:], 0.0, atol=1e-12)


def test_hu_moments_rotation_and_reflection(gallery):
    img = gallery[:5]
    h = hu_moments(img)
    for k in (1, 2, 3):
        np.testing.assert_allclose(hu_moments(np.rot90(img, k, axes=(1, 2))), h,
                                   rtol=1e-9, atol=1e-12)
    h_ref = hu_moments(np.transpose(img, (0, 2, 1)))  # a reflection
    np.testing.assert_allclose(h_ref[:, :6], h[:, :6], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(h_ref[:, 6], -h[:, 6], rtol=1e-9, atol=1e-12)
    # and a gain does not change them
    np.testing.assert_allclose(hu_moments(0.5 * img), h, rtol=1e-12, atol=1e-14)


def test_rot90_leaves_intensity_blocks_unchanged(gallery):
    F, b = image_features(gallery[:4])
    G, _ = image_features(np.rot90(gallery[:4], 1, axes=(1, 2)).copy())
    for name in ("histogram", "correlogram", "hu_grey"):
        np.testing.assert_allclose(G[:, b[name]], F[:, b[name]], rtol=1e-9, atol=1e-12)


def test_blank_and_constant_images_have_finite_features():
    imgs = np.stack([np.zeros((8, 8)), np.full((8, 8), 0.4)])
    F, _ = image_features(imgs)
    assert np.all(np.isfinite(F))


@pytest.mark.parametrize("kw, exc, match", [
    ({"n_bins": 1}, ValueError, "n_bins"),
    ({"n_levels": True}, TypeError, "n_levels"),
    ({"distances": ()}, ValueError, "distances"),
    ({"distances": (0,)}, ValueError, "distances"),
    ({"edge_threshold": 0.0}, ValueError, "edge_threshold"),
    ({"edge_threshold": 1.5}, ValueError, "edge_threshold"),
    ({"coherence_size": 0}, ValueError, "coherence_size"),
])
def test_image_features_bad_options(gallery, kw, exc, match):
    with pytest.raises(exc, match=match):
        image_features(gallery[:2], **kw)


@pytest.mark.parametrize("images, match", [
    (np.zeros((4, 4)), "3-D"),
    (np.zeros((0, 8, 8)), "non-empty"),
    (np.full((1, 8, 8), 1.5), r"\[0, 1\]"),
    (np.full((1, 8, 8), np.nan), "NaN"),
])
def test_image_features_bad_images(images, match):
    with pytest.raises(ValueError, match=match):
        image_features(images)


# ---------------------------------------------------------------------------
# standardisation and distances
# ---------------------------------------------------------------------------


def test_standardize_uses_gallery_statistics_only():
    rng = np.random.RandomState(0)
    G = rng.randn(30, 4) * [1, 2, 3, 0] + [0, 1, 2, 5]  # last column constant
    Q = rng.randn(10, 4) * 5 + 3
    (Gs, Qs), mean, scale = standardize(G, Q)
    np.testing.assert_allclose(Gs.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(Gs[:, :3].std(0), 1, rtol=1e-12)
    assert scale[3] == 1.0 and np.all(Gs[:, 3] == 0)
    np.testing.assert_allclose(Qs, (Q - G.mean(0)) / scale, rtol=1e-12)
    # the queries do not move the gallery statistics
    (Gs2,), _, _ = standardize(G)
    np.testing.assert_array_equal(Gs, Gs2)


def test_standardize_bad_input():
    with pytest.raises(ValueError, match="others"):
        standardize(np.ones((3, 2)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="gallery"):
        standardize(np.ones((1, 2)))


def test_squared_distances_by_brute_force():
    rng = np.random.RandomState(1)
    Q, G = rng.randn(5, 3), rng.randn(7, 3)
    B = rng.randn(3, 3)
    M = B @ B.T
    D = squared_distances(Q, G, M)
    ref = np.array([[(q - g) @ M @ (q - g) for g in G] for q in Q])
    np.testing.assert_allclose(D, ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(squared_distances(Q, G),
                               ((Q[:, None] - G[None]) ** 2).sum(2), rtol=1e-10)
    with pytest.raises(ValueError, match="symmetric"):
        squared_distances(Q, G, B)
    with pytest.raises(ValueError, match="features"):
        squared_distances(Q, G[:, :2])


def test_histogram_intersection_by_brute_force():
    rng = np.random.RandomState(2)
    A = rng.random_sample((4, 6))
    A /= A.sum(1, keepdims=True)
    B = rng.random_sample((5, 6))
    B /= B.sum(1, keepdims=True)
    D = histogram_intersection_distance(A, B)
    ref = np.array([[1 - sum(min(a, b) for a, b in zip(x, y)) for y in B] for x in A])
    np.testing.assert_allclose(D, ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.diag(histogram_intersection_distance(A, A)), 0,
                               atol=1e-12)
    e = np.eye(3)
    np.testing.assert_allclose(histogram_intersection_distance(e, e), 1 - e)


@pytest.mark.parametrize("H, match", [
    (np.array([[0.5, 0.6]]), "sum to 1"),
    (np.array([[1.5, -0.5]]), "non-negative"),
    (np.zeros((0, 2)), "empty"),
])
def test_histogram_intersection_bad_input(H, match):
    with pytest.raises(ValueError, match=match):
        histogram_intersection_distance(H, np.array([[0.5, 0.5]]))


# ---------------------------------------------------------------------------
# the data set, folds, pairs
# ---------------------------------------------------------------------------


def test_make_digits_retrieval(data):
    n_g = 24
    assert isinstance(data, RetrievalData)
    assert data.n_gallery == n_g and data.n_queries == n_g * len(TRANSFORMS)
    assert data.X.shape == (n_g + data.n_queries, 43) == data.raw.shape
    assert np.all(np.isfinite(data.X))
    np.testing.assert_allclose(data.gallery.mean(0), 0, atol=1e-10)
    np.testing.assert_allclose(data.X, (data.raw - data.mean) / data.scale,
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(data.source, np.repeat(np.arange(n_g), 5))
    np.testing.assert_array_equal(data.query_rows([0, 2]), [n_g, n_g + 2])
    F, _ = image_features(data.query_images[:3])
    np.testing.assert_allclose(data.raw[n_g:n_g + 3], F, rtol=1e-12)


def test_make_digits_retrieval_is_deterministic(data):
    again = make_digits_retrieval(24, upsample=2, random_state=3)
    np.testing.assert_array_equal(again.X, data.X)
    np.testing.assert_array_equal(again.query_images, data.query_images)


def test_query_folds_balanced_deterministic_grouped():
    f = query_folds(23, 5, random_state=0)
    counts = np.bincount(f)
    assert counts.max() - counts.min() <= 1 and counts.sum() == 23
    np.testing.assert_array_equal(f, query_folds(23, 5, random_state=0))
    groups = np.repeat(np.arange(8), 3)
    g = query_folds(24, 4, groups=groups, random_state=1)
    for grp in range(8):
        assert len(set(g[groups == grp])) == 1
    with pytest.raises(ValueError, match="n_folds"):
        query_folds(3, 4)
    with pytest.raises(ValueError, match="n_folds"):
        query_folds(3, 1)
    with pytest.raises(ValueError, match="groups"):
        query_folds(4, 2, groups=[0, 1])


def test_constraint_pairs():
    T = np.array([[5, 0, 1], [5, 0, 2], [6, 1, 0], [6, 1, 2], [6, 1, 2]])
    pairs, y = constraint_pairs(T)
    np.testing.assert_array_equal(pairs, [[5, 0], [6, 1], [5, 1], [5, 2], [6, 0], [6, 2]])
    np.testing.assert_array_equal(y, [1, 1, -1, -1, -1, -1])
    with pytest.raises(ValueError, match="both relevant and irrelevant"):
        constraint_pairs(np.array([[5, 0, 1], [5, 1, 0]]))
    with pytest.raises(ValueError, match="integers"):
        constraint_pairs(np.array([[5.0, 0, 1]]))
    with pytest.raises(ValueError, match="non-empty"):
        constraint_pairs(np.zeros((0, 3), dtype=int))


# ---------------------------------------------------------------------------
# the protocol, with recording / fixed estimators
# ---------------------------------------------------------------------------


class _FixedMetric:
    """An 'estimator' returning a given matrix; records what it was fitted on."""

    calls = []

    def __init__(self, M, preprocessor):
        self.M = M
        self.preprocessor = preprocessor

    def fit(self, *args):
        type(self).calls.append((self.preprocessor, args))
        return self

    def get_mahalanobis_matrix(self):
        return self.M


def test_protocol_plumbing_with_fixed_metrics(data):
    _FixedMetric.calls = []
    d = data.n_features
    methods = {
        "euclidean": euclidean_baseline(),
        "identity (triplets)": Method("triplets", lambda X: _FixedMetric(np.eye(d), X)),
        "identity (pairs)": Method("pairs", lambda X: _FixedMetric(np.eye(d), X)),
        "hi": histogram_intersection_baseline(),
    }
    res = run_protocol(data, methods, n_folds=3, n_train=20, n_top=3, n_random=2,
                       max_rank=10, random_state=0)
    # a learned identity metric is the Euclidean baseline, exactly
    for name in ("identity (triplets)", "identity (pairs)"):
        np.testing.assert_array_equal(res.cmc[name], res.cmc["euclidean"])
        np.testing.assert_array_equal(res.ranks[name], res.ranks["euclidean"])
    # every query is tested once; per-fold CMC agrees with the stored ranks
    assert np.bincount(res.fold).sum() == data.n_queries
    np.testing.assert_array_equal(res.n_test, np.bincount(res.fold))
    for name in methods:
        for f in range(3):
            r = res.ranks[name][res.fold == f]
            np.testing.assert_allclose(res.cmc[name][f],
                                       [np.mean(r <= k) for k in range(1, 11)],
                                       rtol=0, atol=1e-12)
    # the HI baseline by hand on fold 0
    test = np.flatnonzero(res.fold == 0)
    cols = data.blocks["histogram"]
    D = histogram_intersection_distance(data.raw[data.n_gallery + test, cols],
                                        data.raw[:data.n_gallery, cols])
    np.testing.assert_array_equal(res.cmc["hi"][0],
                                  cmc_curve(D, data.source[test], max_rank=10))
    # what the learned methods were fitted on
    n_g = data.n_gallery
    assert len(_FixedMetric.calls) == 6
    for X, args in _FixedMetric.calls:
        assert X.shape == (n_g + 20, d)
        np.testing.assert_array_equal(X[:n_g], data.gallery)
        # the training query rows are real queries, none from the test fold
        rows = [np.flatnonzero((data.X[n_g:] == x).all(1)) for x in X[n_g:]]
        assert all(len(r) == 1 for r in rows)
    for (X, (T,)), (X2, (pairs, y)) in zip(_FixedMetric.calls[0::2],
                                           _FixedMetric.calls[1::2]):
        np.testing.assert_array_equal(X, X2)
        q_num = np.array([np.flatnonzero((data.X[n_g:] == x).all(1))[0] for x in X[n_g:]])
        q, r, i = T.T
        assert np.all(q >= n_g) and np.all(r < n_g) and np.all(i < n_g)
        # the relevant item of a training query is its source image
        np.testing.assert_array_equal(r, data.source[q_num[q - n_g]])
        assert np.all(i != r)
        assert len(T) == 20 * (3 + 2)
        p2, y2 = constraint_pairs(T)
        np.testing.assert_array_equal(pairs, p2)
        np.testing.assert_array_equal(y, y2)
    assert set(res.n_triplets) == {100}


def test_protocol_is_deterministic_and_reports(data):
    methods = {"euclidean": euclidean_baseline()}
    a = run_protocol(data, methods, n_folds=2, random_state=5)
    b = run_protocol(data, methods, n_folds=2, random_state=5)
    np.testing.assert_array_equal(a.fold, b.fold)
    np.testing.assert_array_equal(a.cmc["euclidean"], b.cmc["euclidean"])
    table = a.table()
    assert "euclidean" in table and "rank-1" in table
    mean, std = a.rank_accuracy(1)["euclidean"]
    np.testing.assert_allclose(mean, a.cmc["euclidean"][:, 0].mean())
    by_kind = a.rank_k_by_group(data.kind, k=20)["euclidean"]
    assert set(by_kind) == set(TRANSFORMS)
    np.testing.assert_allclose(np.mean(list(by_kind.values())),
                               a.cmc["euclidean"][:, 19].mean(), atol=1e-12)


def test_protocol_bad_input(data):
    m = {"euclidean": euclidean_baseline()}
    with pytest.raises(ValueError, match="max_rank"):
        run_protocol(data, m, max_rank=data.n_gallery + 1)
    with pytest.raises(ValueError, match="n_train"):
        run_protocol(data, m, n_train=0)
    with pytest.raises(TypeError, match="n_train"):
        run_protocol(data, m, n_train=300.0)
    with pytest.raises(ValueError, match="methods"):
        run_protocol(data, {})
    with pytest.raises(TypeError, match="Method"):
        run_protocol(data, {"x": lambda X: None})
    with pytest.raises(TypeError, match="RetrievalData"):
        run_protocol(np.zeros((3, 3)), m)
    with pytest.raises(ValueError, match="kind"):
        Method("quadruplets", lambda X: None)


# ---------------------------------------------------------------------------
# the example, quick version
# ---------------------------------------------------------------------------


def test_example_quick_run(repo_module):
    mod = repo_module("examples/rankdml_digits_cmc.py")
    out = io.StringIO()
    res = mod.main(["--quick", "--no-figures"], out=out)
    text = out.getvalue()
    names = list(mod.make_methods())
    assert list(res.cmc) == names
    for name in names:
        c = res.cmc[name]
        assert c.shape == (2, 20)
        assert np.all(np.diff(c, axis=1) >= 0) and np.all((c >= 0) & (c <= 1))
        assert name in text
    assert "rank-1" in text and "per transformation" in text
    # the learned metrics improve on the Euclidean baseline at rank 10 (by
    # 7 to 12 points with the stand-ins; the solvers are deterministic)
    r10 = {n: v[0] for n, v in res.rank_accuracy(10).items()}
    for name in ("constraint-based", "rank frobenius", "rank laplacian diag",
                 "rank burg"):
        assert r10[name] > r10["euclidean"]


def test_gradients_are_per_image_sobel(gallery):
    from scipy import ndimage

    from cvxmetric.experiments.rankdml.retrieval import _gradients

    gy, gx = _gradients(gallery[:4])
    for k in range(4):
        np.testing.assert_allclose(gy[k], ndimage.sobel(gallery[k], axis=0, mode="nearest"),
                                   rtol=0, atol=1e-12)
        np.testing.assert_allclose(gx[k], ndimage.sobel(gallery[k], axis=1, mode="nearest"),
                                   rtol=0, atol=1e-12)


def test_features_of_a_stack_equal_features_image_by_image(gallery):
    """No block may mix neighbouring images of the stack."""
    F, _ = image_features(gallery[:6])
    for k in range(6):
        np.testing.assert_allclose(image_features(gallery[k:k + 1])[0][0], F[k],
                                   rtol=1e-12, atol=1e-14)
