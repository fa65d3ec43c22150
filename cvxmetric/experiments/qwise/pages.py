"""Synthetic versions of a news webpage for the temporal experiments of Sec. 5.

Law, Thome, Cord, "Learning a distance metric from relative comparisons
between quadruplets of images" (IJCV 2016), Sec. 5, crawl real homepages
every hour.  :func:`make_page_versions` draws a stand-in with the structure
the method relies on: a grey-level "screenshot" made of

* a static top menu and a static left menu (identical in every version:
  Eq. 19's margin-1 constraints make the metric ignore them);
* a news block of ``n_stories`` horizontal strips; at random times, on
  average every ``news_period`` versions, the news changes: a random
  non-empty subset of the strips is redrawn (the *main news*: a pair of
  versions is dissimilar iff its news differs, Sec. 5.3's labelling
  criterion, however small the change);
* a thin "live ticker" band just below the news, redrawn at every version
  (a frequent change next to the important region that a coarse grid
  cannot separate from it: the grid-resolution effect of Fig. 8);
* an advertisement column showing, at each version, one of ``n_ads``
  rotating advertisements drawn at random (Fig. 4's car advertisement is
  in ``v_{t-1}``, ``v_t`` and ``v_{t+2}`` but not in ``v_{t+1}``): frequent
  changes that do not grow with the time between versions, which Eq. 18
  penalises, so the metric learns to ignore them (Fig. 3 left);
* per-pixel Gaussian noise, and with probability ``p_identical`` a version
  that is an exact copy of the previous one (a crawl that saw no change; the
  paper drops identical pairs from the test sets).

Each version also carries a set of hyperlink identifiers (static menu
links, links of the current news story, the current ad's link, and "trending"
links that come and go at random) so that the
structural Jaccard distance of the paper's late fusion can be computed.
"""

from dataclasses import dataclass

import numpy as np
from sklearn.utils import check_random_state

from ..._validation import check_int, check_scalar

__all__ = ["PageVersions", "make_page_versions", "PAGE_LAYOUT"]

#: Regions of the synthetic page as fractions ``(top, bottom, left, right)``
#: of its height and width.
PAGE_LAYOUT = {
    "top_menu": (0.0, 0.15, 0.0, 1.0),
    "left_menu": (0.15, 1.0, 0.0, 0.2),
    "news": (0.25, 0.65, 0.3, 0.7),
    "ticker": (0.65, 0.725, 0.3, 0.7),
    "ads": (0.2, 0.9, 0.75, 1.0),
}

_MENU_LINKS = 12   # static hyperlinks of the menus
_NEWS_LINKS = 6    # hyperlinks of one news story
_AD_LINKS = 1      # hyperlink of one advertisement
_TRENDING = 8      # "trending" links, each shown at random on each version


