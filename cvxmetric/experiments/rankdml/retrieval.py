"""Image-retrieval protocol of Lee, Jin, Jain (2008, Sec. 4-5) on real images.

The paper retrieves tattoo images: every gallery image has synthetic query
images made from it by imaging transformations (Sec. 4.1, Fig. 4), each image
is described by colour, shape and texture features (Sec. 4.2), a metric is
learned from training queries with "critical" pairs (Sec. 5) and the test
queries are ranked against the whole gallery and scored by the CMC curve.
The tattoo database is not public; this module runs the same protocol on the
scikit-learn digits (8 x 8 grey images, upsampled), with numpy / scipy only:

* :func:`load_gallery`, :func:`transform_image`, :func:`make_queries` --
  the gallery and its transformed queries; the relevant item of a query is
  the gallery image it was made from (one per query, as in the paper).
* :func:`image_features` -- a fixed-length feature vector per image in
  four documented blocks (intensity histogram, intensity auto-correlogram,
  Hu moment invariants of the grey and gradient images, edge-direction
  coherence vector); :func:`standardize` scales them with gallery
  statistics only.
* :func:`make_digits_retrieval` -- all of the above in one
  :class:`RetrievalData`.
* :func:`run_protocol` -- folds of queries, critical triplets
  (:func:`cvxmetric.rankdml._pairs.critical_triplets`) for the rank-based
  methods, must-link / cannot-link pairs (:func:`constraint_pairs`) for the
  constraint-based one, CMC curves on the test queries.

Every random choice goes through ``random_state``.
"""

import time
from dataclasses import dataclass, field
from numbers import Integral

import numpy as np
from scipy import ndimage
from sklearn.datasets import load_digits
from sklearn.utils import check_random_state

from ..._validation import check_finite, check_option, check_scalar
from ...metrics import cmc_curve
from ...rankdml._pairs import critical_triplets
from .._common import _moment_invariants

__all__ = [
    "TRANSFORMS",
    "BLOCK_NAMES",
    "Method",
    "ProtocolResult",
    "RetrievalData",
    "constraint_pairs",
    "euclidean_baseline",
    "histogram_intersection_baseline",
    "histogram_intersection_distance",
    "image_features",
    "load_gallery",
    "make_digits_retrieval",
    "make_queries",
    "query_folds",
    "run_protocol",
    "squared_distances",
    "standardize",
    "transform_image",
]

#: The imaging transformations of Fig. 4 (colour transformation omitted:
#: the digits are grey).
TRANSFORMS = ("blur", "rotation", "noise", "aspect", "illumination")

#: Ranges of the transformation parameters, drawn uniformly per query.
#: Lengths are fractions of the image side so that the strength does not
#: depend on the upsampling factor.
TRANSFORM_RANGES = {
    # Gaussian blur, sigma / side (0.03-0.065 = 0.7-1.6 px at 24 x 24)
    "blur": (0.03, 0.065),
    # rotation angle in degrees, sign drawn at random
    "rotation": (8.0, 25.0),
    # additive Gaussian noise, standard deviation (intensities in [0, 1])
    "noise": (0.05, 0.15),
    # aspect ratio: one axis scaled by exp(+-U(log lo, log hi))
    "aspect": (1.15, 1.4),
    # illumination: I -> gain * I + offset
    "illumination_gain": (0.6, 0.9),
    "illumination_offset": (0.0, 0.15),
}

#: Feature blocks, in the order of the feature vector.
BLOCK_NAMES = ("histogram", "correlogram", "hu_grey", "hu_gradient", "edge_direction")


# gallery features whose spread is below this are not rescaled (constant)
_CONSTANT_STD = 1e-12


# ---------------------------------------------------------------------------
# Images
# ---------------------------------------------------------------------------


def _check_int(value, name, low):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}.")
    if value < low:
        raise ValueError(f"{name}: must be >= {low}, got {value}.")
    return int(value)


def _check_images(images, name="images"):
    """``images`` as a finite float array (n, H, W) with values in [0, 1]."""
    arr = check_finite(images, name, ndim=3)
    n, H, W = arr.shape
    if n == 0 or H < 3 or W < 3:
        raise ValueError(f"{name}: expected a non-empty stack of images of at "
                         f"least 3 x 3 pixels, got shape {arr.shape}.")
    if arr.min() < 0.0 or arr.max() > 1.0:
        raise ValueError(f"{name}: intensities must lie in [0, 1], got "
                         f"[{arr.min():.3g}, {arr.max():.3g}].")
    return arr


