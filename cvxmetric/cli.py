"""The ``cvxmetric`` command.

Subcommands::

    cvxmetric list            [--family F]
    cvxmetric verify          [--family F] [--method M ...] [--only NAME ...]
    cvxmetric solve FILE      --method exact|fast|subgradient [--json]
    cvxmetric reference       [--family F] [--only NAME ...] [--scs-tol T]
    cvxmetric make-problems   [FAMILY] [--check]
    cvxmetric bench           [--sizes 20x1000,...] [--skip-straightforward]
                              [--max-seconds S]

Every subcommand takes ``--root DIR`` (else ``$CVXMETRIC_ROOT``, else the
current directory if it has ``problems/``, else the repository next to the
installed package).  Exit codes: 0 success, 1 a check failed (``verify``,
``reference``, ``make-problems --check``), 2 bad input or a solver error.
Tables go to stdout; progress and diagnostics to stderr.
"""

import argparse
import json
import logging
import sys
from pathlib import Path

import numpy as np

from . import collection as col
from .result import SolverError

__all__ = ["main", "build_parser"]


def _table(headers, rows):
    """Left-aligned plain-text table."""
    rows = [[str(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[k]) for r in rows]) for k, h in enumerate(headers)]
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(),
           "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(out)


def _num(x, spec=".2e"):
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "-"
    return format(x, spec)


def _root(args, must_exist=True):
    return col.find_root(args.root or args.root_global, must_exist=must_exist)


def _err(msg):
    print(f"cvxmetric: error: {msg}", file=sys.stderr)


# ---------------------------------------------------------------------------
# Subcommands
# ---------------------------------------------------------------------------


def _cmd_list(args):
    root = _root(args)
    fams = [args.family] if args.family else col.families(root)
    rows = []
    for fam in fams:
        for inst in col.iter_instances(root, fam):
            status, ref = col.reference_status(root, inst)
            s = inst.sizes
            hp = inst.hyperparameters
            rows.append([
                fam, inst.name, s.get("n", "-"), s.get("d", "-"),
                s.get("n_quadruplets", "-"), s.get("n_pairs", "-"),
                hp.get("regularizer", "-"), inst.source or "-", status,
                _num(ref.exact_seconds, ".3f") if status == "current" else "-",
                _num(ref.objective, ".8g") if status == "current" else "-",
            ])
    print(f"collection root: {root}")
    print(_table(["family", "instance", "n", "d", "N", "P", "regularizer", "source",
                  "reference", "exact s", "objective"], rows))
    return 0


def _cmd_verify(args):
    root = _root(args)
    rows = col.verify(root, args.family, args.method or None, args.only or None,
                      progress=not args.no_progress)
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=2))
    else:
        body = []
        for r in rows:
            body.append([
                r.instance, r.method, _num(r.gap), _num(r.tolerance, ".0e"),
                _num(r.psd_violation, ".1e"), _num(r.seconds, ".3f"),
                _num(r.speedup, ".2f") + ("x" if np.isfinite(r.speedup) else ""),
                r.status or "-", "ok" if r.passed else f"FAIL: {r.error}",
            ])
        print(_table(["instance", "method", "rel gap", "tol", "psd viol", "seconds",
                      "speedup", "status", "result"], body))
        n_fail = sum(not r.passed for r in rows)
        print(f"\n{len(rows) - n_fail}/{len(rows)} passed"
              + ("" if not n_fail else f"; {n_fail} failed"))
        print("rel gap = (f - f_ref) / max(1, |f_ref|); speedup = stored exact "
              "seconds / method seconds")
    return 1 if any(not r.passed for r in rows) else 0


# ``solve``'s hyperparameter options: (option, argparse dest, the Qwise
# estimators' parameter whose constraints it obeys)
_SOLVE_OPTIONS = (("--regularizer", "regularizer", "regularizer"),
                  ("--C-q", "C_q", "C_q"), ("--C-p", "C_p", "C_p"),
                  ("--u", "u", "u"), ("--l", "l", "l"))


def _check_solve_options(args):
    """Refuse a hyperparameter option the estimators would refuse.

    Numbers must be finite (:func:`~cvxmetric._validation.check_scalar`, as
    the problem data checks them) and satisfy the estimators' declared
    ``_parameter_constraints`` (e.g. ``u >= 0``); the message names the
    option.
    """
    from ._validation import check_scalar
    from .qwise.estimator import Qwise

    for option, dest, param in _SOLVE_OPTIONS:
        value = getattr(args, dest)
        if value is None:
            continue
        if isinstance(value, float):
            check_scalar(value, option)
        allowed = [c for c in Qwise._parameter_constraints[param] if c is not None]
        if not any(c.is_satisfied_by(value) for c in allowed):
            raise ValueError(
                f"{option}: must be " + " or ".join(str(c) for c in allowed)
                + f", got {value!r}."
            )