@dataclass(frozen=True, eq=False)
class PageVersions:
    """Versions of a synthetic page (see :func:`make_page_versions`).

    Attributes
    ----------
    images : ndarray of shape (n_versions, size, size)
        Grey levels in about [0, 1] (noise can step slightly outside).
    news_id : ndarray of int, shape (n_versions,)
        Identifier of the news story shown; two versions are *similar* iff
        their ``news_id`` agree.
    ad_id : ndarray of int, shape (n_versions,)
        Identifier of the advertisement shown.
    identical : ndarray of bool, shape (n_versions,)
        ``identical[t]``: version ``t`` is an exact copy of version ``t - 1``
        (always False at ``t = 0``).
    links : ndarray of bool, shape (n_versions, n_links)
        ``links[t, h]``: hyperlink ``h`` appears on version ``t``.
    masks : dict of str to ndarray of bool, shape (size, size)
        Pixel masks of the regions of :data:`PAGE_LAYOUT`.
    """

    images: np.ndarray
    news_id: np.ndarray
    ad_id: np.ndarray
    identical: np.ndarray
    links: np.ndarray
    masks: dict

    def __len__(self):
        return self.images.shape[0]

    def similar(self, pairs):
        """Ground truth of version pairs: True where the main news agrees.

        Parameters
        ----------
        pairs : array_like of int, shape (n_pairs, 2)

        Returns
        -------
        ndarray of bool, shape (n_pairs,)
        """
        pairs = self._check_pairs(pairs)
        return self.news_id[pairs[:, 0]] == self.news_id[pairs[:, 1]]

    def _check_pairs(self, pairs):
        """Integer version indices of shape (n, 2), n >= 0, in range."""
        pairs = np.asarray(pairs)
        if (pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.dtype == bool
                or not np.issubdtype(pairs.dtype, np.integer)):
            raise ValueError(f"pairs: expected integer indices of shape (n, 2), "
                             f"got {pairs.dtype} of shape {pairs.shape}.")
        if pairs.size and (pairs.min() < 0 or pairs.max() >= len(self)):
            raise ValueError(f"pairs: version indices must be in [0, {len(self)}).")
        return pairs

    def cell_fraction(self, region, grid):
        """Fraction of each cell of a grid covered by a region of the page.

        Parameters
        ----------
        region : str
            A key of :attr:`masks` (``"news"``, ``"ads"``, ...).
        grid : int or (int, int)
            ``m`` for an ``m x m`` grid, or ``(rows, cols)``.

        Returns
        -------
        ndarray of shape (rows * cols,)
            Cells in row-major order, as
            :func:`~cvxmetric.experiments.qwise.temporal.region_distances`.
        """
        from .temporal import _cell_sums, _check_grid

        if region not in self.masks:
            raise ValueError(f"region: unknown region {region!r}; expected one of "
                             f"{', '.join(map(repr, self.masks))}.")
        mask = self.masks[region].astype(float)
        rows, cols = _check_grid(grid, *mask.shape)
        return _cell_sums(mask, rows, cols)

    def identical_pairs(self, pairs):
        """True where the two versions of a pair are exactly the same image.

        Parameters
        ----------
        pairs : array_like of int, shape (n_pairs, 2)

        Returns
        -------
        ndarray of bool, shape (n_pairs,)
        """
        pairs = self._check_pairs(pairs)
        a, b = self.images[pairs[:, 0]], self.images[pairs[:, 1]]
        return np.all(a == b, axis=(1, 2))


def _mask(size, box):
    top, bottom, left, right = (int(round(f * size)) for f in box)
    m = np.zeros((size, size), dtype=bool)
    m[top:bottom, left:right] = True
    return m