def load_gallery(n_gallery=300, *, upsample=3, random_state=None):
    """A gallery of distinct scikit-learn digits images.

    Parameters
    ----------
    n_gallery : int
        Number of images, at most the number of distinct digits images
        (1797).  Drawn without replacement, in equal numbers from the ten
        classes as far as possible.
    upsample : int >= 1
        Each 8 x 8 image is enlarged ``upsample`` times by cubic spline
        interpolation (clipped to [0, 1]) so that rotations and aspect
        changes act on more than a handful of pixels.
    random_state : int, RandomState instance or None

    Returns
    -------
    images : ndarray of shape (n_gallery, 8 * upsample, 8 * upsample)
        Intensities in [0, 1] (ink is bright, background 0).
    labels : ndarray of int, shape (n_gallery,)
        Digit classes (not used by the protocol: the relevant item of a
        query is its own source image, not its class).
    rows : ndarray of int, shape (n_gallery,)
        Rows of :func:`sklearn.datasets.load_digits` used, sorted.
    """
    n_gallery = _check_int(n_gallery, "n_gallery", 1)
    upsample = _check_int(upsample, "upsample", 1)
    digits = load_digits()
    # exact duplicates would make the relevant item ambiguous
    _, first = np.unique(digits.data, axis=0, return_index=True)
    pool = np.sort(first)
    if n_gallery > len(pool):
        raise ValueError(f"n_gallery: at most {len(pool)} distinct digits images "
                         f"are available, got {n_gallery}.")
    rng = check_random_state(random_state)
    y = digits.target[pool]
    # stratified draw: a random order within each class, then round-robin
    order = rng.permutation(len(pool))
    rank_in_class = np.empty(len(pool), dtype=np.intp)
    for c in np.unique(y):
        members = order[y[order] == c]
        rank_in_class[members] = np.arange(len(members))
    key = rank_in_class * len(pool) + np.argsort(order)  # round, then random
    rows = np.sort(pool[np.argsort(key, kind="stable")[:n_gallery]])
    images = digits.images[rows] / 16.0
    if upsample > 1:
        images = ndimage.zoom(images, (1, upsample, upsample), order=3,
                              grid_mode=True, mode="grid-constant")
        np.clip(images, 0.0, 1.0, out=images)
    return images, digits.target[rows].astype(np.intp), rows.astype(np.intp)


def _affine_about_centre(image, matrix):
    """``image`` resampled by ``out(o) = image(c + matrix @ (o - c))``."""
    c = (np.array(image.shape, dtype=float) - 1.0) / 2.0
    offset = c - matrix @ c
    return ndimage.affine_transform(image, matrix, offset=offset, order=1,
                                    mode="constant", cval=0.0)


def transform_image(image, kind, rng):
    """One transformed copy of ``image`` (Fig. 4 of the paper).

    Parameters
    ----------
    image : ndarray of shape (H, W)
        Intensities in [0, 1].
    kind : {"blur", "rotation", "noise", "aspect", "illumination"}
        ``"blur"``: Gaussian filter; ``"rotation"``: about the centre,
        bilinear, same frame; ``"noise"``: additive Gaussian noise;
        ``"aspect"``: one axis stretched or squeezed about the centre;
        ``"illumination"``: ``gain * I + offset``.  Parameters are drawn
        from :data:`TRANSFORM_RANGES`.
    rng : numpy.random.RandomState
        Source of the parameters (and of the noise).

    Returns
    -------
    out : ndarray of shape (H, W)
        Clipped to [0, 1].
    params : dict
        The drawn parameters.
    """
    check_option(kind, "kind", TRANSFORMS)
    img = _check_images(np.asarray(image)[None], "image")[0]
    H, W = img.shape
    side = float(min(H, W))
    R = TRANSFORM_RANGES
    if kind == "blur":
        sigma = rng.uniform(*R["blur"]) * side
        out, params = ndimage.gaussian_filter(img, sigma, mode="constant"), {"sigma": sigma}
    elif kind == "rotation":
        angle = rng.uniform(*R["rotation"]) * rng.choice([-1.0, 1.0])
        t = np.deg2rad(angle)
        rot = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
        out, params = _affine_about_centre(img, rot), {"angle": angle}
    elif kind == "noise":
        sigma = rng.uniform(*R["noise"])
        out, params = img + sigma * rng.standard_normal(img.shape), {"sigma": sigma}
    elif kind == "aspect":
        lo, hi = R["aspect"]
        factor = np.exp(rng.uniform(np.log(lo), np.log(hi)) * rng.choice([-1.0, 1.0]))
        axis = int(rng.randint(2))
        scale = np.ones(2)
        scale[axis] = factor
        out = _affine_about_centre(img, np.diag(1.0 / scale))
        params = {"axis": axis, "factor": factor}
    else:  # illumination
        gain = rng.uniform(*R["illumination_gain"])
        offset = rng.uniform(*R["illumination_offset"])
        out, params = gain * img + offset, {"gain": gain, "offset": offset}
    return np.clip(out, 0.0, 1.0), params


def make_queries(images, *, kinds=TRANSFORMS, per_kind=1, random_state=None):
    """Transformed copies of every gallery image: the queries.

    Parameters
    ----------
    images : ndarray of shape (n_gallery, H, W)
    kinds : sequence of str
        Transformations from :data:`TRANSFORMS` (no repeats).
    per_kind : int >= 1
        Copies per image and transformation (the paper makes 20 copies per
        image over its transformations).
    random_state : int, RandomState instance or None

    Returns
    -------
    queries : ndarray of shape (n_gallery * len(kinds) * per_kind, H, W)
        Grouped by source image, then transformation, then copy.
    source : ndarray of int, shape (n_queries,)
        The gallery index each query was made from: its relevant item.
    kind : ndarray of str, shape (n_queries,)
    """
    images = _check_images(images)
    kinds = tuple(kinds)
    if not kinds:
        raise ValueError("kinds: at least one transformation is needed.")
    for k in kinds:
        check_option(k, "kinds", TRANSFORMS)
    if len(set(kinds)) != len(kinds):
        raise ValueError(f"kinds: contains repeats {kinds}; use per_kind for "
                         f"several copies.")
    per_kind = _check_int(per_kind, "per_kind", 1)
    rng = check_random_state(random_state)
    n = len(images)
    reps = len(kinds) * per_kind
    queries = np.empty((n * reps,) + images.shape[1:])
    kind = np.empty(n * reps, dtype=f"<U{max(len(k) for k in kinds)}")
    t = 0
    for i in range(n):
        for k in kinds:
            for _ in range(per_kind):
                queries[t], _params = transform_image(images[i], k, rng)
                kind[t] = k
                t += 1
    return queries, np.repeat(np.arange(n, dtype=np.intp), reps), kind


