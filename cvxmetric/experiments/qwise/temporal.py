"""Temporal metric learning for webpage versions (Law, Thome, Cord 2016, Sec. 5).

"Learning a distance metric from relative comparisons between quadruplets of
images" (IJCV 2016), Sec. 5, learns which regions of a webpage matter from
the crawl order alone.  The pieces, in the paper's order:

* :func:`temporal_quadruplets` -- the version quadruplets
  ``(v_t, v_{t+1}, v_r, v_s)`` of the sets ``B`` (Eq. 18, margin 0) and
  ``A`` (Eq. 19, margin 1) under the monotony-of-changes assumption;
* :func:`cell_descriptors`, :func:`region_distances` -- the per-region
  distance vector ``d_regions(v_i, v_j)`` of Sec. 5.2 (one squared distance
  per cell of an ``m x m`` grid);
* :func:`temporal_problem` -- the quadruplets (and optional labelled pairs of
  Eq. 20-21) as index tuples into a sample matrix that
  :class:`~cvxmetric.qwise_vector.estimator.QwiseVector` with ``psi="squared"``
  fits directly: its ``w`` is the vector of Eq. 22, one weight per cell;
* :func:`jaccard_distances` -- the structural distance ``D_H`` of the late
  fusion (Jaccard distance of the hyperlink sets);
* :func:`pseudo_label_pairs`, :class:`LateFusionSVM`,
  :func:`unsupervised_change_detector` -- the unsupervised change detector
  of Sec. 5.5 and the late fusion of Sec. 5.2 (non-negative weights).

The reduction to :class:`QwiseVector`.  With ``psi="squared"`` the vector
model's distance between samples ``x_a, x_b`` is ``w^T ((x_a - x_b) o
(x_a - x_b))``.  A *pair of versions* ``(v_i, v_j)`` becomes the pair of
samples ``(c_ij, 0)`` with ``c_ij = d_regions(v_i, v_j)^{o 1/2}`` (the
Hadamard square root of Eq. 23), so the model's distance of that pair is
``w^T d_regions(v_i, v_j)``: Eq. 22 exactly, and the full-matrix ``Qwise``
on the same samples is Eq. 23's ``D_M``.  The sample matrix is
``X = [0; c_1; ...; c_P]`` over the distinct version pairs used.
"""

from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state

from ..._validation import (check_finite, check_indices, check_int, check_option,
                           check_pair_labels, check_scalar, describe)
from ...constraints import informative

__all__ = [
    "temporal_quadruplets",
    "successive_pairs",
    "cell_descriptors",
    "region_distances",
    "TemporalProblem",
    "temporal_problem",
    "jaccard_distances",
    "pseudo_label_pairs",
    "LateFusionSVM",
    "unsupervised_change_detector",
    "DESCRIPTORS",
]

#: Per-cell comparisons of :func:`region_distances`.
DESCRIPTORS = ("gradients", "pixels")

_CHUNK = 256  # version pairs per block when comparing raw pixels


# ---------------------------------------------------------------------------
# Constraints from the crawl order (Sec. 5.1.1)
# ---------------------------------------------------------------------------


