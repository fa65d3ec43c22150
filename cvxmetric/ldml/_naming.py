"""Instance labels from bag labels (Guillaumin, Verbeek, Schmid 2010, Sec. 2.3).

For a fixed metric and threshold ``b``, Eq. 10-11 turn the label
estimation into a constrained clustering: assign every instance to one
class so as to maximise

    sum_n sum_{i in Y_n} sum_{j in Y_n} w_ij,    w_ij = b - d_M(x_i, x_j),

where an instance of bag ``d`` may only take a class of the bag's label set
(or no class: "no name", which joins no cluster and gains nothing).  The
paper's local optimisation updates one bag at a time, exactly: with the
other bags fixed, giving instance ``i`` of the bag the class ``n`` gains

    G[i, n] = w_ii + 2 sum_{j outside the bag, j in Y_n} w_ij

(``w_ii = b``), and a class is taken by at most one instance of a bag --
a bipartite matching, solved by ``scipy.optimize.linear_sum_assignment``
with one zero-gain "no name" column per instance.  A larger ``b`` names
more instances (the paper's naming-precision curves vary it).
"""

import numpy as np
from scipy.optimize import linear_sum_assignment

from .._validation import check_finite, check_scalar
from ._budget import expired

__all__ = ["assign_bag", "label_instances", "clustering_objective"]


def assign_bag(G, *, name_all=False):
    """The best assignment of a bag's instances to its classes.

    Parameters
    ----------
    G : array_like of shape (n_instances, n_classes)
        ``G[i, k]``: the gain of giving instance ``i`` the bag's ``k``-th
        class; "no name" gains 0.
    name_all : bool
        Name as many instances as the classes allow (``min(n_instances,
        n_classes)``), the best such assignment -- the training step of
        Sec. 2.3, where "each instance is assigned to exactly one class"
        whenever the caption has room; by default "no name" competes.

    Returns
    -------
    assignment : ndarray of int, shape (n_instances,)
        The class index of each instance, ``-1`` for no name; every class
        is used at most once; ``sum_i G[i, assignment[i]]`` (over the named
        instances) is maximal.
    """
    G = check_finite(G, "G", ndim=2)
    F, K = G.shape
    if name_all and G.size:
        # a bonus above any total gain: the matching names as many
        # instances as it can first, then maximises the gain among those
        G = G + (1.0 + 2.0 * F * float(np.max(np.abs(G))))
    # gains of the K classes, then one private zero-gain "no name" column
    # per instance (a -inf elsewhere keeps it private)
    gains = np.full((F, K + F), -np.inf)
    gains[:, :K] = G
    gains[np.arange(F), K + np.arange(F)] = 0.0
    finite = np.where(np.isfinite(gains), gains, -1e300)
    rows, cols = linear_sum_assignment(finite, maximize=True)
    out = np.full(F, -1, dtype=int)
    named = cols < K
    out[rows[named]] = cols[named]
    return out


def _sqdist(A, B):
    d = (np.einsum("ij,ij->i", A, A)[:, None] + np.einsum("ij,ij->i", B, B)[None, :]
         - 2.0 * A @ B.T)
    return np.maximum(d, 0.0)


def clustering_objective(Z, labels, b):
    """Eq. 11: ``sum_n sum_{i, j in Y_n} (b - ||z_i - z_j||^2)`` (``-1``:
    no class), with ``Z`` the data in the metric's coordinates
    (``d_M(x_i, x_j) = ||z_i - z_j||^2``)."""
    Z = check_finite(Z, "Z", ndim=2)
    labels = np.asarray(labels)
    total = 0.0
    for n in np.unique(labels[labels >= 0]):
        idx = np.flatnonzero(labels == n)
        total += float(np.sum(b - _sqdist(Z[idx], Z[idx])))
    return total