# ---------------------------------------------------------------------------
# Features (Sec. 4.2)
# ---------------------------------------------------------------------------


def _quantise(images, n_levels):
    """Integer level ``floor(I * n_levels)`` in ``[0, n_levels)``."""
    return np.minimum((images * n_levels).astype(np.intp), n_levels - 1)


def _intensity_histogram(images, n_bins):
    n, H, W = images.shape
    q = _quantise(images, n_bins).reshape(n, -1)
    flat = (q + n_bins * np.arange(n)[:, None]).ravel()
    counts = np.bincount(flat, minlength=n * n_bins).reshape(n, n_bins)
    return counts / float(H * W)


def _ring_offsets(k):
    """Offsets ``(dy, dx)`` at chessboard distance exactly ``k``."""
    r = np.arange(-k, k + 1)
    dy, dx = np.meshgrid(r, r, indexing="ij")
    ring = np.maximum(np.abs(dy), np.abs(dx)) == k
    return list(zip(dy[ring].tolist(), dx[ring].tolist()))


def _autocorrelogram(images, n_levels, distances):
    """``gamma_c(k) = P(level(p') = c | level(p) = c, ||p - p'||_inf = k)``.

    Pairs whose second pixel falls outside the image are not counted; a
    level absent from an image gets 0.
    """
    n, H, W = images.shape
    q = _quantise(images, n_levels)
    onehot = q[:, None, :, :] == np.arange(n_levels)[None, :, None, None]  # (n, L, H, W)
    out = np.zeros((n, n_levels, len(distances)))
    for j, k in enumerate(distances):
        same = np.zeros((n, n_levels))
        total = np.zeros((n, n_levels))
        for dy, dx in _ring_offsets(k):
            if abs(dy) >= H or abs(dx) >= W:
                continue
            a = onehot[:, :, max(0, -dy):H - max(0, dy), max(0, -dx):W - max(0, dx)]
            b = onehot[:, :, max(0, dy):H - max(0, -dy), max(0, dx):W - max(0, -dx)]
            same += np.sum(a & b, axis=(2, 3))
            total += np.sum(a, axis=(2, 3))
        out[:, :, j] = np.divide(same, total, out=np.zeros_like(same), where=total > 0)
    return out.reshape(n, -1)  # level-major: (c0 k1, c0 k3, c0 k5, c1 k1, ...)


def hu_moments(images):
    """The seven Hu invariants of each image, as signed roots.

    The image is used as a mass distribution after dividing it by its
    maximum (so a global intensity gain does not change the result; the
    paper segments its images instead).  From the normalised central
    moments ``eta_pq = mu_pq / mu_00^(1 + (p + q) / 2)`` (``p`` on columns,
    ``q`` on rows) the invariants ``h_1 .. h_7`` of Hu (1962) are formed,
    then ``sign(h_k) |h_k|^(1 / deg_k)`` with ``deg = (1, 2, 2, 2, 4, 3, 4)``
    their degree in ``eta``: all seven are in the units of one moment, and
    the map is continuous at 0 (unlike the customary ``log |h|``).
    ``h_1 .. h_6`` are invariant to rotation and reflection, ``h_7``
    changes sign under reflection.  A blank image gets zeros.

    Parameters
    ----------
    images : ndarray of shape (n, H, W)
        Non-negative.

    Returns
    -------
    ndarray of shape (n, 7)
    """
    img = check_finite(images, "images", ndim=3)
    if img.min() < 0:
        raise ValueError("images: moments need non-negative intensities.")
    n = img.shape[0]
    peak = img.reshape(n, -1).max(axis=1)
    ok = peak > 0
    out = np.zeros((n, 7))
    out[ok] = _moment_invariants(img[ok] / peak[ok, None, None])[1]
    return out


def _gradients(images):
    """Sobel gradients (rows, columns) of each image of the stack.

    Borders are replicated, so that a bright background does not make an
    artificial frame of edges.  (``ndimage.sobel`` on the 3-D stack would
    also smooth across neighbouring images: the two 1-D passes are applied
    to the two image axes only.)
    """
    def sobel(axis, other):
        diff = ndimage.correlate1d(images, [-1.0, 0.0, 1.0], axis=axis, mode="nearest")
        return ndimage.correlate1d(diff, [1.0, 2.0, 1.0], axis=other, mode="nearest")

    return sobel(1, 2), sobel(2, 1)