def temporal_quadruplets(n_versions, gamma, *, r_min_offset=-6, s_max_offset=7,
                         n_samples=None, random_state=None):
    """Version quadruplets of the sets ``A`` (Eq. 19) and ``B`` (Eq. 18).

    For successive versions ``(v_t, v_{t+1})`` and an enclosing pair
    ``(v_r, v_s)`` with ``r <= t < s`` (so ``s >= t + 1``), monotony of
    changes asks ``D(v_t, v_{t+1}) <= D(v_r, v_s)``.  A quadruplet is in

    * ``A`` (margin ``delta = 1``, Eq. 19) when ``r <= t`` and
      ``s >= r + gamma >= t + 1``: the enclosing pair spans at least one
      change period and the period starting at ``r`` covers ``t -> t+1``;
    * ``B`` (margin ``delta = 0``, Eq. 18) otherwise (``A`` and ``B`` are
      disjoint, as the paper requires).

    The trivial quadruplet ``(t, t+1, t, t+1)`` (``r = t``, ``s = t + 1``)
    compares a distance with itself and is left out.  The enclosing pair is
    restricted to the window ``t + r_min_offset <= r`` and
    ``s <= t + s_max_offset`` (the paper's ``r >= t - 6``, ``s <= t + 7``,
    Sec. 5.4), which spans ``s_max_offset - r_min_offset + 1`` versions.
    The sequence must hold the whole window; near its first and last
    versions the window is clipped at the ends of the sequence.

    Parameters
    ----------
    n_versions : int
        Number ``T`` of successive versions, indexed ``0 .. T - 1``; at least
        the window, ``s_max_offset - r_min_offset + 1`` versions (14 with the
        paper's window).  This also makes ``T > gamma``, so that some pair
        spans a change period and ``A`` is not empty.
    gamma : int >= 2
        The change period ``gamma`` of Sec. 5.1.1 (the paper requires
        ``gamma > 1``; with ``gamma = 1`` Eq. 19 would demand
        ``D(v_t, v_{t+1}) + 1 <= D(v_t, v_{t+1})``).
    r_min_offset : int <= 0, default=-6
        ``r >= t + r_min_offset``.
    s_max_offset : int >= 1, default=7
        ``s <= t + s_max_offset``.  The window must allow a span of
        ``gamma``: ``gamma <= s_max_offset - r_min_offset``.
    n_samples : int >= 1, optional
        Keep at most this many quadruplets, drawn uniformly without
        replacement from ``A`` and ``B`` together (in enumeration order);
        default all.
    random_state : int, RandomState instance or None, default=None
        Seeds the subsampling (unused when every quadruplet is kept).

    Returns
    -------
    quadruplets : ndarray of int, shape (n, 4)
        Rows ``(t, t + 1, r, s)`` of version indices, sorted by ``t``, then
        ``r``, then ``s``: ask ``D(v_r, v_s) >= D(v_t, v_{t+1}) + delta``,
        the package's quadruplet convention (Eq. 7).
    delta : ndarray of float, shape (n,)
        1.0 for the quadruplets of ``A``, 0.0 for those of ``B``.

    Examples
    --------
    >>> from cvxmetric.experiments.qwise.temporal import temporal_quadruplets
    >>> quads, delta = temporal_quadruplets(4, 2, r_min_offset=-1, s_max_offset=2)
    >>> quads.tolist()
    [[0, 1, 0, 2], [1, 2, 0, 2], [1, 2, 0, 3], [1, 2, 1, 3], [2, 3, 1, 3]]
    >>> delta.tolist()
    [1.0, 1.0, 1.0, 1.0, 1.0]
    """
    T = check_int(n_versions, "n_versions", low=2)
    gamma = check_int(gamma, "gamma", low=2)
    r_min = check_int(r_min_offset, "r_min_offset", high=0)
    s_max = check_int(s_max_offset, "s_max_offset", low=1)
    if gamma > s_max - r_min:
        raise ValueError(
            f"gamma: a change period of {gamma} does not fit in the window "
            f"[t {r_min:+d}, t {s_max:+d}]; need gamma <= s_max_offset - "
            f"r_min_offset = {s_max - r_min}.")
    window = s_max - r_min + 1
    if T < window:
        # a sequence shorter than the window would clip it for every t, and
        # the quadruplets would no longer be the paper's window; T >= window
        # also gives T > gamma, so the set A of Eq. 19 is not empty
        raise ValueError(
            f"n_versions: {T} versions are shorter than the sampling window of "
            f"{window} versions (t {r_min:+d} .. t {s_max:+d}); need n_versions >= "
            f"s_max_offset - r_min_offset + 1 = {window}, or a smaller window.")
    t, dr, ds = np.meshgrid(np.arange(T - 1), np.arange(r_min, 1),
                            np.arange(1, s_max + 1), indexing="ij")
    t, r, s = t.ravel(), (t + dr).ravel(), (t + ds).ravel()
    keep = (r >= 0) & (s <= T - 1) & ~((r == t) & (s == t + 1))
    t, r, s = t[keep], r[keep], s[keep]
    in_a = (r + gamma >= t + 1) & (s >= r + gamma)
    quads = np.stack([t, t + 1, r, s], axis=1).astype(np.intp)
    delta = in_a.astype(float)
    if n_samples is not None:
        n_samples = check_int(n_samples, "n_samples", low=1)
        if n_samples < len(quads):
            rng = check_random_state(random_state)
            pick = np.sort(rng.choice(len(quads), n_samples, replace=False))
            quads, delta = quads[pick], delta[pick]
    return quads, delta