def _cmd_solve(args):
    _check_solve_options(args)
    hp = {"regularizer": args.regularizer, "C_q": args.C_q, "C_p": args.C_p,
          "u": args.u, "l": args.l}
    inst = col.load_instance_file(args.file, family=args.family, hyperparameters=hp)
    data = inst.to_data()
    if args.method == "exact":
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # judged by the certificate
            res = inst.spec.exact(data)
    else:
        res = col.run_method(inst.family, args.method, data)
    cert = res.certificate
    # compare with the stored reference when the file belongs to a collection
    ref_info = None
    path = inst.path
    if path.parent.parent.name == "problems" and path.parent.name == inst.family:
        root = path.parent.parent.parent
        try:
            if (col.problems_dir(root, inst.family) / "manifest.json").is_file() \
                    and inst.entry:
                status, ref = col.reference_status(root, inst)
                ref_info = {"status": status}
                if status == "current":
                    f_ref = ref.objective
                    ref_info.update(objective=f_ref, rel_gap=(
                        (res.objective - f_ref) / max(1.0, abs(f_ref))))
        except col.CollectionError as exc:  # informative only
            ref_info = {"status": "invalid", "detail": str(exc)}
    doc = {
        "instance": {"file": str(path), "family": inst.family, "name": inst.name,
                     "sha256": inst.sha256, "sizes": inst.sizes,
                     "hyperparameters": inst.hyperparameters},
        "method": res.method,
        "status": res.status,
        "objective": res.objective,
        "n_iter": res.n_iter,
        "time": res.time,
        "certificate": cert.as_dict(),
        "reference": ref_info,
        "M": np.asarray(res.M),
    }
    if args.json:
        print(json.dumps(col.jsonable(doc), indent=2, allow_nan=False))
        return 0
    print(f"instance   {inst.name} ({inst.family}, {path})")
    print(f"sizes      {inst.sizes}")
    print(f"method     {res.method}   status {res.status}   iterations {res.n_iter}")
    print(f"objective  {res.objective:.10g}")
    print(f"certificate: rel_gap {cert.rel_gap:.3g}  max_violation "
          f"{cert.max_violation:.3g}  min_eig {cert.min_eig:.3g}  solver "
          f"{cert.solver}  passed {cert.passed}")
    print(f"time       {res.time:.3f} s")
    if ref_info and ref_info.get("status") == "current":
        print(f"reference  {ref_info['objective']:.10g}  (rel gap "
              f"{ref_info['rel_gap']:.3g})")
    elif ref_info:
        print(f"reference  {ref_info['status']}")
    w = np.linalg.eigvalsh(0.5 * (res.M + res.M.T))
    print(f"M          {res.M.shape[0]}x{res.M.shape[1]}, rank "
          f"{int(np.sum(w > 1e-8 * max(1.0, w[-1])))}, trace {np.trace(res.M):.6g}")
    return 0


def _cmd_reference(args):
    if args.scs_tol is not None:
        from ._validation import check_scalar

        check_scalar(args.scs_tol, "--scs-tol", low=0, low_inclusive=False)
    root = _root(args)

    def report(o):
        s = o.record.get("solvers", {})
        agree = o.record.get("agreement", {}).get("rel_diff")
        line = [o.instance.name,
                _num(s.get("CLARABEL", {}).get("objective"), ".10g"),
                _num(s.get("SCS", {}).get("objective"), ".10g"), _num(agree),
                _num(s.get("CLARABEL", {}).get("seconds"), ".3f"),
                _num(s.get("SCS", {}).get("seconds"), ".3f"),
                ("written" if o.written else "accepted") if o.accepted
                else "REJECTED"]
        rows.append(line)
        print(f"{o.instance.name}: {line[-1]}", file=sys.stderr)
        for reason in o.reasons:
            print(f"  {reason}", file=sys.stderr)

    rows = []
    outcomes = col.make_references(root, args.family, args.only or None,
                                   scs_tol=args.scs_tol, write=not args.dry_run,
                                   progress=report)
    print(_table(["instance", "CLARABEL", "SCS", "agreement", "CLARABEL s", "SCS s",
                  "result"], rows))
    bad = [o for o in outcomes if not o.accepted]
    for o in bad:
        print(f"{o.instance.name}: not written: " + " ".join(o.reasons))
    return 1 if bad else 0


