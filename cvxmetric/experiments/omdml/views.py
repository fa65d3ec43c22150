"""Multi-modal data for the OMDML experiments: several views of one sample.

Wu, Hoi, Zhao, Miao, Liu, "Online multi-modal distance metric learning"
(TKDE 2016) describe each image by several global and local descriptors
(colour, edges, texture, GIST, bags of visual words), one modality each,
every feature entry scaled to ``[0, 1]`` (their Sec. 5.3).  Their image
collections are not bundled with scikit-learn, so this module builds the
same kind of data from what is:

* :func:`digits_views` -- scikit-learn's 8 x 8 handwritten digits
  (``load_digits``, nothing downloaded) described by five modalities
  computed with numpy: raw pixels, an intensity histogram, a gradient
  orientation histogram (HOG-like), row / column profiles, and image
  moments;
* :func:`synthetic_views` -- Gaussian classes seen through one informative
  view and several pure-noise views, where the right answer (put the weight
  on the informative view) is known;
* :func:`scale_views` -- the per-feature min-max scaling to ``[0, 1]``, fit
  on the training part only;
* :func:`retrieval_split` -- a stratified train / validation / test split
  (the paper's Sec. 5.2 protocol: the test and validation images query the
  training images).

Every function returns views as a list of ``m`` float arrays of shape
``(n, n_i)``, the input of :class:`cvxmetric.OMDML`.
"""

import numbers

import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state

from ...omdml._problem import check_views
from .._common import _check_count as _check_int, _moment_invariants

__all__ = ["DIGITS_VIEW_NAMES", "digits_views", "synthetic_views", "scale_views",
           "retrieval_split"]

#: Names of the modalities :func:`digits_views` returns, in order.
DIGITS_VIEW_NAMES = ("pixels", "intensity histogram", "gradient orientations",
                     "row/column profiles", "moments")

_N_INTENSITY_BINS = 16
_N_ORIENTATIONS = 9
_CELL = 4  # HOG cell side in pixels: 2 x 2 cells on an 8 x 8 image


# ---------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------


def _check_labels(y, name="y"):
    y = np.asarray(y)
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D array, got shape {y.shape}.")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError(f"{name}: contains NaN or infinite labels.")
    if y.dtype == object:
        raise ValueError(f"{name}: expected numbers or strings, got dtype object.")
    return y


# ---------------------------------------------------------------------------
# Scaling and splitting
# ---------------------------------------------------------------------------


def scale_views(views, fit_on=None):
    """Scale every feature to ``[0, 1]`` by its min and max over ``fit_on``.

    The paper normalises "the feature vectors to ensure that every feature
    entry is in [0, 1]" (Sec. 5.3).  Where a split is involved the minimum
    and maximum must come from the training part only, or the test images
    leak into the representation; values of the other samples beyond the
    training range are clipped, so that the promise ``[0, 1]`` holds for
    every sample.  A feature constant over ``fit_on`` becomes 0.

    Parameters
    ----------
    views : list of array_like, each of shape (n, n_i)
    fit_on : array_like of int or bool mask, optional
        The samples whose range sets the scaling (default all).

    Returns
    -------
    list of ndarray of shape (n, n_i), values in [0, 1]
    """
    views = check_views(views)
    n = views[0].shape[0]
    if fit_on is None:
        rows = np.arange(n)
    else:
        rows = np.asarray(fit_on)
        if rows.dtype == bool:
            if rows.shape != (n,):
                raise ValueError(f"fit_on: a mask needs shape ({n},), got {rows.shape}.")
            rows = np.flatnonzero(rows)
        elif rows.ndim != 1 or rows.dtype.kind not in "iu":
            raise ValueError(f"fit_on: expected 1-D integer indices or a boolean "
                             f"mask, got dtype {rows.dtype} and shape {rows.shape}.")
        if rows.size == 0:
            raise ValueError("fit_on: no sample selected.")
        if rows.min() < 0 or rows.max() >= n:
            raise ValueError(f"fit_on: indices must be in [0, {n}).")
    out = []
    for v in views:
        lo = v[rows].min(axis=0)
        span = v[rows].max(axis=0) - lo
        # a constant feature carries no information: map it to 0, not NaN
        span = np.where(span > 0, span, np.inf)
        out.append(np.clip((v - lo) / span, 0.0, 1.0))
    return out