def _text(rng, n, h, w, block):
    """``n`` random "text" patterns of shape (h, w): blocks of ``block``
    pixels, dark (0.15) or light (0.85)."""
    hb, wb = -(-h // block), -(-w // block)
    bits = rng.rand(n, hb, wb) < 0.5
    img = np.where(bits, 0.15, 0.85)
    img = img.repeat(block, axis=1).repeat(block, axis=2)
    return img[:, :h, :w]


def _page_images(rng, masks, size, news_change, ad_id, n_stories, block):
    """The noiseless screenshots of :func:`make_page_versions`: fixed menus,
    news strips redrawn at the news changes, a ticker changing every
    version and the ad of each version; shape (T, size, size)."""
    T = news_change.shape[0]
    page = np.full((size, size), 0.95)  # white background
    for name in ("top_menu", "left_menu"):
        m = masks[name]
        rows, cols = np.flatnonzero(m.any(1)), np.flatnonzero(m.any(0))
        page[np.ix_(rows, cols)] = _text(rng, 1, len(rows), len(cols), block)[0]

    # the strips each news change redraws: a random non-empty subset
    strips = rng.rand(T, n_stories) < 0.5
    none = ~strips.any(axis=1)
    strips[none, rng.randint(0, n_stories, int(none.sum()))] = True
    story_id = np.cumsum(news_change[:, None] & strips, axis=0)  # (T, n_stories)

    images = np.repeat(page[None], T, axis=0)
    rows, cols = (np.flatnonzero(masks["news"].any(a)) for a in (1, 0))
    for k, band in enumerate(np.array_split(rows, n_stories)):
        if band.size == 0:
            continue
        content = _text(rng, int(story_id[-1, k]) + 1, band.size, cols.size, block)
        images[:, band[0]:band[-1] + 1, cols[0]:cols[-1] + 1] = content[story_id[:, k]]
    for name, ids in (("ticker", np.arange(T)), ("ads", ad_id)):
        rows, cols = (np.flatnonzero(masks[name].any(a)) for a in (1, 0))
        content = _text(rng, int(ids.max()) + 1, rows.size, cols.size, block)
        images[:, rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1] = content[ids]
    return images


def _page_links(rng, news_id, ad_id, n_ads, src):
    """The hyperlinks of each version: the menus' (always), the news
    story's, the ad's and trending links drawn at random (repeated by the
    exact copies ``src``); shape (T, n_links)."""
    T = news_id.shape[0]
    n_news = int(news_id[-1]) + 1
    n_fixed = _MENU_LINKS + _NEWS_LINKS * n_news + _AD_LINKS * n_ads
    links = np.zeros((T, n_fixed + _TRENDING), dtype=bool)
    links[:, :_MENU_LINKS] = True
    news_cols = _MENU_LINKS + _NEWS_LINKS * news_id[:, None] + np.arange(_NEWS_LINKS)
    ad_cols = (_MENU_LINKS + _NEWS_LINKS * n_news + _AD_LINKS * ad_id[:, None]
               + np.arange(_AD_LINKS))
    rows = np.arange(T)[:, None]
    links[rows, news_cols] = True
    links[rows, ad_cols] = True
    # structural noise: links that come and go independently of the news
    links[:, n_fixed:] = (rng.rand(T, _TRENDING) < 0.5)[src]
    return links


def make_page_versions(n_versions, *, size=40, news_period=4.0, n_stories=3, n_ads=3,
                       noise=0.03, p_identical=0.05, block=2, random_state=None):
    """Draw ``n_versions`` successive (hourly) versions of a synthetic page.

    Parameters
    ----------
    n_versions : int >= 2
        Number of versions ``T``.
    size : int >= 10, default=40
        The screenshot is ``size x size`` pixels.
    news_period : float >= 1, default=4.0
        Mean number of versions between two news changes: the news changes
        between successive versions with probability ``1 / news_period``
        (a change period ``gamma`` of about this value, Sec. 5.1.1).
    n_stories : int >= 1, default=3
        Strips of the news block; a news change redraws a random non-empty
        subset of them (each with probability 1/2).
    n_ads : int >= 1, default=3
        Size of the pool of advertisements; each version shows one drawn
        uniformly (so successive versions differ there with probability
        ``1 - 1 / n_ads``, and so do distant versions).
    noise : float >= 0, default=0.03
        Standard deviation of the per-pixel Gaussian noise of each version.
    p_identical : float in [0, 1), default=0.05
        Probability that a version is an exact copy of the previous one.
    block : int >= 1, default=2
        Size in pixels of the squares the text patterns are made of.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    PageVersions

    Examples
    --------
    >>> from cvxmetric.experiments.qwise.pages import make_page_versions
    >>> pages = make_page_versions(24, random_state=0)
    >>> pages.images.shape
    (24, 40, 40)
    """
    n_versions = check_int(n_versions, "n_versions", low=2)
    size = check_int(size, "size", low=10)
    block = check_int(block, "block", low=1)
    n_ads = check_int(n_ads, "n_ads", low=1)
    n_stories = check_int(n_stories, "n_stories", low=1)
    news_period = check_scalar(news_period, "news_period", low=1.0)
    noise = check_scalar(noise, "noise", low=0.0)
    p_identical = check_scalar(p_identical, "p_identical", low=0.0, high=1.0)
    if p_identical == 1.0:
        raise ValueError("p_identical: must be < 1 (otherwise nothing ever changes).")
    rng = check_random_state(random_state)
    T = int(n_versions)
    masks = {name: _mask(size, box) for name, box in PAGE_LAYOUT.items()}

    # which versions copy their predecessor, the news change process and the
    # ad rotation (a copy changes nothing: it is overwritten below)
    identical = rng.rand(T) < p_identical
    identical[0] = False
    news_change = (rng.rand(T) < 1.0 / news_period) & ~identical
    news_change[0] = False
    news_id = np.cumsum(news_change)
    ad_id = rng.randint(0, n_ads, T)

    images = _page_images(rng, masks, size, news_change, ad_id, n_stories, block)
    images = images + noise * rng.randn(*images.shape)
    # exact copies: a version repeats its predecessor, chains included
    src = np.arange(T)
    src[identical] = 0
    src = np.maximum.accumulate(src)
    images = images[src]
    ad_id = ad_id[src]

    links = _page_links(rng, news_id, ad_id, n_ads, src)
    return PageVersions(images=images, news_id=news_id, ad_id=ad_id,
                        identical=identical, links=links, masks=masks)
