"""What several experiments share: an integer argument's check and the
moment invariants of grey images."""

import numbers

import numpy as np

# Hu invariant h_k is a polynomial of degree _HU_DEGREE[k] in the normalised
# central moments: the signed root of that degree brings it to their units.
_HU_DEGREE = np.array([1, 2, 2, 2, 4, 3, 4], dtype=float)


def _check_count(value, name, low, high=None):
    """``value`` as an int in ``[low, high]`` (``high=None``: no upper bound).

    Raises
    ------
    TypeError
        ``value`` is not an integer (a bool is refused, not read as 0 or 1).
    ValueError
        ``value`` is out of range; the message names ``name``.
    """
    # bool is an int subclass: refuse it rather than read True as 1
    if (isinstance(value, (bool, np.bool_))
            or not isinstance(value, (numbers.Integral, np.integer))):
        raise TypeError(f"{name}: expected an integer, got {type(value).__name__}.")
    value = int(value)
    if value < low or (high is not None and value > high):
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{name}: must be {bound}, got {value}.")
    return value


def _moment_invariants(images):
    """The seven normalised central moments and the seven Hu invariants of
    each image of a non-negative stack, the invariants as signed roots.

    The image is a mass distribution; from ``eta_pq = mu_pq / mu_00^(1 + (p
    + q) / 2)`` (``p`` on columns, ``q`` on rows) the invariants ``h_1 ..
    h_7`` of Hu (1962) are formed, then ``sign(h_k) |h_k|^(1 / deg_k)``
    with ``deg = (1, 2, 2, 2, 4, 3, 4)`` their degree in ``eta``: all seven
    are in the units of one moment, and the map is continuous at 0.  A
    blank image gets zeros.

    Parameters
    ----------
    images : ndarray of shape (n, H, W)
        Non-negative (not checked).

    Returns
    -------
    etas : ndarray of shape (n, 7)
        ``eta_20, eta_11, eta_02, eta_30, eta_21, eta_12, eta_03``.
    hu : ndarray of shape (n, 7)
    """
    n, h, w = images.shape
    rows = np.arange(h, dtype=float)[None, :, None]
    cols = np.arange(w, dtype=float)[None, None, :]
    m00 = images.sum(axis=(1, 2))
    m00 = np.where(m00 > 0, m00, 1.0)  # a blank image has all moments 0
    yc = (images * rows).sum(axis=(1, 2)) / m00
    xc = (images * cols).sum(axis=(1, 2)) / m00
    dy = rows - yc[:, None, None]
    dx = cols - xc[:, None, None]

    def eta(p, q):
        mu = (images * dx ** p * dy ** q).sum(axis=(1, 2))
        return mu / m00 ** (1.0 + (p + q) / 2.0)

    n20, n02, n11 = eta(2, 0), eta(0, 2), eta(1, 1)
    n30, n03, n21, n12 = eta(3, 0), eta(0, 3), eta(2, 1), eta(1, 2)
    a, b = n30 + n12, n21 + n03
    c, e = n30 - 3 * n12, 3 * n21 - n03
    hu = np.stack([
        n20 + n02,
        (n20 - n02) ** 2 + 4 * n11 ** 2,
        c ** 2 + e ** 2,
        a ** 2 + b ** 2,
        c * a * (a ** 2 - 3 * b ** 2) + e * b * (3 * a ** 2 - b ** 2),
        (n20 - n02) * (a ** 2 - b ** 2) + 4 * n11 * a * b,
        e * a * (a ** 2 - 3 * b ** 2) - c * b * (3 * a ** 2 - b ** 2),
    ], axis=1)
    hu = np.sign(hu) * np.abs(hu) ** (1.0 / _HU_DEGREE)
    etas = np.stack([n20, n11, n02, n30, n21, n12, n03], axis=1)
    return etas, hu
