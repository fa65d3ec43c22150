"""Temporal metric learning for webpage versions (Law et al. 2016, Sec. 5)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cvxmetric.experiments.qwise.pages import PAGE_LAYOUT, make_page_versions
from cvxmetric.qwise_vector.estimator import QwiseVector
from cvxmetric.experiments.qwise.temporal import (
    LateFusionSVM,
    cell_descriptors,
    jaccard_distances,
    pseudo_label_pairs,
    region_distances,
    successive_pairs,
    temporal_problem,
    temporal_quadruplets,
    unsupervised_change_detector,
)

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------
# temporal_quadruplets: hand-enumerated cases
# ---------------------------------------------------------------------------

def test_quadruplets_t5_gamma2_by_hand():
    # window r >= t - 2, s <= t + 2 (5 versions, the whole sequence), clipped
    # at both ends; r <= t < s, (r, s) != (t, t+1);
    # A: r + 2 >= t + 1 and s >= r + 2
    a = [(0, 1, 0, 2),
         (1, 2, 0, 2), (1, 2, 0, 3), (1, 2, 1, 3),
         (2, 3, 1, 3), (2, 3, 1, 4), (2, 3, 2, 4),
         (3, 4, 2, 4)]
    b = [(2, 3, 0, 3), (2, 3, 0, 4),  # r + gamma = 2 < t + 1 = 3
         (3, 4, 1, 4)]                # r + gamma = 3 < t + 1 = 4
    quads, delta = temporal_quadruplets(5, 2, r_min_offset=-2, s_max_offset=2)
    got = {tuple(q): m for q, m in zip(quads.tolist(), delta.tolist())}
    assert len(got) == len(quads) == 11
    assert got == {**{q: 1.0 for q in a}, **{q: 0.0 for q in b}}
    # sorted by t, then r, then s
    assert quads.tolist() == sorted(quads.tolist(), key=lambda q: (q[0], q[2], q[3]))


def test_quadruplets_sequence_as_long_as_the_window():
    # the paper's window spans 14 versions: 14 are enough, 13 are refused
    quads, delta = temporal_quadruplets(14, 4)
    t, _, r, s = quads.T
    assert r.min() == 0 and s.max() == 13
    assert np.sum(t == 6) == 7 * 7 - 1  # the one t whose window is not clipped
    assert np.any(delta == 1.0) and np.any(delta == 0.0)
    with pytest.raises(ValueError, match="n_versions: 13 versions are shorter than "
                                         "the sampling window of 14"):
        temporal_quadruplets(13, 4)


def test_quadruplets_window_by_hand():
    # T = 5, gamma = 3, r >= t - 1, s <= t + 2
    expected = [((0, 1, 0, 2), 0.0),
                ((1, 2, 0, 2), 0.0), ((1, 2, 0, 3), 1.0), ((1, 2, 1, 3), 0.0),
                ((2, 3, 1, 3), 0.0), ((2, 3, 1, 4), 1.0), ((2, 3, 2, 4), 0.0),
                ((3, 4, 2, 4), 0.0)]
    quads, delta = temporal_quadruplets(5, 3, r_min_offset=-1, s_max_offset=2)
    assert [tuple(q) for q in quads.tolist()] == [q for q, _ in expected]
    assert delta.tolist() == [m for _, m in expected]


def test_quadruplets_properties_large():
    T, gamma = 40, 4
    quads, delta = temporal_quadruplets(T, gamma)
    t, t1, r, s = quads.T
    assert np.all(t1 == t + 1)
    assert np.all((r <= t) & (s >= t + 1) & (r >= t - 6) & (s <= t + 7))
    assert np.all((r >= 0) & (s < T))
    assert not np.any((r == t) & (s == t + 1))
    in_a = (s >= r + gamma) & (r + gamma >= t + 1)
    assert np.array_equal(delta == 1.0, in_a)
    assert len(np.unique(quads, axis=0)) == len(quads)
    # an interior t has every (r, s) of the window but the trivial one
    assert np.sum(t == 20) == 7 * 7 - 1


def test_quadruplets_subsampling_deterministic():
    full, dfull = temporal_quadruplets(30, 4)
    q1, d1 = temporal_quadruplets(30, 4, n_samples=50, random_state=3)
    q2, d2 = temporal_quadruplets(30, 4, n_samples=50, random_state=3)
    q3, _ = temporal_quadruplets(30, 4, n_samples=50, random_state=4)
    assert np.array_equal(q1, q2) and np.array_equal(d1, d2)
    assert not np.array_equal(q1, q3)
    assert len(q1) == 50
    rows = {tuple(q): m for q, m in zip(full.tolist(), dfull.tolist())}
    assert all(rows[tuple(q)] == m for q, m in zip(q1.tolist(), d1.tolist()))
    q4, _ = temporal_quadruplets(30, 4, n_samples=10 ** 6, random_state=0)
    assert np.array_equal(q4, full)


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_versions=4, gamma=1), "gamma"),
    (dict(n_versions=4, gamma=0), "gamma"),
    (dict(n_versions=4, gamma=2.0), "gamma"),
    (dict(n_versions=4.0, gamma=2), "n_versions"),
    (dict(n_versions=True, gamma=2), "n_versions"),
    (dict(n_versions=4, gamma=4), "n_versions"),
    (dict(n_versions=1, gamma=2), "n_versions"),
    (dict(n_versions=5, gamma=2), "n_versions"),  # shorter than the window
    (dict(n_versions=4, gamma=2, r_min_offset=-2, s_max_offset=2), "n_versions"),
    (dict(n_versions=30, gamma=4, r_min_offset=1), "r_min_offset"),
    (dict(n_versions=30, gamma=4, s_max_offset=0), "s_max_offset"),
    (dict(n_versions=30, gamma=4, r_min_offset=-1, s_max_offset=2), "gamma"),
    (dict(n_versions=30, gamma=4, n_samples=0), "n_samples"),
])
def test_quadruplets_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        temporal_quadruplets(**kwargs)


def test_successive_pairs():
    assert successive_pairs(4).tolist() == [[0, 1], [1, 2], [2, 3]]
    with pytest.raises(ValueError, match="n_versions"):
        successive_pairs(1)


# ---------------------------------------------------------------------------
# per-region distances
# ---------------------------------------------------------------------------

def test_region_distances_pixels_by_hand():
    imgs = np.zeros((2, 4, 4))
    imgs[1, 0, 0] = 2.0   # top-left cell of a 2 x 2 grid
    imgs[1, 3, 2] = 1.0   # bottom-right cell
    d = region_distances(imgs, [[0, 1], [1, 1]], grid=2, descriptor="pixels")
    # mean over the 4 pixels of each cell of the squared differences
    assert np.allclose(d, [[4 / 4, 0, 0, 1 / 4], [0, 0, 0, 0]])
    # colour images: the grey level is the channel mean
    col = np.repeat(imgs[..., None], 3, axis=3)
    assert np.allclose(region_distances(col, [[0, 1]], grid=2, descriptor="pixels"),
                       d[:1])
    # uneven cells: 5 pixels over 2 cells -> rows [0, 2) and [2, 5)
    img5 = np.zeros((2, 5, 1))
    img5[1, 4, 0] = 3.0
    d5 = region_distances(img5, [[0, 1]], grid=(2, 1), descriptor="pixels")
    assert np.allclose(d5, [[0.0, 9.0 / 3]])


def test_region_distances_descriptors_and_gradients():
    rng = np.random.RandomState(0)
    desc = rng.rand(3, 4, 5)
    d = region_distances(desc, [[0, 2]])
    assert np.allclose(d, ((desc[0] - desc[2]) ** 2).sum(axis=1))
    # a vertical edge has horizontal gradients: orientation bin 0 only
    img = np.zeros((1, 4, 4))
    img[0, :, 2:] = 1.0
    h = cell_descriptors(img, 1, n_orientations=4)
    assert h.shape == (1, 1, 4)
    # np.gradient: columns 1 and 2 get 0.5 per row, 4 rows, area 16
    assert np.allclose(h[0, 0], [8 * 0.5 / 16, 0, 0, 0])
    imgs = rng.rand(3, 12, 12)
    g = region_distances(imgs, [[0, 1], [2, 2]], grid=3)
    c = cell_descriptors(imgs, 3)
    assert np.allclose(g[0], ((c[0] - c[1]) ** 2).sum(axis=1))
    assert np.all(g[1] == 0)


@pytest.mark.parametrize("call, match", [
    (lambda im: region_distances(im, [[0, 1]], grid=0), "grid"),
    (lambda im: region_distances(im, [[0, 1]], grid=9), "grid"),
    (lambda im: region_distances(im, [[0, 1]], grid=(2, 2, 2)), "grid"),
    (lambda im: region_distances(im, [[0, 3]], grid=2), "pairs"),
    (lambda im: region_distances(im, [[0.0, 1.0]], grid=2), "pairs"),
    (lambda im: region_distances(im, [0, 1], grid=2), "pairs"),
    (lambda im: region_distances(im, [[0, 1]], grid=2, descriptor="gist"),
     "descriptor"),
    (lambda im: region_distances(im[:, :, :, None, None], [[0, 1]], grid=2),
     "versions"),
    (lambda im: region_distances(im[0], [[0, 1]]), "versions"),
    (lambda im: region_distances(im, [[0, 1]], descriptor="pixels"), "descriptor"),
    (lambda im: cell_descriptors(im, 2, n_orientations=0), "n_orientations"),
])
def test_region_distances_bad_input(call, match):
    imgs = np.random.RandomState(0).rand(2, 8, 8)
    with pytest.raises(ValueError, match=match):
        call(imgs)
    bad = imgs.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="versions"):
        region_distances(bad, [[0, 1]], grid=2)


# ---------------------------------------------------------------------------
# the problem handed to QwiseVector
# ---------------------------------------------------------------------------

def test_temporal_problem_reduction_is_eq22():
    rng = np.random.RandomState(1)
    imgs = rng.rand(6, 8, 8)
    quads, delta = temporal_quadruplets(6, 2, r_min_offset=-2, s_max_offset=3)
    prob = temporal_problem(imgs, quads, delta, grid=2, descriptor="pixels",
                            pairs=[[0, 1], [4, 2]], pair_labels=[1, -1])
    assert prob.kept.all() and len(prob.quadruplets) == len(quads)
    w = rng.rand(4)
    # the model's distance of (row, 0) is w^T d_regions of the version pair
    X = prob.X
    dq = ((X[prob.quadruplets[:, 0]] - X[prob.quadruplets[:, 1]]) ** 2) @ w
    dref = region_distances(imgs, quads[:, :2], grid=2, descriptor="pixels") @ w
    assert np.allclose(dq, dref)
    dk = ((X[prob.quadruplets[:, 2]]) ** 2) @ w
    assert np.allclose(dk, region_distances(imgs, quads[:, 2:], grid=2,
                                            descriptor="pixels") @ w)
    dp = (X[prob.pairs[:, 0]] ** 2) @ w
    assert np.allclose(dp, region_distances(imgs, [[0, 1], [2, 4]], grid=2,
                                            descriptor="pixels") @ w)
    assert prob.pair_labels.tolist() == [1, -1]
    assert np.array_equal(prob.delta, delta)
    est = QwiseVector(psi="squared", preprocessor=prob.X).fit(
        prob.quadruplets, delta=prob.delta, pairs=prob.pairs,
        pair_labels=prob.pair_labels)
    assert est.coef_.shape == (4,) and np.all(est.coef_ >= 0)


def test_temporal_problem_drops_uninformative_and_refuses_bad():
    imgs = np.random.RandomState(2).rand(6, 8, 8)
    imgs[3] = imgs[2]          # (2, 3) identical
    imgs[5] = imgs[4]          # (4, 5) identical
    quads = np.array([[2, 3, 4, 5], [0, 1, 0, 2]])
    prob = temporal_problem(imgs, quads, [0.0, 1.0], grid=2)
    assert prob.kept.tolist() == [False, True]
    assert prob.delta.tolist() == [1.0]
    with pytest.raises(ValueError, match="quadruplets: none"):
        temporal_problem(imgs, quads[:1], 0.0, grid=2)
    with pytest.raises(ValueError, match="pairs: 1 pair"):
        temporal_problem(imgs, quads, 0.0, grid=2, pairs=[[2, 3]], pair_labels=[1])
    with pytest.raises(ValueError, match="pair_labels"):
        temporal_problem(imgs, quads, 0.0, grid=2, pairs=[[0, 1]])
    with pytest.raises(ValueError, match="pair_labels"):
        temporal_problem(imgs, quads, 0.0, grid=2, pairs=[[0, 1]], pair_labels=[0])
    with pytest.raises(ValueError, match="quadruplets"):
        temporal_problem(imgs, [[0, 1, 0, 9]], 0.0, grid=2)
    with pytest.raises(ValueError, match="quadruplets"):
        temporal_problem(imgs, [[0, 1, 0]], 0.0, grid=2)
    with pytest.raises(ValueError, match="delta"):
        temporal_problem(imgs, quads, [0.0], grid=2)


# ---------------------------------------------------------------------------
# synthetic pages
# ---------------------------------------------------------------------------

def test_pages_generator():
    p1 = make_page_versions(50, random_state=0)
    p2 = make_page_versions(50, random_state=0)
    p3 = make_page_versions(50, random_state=1)
    assert np.array_equal(p1.images, p2.images)
    assert np.array_equal(p1.links, p2.links)
    assert not np.array_equal(p1.images, p3.images)
    assert p1.images.shape == (50, 40, 40)
    pairs = successive_pairs(50)
    same = p1.identical_pairs(pairs)
    assert np.array_equal(same, p1.identical[1:])
    assert np.all(p1.similar(pairs)[same])
    # ground truth: the news changes somewhere in the news block, and only there
    # or in the ads / ticker; menus never change
    diff = np.abs(p1.images[1:] - p1.images[:-1]) > 0.3   # above the noise
    menus = p1.masks["top_menu"] | p1.masks["left_menu"]
    assert not np.any(diff[:, menus])
    news_moved = diff[:, p1.masks["news"]].any(axis=1)
    assert np.array_equal(news_moved, ~p1.similar(pairs))
    assert 0 < np.mean(~p1.similar(pairs)) < 0.6
    for kw, match in [(dict(n_versions=1), "n_versions"), (dict(size=5), "size"),
                      (dict(news_period=0.5), "news_period"), (dict(n_ads=0), "n_ads"),
                      (dict(p_identical=1.0), "p_identical"), (dict(noise=-1), "noise"),
                      (dict(n_stories=0), "n_stories")]:
        args = {"n_versions": 10, **kw}
        with pytest.raises(ValueError, match=match):
            make_page_versions(**args)
    # ground-truth queries refuse bad version pairs by name
    assert p1.identical_pairs(np.empty((0, 2), int)).shape == (0,)
    for bad in ([[0, 50]], [[-1, 2]], [0, 1], [[0.0, 1.0]], [[True, False]]):
        for query in (p1.similar, p1.identical_pairs):
            with pytest.raises(ValueError, match="pairs: "):
                query(bad)


def test_unsupervised_metric_weights_the_news_cells():
    """Sec. 5.4: learned only from A and B, the largest weights sit on the news."""
    grid = 8
    pages = make_page_versions(120, random_state=0)
    quads, delta = temporal_quadruplets(120, 4)
    prob = temporal_problem(pages.images, quads, delta, grid=grid)
    est = QwiseVector(psi="squared", loss="huber", solver="newton",
                      preprocessor=prob.X).fit(prob.quadruplets, delta=prob.delta)
    w = est.coef_
    frac = {k: pages.cell_fraction(k, grid) for k in pages.masks}
    news = frac["news"] > 0.5
    ads = frac["ads"] > 0.5
    menus = (frac["top_menu"] + frac["left_menu"]) > 0.5
    assert news.sum() >= 9
    assert news[np.argmax(w)]
    # the k largest weights (k = number of news cells) are mostly news cells
    top = np.argsort(-w)[:news.sum()]
    assert news[top].mean() >= 0.75
    assert w[news].mean() > 5 * w[~news].mean()
    assert w[ads].mean() < 0.3 * w[news].mean()
    assert w[menus].mean() < 0.15 * w[news].mean()
    assert set(PAGE_LAYOUT) == set(pages.masks)
    # cell fractions by hand: the 40 x 40 top menu covers rows 0-5 (6 pixels)
    top = pages.cell_fraction("top_menu", 4)
    assert np.allclose(top, [0.6] * 4 + [0.0] * 12)
    with pytest.raises(ValueError, match="region"):
        pages.cell_fraction("footer", 4)


# ---------------------------------------------------------------------------
# structural distance, pseudo-labels, late fusion
# ---------------------------------------------------------------------------

def test_jaccard_by_hand():
    sets = np.array([[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 0, 0]], dtype=bool)
    d = jaccard_distances(sets, [[0, 1], [0, 0], [2, 2], [0, 2]])
    assert np.allclose(d, [1 - 1 / 3, 0, 0, 1])
    with pytest.raises(ValueError, match="sets"):
        jaccard_distances(sets.astype(int), [[0, 1]])


def test_pseudo_labels_by_hand():
    d = np.array([0.0, 0.5, 3.0, 0.2, 2.0, 1.0])
    ident = np.array([True, False, False, False, False, False])
    sim, dis = pseudo_label_pairs(d, 2, exclude=ident)
    assert sim.tolist() == [3, 1] and dis.tolist() == [2, 4]
    with pytest.raises(ValueError, match="k"):
        pseudo_label_pairs(d, 3, exclude=ident)
    with pytest.raises(ValueError, match="k"):
        pseudo_label_pairs(d, 0)
    with pytest.raises(ValueError, match="exclude"):
        pseudo_label_pairs(d, 1, exclude=[0, 1])


def test_late_fusion_weights_nonnegative():
    rng = np.random.RandomState(0)
    n = 200
    y = np.where(rng.rand(n) < 0.5, 1, -1)
    informative_ = (y == -1) * 2.0 + rng.rand(n)
    # a distance larger for similar pairs: an unconstrained SVM gives it a
    # negative weight; the paper's alpha >= 0 forbids that
    reversed_ = (y == 1) * 1.0 + rng.rand(n)
    D = np.stack([informative_, reversed_], axis=1)
    free = LateFusionSVM(nonnegative=False).fit(D, y)
    assert free.coef_[1] < -1e-3
    fused = LateFusionSVM().fit(D, y)
    assert np.all(fused.coef_ >= 0)
    assert fused.coef_[1] < 1e-6 * fused.coef_[0]
    assert np.mean(fused.predict(D) == y) > 0.95
    with pytest.raises(ValueError, match="y"):
        LateFusionSVM().fit(D, np.ones(n))
    with pytest.raises(ValueError, match="distances"):
        fused.predict(D[:, :1])
    with pytest.raises(ValueError, match="C"):
        LateFusionSVM(C=0.0).fit(D, y)


def test_unsupervised_detector():
    rng = np.random.RandomState(1)
    d = np.concatenate([rng.rand(60), 3 + rng.rand(40)])
    truth = np.concatenate([np.ones(60, int), -np.ones(40, int)])
    det = unsupervised_change_detector(d, k=10)
    assert np.all(d[det.dissimilar_] >= 3) and np.all(d[det.similar_] < 1)
    assert np.mean(det.predict(d) == truth) == 1.0
    assert det.coef_[0] > 0


# ---------------------------------------------------------------------------
# the example
# ---------------------------------------------------------------------------

def test_example_runs_small(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "qwise_webpages.py"), "--seeds", "1",
         "--splits", "1", "--days", "10", "--grids", "4,8", "--no-figures", "--json",
         str(tmp_path / "r.json")],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "Table 1 (synthetic page)" in out.stdout
    saved = json.loads((tmp_path / "r.json").read_text())
    assert set(saved["results"]["grid"]) == {"4", "8", "10"}
    assert all(min(a) >= 0 for a in saved["results"]["alpha"])