def _edge_direction_coherence(gy, gx, n_directions, edge_threshold, coherence_size):
    """Edge-direction coherence vector (texture block).

    Edge pixels have a gradient magnitude of at least ``edge_threshold``
    times the image's largest one.  Their orientation ``atan2(gy, gx)``
    modulo 180 degrees is quantised into ``n_directions`` bins; within each
    bin, edge pixels in an 8-connected component of at least
    ``coherence_size`` pixels are *coherent*, the others incoherent.
    Returns, per bin, the coherent and the incoherent counts divided by the
    number of edge pixels (their sum over the bins is 1; their per-bin sum
    is the direction histogram, the coherent share the coherence ratio),
    followed by the edge density (edge pixels / image pixels).
    """
    n, H, W = gx.shape
    mag = np.hypot(gx, gy)
    peak = mag.reshape(n, -1).max(axis=1)
    edge = (mag >= edge_threshold * peak[:, None, None]) & (mag > 0)
    theta = np.mod(np.arctan2(gy, gx), np.pi)
    bins = np.minimum((theta / np.pi * n_directions).astype(np.intp), n_directions - 1)
    # 8-connectivity inside an image, none across the stack
    structure = np.zeros((3, 3, 3), dtype=bool)
    structure[1] = True
    coherent = np.zeros((n, n_directions))
    incoherent = np.zeros((n, n_directions))
    for b in range(n_directions):
        mask = edge & (bins == b)
        labels, n_lab = ndimage.label(mask, structure=structure)
        sizes = np.bincount(labels.ravel(), minlength=n_lab + 1)
        big = sizes >= coherence_size
        big[0] = False
        coh = big[labels]
        coherent[:, b] = coh.sum(axis=(1, 2))
        incoherent[:, b] = (mask & ~coh).sum(axis=(1, 2))
    n_edge = edge.sum(axis=(1, 2)).astype(float)
    denom = np.maximum(n_edge, 1.0)[:, None]
    vec = np.empty((n, 2 * n_directions))
    vec[:, 0::2] = coherent / denom
    vec[:, 1::2] = incoherent / denom
    return np.hstack([vec, (n_edge / (H * W))[:, None]])


def image_features(images, *, n_bins=8, n_levels=4, distances=(1, 3, 5),
                   n_directions=4, edge_threshold=0.2, coherence_size=3):
    """Colour (intensity), shape and texture features of Sec. 4.2.

    The blocks, in this order (``blocks`` gives their columns):

    ``"histogram"`` (``n_bins``)
        Intensity histogram on [0, 1], normalised to sum 1.
    ``"correlogram"`` (``n_levels * len(distances)``)
        Intensity auto-correlogram: for each of ``n_levels`` quantised
        levels ``c`` and chessboard distance ``k`` in ``distances``, the
        probability that a pixel at distance ``k`` from a pixel of level
        ``c`` also has level ``c`` (the paper's colour auto-correlogram,
        ``i = j``, ``k = 1, 3, 5``).  Level-major.
    ``"hu_grey"`` (7), ``"hu_gradient"`` (7)
        Hu moment invariants (:func:`hu_moments`) of the grey image and of
        its Sobel gradient magnitude (the paper's two shape sets, from the
        segmented grey-scale and the gradient images).
    ``"edge_direction"`` (``2 * n_directions + 1``)
        Edge-direction coherence vector: coherent / incoherent edge pixels
        per quantised direction, and the edge density
        (:func:`_edge_direction_coherence`; the paper uses 10-degree bins
        and a component threshold of 0.1 % of the image, too small to be
        meaningful at 24 x 24 pixels, hence ``coherence_size`` pixels).

    Parameters
    ----------
    images : ndarray of shape (n, H, W)
        Intensities in [0, 1].
    n_bins, n_levels, n_directions : int >= 2
    distances : sequence of int >= 1
    edge_threshold : float in (0, 1]
        Edge pixels: gradient magnitude >= ``edge_threshold * max``.
    coherence_size : int >= 1
        Smallest coherent component, in pixels.

    Returns
    -------
    features : ndarray of shape (n, n_features)
        ``n_features = n_bins + n_levels * len(distances) + 14
        + 2 * n_directions + 1`` (43 with the defaults: 8 + 12 + 7 + 7 + 9).
        Finite.  The defaults are coarse on purpose: full-matrix metrics
        have ``d (d + 1) / 2`` unknowns, and at ``d = 71`` (16 bins, 8
        levels, 8 directions) one fit took minutes instead of seconds.
    blocks : dict of str to slice
        Columns of each block, keys :data:`BLOCK_NAMES`.
    """
    images = _check_images(images)
    n_bins = _check_int(n_bins, "n_bins", 2)
    n_levels = _check_int(n_levels, "n_levels", 2)
    n_directions = _check_int(n_directions, "n_directions", 2)
    coherence_size = _check_int(coherence_size, "coherence_size", 1)
    distances = tuple(distances)
    if not distances:
        raise ValueError("distances: at least one distance is needed.")
    distances = tuple(_check_int(k, "distances", 1) for k in distances)
    edge_threshold = check_scalar(edge_threshold, "edge_threshold", low=0.0,
                                  high=1.0, low_inclusive=False)
    gy, gx = _gradients(images)
    parts = {
        "histogram": _intensity_histogram(images, n_bins),
        "correlogram": _autocorrelogram(images, n_levels, distances),
        "hu_grey": hu_moments(images),
        "hu_gradient": hu_moments(np.hypot(gx, gy)),
        "edge_direction": _edge_direction_coherence(gy, gx, n_directions,
                                                    edge_threshold, coherence_size),
    }
    blocks, start = {}, 0
    for name in BLOCK_NAMES:
        width = parts[name].shape[1]
        blocks[name] = slice(start, start + width)
        start += width
    return np.hstack([parts[name] for name in BLOCK_NAMES]), blocks


