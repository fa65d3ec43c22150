"""Fast solvers on a GPU (PyTorch, CUDA) against NumPy on the CPU, in one run.

One function per method prints, for each size, the certified relative gap
and the time on the GPU and on NumPy/CPU -- NumPy only at the sizes where
the CPU finishes within about a minute (the GPU/CPU ratio at equal size is
the figure that counts).  SLR's sketched algorithms certify nothing: their
``gap`` is their Eq. 4 objective against the certified optimum that
``slr_newton`` found on the same data (NaN when it did not run).  A method without an array-API path yet prints
``skipped`` with the reason and the run goes on.

    python benchmarks/gpu.py                       # torch on "cuda", full sizes
    python benchmarks/gpu.py --device cpu --quick  # torch on the CPU, tiny sizes

``benchmarks/gpu.sh`` installs what this needs and runs it: every method,
the NumPy comparisons included, in 4.6 minutes on one H200.
"""

import argparse
import math
import sys
import time

import numpy as np

#: (n, d, numpy too?) per mode: the CPU ratio size, then the paper's size
#: (ImageNet50: n = 71 000, d = 1 000; GPU only)
SLR_SIZES = {"quick": [(300, 20, True)],
             "full": [(6000, 1000, True), (71000, 1000, False)]}
#: (n, d, m, numpy too?) per mode for the sketched algorithms (m: sampled
#: columns, the paper's SLR-C-20k at ImageNet50's size)
SLR_SKETCH_SIZES = {"quick": [(300, 20, 100, True)],
                    "full": [(6000, 1000, 2000, True), (71000, 1000, 20000, False)]}
#: row-block size of a pass on a device: large blocks, few kernel launches
DEVICE_BLOCK = 2 ** 26
#: certified optima of Eq. 4 found by slr_newton, by (n, d): the yardstick of
#: the sketched algorithms' gap
_OPTIMA = {}


def _line(method, size, where, seconds, gap, status, extra=""):
    print(f"{method:14s} {size:24s} {where:10s} {seconds:9.2f} s  gap {gap:9.2e}  "
          f"{status}{extra}", flush=True)


def _skip(method, why):
    print(f"{method:14s} skipped: {why}", flush=True)


def slr_newton(torch, device, quick):
    """SLR's certified Newton method (matrix-free CG above r = 64)."""
    from cvxmetric.bench.slr import make_synthetic_classes
    from cvxmetric.slr import SemismoothNewton, SLRData

    if not hasattr(SLRData, "backend_info"):
        return _skip("slr-newton", "no array-API path")
    # warm-up (CUDA context, kernels, array-api-compat), not reported
    Xw, yw = make_synthetic_classes(200, 10, 4, random_state=0)
    SemismoothNewton().run(SLRData.from_labels(torch.asarray(Xw, device=device), yw))
    for n, d, with_numpy in SLR_SIZES["quick" if quick else "full"]:
        X, y = make_synthetic_classes(n, d, 50 if n > 1000 else 5, random_state=0)
        size = f"n={n} d={d}"
        Xt = torch.asarray(X, device=device)
        _sync(torch, device)
        t0 = time.perf_counter()
        res = SemismoothNewton().run(SLRData.from_labels(Xt, y, block=DEVICE_BLOCK))
        _sync(torch, device)
        t = res.info.get("transfers", {})
        _line("slr-newton", size, f"torch:{device}", time.perf_counter() - t0,
              res.certificate.rel_gap, res.status,
              f"  f {res.objective:.10g}  transfers {t.get('to_host', 0)}+"
              f"{t.get('to_device', 0)}")
        if res.status == "optimal":
            _OPTIMA[(n, d)] = res.objective
        if with_numpy:
            t0 = time.perf_counter()
            ref = SemismoothNewton().run(SLRData.from_labels(X, y))
            _line("slr-newton", size, "numpy", time.perf_counter() - t0,
                  ref.certificate.rel_gap, ref.status, f"  f {ref.objective:.10g}")


def _sketched_runs(m, r, block):
    """The sketched algorithms as the paper runs them (T = 5, rank r = 100,
    pair products in float32, Eq. 4 reported in float64 over all pairs)."""
    from cvxmetric.slr import lowrank_slr, randomized_slr

    common = {"n_iter": 5, "random_state": 0, "block": block, "objective_max_n": None}
    f32 = {"dtype": "float32", **common}
    return [
        (f"slr-fixed({r})", lambda X, y: lowrank_slr(X, y, r, target="fixed", **common)),
        (f"slr({r})", lambda X, y: lowrank_slr(X, y, r, **f32)),
        (f"slr-c-{m}({r})", lambda X, y: lowrank_slr(X, y, r, n_sketch=m, **f32)),
        (f"alg2-c-{m}", lambda X, y: randomized_slr(X, y, m, "columns", **f32)),
    ]