def _cmd_make_problems(args):
    root = _root(args, must_exist=False)
    fams = args.family or [f for f, s in col.FAMILIES.items() if s.generate]
    changed = False
    for fam in fams:
        out = col.make_problems(root, fam, check=args.check)
        rows = [[o["name"], o["sizes"].get("n", "-"), o["sizes"].get("d", "-"),
                 o["sizes"].get("n_quadruplets", "-"), o["sizes"].get("n_pairs", "-"),
                 o["sha256"][:12], "changed" if o["changed"] else "unchanged"]
                for o in out]
        changed |= any(o["changed"] for o in out)
        print(f"{fam}: {col.problems_dir(root, fam)}"
              + (" (check only, nothing written)" if args.check else ""))
        print(_table(["instance", "n", "d", "N", "P", "sha256", "vs disk"], rows))
    if changed and not args.check:
        print("instances changed: regenerate their references with "
              "`cvxmetric reference`.")
    return 1 if (args.check and changed) else 0


def _cmd_bench(args):
    import importlib

    from . import bench

    if args.suite == "real":
        from . import conformance

        return conformance.run_cli(args, json_stdout=args.json)
    if args.family != "qwise":
        # each family's benchmark lives beside its solvers: <family>/_bench.py,
        # ``run_bench(max_seconds=, seed=, callback=) -> rows`` (bench's shape)
        mod = importlib.import_module(f".{args.family}._bench", __package__)
        rows = mod.run_bench(max_seconds=args.max_seconds, seed=args.seed,
                             callback=lambda r: print(
                                 f"done: {r['problem']} {r['method']}: "
                                 f"{_num(r['seconds'], '.2f')} s, {r['status']}",
                                 file=sys.stderr))
        if args.json:
            print(json.dumps(col.jsonable(rows), indent=2))
        else:
            print(bench.format_table(rows))
        return 0

    sizes = bench.parse_sizes(args.sizes) if args.sizes else bench.DEFAULT_SIZES
    methods = args.methods.split(",") if args.methods else bench.BENCH_METHODS

    def progress(row):
        print(f"done: d={row['d']} N={row['N']} {row['method']}: "
              f"{_num(row['seconds'], '.2f')} s, {row['status']}", file=sys.stderr)

    rows = bench.run_bench(
        sizes, methods, seed=args.seed, skip_straightforward=args.skip_straightforward,
        max_seconds=args.max_seconds, isolate=not args.no_isolate,
        subgradient_maxiter=args.subgradient_maxiter, callback=progress)
    if args.json:
        print(json.dumps(col.jsonable(rows), indent=2))
    else:
        print(bench.format_table(rows))
        print("\ngap: (f - f_ref) / max(1, |f_ref|) when kind is 'vs exact' or "
              "'vs fast' (f_ref: the exact optimum, or above 1e4 constraints "
              "the fast solver's optimum certified to 1e-6); the solver's "
              "certified relative duality gap when 'certified'. x exact / x "
              "declared: seconds of the default exact path (margin-set "
              "reduction, its guess from a fast solve) / of the declared "
              "CVXPY model, divided by the row's. peak/base MB: "
              "ru_maxrss of the run's process (base: before the solve).")
    return 0


# ---------------------------------------------------------------------------
# Parser
# ---------------------------------------------------------------------------


def _bench_families():
    """Qwise (``cvxmetric/bench.py``) and every package with a ``_bench`` module."""
    import importlib.util

    pkg = Path(__file__).resolve().parent
    return ("qwise",) + tuple(sorted(
        f.parent.name for f in pkg.glob("*/_bench.py")
        if f.parent.name != "qwise" and importlib.util.find_spec(
            f".{f.parent.name}._bench", __package__) is not None))