def successive_pairs(n_versions):
    """The pairs ``(v_t, v_{t+1})`` of successive versions (Sec. 5.5's
    candidates of the detector, Sec. 5.3's test pairs).

    Parameters
    ----------
    n_versions : int >= 2
        Number ``T`` of versions.

    Returns
    -------
    ndarray of int, shape (T - 1, 2)
        Rows ``(t, t + 1)``.
    """
    T = check_int(n_versions, "n_versions", low=2)
    t = np.arange(T - 1)
    return np.stack([t, t + 1], axis=1)


# ---------------------------------------------------------------------------
# Per-region distances (Sec. 5.2)
# ---------------------------------------------------------------------------


def _check_grid(grid, height, width):
    if isinstance(grid, (tuple, list)):
        if len(grid) != 2:
            raise ValueError(f"grid: expected an int m or a pair (rows, cols), got "
                             f"{len(grid)} values.")
        rows, cols = (check_int(g, "grid", low=1) for g in grid)
    else:
        rows = cols = check_int(grid, "grid", low=1)
    if rows > height or cols > width:
        raise ValueError(f"grid: a {rows} x {cols} grid has more cells than the "
                         f"{height} x {width} pixels of the images.")
    return rows, cols


def _edges(n, m):
    """Start of each of ``m`` near-equal cells over ``n`` pixels."""
    return np.round(np.linspace(0, n, m + 1)).astype(np.intp)


def _cell_sums(a, rows, cols):
    """Sum of ``a`` (..., H, W) over the cells of a ``rows x cols`` grid,
    divided by the cell's area: shape (..., rows * cols)."""
    H, W = a.shape[-2:]
    er, ec = _edges(H, rows), _edges(W, cols)
    s = np.add.reduceat(np.add.reduceat(a, er[:-1], axis=-2), ec[:-1], axis=-1)
    area = np.outer(np.diff(er), np.diff(ec))
    return (s / area).reshape(*a.shape[:-2], rows * cols)


def _check_images(images, name="versions"):
    imgs = check_finite(images, name)
    if imgs.ndim not in (3, 4):
        raise ValueError(f"{name}: expected images of shape (T, H, W) or (T, H, W, C), "
                         f"got shape {imgs.shape}.")
    if imgs.ndim == 4:
        # colour: the grey level is the channel mean (a GIST-like gradient
        # descriptor of the luminance)
        imgs = imgs.mean(axis=3)
    if min(imgs.shape) == 0:
        raise ValueError(f"{name}: empty images of shape {imgs.shape}.")
    return imgs