def slr_sketched(torch, device, quick):
    """SLR's sketched algorithms (Algorithms 2 and 3), the paper's way to
    ImageNet50's size; gap against slr_newton's certified optimum."""
    from cvxmetric.bench.slr import make_synthetic_classes
    from cvxmetric.slr.randomized import DEFAULT_BLOCK

    Xw, yw = make_synthetic_classes(200, 10, 4, random_state=0)
    for _, run in _sketched_runs(50, 5, DEVICE_BLOCK):  # warm-up, not reported
        run(torch.asarray(Xw, device=device), yw)
    for n, d, m, with_numpy in SLR_SKETCH_SIZES["quick" if quick else "full"]:
        X, y = make_synthetic_classes(n, d, 50 if n > 1000 else 5, random_state=0)
        size, best = f"n={n} d={d}", _OPTIMA.get((n, d))
        Xt = torch.asarray(X, device=device)
        for where, data, block in [(f"torch:{device}", Xt, DEVICE_BLOCK),
                                   ("numpy", X, DEFAULT_BLOCK)][:2 if with_numpy else 1]:
            for name, run in _sketched_runs(m, min(100, d), block):
                _sync(torch, device)
                t0 = time.perf_counter()
                try:
                    res = run(data, y)
                except Exception as exc:  # noqa: BLE001 -- one failed row must not end the run
                    print(f"{name:14s} {size:24s} {where:10s} failed: {exc!r}", flush=True)
                    continue
                _sync(torch, device)
                seconds = time.perf_counter() - t0
                f = res.info.get("eq4_objective", res.objective)  # slr-fixed: Eq. 1's
                gap = (f - best) / max(1.0, best) if best else float("nan")
                t = res.info["transfers"]
                _line(name, size, where, seconds, gap, res.status,
                      f"  f {f:.10g}  transfers {t['to_host']}+"
                      f"{t['to_device']} ({(t['to_host_bytes'] + t['to_device_bytes']) / 1e6:.1f} MB)")


def ldml_step(torch, device, quick):
    """LDML: one all-pairs gradient step (N = 15 000, D = 3 456), then the
    certified fast path on explicit pairs; the rows of
    ``benchmarks/gpu_ldml_lmnn.py``, on the device and on NumPy."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).with_name("gpu_ldml_lmnn.py")
    spec = importlib.util.spec_from_file_location("gpu_ldml_lmnn", path)
    rows = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rows)
    for fn in (rows.bench_ldml_step, rows.bench_ldml_pairs):
        for where in (device, "numpy"):
            r = fn(where, quick)
            gap = math.nan if r["gap"] is None else r["gap"]
            t = r.get("transfers") or {}
            extra = f"  transfers {t['to_host']}+{t['to_device']}" if t else ""
            _line(r["method"].split(",")[0].replace("ldml/", "ldml-"), r["size"],
                  "numpy" if where == "numpy" else f"torch:{where}", r["seconds"], gap,
                  r.get("status", "step"), extra)


def lmnn_letter(torch, device, quick):
    """LMNN at letter size (n = 20 000, d = 16, k = 3: 1.15e9 impostor
    triplets), certified, on the device (the restricted solves there, then
    on the host) and on NumPy."""
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from gpu_ldml_lmnn import bench_lmnn_letter

    for where, on in ((device, "data"), (device, "host"), ("numpy", "data")):
        row = bench_lmnn_letter(where, quick, restricted_on=on)
        t = row.get("transfers") or {}
        label = "numpy" if where == "numpy" else f"torch:{where}" + (
            "" if on == "data" else ",restricted-on-host")
        _line("lmnn-letter", row["size"].split(",")[0], label,
              row["seconds"], row["gap"], row["status"],
              f"  f {row['objective']:.10g}  transfers {t.get('to_host', 0)}+"
              f"{t.get('to_device', 0)}")


#: Qwise (d, N, numpy too?): (100, 10^6) on both (NumPy: about a minute on
#: a 2-core machine), (100, 10^7) on the device only; quick: a working-set
#: run (N above the default working set of 10^4) in seconds
QWISE_SIZES = {"quick": [(10, 12_000, True)],
               "full": [(100, 1_000_000, True), (100, 10_000_000, False)]}


def qwise(torch, device, quick):
    """Qwise's dual solver (restarted PDHG on a working set, certified)."""
    from cvxmetric.bench.qwise import bench_data
    from cvxmetric.qwise import QwiseDualSolver

    def solve(data, where):
        _sync(torch, device)
        t0 = time.perf_counter()
        res = QwiseDualSolver().run(data)
        _sync(torch, device)
        seconds = time.perf_counter() - t0
        t = res.info.get("transfers", {})
        extra = f"  f {res.objective:.10g}  iterations {res.n_iter}"
        if t:
            extra += (f"  transfers {t['to_host']}+{t['to_device']} "
                      f"({(t['to_host_bytes'] + t['to_device_bytes']) / 1e6:.1f} MB)")
        _line("qwise", size, where, seconds, res.certificate.rel_gap, res.status, extra)

    # warm-up (CUDA context, kernels, array-api-compat), not reported
    warm = bench_data(5, 300)
    QwiseDualSolver().run(warm.on_device(torch.asarray(warm.X, device=device)))
    for d, N, with_numpy in QWISE_SIZES["quick" if quick else "full"]:
        size = f"d={d} N={N}"
        t0 = time.perf_counter()
        data = bench_data(d, N)
        print(f"qwise          {size:24s} data built on the host in "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
        solve(data.on_device(torch.asarray(data.X, device=device)), f"torch:{device}")
        if with_numpy:
            solve(data, "numpy")


METHODS = [slr_newton, slr_sketched, ldml_step, lmnn_letter, qwise]


def _sync(torch, device):
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help='torch device (default "cuda")')
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test)")
    parser.add_argument("--methods", default=None,
                        help="comma-separated subset of " + ",".join(
                            f.__name__ for f in METHODS))
    args = parser.parse_args(argv)
    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device: run with --device cpu", file=sys.stderr)
        return 2
    where = (torch.cuda.get_device_name(args.device) if args.device.startswith("cuda")
             else "CPU")
    print(f"device: {args.device} ({where}); torch {torch.__version__}; "
          f"numpy {np.__version__}", flush=True)
    chosen = set(args.methods.split(",")) if args.methods else None
    for fn in METHODS:
        if chosen is None or fn.__name__ in chosen:
            fn(torch, args.device, args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