def standardize(gallery, *others):
    """Zero mean, unit variance per feature, with gallery statistics only.

    Features constant over the gallery are centred but not rescaled.

    Parameters
    ----------
    gallery : ndarray of shape (n_gallery, d)
    *others : ndarrays of shape (m, d)
        Scaled with the gallery's mean and standard deviation (the queries).

    Returns
    -------
    scaled : list of ndarray
        ``[gallery, *others]`` standardised.
    mean, scale : ndarray of shape (d,)
    """
    G = check_finite(gallery, "gallery", ndim=2)
    if G.shape[0] < 2:
        raise ValueError("gallery: at least two items are needed to estimate "
                         "a spread.")
    rest = [check_finite(o, f"others[{j}]", ndim=2) for j, o in enumerate(others)]
    for j, o in enumerate(rest):
        if o.shape[1] != G.shape[1]:
            raise ValueError(f"others[{j}]: has {o.shape[1]} features, the gallery "
                             f"has {G.shape[1]}.")
    mean = G.mean(axis=0)
    scale = G.std(axis=0)
    scale[scale <= _CONSTANT_STD * max(1.0, float(np.max(np.abs(G))))] = 1.0
    return [(A - mean) / scale for A in [G, *rest]], mean, scale


# ---------------------------------------------------------------------------
# Distances
# ---------------------------------------------------------------------------


def squared_distances(Q, G, M=None):
    """Squared Mahalanobis distances ``(q - g)^T M (q - g)``.

    Parameters
    ----------
    Q : ndarray of shape (n_q, d)
    G : ndarray of shape (n_g, d)
    M : ndarray of shape (d, d), optional
        Symmetric PSD (negative round-off eigenvalues are clipped);
        Euclidean when omitted.

    Returns
    -------
    ndarray of shape (n_q, n_g)
    """
    Q = check_finite(Q, "Q", ndim=2)
    G = check_finite(G, "G", ndim=2)
    if Q.shape[1] != G.shape[1]:
        raise ValueError(f"G: has {G.shape[1]} features, Q has {Q.shape[1]}.")
    if M is not None:
        d = Q.shape[1]
        M = check_finite(M, "M", shape=(d, d))
        if np.max(np.abs(M - M.T)) > 1e-8 * max(1.0, float(np.max(np.abs(M)))):
            raise ValueError("M: matrix is not symmetric.")
        w, V = np.linalg.eigh(0.5 * (M + M.T))
        L = V * np.sqrt(np.maximum(w, 0.0))  # M = L L^T
        Q, G = Q @ L, G @ L
    D = (np.einsum("ij,ij->i", Q, Q)[:, None] + np.einsum("ij,ij->i", G, G)[None, :]
         - 2.0 * (Q @ G.T))
    return np.maximum(D, 0.0)