def cell_descriptors(images, grid, *, n_orientations=8):
    """GIST-like descriptor of every cell of an ``m x m`` grid (Sec. 5.2).

    The paper takes GIST (oriented edge responses pooled over an ``m x m``
    grid).  This is its plain stand-in: per pixel the gradient (central
    differences of the grey level) votes with its magnitude into one of
    ``n_orientations`` unsigned orientation bins over ``[0, pi)``; each cell
    keeps the histogram of its pixels, divided by its area.

    Parameters
    ----------
    images : array_like of shape (T, H, W) or (T, H, W, C)
        One screenshot per version; colour images are averaged over ``C``.
    grid : int or (int, int)
        ``m`` for an ``m x m`` grid, or ``(rows, cols)``; cells are as equal
        as the pixel count allows.
    n_orientations : int >= 1, default=8

    Returns
    -------
    ndarray of shape (T, rows * cols, n_orientations)
        Cells in row-major order.
    """
    imgs = _check_images(images, "images")
    rows, cols = _check_grid(grid, *imgs.shape[1:])
    n_or = check_int(n_orientations, "n_orientations", low=1)
    if min(imgs.shape[1:]) < 2:
        raise ValueError(f"images: gradients need at least 2 x 2 pixels, got "
                         f"{imgs.shape[1:]}.")
    gy, gx = np.gradient(imgs, axis=(1, 2))
    mag = np.hypot(gx, gy)
    angle = np.mod(np.arctan2(gy, gx), np.pi)
    bins = np.minimum((angle * (n_or / np.pi)).astype(np.intp), n_or - 1)
    out = np.empty((imgs.shape[0], rows * cols, n_or))
    for o in range(n_or):  # a few orientations, each vectorised over all versions
        out[:, :, o] = _cell_sums(np.where(bins == o, mag, 0.0), rows, cols)
    return out


def region_distances(versions, pairs, *, grid=None, descriptor="gradients",
                     n_orientations=8):
    """The per-region distance vectors ``d_regions(v_i, v_j)`` of Sec. 5.2.

    Element ``k`` is the squared Euclidean distance between the two versions'
    descriptors of cell ``k`` (the paper: "the squared l2-distance between
    bins that fall into the same cell"), so ``D_w = w^T d_regions`` (Eq. 22)
    with ``w >= 0`` is a weighted sum over cells, one weight per cell.

    Parameters
    ----------
    versions : array_like
        Either images, shape (T, H, W) or (T, H, W, C), with ``grid`` given;
        or precomputed cell descriptors, shape (T, n_cells, n_bins), with
        ``grid=None`` (a 3-D array is read as descriptors exactly when
        ``grid`` is None).
    pairs : array_like of int, shape (n_pairs, 2)
        Version indices ``(i, j)``.
    grid : int or (int, int), optional
        The ``m x m`` (or ``rows x cols``) grid for images.
    descriptor : {"gradients", "pixels"}, default="gradients"
        For images: ``"gradients"`` compares the GIST-like histograms of
        :func:`cell_descriptors`; ``"pixels"`` takes the mean over the cell
        of the squared grey-level differences.
    n_orientations : int, default=8
        Orientation bins of ``"gradients"``.

    Returns
    -------
    ndarray of shape (n_pairs, n_cells)
        Non-negative; zero for a pair of identical versions.
    """
    check_option(descriptor, "descriptor", DESCRIPTORS)
    if grid is None:
        desc = check_finite(versions, "versions")
        if desc.ndim != 3 or 0 in desc.shape:
            raise ValueError(
                f"versions: with grid=None, expected cell descriptors of shape "
                f"(T, n_cells, n_bins), got shape {desc.shape}; pass grid= for images.")
        if descriptor != "gradients":
            raise ValueError("descriptor: 'pixels' compares raw images and needs grid=.")
        idx = check_indices(pairs, "pairs", desc.shape[0], width=2)
        diff = desc[idx[:, 0]] - desc[idx[:, 1]]
        return np.einsum("pcf,pcf->pc", diff, diff)
    imgs = _check_images(versions)
    idx = check_indices(pairs, "pairs", imgs.shape[0], width=2)
    if descriptor == "gradients":
        desc = cell_descriptors(imgs, grid, n_orientations=n_orientations)
        return region_distances(desc, idx)
    rows, cols = _check_grid(grid, *imgs.shape[1:])
    out = np.empty((idx.shape[0], rows * cols))
    for start in range(0, idx.shape[0], _CHUNK):  # bounds the (chunk, H, W) block
        block = idx[start:start + _CHUNK]
        diff = imgs[block[:, 0]] - imgs[block[:, 1]]
        out[start:start + _CHUNK] = _cell_sums(diff * diff, rows, cols)
    return out


