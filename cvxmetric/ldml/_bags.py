"""Labelled bags from scikit-learn's digits, in the manner of *Labeled Yahoo!
News* (Guillaumin, Verbeek, Schmid 2010, Sec. 3 and 4.1).

A document is a bag of 1-4 instances of distinct classes (the faces of a
news photo, different people) with a
caption: a set of labels (the names).  The digits' classes stand in for
people.  Three annotation settings, as in Sec. 4.1:

``"instances"`` (a)
    every instance carries its own label;
``"bags"`` (b)
    only the caption, and it is correct: the set of the bag's true labels;
``"noisy"`` (c)
    the caption misses each true label with probability ``p_missing``
    and gains a spurious label with probability ``p_spurious``.

Two sets ``A`` and ``B`` with disjoint classes (the paper's sets share no
person), so that a metric learned on one is tested on the other.
"""

import numpy as np
from sklearn.utils import check_random_state

from .._validation import check_scalar

__all__ = ["SETTINGS", "LabelledBags", "digits_bags", "digit_people_bags"]

#: The annotation settings of Sec. 4.1.
SETTINGS = ("instances", "bags", "noisy")


class LabelledBags:
    """Documents: bags of instances with captions.

    Attributes
    ----------
    X : ndarray of shape (n_instances, n_features)
    y : ndarray of int, shape (n_instances,)
        The true class of each instance (for evaluation only).
    bags : list of ndarray of int
        The instances of each document (disjoint, covering ``X``).
    captions : list of ndarray of int
        The label set of each document in the chosen setting.
    setting : str
    """

    def __init__(self, X, y, bags, captions, setting):
        self.X, self.y, self.bags, self.captions = X, y, bags, captions
        self.setting = setting

    def __repr__(self):
        return (f"LabelledBags(setting={self.setting!r}, n_instances={len(self.y)}, "
                f"n_bags={len(self.bags)}, n_features={self.X.shape[1]})")

    def __len__(self):
        return len(self.bags)


def _streams(random_state, n):
    """``n`` independent generators from one ``random_state``."""
    seed = check_random_state(random_state).randint(2 ** 31 - 1)
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(n)]


def _bags_of(y, max_size, rng):
    """Cut the instances into bags of 1..max_size instances of distinct
    classes (the faces of one photo are different people): each bag draws
    its classes without replacement, in proportion to what each class has
    left."""
    queues = {c: list(rng.permutation(np.flatnonzero(y == c))) for c in np.unique(y)}
    bags = []
    while queues:
        classes = np.array(sorted(queues))
        left = np.array([len(queues[c]) for c in classes], dtype=float)
        size = min(int(rng.integers(1, max_size + 1)), classes.size)
        pick = rng.choice(classes, size=size, replace=False, p=left / left.sum())
        bag = []
        for c in pick:
            bag.append(queues[c].pop())
            if not queues[c]:
                del queues[c]
        bags.append(np.sort(np.array(bag, dtype=int)))
    return bags


def _documents(X, y, setting, max_bag, p_missing, p_spurious, names, gen):
    """Bags of distinct labels and their captions in one setting."""
    bags = _bags_of(y, max_bag, gen)
    captions = []
    for b in bags:
        true = np.unique(y[b])
        if setting == "noisy":
            keep = gen.uniform(size=true.size) >= p_missing
            cap = set(true[keep].tolist())
            if gen.uniform() < p_spurious:
                cap.add(int(gen.choice(names)))
            captions.append(np.array(sorted(cap), dtype=int))
        else:
            captions.append(true)
    if setting == "instances":
        # every instance its own bag with its own label
        bags = [np.array([i]) for i in range(len(y))]
        captions = [np.array([c]) for c in y]
    return LabelledBags(X, y, bags, captions, setting)


def _check_common(setting, max_bag, p_missing, p_spurious):
    if setting not in SETTINGS:
        raise ValueError(f"setting: unknown option {setting!r}; expected one of "
                         f"{SETTINGS}.")
    if isinstance(max_bag, bool) or not isinstance(max_bag, (int, np.integer)) \
            or max_bag < 1:
        raise ValueError(f"max_bag: expected an integer >= 1, got {max_bag!r}.")
    return (check_scalar(p_missing, "p_missing", low=0.0, high=1.0),
            check_scalar(p_spurious, "p_spurious", low=0.0, high=1.0))