def retrieval_split(y, n_validation=0.25, n_test=0.25, random_state=None):
    """Stratified ``(train, validation, test)`` index arrays.

    The paper's protocol (Sec. 5.2): disjoint training, validation and test
    parts; validation and test images query the training images.

    Parameters
    ----------
    y : array_like of shape (n,)
        Class labels (every class needs at least 3 samples).
    n_validation, n_test : float in (0, 1) or int >= 1
        Size of the validation / test parts, as a fraction of ``n`` or a
        count (the paper uses 500 and 500).
    random_state : int, RandomState or None

    Returns
    -------
    train, validation, test : ndarray of int
        Sorted, disjoint, together ``arange(n)``.
    """
    y = _check_labels(y)
    n = y.size
    classes, counts = np.unique(y, return_counts=True)
    if classes.size < 2:
        raise ValueError(f"y: need at least 2 classes, got {classes.size}.")
    if counts.min() < 3:
        raise ValueError(f"y: every class needs at least 3 samples for a stratified "
                         f"three-way split, the smallest has {counts.min()}.")
    sizes = []
    for value, name in ((n_validation, "n_validation"), (n_test, "n_test")):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name}: expected a fraction or a count, got "
                            f"{type(value).__name__}.")
        if isinstance(value, (numbers.Integral, np.integer)):
            size = int(value)
        elif 0.0 < value < 1.0:
            size = int(round(float(value) * n))
        else:
            raise ValueError(f"{name}: a fraction must be in (0, 1), got {value}.")
        if size < classes.size:
            raise ValueError(f"{name}: {size} samples cannot hold each of the "
                             f"{classes.size} classes once.")
        sizes.append(size)
    if n - sum(sizes) < classes.size:
        raise ValueError(f"n_validation, n_test: {sizes[0]} + {sizes[1]} leave "
                         f"{n - sum(sizes)} of {n} samples for training, fewer "
                         f"than the {classes.size} classes.")
    rng = check_random_state(random_state)
    idx = np.arange(n)
    rest, test = train_test_split(idx, test_size=sizes[1], stratify=y,
                                  random_state=rng)
    train, val = train_test_split(rest, test_size=sizes[0], stratify=y[rest],
                                  random_state=rng)
    return np.sort(train), np.sort(val), np.sort(test)


# ---------------------------------------------------------------------------
# Digits: five modalities of an 8 x 8 image
# ---------------------------------------------------------------------------


def _intensity_histogram(images, n_bins=_N_INTENSITY_BINS):
    """Fraction of the pixels of each image in each of ``n_bins`` equal
    intensity bins over ``[0, 16]`` (the digits' grey levels)."""
    n = images.shape[0]
    flat = images.reshape(n, -1)
    b = np.minimum((flat * (n_bins / 16.0)).astype(int), n_bins - 1)
    # one bincount over (image, bin) codes: no loop over the images
    codes = (np.arange(n)[:, None] * n_bins + b).ravel()
    hist = np.bincount(codes, minlength=n * n_bins).reshape(n, n_bins)
    return hist / flat.shape[1]