def build_parser():
    """The argparse parser of ``cvxmetric``."""
    parser = argparse.ArgumentParser(
        prog="cvxmetric",
        description="Metric learning solved exactly (CVXPY, certified) and fast; "
                    "the problem collection and its checks.")
    parser.add_argument("--root", dest="root_global", default=None, metavar="DIR",
                        help="collection root (also accepted after the subcommand)")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="log progress (-vv: debug)")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", default=None, metavar="DIR",
                        help="collection root (default: $CVXMETRIC_ROOT, the "
                             "current directory if it has problems/, else the "
                             "repository of the installed package)")
    fam_choices = sorted(col.FAMILIES)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("list", parents=[common], help="list the instances")
    p.add_argument("--family", choices=fam_choices)
    p.set_defaults(func=_cmd_list)

    p = sub.add_parser("verify", parents=[common],
                       help="check every fast method against the references")
    p.add_argument("--family", choices=fam_choices)
    p.add_argument("--method", action="append", help="method name (repeatable)")
    p.add_argument("--only", action="append", help="instance name (repeatable)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="rows as JSON")
    p.set_defaults(func=_cmd_verify)

    p = sub.add_parser("solve", parents=[common], help="solve one instance file")
    p.add_argument("file", help="instance .npz")
    p.add_argument("--method", default="exact",
                   help="exact (certified CVXPY) or a registered fast method "
                        "(fast, subgradient)")
    p.add_argument("--family", choices=fam_choices,
                   help="default: from the manifest beside the file, else qwise")
    p.add_argument("--regularizer", help="overrides the manifest")
    p.add_argument("--C-q", dest="C_q", type=float, help="overrides the manifest")
    p.add_argument("--C-p", dest="C_p", type=float, help="overrides the manifest")
    p.add_argument("--u", type=float, help="overrides the manifest")
    p.add_argument("--l", type=float, help="overrides the manifest")
    p.add_argument("--json", action="store_true",
                   help="print a JSON document (objective, status, certificate, "
                        "time, M)")
    p.set_defaults(func=_cmd_solve)

    p = sub.add_parser("reference", parents=[common],
                       help="compute certified references (Clarabel and SCS)")
    p.add_argument("--family", choices=fam_choices)
    p.add_argument("--only", action="append", help="instance name (repeatable)")
    p.add_argument("--scs-tol", type=float, default=None,
                   help="SCS tolerance (default: Clarabel's, 1e-9)")
    p.add_argument("--dry-run", action="store_true", help="write nothing")
    p.set_defaults(func=_cmd_reference)

    p = sub.add_parser("make-problems", parents=[common],
                       help="(re)generate the bundled instances")
    # no `choices`: argparse checks the empty default list against them
    p.add_argument("family", nargs="*",
                   help="family name(s); default: every family with bundled "
                        "instances (" + ", ".join(
                            sorted(f for f, s in col.FAMILIES.items() if s.generate))
                        + ")")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if the files on disk differ")
    p.set_defaults(func=_cmd_make_problems)

    p = sub.add_parser("bench", parents=[common],
                       help="benchmark a family's solvers on synthetic data")
    p.add_argument("--family", default="qwise", choices=_bench_families(),
                   help="default: qwise (the size/method options are Qwise's)")
    p.add_argument("--sizes", help="comma-separated DxN, e.g. 20x1000,100x1e5 "
                                   "(default: 20x1000,40x2000,60x2000,100x1e5,100x1e6)")
    p.add_argument("--methods", help="comma-separated subset of "
                                     "exact,straightforward,fast,fast@1e-4,subgradient")
    p.add_argument("--skip-straightforward", action="store_true",
                   help="do not solve the declared CVXPY model")
    p.add_argument("--max-seconds", type=float, default=None,
                   help="kill a run after this many seconds (reported as timeout)")
    p.add_argument("--subgradient-maxiter", type=int, default=None,
                   help="default: the solver's (above 1e4 constraints the "
                        "time budget usually ends the run first)")
    p.add_argument("--seed", type=int, default=0, help="random_state of the data")
    p.add_argument("--no-isolate", action="store_true",
                   help="run in this process (peak memory is then process-wide)")
    p.add_argument("--json", action="store_true", help="rows as JSON")
    p.add_argument("--suite", choices=("synthetic", "real"), default="synthetic",
                   help="real: the conformance suite on scikit-learn's datasets "
                        "(every estimator and solver; docs/conformance.md)")
    p.add_argument("--datasets", help="--suite real: comma-separated subset of "
                                      "iris,wine,breast_cancer,digits,digits-pca30")
    p.add_argument("--seeds", help="--suite real: comma-separated seeds "
                                   "(default 0,1,2,3,4)")
    p.add_argument("--families", help="--suite real: comma-separated subset of "
                                      "qwise,mmc,constraintdml,rankdml,slr")
    p.add_argument("--estimators", help="--suite real: comma-separated names")
    p.set_defaults(func=_cmd_bench)
    return parser


def main(argv=None):
    """Run ``cvxmetric``; return the exit code.

    Parameters
    ----------
    argv : list of str, optional
        Default: ``sys.argv[1:]``.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verbose:
        logging.basicConfig(
            level=logging.DEBUG if args.verbose > 1 else logging.INFO,
            format="%(name)s: %(message)s", stream=sys.stderr)
    if not hasattr(args, "root"):
        args.root = None
    try:
        return args.func(args)
    except col.CollectionError as exc:
        _err(str(exc))
        return 2
    except SolverError as exc:
        _err(f"solver failed ({exc.status}): {exc}")
        return 2
    except (ValueError, TypeError) as exc:  # invalid input named by the message
        _err(str(exc))
        return 2


if __name__ == "__main__":
    sys.exit(main())