def histogram_intersection_distance(Hq, Hg):
    """``1 - sum_b min(h_q[b], h_g[b])`` for histograms that sum to 1.

    The similarity of Swain and Ballard (the overlap of two normalised
    histograms), used as the baseline by the paper and its reference [15];
    0 for identical histograms, 1 for disjoint ones.

    Parameters
    ----------
    Hq : ndarray of shape (n_q, n_bins)
    Hg : ndarray of shape (n_g, n_bins)
        Non-negative rows summing to 1 (to 1e-9).

    Returns
    -------
    ndarray of shape (n_q, n_g)
    """
    arrs = []
    for name, H in (("Hq", Hq), ("Hg", Hg)):
        H = check_finite(H, name, ndim=2)
        if H.shape[0] == 0 or H.shape[1] == 0:
            raise ValueError(f"{name}: is empty (shape {H.shape}).")
        if H.min() < 0:
            raise ValueError(f"{name}: histograms must be non-negative.")
        if np.max(np.abs(H.sum(axis=1) - 1.0)) > 1e-9:
            raise ValueError(f"{name}: every histogram must sum to 1.")
        arrs.append(H)
    Hq, Hg = arrs
    if Hq.shape[1] != Hg.shape[1]:
        raise ValueError(f"Hg: has {Hg.shape[1]} bins, Hq has {Hq.shape[1]}.")
    out = np.empty((len(Hq), len(Hg)))
    block = max(1, (1 << 22) // max(1, Hg.size))  # bound the (b, n_g, bins) temporary
    for s in range(0, len(Hq), block):
        out[s:s + block] = 1.0 - np.minimum(Hq[s:s + block, None, :], Hg[None]).sum(axis=2)
    return np.maximum(out, 0.0)


# ---------------------------------------------------------------------------
# The data set
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RetrievalData:
    """Gallery and queries with their features.

    Attributes
    ----------
    X : ndarray of shape (n_gallery + n_queries, d)
        Standardised features (gallery statistics); gallery rows first.
    raw : ndarray of shape (n_gallery + n_queries, d)
        The features before standardisation (histogram intersection needs
        the normalised histograms).
    blocks : dict of str to slice
    n_gallery : int
    source : ndarray of int, shape (n_queries,)
        Gallery index of each query's relevant item.
    kind : ndarray of str, shape (n_queries,)
    gallery_labels : ndarray of int, shape (n_gallery,)
    gallery_images, query_images : ndarray of shape (n, H, W)
    mean, scale : ndarray of shape (d,)
        Of the standardisation.
    """

    X: np.ndarray
    raw: np.ndarray
    blocks: dict
    n_gallery: int
    source: np.ndarray
    kind: np.ndarray
    gallery_labels: np.ndarray
    gallery_images: np.ndarray
    query_images: np.ndarray
    mean: np.ndarray
    scale: np.ndarray

    @property
    def n_queries(self):
        return len(self.source)

    @property
    def n_features(self):
        return self.X.shape[1]

    @property
    def gallery(self):
        """Standardised gallery features, shape (n_gallery, d)."""
        return self.X[:self.n_gallery]

    def query_rows(self, queries=None):
        """Rows of ``X`` of the given query numbers (default: all)."""
        q = np.arange(self.n_queries) if queries is None else np.asarray(queries)
        return self.n_gallery + q


def make_digits_retrieval(n_gallery=300, *, kinds=TRANSFORMS, per_kind=1, upsample=3,
                          feature_options=None, random_state=None):
    """The digits retrieval data set: gallery, transformed queries, features.

    Parameters
    ----------
    n_gallery : int
        Gallery size (see :func:`load_gallery`).
    kinds, per_kind :
        See :func:`make_queries`; ``n_queries = n_gallery * len(kinds) *
        per_kind``.
    upsample : int
        See :func:`load_gallery`.
    feature_options : dict, optional
        Keyword arguments of :func:`image_features`.
    random_state : int, RandomState instance or None
        Seeds the gallery draw and the transformations.

    Returns
    -------
    RetrievalData
    """
    rng = check_random_state(random_state)
    images, labels, _ = load_gallery(n_gallery, upsample=upsample, random_state=rng)
    queries, source, kind = make_queries(images, kinds=kinds, per_kind=per_kind,
                                         random_state=rng)
    opts = dict(feature_options or {})
    Fg, blocks = image_features(images, **opts)
    Fq, _ = image_features(queries, **opts)
    (Gs, Qs), mean, scale = standardize(Fg, Fq)
    return RetrievalData(
        X=np.vstack([Gs, Qs]), raw=np.vstack([Fg, Fq]), blocks=blocks,
        n_gallery=len(images), source=source, kind=kind, gallery_labels=labels,
        gallery_images=images, query_images=queries, mean=mean, scale=scale,
    )


# ---------------------------------------------------------------------------
# Protocol (Sec. 5)
# ---------------------------------------------------------------------------


def query_folds(n_queries, n_folds, *, groups=None, random_state=None):
    """Random fold of each query, folds of equal size (to one).

    Parameters
    ----------
    n_queries : int
    n_folds : int >= 2
    groups : array_like of shape (n_queries,), optional
        Keep the queries of one group (e.g. one source image) in one fold.
        The paper splits the queries without grouping.
    random_state : int, RandomState instance or None

    Returns
    -------
    ndarray of int, shape (n_queries,)
        Values in ``range(n_folds)``.
    """
    n_queries = _check_int(n_queries, "n_queries", 1)
    n_folds = _check_int(n_folds, "n_folds", 2)
    rng = check_random_state(random_state)
    if groups is None:
        if n_folds > n_queries:
            raise ValueError(f"n_folds: {n_folds} folds for {n_queries} queries.")
        fold = np.empty(n_queries, dtype=np.intp)
        fold[rng.permutation(n_queries)] = np.arange(n_queries) % n_folds
        return fold
    groups = np.asarray(groups)
    if groups.shape != (n_queries,):
        raise ValueError(f"groups: expected shape ({n_queries},), got {groups.shape}.")
    uniq, inv = np.unique(groups, return_inverse=True)
    if n_folds > len(uniq):
        raise ValueError(f"n_folds: {n_folds} folds for {len(uniq)} groups.")
    gfold = np.empty(len(uniq), dtype=np.intp)
    gfold[rng.permutation(len(uniq))] = np.arange(len(uniq)) % n_folds
    return gfold[inv.reshape(-1)]


def constraint_pairs(triplets):
    """Must-link and cannot-link pairs of the constraint-based method.

    Each query with its relevant item is a must-link (``y = +1``), with each
    chosen irrelevant item a cannot-link (``y = -1``) -- the relevance
    judgements of Sec. 3 on the same items the rank-based method sees.

    Parameters
    ----------
    triplets : ndarray of int, shape (n_triplets, 3)
        ``(query, relevant, irrelevant)`` rows.

    Returns
    -------
    pairs : ndarray of int, shape (n_pairs, 2)
        Distinct ``(query, item)`` rows, the must-links first, each set
        sorted.
    y : ndarray of int, shape (n_pairs,)
    """
    T = np.asarray(triplets)
    if T.ndim != 2 or T.shape[1] != 3 or T.shape[0] == 0:
        raise ValueError(f"triplets: expected a non-empty (n, 3) array, got shape "
                         f"{T.shape}.")
    if T.dtype.kind not in "iu":
        raise ValueError(f"triplets: indices must be integers, got dtype {T.dtype}.")
    must = np.unique(T[:, [0, 1]], axis=0)
    cannot = np.unique(T[:, [0, 2]], axis=0)
    clash = (must[:, None, :] == cannot[None, :, :]).all(axis=2).any()
    if clash:
        raise ValueError("triplets: a (query, item) pair is both relevant and "
                         "irrelevant.")
    pairs = np.vstack([must, cannot]).astype(np.intp)
    y = np.concatenate([np.ones(len(must), dtype=int), -np.ones(len(cannot), dtype=int)])
    return pairs, y


def _relevant_rank(D, relevant):
    """1-based rank of the one relevant item of each query, ties
    pessimistic (every other item at a distance <= its own comes first)."""
    d_rel = D[np.arange(len(D)), relevant]
    return np.sum(D <= d_rel[:, None], axis=1).astype(np.intp)


@dataclass(frozen=True)
class Method:
    """One retrieval method of :func:`run_protocol`.

    Attributes
    ----------
    kind : {"distance", "triplets", "pairs"}
        ``"distance"``: a fixed distance, ``make(data, query_numbers)``
        returns the (n_test, n_gallery) distance matrix.
        ``"triplets"``: ``make(X)`` returns an unfitted estimator with
        ``preprocessor=X``; it is fitted by ``fit(triplets)`` on
        ``(query, relevant, irrelevant)`` rows into ``X``.
        ``"pairs"``: the same with ``fit(pairs, y)``, ``y`` in {+1, -1}.
        Fitted estimators must have ``get_mahalanobis_matrix()``.
    make : callable
    """

    kind: str
    make: object

    def __post_init__(self):
        check_option(self.kind, "kind", ("distance", "triplets", "pairs"))
        if not callable(self.make):
            raise TypeError("make: expected a callable.")


def euclidean_baseline():
    """Euclidean distance on the standardised features (``A0 = I``)."""
    def make(data, queries):
        return squared_distances(data.X[data.query_rows(queries)], data.gallery)
    return Method("distance", make)


def histogram_intersection_baseline(block="histogram"):
    """Histogram intersection on one histogram block of the raw features."""
    def make(data, queries):
        cols = data.blocks[block]
        return histogram_intersection_distance(
            data.raw[data.query_rows(queries), cols], data.raw[:data.n_gallery, cols])
    return Method("distance", make)


@dataclass
class ProtocolResult:
    """CMC curves of :func:`run_protocol`.

    Attributes
    ----------
    cmc : dict of str to ndarray of shape (n_folds, max_rank)
    fit_time : dict of str to ndarray of shape (n_folds,)
        Seconds spent in ``fit`` (0 for fixed distances).
    ranks : dict of str to ndarray of shape (n_queries,)
        Rank of each query's relevant item in the fold where the query was
        a test query (every query is tested exactly once; ties
        pessimistic, as in :mod:`cvxmetric.metrics`).
    fold : ndarray of int, shape (n_queries,)
        Test fold of each query.
    n_train, n_test, n_triplets, n_pairs : ndarray of int, shape (n_folds,)
    estimators : dict of str to list
        The fitted estimators of each fold (learned methods only).
    """

    cmc: dict
    fit_time: dict
    ranks: dict
    fold: np.ndarray
    n_train: np.ndarray
    n_test: np.ndarray
    n_triplets: np.ndarray
    n_pairs: np.ndarray
    estimators: dict = field(default_factory=dict)

    def rank_accuracy(self, k):
        """Mean and standard deviation over folds of the rank-``k`` accuracy,
        per method: ``{name: (mean, std)}``."""
        out = {}
        for name, c in self.cmc.items():
            if not 1 <= k <= c.shape[1]:
                raise ValueError(f"k: must be in [1, {c.shape[1]}], got {k}.")
            out[name] = (float(c[:, k - 1].mean()), float(c[:, k - 1].std()))
        return out

    def rank_k_by_group(self, groups, k=1):
        """Rank-``k`` accuracy over all test queries, per group (e.g. per
        transformation): ``{name: {group: accuracy}}``."""
        groups = np.asarray(groups)
        first = next(iter(self.ranks.values()))
        if groups.shape != first.shape:
            raise ValueError(f"groups: expected shape {first.shape}, got "
                             f"{groups.shape}.")
        return {name: {g: float(np.mean(r[groups == g] <= k))
                       for g in np.unique(groups)}
                for name, r in self.ranks.items()}

    def mean_sigma(self):
        """The paper's sigma: the mean over ranks of the standard deviation
        over folds, per method."""
        return {name: float(c.std(axis=0).mean()) for name, c in self.cmc.items()}

    def table(self, ranks=(1, 5, 10)):
        """A plain-text table: rank-k accuracy (%, mean over folds), sigma and
        the mean fit time."""
        names = list(self.cmc)
        width = max(12, max(len(n) for n in names))
        head = f"{'method':<{width}}" + "".join(f"  rank-{k:<3d}" for k in ranks)
        head += "  sigma   fit [s]"
        lines = [head, "-" * len(head)]
        acc = {k: self.rank_accuracy(k) for k in ranks}
        sig = self.mean_sigma()
        for n in names:
            row = f"{n:<{width}}"
            row += "".join(f"  {100 * acc[k][n][0]:6.1f}%" for k in ranks)
            row += f"  {100 * sig[n]:5.1f}  {np.mean(self.fit_time[n]):8.2f}"
            lines.append(row)
        return "\n".join(lines)


def _check_protocol_args(data, methods, max_rank, n_train):
    """``(max_rank, n_train)`` of :func:`run_protocol`, after checking
    ``data`` and ``methods``."""
    if not isinstance(data, RetrievalData):
        raise TypeError("data: expected a RetrievalData.")
    if not methods:
        raise ValueError("methods: no method given.")
    for name, m in methods.items():
        if not isinstance(m, Method):
            raise TypeError(f"methods[{name!r}]: expected a Method.")
    max_rank = _check_int(max_rank, "max_rank", 1)
    if n_train is not None:
        n_train = _check_int(n_train, "n_train", 1)
    if max_rank > data.n_gallery:
        raise ValueError(f"max_rank: at most the gallery size {data.n_gallery}, "
                         f"got {max_rank}.")
    return max_rank, n_train


def _fold_constraints(data, fold, f, seeds, n_train, n_top, n_random):
    """Fold ``f``'s test queries, training queries, sample matrix
    ``[gallery; training queries]``, critical triplets and the pairs with
    their labels, drawn from the fold's two ``seeds``."""
    n_g = data.n_gallery
    test = np.flatnonzero(fold == f)
    pool = np.flatnonzero(fold != f)
    frng = check_random_state(seeds[0])
    if n_train is None or n_train >= len(pool):
        train = pool
    else:
        train = np.sort(frng.choice(pool, n_train, replace=False))
    # the fold's own sample matrix: gallery, then its training queries
    Xf = np.vstack([data.gallery, data.X[data.query_rows(train)]])
    q_rows = n_g + np.arange(len(train))
    triplets = critical_triplets(q_rows, data.source[train], np.arange(n_g), Xf,
                                 n_top=n_top, n_random=n_random,
                                 random_state=seeds[1])
    pairs, y = constraint_pairs(triplets)
    return test, train, Xf, triplets, pairs, y


def _run_method(m, data, test, Xtest, Xf, triplets, pairs, y):
    """``(D, fit seconds, estimator)``: the test queries' squared distances
    to the gallery under method ``m`` (fitted on the fold's triplets or
    pairs unless it is a fixed distance, whose estimator is ``None``)."""
    t0 = time.perf_counter()
    if m.kind == "distance":
        return m.make(data, test), 0.0, None
    est = m.make(Xf)
    if m.kind == "triplets":
        est.fit(triplets)
    else:
        est.fit(pairs, y)
    elapsed = time.perf_counter() - t0
    D = squared_distances(Xtest, data.gallery, est.get_mahalanobis_matrix())
    return D, elapsed, est


def run_protocol(data, methods, *, n_folds=5, n_train=None, n_top=10, n_random=10,
                 max_rank=20, group_by_source=False, keep_estimators=False,
                 random_state=None, log=None):
    """Cross-validated retrieval (Sec. 5).

    The queries are split into ``n_folds`` folds.  For each fold: the test
    queries are that fold; ``n_train`` training queries are drawn from the
    other folds (all of them when ``None``; the paper draws 5,000 of about
    38,800); their critical triplets are the ``n_top`` irrelevant gallery
    items ranked highest by the Euclidean baseline plus ``n_random`` random
    ones (:func:`~cvxmetric.rankdml._pairs.critical_triplets`), and the
    constraint-based method gets the same judgements as pairs
    (:func:`constraint_pairs`).  Learned methods see only the gallery and
    the training queries: ``X = [gallery; training queries]``.  Every test
    query is ranked against the whole gallery and the CMC curve up to
    ``max_rank`` recorded.

    Parameters
    ----------
    data : RetrievalData
    methods : dict of str to Method
    n_folds : int >= 2
    n_train : int, optional
    n_top, n_random : int >= 0
    max_rank : int
    group_by_source : bool
        Keep all queries of one source image in one fold (stricter than the
        paper, which does not group).
    keep_estimators : bool
        Keep the fitted estimators in the result.
    random_state : int, RandomState instance or None
        Seeds the folds, the training draws and the random critical pairs.
    log : callable, optional
        Called with a progress string after each fit.

    Returns
    -------
    ProtocolResult
    """
    max_rank, n_train = _check_protocol_args(data, methods, max_rank, n_train)
    rng = check_random_state(random_state)
    fold = query_folds(data.n_queries, n_folds,
                       groups=data.source if group_by_source else None,
                       random_state=rng)
    # one seed per fold, drawn up front: a fold's draws do not depend on
    # which methods ran before it
    seeds = rng.randint(np.iinfo(np.int32).max, size=(n_folds, 2))
    names = list(methods)
    cmc = {n: np.zeros((n_folds, max_rank)) for n in names}
    ranks = {n: np.zeros(data.n_queries, dtype=np.intp) for n in names}
    fit_time = {n: np.zeros(n_folds) for n in names}
    estimators = {n: [] for n in names if methods[n].kind != "distance"}
    sizes = {k: np.zeros(n_folds, dtype=np.intp)
             for k in ("n_train", "n_test", "n_triplets", "n_pairs")}
    for f in range(n_folds):
        test, train, Xf, triplets, pairs, y = _fold_constraints(
            data, fold, f, seeds[f], n_train, n_top, n_random)
        sizes["n_train"][f], sizes["n_test"][f] = len(train), len(test)
        sizes["n_triplets"][f], sizes["n_pairs"][f] = len(triplets), len(pairs)
        Xtest = data.X[data.query_rows(test)]
        for name in names:
            D, elapsed, est = _run_method(methods[name], data, test, Xtest, Xf,
                                          triplets, pairs, y)
            if keep_estimators and est is not None:
                estimators[name].append(est)
            cmc[name][f] = cmc_curve(D, data.source[test], max_rank=max_rank)
            ranks[name][test] = _relevant_rank(D, data.source[test])
            fit_time[name][f] = elapsed
            if log is not None:
                log(f"fold {f + 1}/{n_folds} {name}: rank-1 {cmc[name][f, 0]:.3f}"
                    f" ({elapsed:.1f} s)")
    return ProtocolResult(cmc=cmc, fit_time=fit_time, ranks=ranks, fold=fold,
                          estimators=estimators, **sizes)