def _orientation_histogram(images, n_orient=_N_ORIENTATIONS, cell=_CELL):
    """HOG-like descriptor: per ``cell x cell`` block, the gradient
    magnitude summed into ``n_orient`` unsigned orientation bins, each image
    normalised to unit L2 norm (so the descriptor ignores contrast)."""
    n, h, w = images.shape
    gy, gx = np.gradient(images, axis=(1, 2))
    mag = np.hypot(gx, gy)
    # unsigned orientation in [0, pi): a stroke's two edges vote alike
    ang = np.mod(np.arctan2(gy, gx), np.pi)
    b = np.minimum((ang * (n_orient / np.pi)).astype(int), n_orient - 1)
    ch, cw = h // cell, w // cell
    cell_id = (np.arange(h)[:, None] // cell) * cw + (np.arange(w)[None, :] // cell)
    n_feat = ch * cw * n_orient
    codes = (np.arange(n)[:, None, None] * n_feat + cell_id[None] * n_orient + b)
    hist = np.bincount(codes.ravel(), weights=mag.ravel(),
                       minlength=n * n_feat).reshape(n, n_feat)
    norm = np.linalg.norm(hist, axis=1, keepdims=True)
    return hist / np.where(norm > 0, norm, 1.0)


def _profiles(images):
    """Mean intensity of each row then of each column (``h + w`` values)."""
    return np.concatenate([images.mean(axis=2), images.mean(axis=1)], axis=1)


def _moments(images):
    """Seven normalised central moments ``eta_pq`` (``2 <= p + q <= 3``) and
    the seven Hu invariants, the latter brought to the scale of ``eta`` by a
    signed root of their degree (Hu 2-4 are quadratic in ``eta``, 5 and 7
    quartic, 6 cubic) so that min-max scaling does not crush them."""
    etas, hu = _moment_invariants(images)
    return np.concatenate([etas, hu], axis=1)


def digits_views(n_samples=None, random_state=0, *, scale=True):
    """scikit-learn's handwritten digits as five modalities.

    ``load_digits`` (1797 grey images of 8 x 8 pixels, 16 levels, 10
    classes; bundled with scikit-learn, nothing is downloaded) seen through
    five descriptors, all computed with numpy:

    ==========================  ====  ====================================
    modality                    n_i   what
    ==========================  ====  ====================================
    pixels                      64    the grey levels
    intensity histogram         16    fraction of pixels per grey-level bin
    gradient orientations       36    HOG-like: 2 x 2 cells of 4 x 4 pixels,
                                      9 unsigned orientation bins of the
                                      ``np.gradient`` magnitude, L2-normalised
    row/column profiles         16    mean grey level of each row, column
    moments                     14    7 normalised central moments
                                      (orders 2, 3), 7 Hu invariants
    ==========================  ====  ====================================

    The HOG-like descriptor is numpy's, not scikit-image's ``hog`` (not a
    dependency), so the views do not depend on what else is installed.

    Parameters
    ----------
    n_samples : int, optional
        Keep a random subset of this many images (default all 1797).
    random_state : int, RandomState or None
        The subset (unused when ``n_samples`` is None).
    scale : bool
        Min-max scale every feature to ``[0, 1]`` over the returned samples.
        Pass ``False`` and call :func:`scale_views` with the training indices
        when the data will be split (the paper's protocol).

    Returns
    -------
    views : list of 5 ndarray, shapes (n, 64), (n, 16), (n, 36), (n, 16), (n, 14)
    y : ndarray of int, shape (n,)
    names : tuple of str
        :data:`DIGITS_VIEW_NAMES`.
    """
    from sklearn.datasets import load_digits

    if not isinstance(scale, (bool, np.bool_)):
        raise TypeError(f"scale: expected a bool, got {type(scale).__name__}.")
    data = load_digits()
    images, y = data.images.astype(float), data.target.astype(int)
    if n_samples is not None:
        n_samples = _check_int(n_samples, "n_samples", 2, len(y))
        keep = np.sort(check_random_state(random_state).choice(
            len(y), size=n_samples, replace=False))
        images, y = images[keep], y[keep]
    n = len(y)
    views = [images.reshape(n, -1), _intensity_histogram(images),
             _orientation_histogram(images), _profiles(images), _moments(images)]
    if scale:
        views = scale_views(views)
    return views, y, DIGITS_VIEW_NAMES


# ---------------------------------------------------------------------------
# Synthetic: one informative view, the others noise
# ---------------------------------------------------------------------------


def synthetic_views(n_samples, dims=(8, 8, 8), informative=0, n_classes=3, *,
                    separation=3.0, random_state=None, scale=True):
    """Gaussian classes seen through informative views and pure-noise views.

    In an informative view, class ``c`` has mean ``separation * mu_c`` (with
    ``mu_c`` a standard normal draw) and unit isotropic noise; a noise view
    is standard normal noise independent of the class.  A multi-modal
    learner should put its weight on the informative view(s).

    Parameters
    ----------
    n_samples : int >= 2 * n_classes
        Classes are balanced (sizes differ by at most one).
    dims : sequence of int >= 1
        Dimension of each view (``m = len(dims)``).
    informative : int or sequence of int
        Index (indices) of the view(s) carrying the class signal.
    n_classes : int >= 2
    separation : float > 0
        Scale of the class means (larger: easier).
    random_state : int, RandomState or None
    scale : bool
        Min-max scale every feature to ``[0, 1]``.

    Returns
    -------
    views : list of ndarray of shape (n_samples, dims[i])
    y : ndarray of int, shape (n_samples,)
    names : tuple of str
        ``"view<i>"``.
    """
    n_classes = _check_int(n_classes, "n_classes", 2)
    n_samples = _check_int(n_samples, "n_samples", 2 * n_classes)
    if isinstance(dims, (numbers.Integral, np.integer)) or not hasattr(dims, "__len__"):
        raise TypeError(f"dims: expected a sequence of view dimensions, got "
                        f"{type(dims).__name__}.")
    if len(dims) == 0:
        raise ValueError("dims: expected at least one view.")
    dims = [_check_int(d, f"dims[{i}]", 1) for i, d in enumerate(dims)]
    m = len(dims)
    info = [informative] if np.ndim(informative) == 0 else list(informative)
    if not info:
        raise ValueError("informative: expected at least one view index.")
    info = [_check_int(i, "informative", 0, m - 1) for i in info]
    if not isinstance(separation, numbers.Real) or isinstance(separation, bool) \
            or not np.isfinite(separation) or separation <= 0:
        raise ValueError(f"separation: must be a finite number > 0, got {separation!r}.")
    if not isinstance(scale, (bool, np.bool_)):
        raise TypeError(f"scale: expected a bool, got {type(scale).__name__}.")
    rng = check_random_state(random_state)
    y = rng.permutation(np.arange(n_samples) % n_classes)
    views = []
    for i, d in enumerate(dims):
        noise = rng.standard_normal((n_samples, d))
        if i in info:
            means = separation * rng.standard_normal((n_classes, d))
            noise += means[y]
        views.append(noise)
    if scale:
        views = scale_views(views)
    return views, y, tuple(f"view{i}" for i in range(m))