def label_instances(Z, bags, bag_labels, b, *, n_sweeps=5, name_all=False, init=None):
    """LDML*'s label step: coordinate ascent on Eq. 11, one bag at a time.

    Starts as the paper does, every instance in every class of its bag,
    then sweeps the bags, each solved exactly by :func:`assign_bag` given
    the current labels of the others, until a sweep changes nothing (or
    ``n_sweeps``).  After the first sweep every instance has one class or
    none, and no later step decreases Eq. 11.

    Parameters
    ----------
    Z : array_like of shape (n_instances, d)
        The instances in the metric's coordinates (``X @ L.T``).
    bags : sequence of array_like of int
        The instances of each bag (disjoint).
    bag_labels : sequence of sequence of int
        The classes named by each bag's caption (non-negative integers).
    b : float
        The threshold of Eq. 3 / Eq. 10.
    n_sweeps : int
    name_all : bool
        Passed to :func:`assign_bag`: name every instance the caption has
        room for (training), instead of letting "no name" compete (the
        naming experiment, where ``b`` sets how many are named).
    init : array_like of int, shape (n_instances,), optional
        Labels to start from (a class of the instance's bag label set, or
        ``-1``) instead of the paper's start.  At a small ``b`` the paper's
        start empties every class in the first sweep, and the few instances
        then named are picked by ties; starting from the labels of a larger
        ``b`` (a continuation in ``b``) avoids that.

    Returns
    -------
    labels : ndarray of int, shape (n_instances,)
        The class of each instance, ``-1`` for no name.

    Notes
    -----
    Inside a fit's budget (``max_time``, :mod:`._budget`) the sweeps stop
    at the first bag after the budget is spent at which two instances share
    a class (the least LDML can learn from); the instances of bags that the
    first sweep has not reached then have no name.
    """
    Z = check_finite(Z, "Z", ndim=2)
    b = check_scalar(b, "b")
    n = Z.shape[0]
    bags, sets = _check_naming_bags(bags, bag_labels, n)
    member = _start_membership(bags, sets, n, init)
    # squared norms once: each bag's distances to all instances are then
    # one product
    q = np.einsum("ij,ij->i", Z, Z)
    # instances whose bag has been visited (the paper's start names every
    # instance in every class of its bag: not yet a labelling)
    visited = np.ones(n, dtype=bool) if init is not None else np.zeros(n, dtype=bool)
    # named visited instances per class (a bag names a class at most once:
    # two of them lie in two bags)
    count = member.sum(axis=0) if init is not None else np.zeros(member.shape[1], int)
    for _ in range(int(n_sweeps)):
        stopped, changed = _sweep(Z, q, b, bags, sets, member, visited, count, name_all)
        if stopped or not changed:
            break
    member[~visited] = False  # bags the first sweep did not reach: no name
    labels = np.full(n, -1, dtype=int)
    rows, cols = np.nonzero(member)
    labels[rows] = cols
    return labels


def _check_naming_bags(bags, bag_labels, n):
    """The bags as int index arrays into ``n`` instances and the label sets
    as sorted non-negative int arrays, one per bag."""
    if len(bags) != len(bag_labels):
        raise ValueError(f"bag_labels: expected one label set per bag ({len(bags)}), "
                         f"got {len(bag_labels)}.")
    bags = [np.asarray(B, dtype=int).ravel() for B in bags]
    sets = [np.unique(np.asarray(s, dtype=int)) for s in bag_labels]
    for k, B in enumerate(bags):
        if B.size == 0:
            raise ValueError(f"bags[{k}]: the bag is empty.")
        if B.min() < 0 or B.max() >= n:
            raise ValueError(f"bags[{k}]: index {int(B.max())} is out of range for "
                             f"{n} instances.")
    if any(s.size and s.min() < 0 for s in sets):
        raise ValueError("bag_labels: classes must be non-negative integers.")
    return bags, sets


def _start_membership(bags, sets, n, init):
    """The starting ``(n, n_classes)`` membership: the paper's (every
    instance in every class of its bag) or the labels ``init``."""
    n_classes = int(max((s.max() + 1 for s in sets if s.size), default=0))
    member = np.zeros((n, max(n_classes, 1)), dtype=bool)
    if init is None:
        for B, s in zip(bags, sets):
            member[np.ix_(B, s)] = True  # the paper's start: every permitted class
        return member
    init = np.asarray(init)
    if init.shape != (n,) or not np.issubdtype(init.dtype, np.integer):
        raise ValueError(f"init: expected {n} integer labels, got shape {init.shape}.")
    for k, (B, s) in enumerate(zip(bags, sets)):
        lab = init[B]
        named = lab >= 0
        if not np.all(np.isin(lab[named], s)) or np.any(lab < -1):
            raise ValueError(f"init: bags[{k}] has a label outside its label set.")
        member[B[named], lab[named]] = True
    return member


def _sweep(Z, q, b, bags, sets, member, visited, count, name_all):
    """One pass over the bags, each relabelled exactly given the others;
    ``member``, ``visited`` and ``count`` are updated in place.

    Returns
    -------
    stopped : bool
        The fit's budget ran out (after a class got two instances).
    changed : bool
        Some bag's labels changed.
    """
    changed = False
    for B, s in zip(bags, sets):
        if expired() and count.max() >= 2:
            # past the fit's budget (max_time), once the labels give
            # LDML a same-class pair to learn from
            return True, changed
        old = member[B].copy()
        if visited[B].all():
            count -= old.sum(axis=0)
        member[B] = False
        if s.size:
            ZB = Z[B]
            D = np.maximum(q[B][:, None] + q[None, :] - 2.0 * ZB @ Z.T, 0.0)
            W = b - D  # (|B|, n)
            # gain of class k: w_ii + 2 sum over the members outside B
            G = b + 2.0 * (W @ member[:, s])
            choice = assign_bag(G, name_all=name_all)
            named = choice >= 0
            member[B[named], s[choice[named]]] = True
        visited[B] = True
        count += member[B].sum(axis=0)
        changed |= not np.array_equal(old, member[B])
    return False, changed

