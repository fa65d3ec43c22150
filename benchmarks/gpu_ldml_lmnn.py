"""GPU rows for LDML and LMNN (called by the GPU benchmark script).

``bench_ldml_step(device, quick)``: one all-pairs loss-and-gradient step of
LDML (:meth:`cvxmetric.ldml.AllPairs.value_grad`) at N = 15 000, D = 3 456,
rank 20 (``quick``: N = 400, D = 50), on NumPy (``device="numpy"``) or on
PyTorch tensors on ``device`` (``"cpu"``, ``"cuda"``...).

``bench_ldml_pairs(device, quick)``: LDML's certified fast path on
explicit pairs (N = 3 000, D = 80, 15 000 pairs; ``quick``: 200, 8,
1 000), on NumPy or on PyTorch tensors on ``device``, with its gap.

``bench_lmnn_letter(device, quick)``: LMNN's working-set solver on
letter-shaped data (20 000 points, 16 features, 26 classes; ``quick``: 520
points) with its certified relative gap, on NumPy or with its passes over
the triplets on PyTorch tensors on ``device``.

Each returns a dict: ``method``, ``size``, ``device``, ``seconds``,
``gap`` (the certified relative gap, or None where the row is a step, not a
solve); LMNN's rows add the status, objective, back end and transfers.
"""

import time

import numpy as np

#: Entries per block of LMNN's passes on a device (fewer, larger kernels).
DEVICE_BLOCK = 2 ** 26


def _torch_array(X, device):
    import torch

    return torch.asarray(X, dtype=torch.float64, device=device)


def _sync(device):
    if device not in ("numpy", "cpu"):
        import torch

        torch.cuda.synchronize()


def bench_ldml_step(device="numpy", quick=False):
    """One LDML all-pairs step; the median of 3 after a warm-up."""
    from cvxmetric.ldml.fast import AllPairs

    N, D, rank = (400, 50, 5) if quick else (15_000, 3_456, 20)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N, D))
    y = rng.integers(0, 10, N)
    L = rng.standard_normal((rank, D)) / np.sqrt(D)
    loss = AllPairs(X if device == "numpy" else _torch_array(X, device), y)
    loss.value_grad(L, 1.0)
    times = []
    for _ in range(3):
        _sync(device)
        t0 = time.perf_counter()
        loss.value_grad(L, 1.0)
        _sync(device)
        times.append(time.perf_counter() - t0)
    return {"method": "ldml/all-pairs step", "size": f"N={N}, D={D}, rank={rank}",
            "device": device, "seconds": float(np.median(times)), "gap": None}


def pairs_data(N, D, P, seed=0):
    """Classes in ``D`` dimensions of uneven scales and ``P`` random labelled
    pairs of ``N`` samples: ``(X, pairs, s)``."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 5, N)
    X = rng.standard_normal((N, D)) * rng.uniform(0.1, 10, D) \
        + 2 * rng.standard_normal((5, D))[y]
    pairs = rng.integers(0, N, (P, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return X, pairs, np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)


def bench_ldml_pairs(device="numpy", quick=False, size=None):
    """LDML's certified fast path (:func:`cvxmetric.ldml.solve_fast`, trace
    regulariser 0.1) on explicit pairs: N = 3 000, D = 80, 15 000 pairs
    (``quick``: 200, 8, 1 000; ``size`` an ``(N, D, P)`` of one's own)."""
    from cvxmetric.ldml import LDMLData, solve_fast

    N, D, P = size or ((200, 8, 1000) if quick else (3000, 80, 15_000))
    X, pairs, s = pairs_data(N, D, P)
    Xin = X if device == "numpy" else _torch_array(X, device)
    _sync(device)
    t0 = time.perf_counter()
    res = solve_fast(LDMLData(Xin, pairs, s, lam=0.1), warn=False)
    _sync(device)
    return {"method": "ldml/explicit pairs, fast", "size": f"N={N}, D={D}, P={len(s)}",
            "device": device, "seconds": time.perf_counter() - t0,
            "gap": float(res.certificate.rel_gap), "status": str(res.status),
            "objective": res.objective, "transfers": res.info.get("transfers")}


def bench_lmnn_letter(device="numpy", quick=False, restricted_on="data"):
    """LMNN (working set) at letter size, certified over every triplet: on
    NumPy, or with the passes over the triplets on PyTorch tensors on
    ``device`` (blocks of :data:`DEVICE_BLOCK` entries) and the restricted
    solves there too, or on the host with ``restricted_on="host"``."""
    from cvxmetric.bench.lmnn import letter_data
    from cvxmetric.lmnn import LMNNData, LMNNWorkingSet

    n = 520 if quick else 20_000
    X, y = letter_data(n=n)
    row = {"method": "lmnn/working set", "size": f"n={n}, d=16, 26 classes",
           "device": device, "restricted_on": restricted_on}
    if device != "numpy":
        # warm-up (CUDA context, kernels, array-api-compat), not reported
        LMNNWorkingSet().run(LMNNData(_torch_array(X[:200], device), y[:200], k=3),
                             warn=False)
    _sync(device)
    t0 = time.perf_counter()
    data = LMNNData(X if device == "numpy" else _torch_array(X, device), y, k=3)
    if device != "numpy":
        data.triplet_block = DEVICE_BLOCK
    res = LMNNWorkingSet(restricted_on=restricted_on).run(data, warn=False)
    _sync(device)
    row.update(seconds=time.perf_counter() - t0, gap=float(res.certificate.rel_gap),
               status=str(res.status), objective=float(res.objective),
               backend=res.info.get("backend", "numpy"),
               transfers=res.info.get("transfers"))
    return row


if __name__ == "__main__":
    import sys

    quick = "--quick" in sys.argv
    for dev in ("numpy", "cpu") + (("cuda",) if "--cuda" in sys.argv else ()):
        print(bench_ldml_step(dev, quick))
        print(bench_ldml_pairs(dev, quick))
    for dev in ("numpy", "cpu") + (("cuda",) if "--cuda" in sys.argv else ()):
        print(bench_lmnn_letter(dev, quick))
        if dev != "numpy":
            print(bench_lmnn_letter(dev, quick, restricted_on="host"))
