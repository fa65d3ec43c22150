"""Fast solvers on a GPU (PyTorch, CUDA) against NumPy on the CPU, in one run.

One function per method prints, for each size, the certified relative gap
and the time on the GPU and on NumPy/CPU -- NumPy only at the sizes where
the CPU finishes within about a minute (the GPU/CPU ratio at equal size is
the figure that counts).  A method without an array-API path yet prints
``skipped`` with the reason and the run goes on.

    python benchmarks/gpu.py                       # torch on "cuda", full sizes
    python benchmarks/gpu.py --device cpu --quick  # torch on the CPU, tiny sizes

``benchmarks/gpu.sh`` installs what this needs and runs it (under 10
minutes on one H100).
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
#: row-block size of a pass on a device: large blocks, few kernel launches
DEVICE_BLOCK = 2 ** 26


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
        if with_numpy:
            t0 = time.perf_counter()
            ref = SemismoothNewton().run(SLRData.from_labels(X, y))
            _line("slr-newton", size, "numpy", time.perf_counter() - t0,
                  ref.certificate.rel_gap, ref.status, f"  f {ref.objective:.10g}")


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
    """LMNN at letter size (certified)."""
    _skip("lmnn-letter", "no array-API path yet")


def qwise(torch, device, quick):
    """Qwise (100, 10^6) and (100, 10^7)."""
    _skip("qwise", "no array-API path yet")


METHODS = [slr_newton, ldml_step, lmnn_letter, qwise]


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