# ---------------------------------------------------------------------------
# The problem handed to QwiseVector (Sec. 5.1.3)
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TemporalProblem:
    """Version quadruplets and pairs as tuples of samples for ``QwiseVector``.

    Fit with ``QwiseVector(psi="squared", preprocessor=p.X).fit(
    p.quadruplets, delta=p.delta, pairs=p.pairs, pair_labels=p.pair_labels)``.

    Attributes
    ----------
    X : ndarray of shape (1 + n_version_pairs, n_cells)
        Row 0 is the origin; row ``1 + u`` is ``c = d_regions^{o 1/2}`` of
        ``version_pairs[u]`` (Eq. 23's Hadamard square root).
    quadruplets : ndarray of int, shape (n, 4)
        ``(row(t, t+1), 0, row(r, s), 0)``: the model's distance of
        ``(row, 0)`` is ``w^T d_regions`` (Eq. 22).
    delta : ndarray of shape (n,)
        Margins (Eq. 18: 0, Eq. 19: 1).
    pairs : ndarray of int, shape (n_pairs, 2) or None
        ``(row(i, j), 0)`` of the labelled version pairs (Eq. 20-21).
    pair_labels : ndarray of int or None
        +1 similar (set S), -1 dissimilar (set D).
    version_pairs : ndarray of int, shape (n_version_pairs, 2)
        The distinct version pairs ``(i, j)``, ``i < j``, behind ``X``.
    kept : ndarray of bool
        Which input quadruplets were kept: those whose two version pairs have
        the same per-region distances (e.g. both pairs of identical
        versions) do not constrain ``w`` and are dropped.
    """

    X: np.ndarray
    quadruplets: np.ndarray
    delta: np.ndarray
    pairs: object
    pair_labels: object
    version_pairs: np.ndarray
    kept: np.ndarray


