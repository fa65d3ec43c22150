"""SLR's certified Newton method on a dask.array chunked by rows, on a Dask cluster.

The similarity of Qian, Baytas, Jin, Jain, Zhu, "Similarity learning via
adaptive regression" (Eq. 4, every ordered pair of samples), solved by
:class:`cvxmetric.slr.SemismoothNewton` on data given as a
``dask.array`` chunked by rows.  :meth:`cvxmetric.slr.SLRData.from_labels`
factors such an ``X`` on the cluster (a tall-and-skinny SVD), keeps the ``(n, r)``
factor there, and every pass over the ``n^2`` pairs -- the value, the
gradient, the Hessian (or its products), the certificate's dual bound --
runs as one Dask task per row chunk on whatever ``distributed`` client is
active; only ``r x r`` and ``p x p`` results come back to the host.

Here the cluster is a ``LocalCluster`` of ``--workers`` workers (2 by
default, one thread each) in this process; pass ``--scheduler ADDRESS`` to
run on an existing cluster instead.  The dashboard link is printed.  The
same problem is then solved by the NumPy path, and both certified gaps,
objectives and times are printed.

Quick settings (the default, ``n = 2000``, ``d = 100``) take well under a
minute on 2 cores; ``--n`` sets the size, ``--full`` is ``--n 20000``
(every pass is then ``4 10^8`` pairs).  Needs the
``[dask]`` extra (``pip install cvxmetric[dask]``); run as
``python benchmarks/slr_dask.py``.
"""

import argparse
import time

import numpy as np

from cvxmetric.bench.slr import make_synthetic_classes
from cvxmetric.slr import SemismoothNewton, SLRData


def _solve(X, y):
    t0 = time.perf_counter()
    res = SemismoothNewton().run(SLRData.from_labels(X, y))
    return res, time.perf_counter() - t0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="samples (default 2000)")
    parser.add_argument("--d", type=int, default=100, help="features (default 100)")
    parser.add_argument("--classes", type=int, default=20)
    parser.add_argument("--chunks", type=int, default=4, help="row chunks (default 4)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--scheduler", default=None,
                        help="address of an existing scheduler (default: a LocalCluster)")
    parser.add_argument("--full", action="store_true", help="n = 20 000")
    parser.add_argument("--no-numpy", action="store_true",
                        help="skip the NumPy comparison")
    args = parser.parse_args(argv)
    if args.full:
        args.n = 20000

    import dask.array as da
    from distributed import Client, LocalCluster

    X, y = make_synthetic_classes(args.n, args.d, args.classes, random_state=0)
    cluster = None
    if args.scheduler is None:
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1,
                               processes=False, dashboard_address=":0")
    with Client(args.scheduler or cluster) as client:
        print(f"dashboard: {client.dashboard_link}")
        Xd = da.from_array(X, chunks=(-(-args.n // args.chunks), args.d))
        res, seconds = _solve(Xd, y)
        print(f"dask  n={args.n} d={args.d} ({args.chunks} row chunks, "
              f"{len(client.scheduler_info()['workers'])} workers): "
              f"objective {res.objective:.10g}, certified gap "
              f"{res.certificate.rel_gap:.2e}, {res.status}, {seconds:.1f} s, "
              f"{res.n_iter} iterations ({res.info['hessian']} Hessian)")
        print(f"      results gathered to the host: {res.info['transfers']['to_host']} "
              f"arrays, {res.info['transfers']['to_host_bytes']} bytes")
    if cluster is not None:
        cluster.close()
    if not args.no_numpy:
        ref, seconds = _solve(X, y)
        print(f"numpy n={args.n} d={args.d}: objective {ref.objective:.10g}, "
              f"certified gap {ref.certificate.rel_gap:.2e}, {ref.status}, "
              f"{seconds:.1f} s")
        rel = abs(res.objective - ref.objective) / max(1.0, ref.objective)
        print(f"relative difference of the objectives: {rel:.1e}")
        return 0 if rel <= 1e-6 and res.certificate.passed else 1
    return 0 if res.certificate.passed else 1


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    raise SystemExit(main())