def digits_bags(setting="bags", *, n_per_class=None, max_bag=4, p_missing=0.1,
                p_spurious=0.2, classes_A=(0, 1, 2, 3, 4), classes_B=(5, 6, 7, 8, 9),
                random_state=None):
    """Two disjoint sets of labelled bags built from the digits.

    Parameters
    ----------
    setting : {"instances", "bags", "noisy"}
    n_per_class : int, optional
        Instances per class (default: all, about 180).
    max_bag : int >= 1
        Bags hold 1..max_bag instances (the paper's documents: mostly 1-4
        faces).
    p_missing, p_spurious : float in [0, 1]
        Setting ``"noisy"``: the probability that a true label is missing
        from the caption, and that a caption gains one spurious label of
        the same set.
    classes_A, classes_B : sequences of int
        Disjoint digit classes of the two sets.
    random_state : int, RandomState instance or None

    Returns
    -------
    A, B : LabelledBags
        Features are the 64 pixels scaled to [0, 1].
    """
    from sklearn.datasets import load_digits

    p_missing, p_spurious = _check_common(setting, max_bag, p_missing, p_spurious)
    cA, cB = set(int(c) for c in classes_A), set(int(c) for c in classes_B)
    if not cA or not cB or cA & cB or not (cA | cB) <= set(range(10)):
        raise ValueError("classes_A, classes_B: expected two non-empty disjoint sets "
                         "of digit classes 0-9.")
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    out = []
    # one stream per set: a set is the same data in every setting and
    # whatever the other set draws
    for classes, gen in zip((sorted(cA), sorted(cB)), _streams(random_state, 2)):
        idx = np.flatnonzero(np.isin(y, classes))
        if n_per_class is not None:
            idx = np.concatenate([gen.permutation(np.flatnonzero(y == c))[:n_per_class]
                                  for c in classes])
            idx.sort()
        Xs, ys = X[idx], y[idx]
        out.append(_documents(Xs, ys, setting, int(max_bag), p_missing, p_spurious,
                              np.array(classes), gen))
    return out[0], out[1]


def _photo(img, shift, contrast, noise, gen):
    """One "photo" of an 8 x 8 image: shifted by up to ``shift`` pixels
    (each axis moves with probability 1/2, zeros enter), contrast-scaled,
    with Gaussian noise."""
    out = img
    for axis in (0, 1):
        k = int(gen.integers(1, shift + 1)) * int(gen.choice((-1, 1))) \
            if shift and gen.uniform() < 0.5 else 0
        if k:
            out = np.roll(out, k, axis=axis)
            idx = [slice(None), slice(None)]
            idx[axis] = slice(0, k) if k > 0 else slice(k, None)
            out[tuple(idx)] = 0.0
    return out * gen.uniform(*contrast) + gen.normal(0.0, noise, size=out.shape)


def digit_people_bags(setting="bags", *, n_people=150, photos=(2, 6), max_bag=4,
                      shift=1, contrast=(0.8, 1.2), noise=0.05, p_missing=0.1,
                      p_spurious=0.2, random_state=None):
    """Labelled bags of "people": each person one digit image, each instance
    a photo of it (Sec. 3-4.1's faces, with pose and lighting as shift,
    contrast and noise).

    What a face metric must learn is what separates people while ignoring
    how their photos vary; here the variation (shift, contrast, noise) is
    shared by all people, so a metric learned on one set of people applies
    to another -- the situation of the paper's disjoint sets A and B, which
    the digits' ten classes cannot give (a metric learned on five digit
    classes ranks pairs of the other five worse than L2).

    Parameters
    ----------
    setting : {"instances", "bags", "noisy"}
    n_people : int >= 2
        People per set (distinct digit images; the two sets share none).
    photos : (int, int)
        Each person has ``photos[0]..photos[1]`` photos (uniform).
    max_bag : int >= 1
    shift : int >= 0
        Largest shift in pixels.
    contrast : (float, float)
        Range of the contrast factor.
    noise : float >= 0
        Standard deviation of the pixel noise (pixels in [0, 1]).
    p_missing, p_spurious : float in [0, 1]
        As in :func:`digits_bags`.
    random_state : int, RandomState instance or None

    Returns
    -------
    A, B : LabelledBags
        ``y`` is the person (a label of its set); features are 64 pixels.
    """
    from sklearn.datasets import load_digits

    p_missing, p_spurious = _check_common(setting, max_bag, p_missing, p_spurious)
    if isinstance(n_people, bool) or not isinstance(n_people, (int, np.integer)) \
            or not 2 <= n_people <= 898:
        raise ValueError(f"n_people: expected an integer in [2, 898], got {n_people!r}.")
    lo, hi = photos
    if not (isinstance(lo, (int, np.integer)) and isinstance(hi, (int, np.integer))
            and 1 <= lo <= hi):
        raise ValueError(f"photos: expected integers 1 <= low <= high, got {photos!r}.")
    if isinstance(shift, bool) or not isinstance(shift, (int, np.integer)) \
            or not 0 <= shift <= 3:
        raise ValueError(f"shift: expected an integer in [0, 3], got {shift!r}.")
    c0 = check_scalar(contrast[0], "contrast", low=0.0, low_inclusive=False)
    c1 = check_scalar(contrast[1], "contrast", low=c0)
    noise = check_scalar(noise, "noise", low=0.0)
    X, _ = load_digits(return_X_y=True)
    images = (X / 16.0).reshape(-1, 8, 8)
    pick, *gens = _streams(random_state, 3)
    order = pick.permutation(len(images))
    out = []
    for s, gen in enumerate(gens):
        people = order[s * n_people:(s + 1) * n_people]
        feats, ys = [], []
        for k, i in enumerate(people):
            for _ in range(int(gen.integers(lo, hi + 1))):
                feats.append(_photo(images[i], int(shift), (c0, c1), noise, gen).ravel())
                ys.append(k + s * n_people)
        out.append(_documents(np.array(feats), np.array(ys), setting, int(max_bag),
                              p_missing, p_spurious, np.unique(ys), gen))
    return out[0], out[1]