def temporal_problem(versions, quadruplets, delta, *, pairs=None, pair_labels=None,
                     grid=None, descriptor="gradients", n_orientations=8):
    """Turn version quadruplets (and labelled version pairs) into a
    :class:`TemporalProblem` that ``QwiseVector(psi="squared")`` fits.

    Parameters
    ----------
    versions : array_like
        Images or cell descriptors, as in :func:`region_distances`.
    quadruplets : array_like of int, shape (n, 4)
        Version indices ``(t, t', r, s)`` asking
        ``D(v_r, v_s) >= D(v_t, v_t') + delta`` (e.g. from
        :func:`temporal_quadruplets`).
    delta : float or array_like of shape (n,)
        Margins.
    pairs : array_like of int, shape (n_pairs, 2), optional
        Human-labelled version pairs (Eq. 20-21), from which ``QwiseVector``
        learns the threshold ``b``.  A pair of identical versions is refused
        (its distance is 0 whatever ``w``).
    pair_labels : array_like of int, shape (n_pairs,), optional
        +1 similar (S), -1 dissimilar (D); given exactly when ``pairs`` is.
    grid, descriptor, n_orientations
        As in :func:`region_distances`.

    Returns
    -------
    TemporalProblem
    """
    n_versions = np.shape(versions)[0] if np.ndim(versions) >= 1 else 0
    q = check_indices(quadruplets, "quadruplets", n_versions, width=4)
    if np.ndim(delta) == 0:
        delta = np.full(q.shape[0], check_scalar(delta, "delta"))
    else:
        delta = check_finite(delta, "delta", shape=(q.shape[0],))
    if (pairs is None) != (pair_labels is None):
        missing = "pair_labels" if pair_labels is None else "pairs"
        raise ValueError(f"{missing}: pairs and pair_labels must be given together.")
    sides = [q[:, :2], q[:, 2:]]
    if pairs is not None:
        pairs = check_indices(pairs, "pairs", n_versions, width=2)
        pair_labels = check_pair_labels(pair_labels, pairs.shape[0], "pair_labels")
        sides.append(pairs)
    allp = np.sort(np.vstack(sides), axis=1)  # D is symmetric: (i, j) ~ (j, i)
    uniq, inverse = np.unique(allp, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    d = region_distances(versions, uniq, grid=grid, descriptor=descriptor,
                         n_orientations=n_orientations)
    X = np.vstack([np.zeros((1, d.shape[1])), np.sqrt(d)])
    rows = inverse + 1
    n = q.shape[0]
    zeros = np.zeros(n, dtype=np.intp)
    quad_idx = np.stack([rows[:n], zeros, rows[n:2 * n], zeros], axis=1)
    kept = informative(X, quad_idx)
    if not np.any(kept):
        raise ValueError("quadruplets: none constrains the metric (every one compares "
                         "pairs with equal per-region distances).")
    pair_idx = None
    if pairs is not None:
        pair_rows = rows[2 * n:]
        zero = ~np.any(X[pair_rows] != 0, axis=1)
        if np.any(zero):
            raise ValueError(
                f"pairs: {int(zero.sum())} pair(s) of identical versions (first at "
                f"row {int(np.flatnonzero(zero)[0])}); their distance is 0 whatever w.")
        pair_idx = np.stack([pair_rows, np.zeros_like(pair_rows)], axis=1)
    return TemporalProblem(X=X, quadruplets=quad_idx[kept], delta=delta[kept],
                           pairs=pair_idx, pair_labels=pair_labels,
                           version_pairs=uniq, kept=kept)


# ---------------------------------------------------------------------------
# Structural distance, change detection and late fusion (Sec. 5.2, 5.5)
# ---------------------------------------------------------------------------


def jaccard_distances(sets, pairs):
    """Jaccard distance ``1 - |A n B| / |A u B|`` of version pairs (Sec. 5.2).

    The structural distances ``D_H`` (hyperlinks) and ``D_U`` (image URLs)
    of the late fusion.

    Parameters
    ----------
    sets : array_like of bool, shape (T, n_items)
        ``sets[t, h]``: item ``h`` (a hyperlink, an image URL) is on version
        ``t``.
    pairs : array_like of int, shape (n_pairs, 2)

    Returns
    -------
    ndarray of shape (n_pairs,)
        In ``[0, 1]``; 0 for two empty sets.
    """
    S = np.asarray(sets)
    if S.dtype != bool or S.ndim != 2:
        raise ValueError(f"sets: expected a boolean array of shape (T, n_items), got "
                         f"{S.dtype} of shape {S.shape}.")
    idx = check_indices(pairs, "pairs", S.shape[0], width=2)
    a, b = S[idx[:, 0]], S[idx[:, 1]]
    inter = np.count_nonzero(a & b, axis=1)
    union = np.count_nonzero(a | b, axis=1)
    return np.where(union > 0, 1.0 - inter / np.maximum(union, 1), 0.0)


def _check_distance_matrix(distances, name="distances"):
    D = check_finite(distances, name)
    if D.ndim == 1:
        D = D[:, None]
    if D.ndim != 2 or 0 in D.shape:
        raise ValueError(f"{name}: expected shape (n_pairs,) or (n_pairs, n_distances), "
                         f"got {D.shape}.")
    return D


def pseudo_label_pairs(distances, k, *, exclude=None):
    """Automatic training pairs of the unsupervised detector (Sec. 5.5).

    Among the candidate pairs (the paper: the successive pairs of the
    training versions), the ``k`` with the largest learned distance form
    ``D`` and the ``k`` with the smallest distance that are not identical
    versions form ``S``.

    Parameters
    ----------
    distances : array_like of shape (n_pairs,)
        ``D_w`` of the candidate pairs.
    k : int >= 1
        ``|S| = |D| = k`` (the paper: 25).
    exclude : array_like of bool, shape (n_pairs,), optional
        Pairs that may not be used (identical versions).

    Returns
    -------
    similar, dissimilar : ndarray of int, shape (k,)
        Positions into ``distances``.
    """
    d = check_finite(distances, "distances", ndim=1)
    k = check_int(k, "k", low=1)
    if exclude is None:
        ok = np.ones(d.shape[0], dtype=bool)
    else:
        ex = np.asarray(exclude)
        if ex.dtype != bool or ex.shape != d.shape:
            raise ValueError(f"exclude: expected a boolean array of shape {d.shape}, "
                             f"got {ex.dtype} of shape {ex.shape}.")
        ok = ~ex
    cand = np.flatnonzero(ok)
    if 2 * k > cand.size:
        raise ValueError(f"k: 2 k = {2 * k} pairs are needed but only {cand.size} "
                         f"candidate pairs are available.")
    order = cand[np.argsort(d[cand], kind="stable")]
    return order[:k], order[::-1][:k]


class LateFusionSVM(BaseEstimator):
    """Linear SVM over distances with non-negative weights (Sec. 5.2, 5.5).

    The late fusion ``D_M(v_i, v_j) = alpha_1 D_w + alpha_2 D_H + ...`` with
    ``alpha >= 0`` (the unnumbered equation after Eq. 23), learned as a
    binary SVM separating the similar pairs ``S`` from the dissimilar pairs
    ``D``.  With one distance it is the unsupervised detector's classifier
    of Sec. 5.5 (a learned threshold on ``D_w``).

    Solved exactly with CVXPY: each distance is divided by its standard
    deviation on the training pairs (positive scaling keeps ``alpha >= 0``
    meaningful), then::

        min_{a, beta}  0.5 ||a||^2 + C sum_p max(0, 1 - z_p (a^T x_p - beta))
        s.t. a >= 0        (only when nonnegative=True)

    with ``z_p = +1`` for a dissimilar pair.  This is the hinge loss and
    unregularised intercept of a textbook linear SVM (``LinearSVC`` also
    penalises its intercept), with the paper's ``alpha >= 0`` imposed as a
    constraint rather than by clipping an unconstrained solution.

    Parameters
    ----------
    C : float > 0, default=1.0
    nonnegative : bool, default=True

    Attributes
    ----------
    coef_ : ndarray of shape (n_distances,)
        ``alpha`` in the units of the input distances.
    intercept_ : float
        ``beta``: a pair is dissimilar when ``distances @ coef_ > beta``.
    scale_ : ndarray of shape (n_distances,)
        The standard deviations used.
    """

    def __init__(self, C=1.0, nonnegative=True):
        self.C = C
        self.nonnegative = nonnegative

    def fit(self, distances, y):
        """Learn ``alpha >= 0`` and the threshold from labelled pairs.

        Parameters
        ----------
        distances : array_like of shape (n_pairs,) or (n_pairs, n_distances)
            One column per distance (``D_w``, ``D_H``, ...).
        y : array_like of int, shape (n_pairs,)
            +1 similar (S), -1 dissimilar (D), the package's convention;
            both classes are needed.

        Returns
        -------
        self : LateFusionSVM

        Raises
        ------
        ValueError
            Bad ``distances``, ``y``, ``C`` or ``nonnegative``.
        RuntimeError
            The conic solver fails.
        """
        import cvxpy as cp

        C = check_scalar(self.C, "C", low=0.0, low_inclusive=False)
        if not isinstance(self.nonnegative, (bool, np.bool_)):
            raise ValueError(f"nonnegative: expected a bool, got "
                             f"{describe(self.nonnegative)}.")
        D = _check_distance_matrix(distances)
        y = check_pair_labels(y, D.shape[0], "y")
        if np.unique(y).size < 2:
            raise ValueError("y: need both similar (+1) and dissimilar (-1) pairs.")
        scale = D.std(axis=0)
        scale = np.where(scale > 0, scale, 1.0)  # a constant distance cannot help
        Z = D / scale
        z = -y.astype(float)  # +1 dissimilar
        a = cp.Variable(D.shape[1], nonneg=bool(self.nonnegative))
        beta = cp.Variable()
        obj = 0.5 * cp.sum_squares(a) + C * cp.sum(cp.pos(1 - cp.multiply(z, Z @ a - beta)))
        prob = cp.Problem(cp.Minimize(obj))
        prob.solve(solver=cp.CLARABEL)
        if prob.status not in ("optimal", "optimal_inaccurate"):
            raise RuntimeError(f"LateFusionSVM: the solver returned {prob.status}.")
        coef = np.asarray(a.value, dtype=float)
        if self.nonnegative:
            # the interior-point iterate can sit a few 1e-10 below the bound
            coef = np.maximum(coef, 0.0)
        self.scale_ = scale
        self.coef_ = coef / scale
        self.intercept_ = float(beta.value)
        self.n_features_in_ = D.shape[1]
        return self

    def decision_function(self, distances):
        """``distances @ coef_ - intercept_``: positive for a dissimilar pair.

        Parameters
        ----------
        distances : array_like of shape (n_pairs,) or (n_pairs, n_distances)
            The distances of :meth:`fit`, in the same columns.

        Returns
        -------
        ndarray of shape (n_pairs,)
        """
        D = _check_distance_matrix(distances)
        if D.shape[1] != self.n_features_in_:
            raise ValueError(f"distances: expected {self.n_features_in_} distance(s) per "
                             f"pair, got {D.shape[1]}.")
        return D @ self.coef_ - self.intercept_

    def predict(self, distances):
        """Label version pairs: +1 similar, -1 dissimilar (a significant change).

        Parameters
        ----------
        distances : array_like of shape (n_pairs,) or (n_pairs, n_distances)

        Returns
        -------
        ndarray of int, shape (n_pairs,)
        """
        return np.where(self.decision_function(distances) > 0, -1, 1)


def unsupervised_change_detector(distances, k=25, *, exclude=None, C=1.0,
                                 nonnegative=True):
    """The change detector of Sec. 5.5, learned without human labels.

    The ``k`` candidate pairs with the largest ``D_w`` (first column of
    ``distances``) are labelled dissimilar, the ``k`` non-identical pairs
    with the smallest ``D_w`` similar (:func:`pseudo_label_pairs`), and a
    linear SVM (:class:`LateFusionSVM`) is trained on them.  Extra columns
    (e.g. the structural distance ``D_H``) make it the late fusion of
    Sec. 5.2 trained on these pseudo-labels.

    Parameters
    ----------
    distances : array_like of shape (n_pairs,) or (n_pairs, n_distances)
        Distances of the candidate (training) pairs; column 0 is ``D_w``.
    k : int, default=25
    exclude : array_like of bool, shape (n_pairs,), optional
        Pairs not to use (identical versions).
    C : float, default=1.0
    nonnegative : bool, default=True

    Returns
    -------
    LateFusionSVM
        Fitted, with the positions ``similar_`` and ``dissimilar_`` of its
        pseudo-labelled training pairs.
    """
    D = _check_distance_matrix(distances)
    sim, dis = pseudo_label_pairs(D[:, 0], k, exclude=exclude)
    idx = np.concatenate([sim, dis])
    y = np.concatenate([np.ones(k, int), -np.ones(k, int)])
    model = LateFusionSVM(C=C, nonnegative=nonnegative).fit(D[idx], y)
    model.similar_, model.dissimilar_ = sim, dis
    return model
