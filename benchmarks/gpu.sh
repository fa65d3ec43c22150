#!/usr/bin/env bash
# Fast solvers on one GPU (torch, CUDA) against NumPy on the CPU in the same
# run: installs what it needs, then runs benchmarks/gpu.py once per group of
# methods, each in its own process (a method that fails or runs out of
# memory does not end the others): 4.6 minutes on one H200 (docs/performance.md).
#
#   benchmarks/gpu.sh                      # every method
#   benchmarks/gpu.sh qwise lmnn_letter    # these groups only
#
# Environment:
#   CVXMETRIC_WHEELS  a folder of wheels to install from on a machine with no
#                     package index (torch, numpy, scipy, scikit-learn,
#                     threadpoolctl and tqdm already there), made beforehand
#                     where pip works, for the machine's Python (3.12 here):
#                       pip download --no-deps --only-binary=:all: \
#                         --python-version 3.12 --platform manylinux_2_28_x86_64 \
#                         --platform manylinux_2_17_x86_64 -d wheels \
#                         cvxpy clarabel osqp qdldl highspy cffi pycparser \
#                         array-api-compat
#                     (scs and sparsediffpy, 55 MB, are not needed by this run)
#   GPU_METHOD_SECONDS  a time cap per group (default: none)
#   GPU_OPTIONS       gpu.py's options (default "--device cuda"; a smoke test
#                     here: GPU_OPTIONS="--device cpu --quick")
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
if [ -n "${CVXMETRIC_WHEELS:-}" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --upgrade --target /tmp/cvxmetric-site "$CVXMETRIC_WHEELS"/*.whl
    export PYTHONPATH="/tmp/cvxmetric-site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
else
    python3 -m pip install -q -e ".[array-api]" torch
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
python3 -c "import os, numpy, threadpoolctl; print('CPU cores', os.cpu_count(), '; BLAS',
[(i['internal_api'], i['num_threads']) for i in threadpoolctl.threadpool_info()])" || true
# slr_sketched reports its gap against the optimum slr_newton certified on
# the same data, so the two share a process
groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(qwise slr_newton,slr_sketched ldml_step lmnn_letter)
status=0
for group in "${groups[@]}"; do
    cap=()
    [ -z "${GPU_METHOD_SECONDS:-}" ] || cap=(timeout "$GPU_METHOD_SECONDS")
    # shellcheck disable=SC2086 -- GPU_OPTIONS is a list of options
    ${cap[@]+"${cap[@]}"} python3 benchmarks/gpu.py ${GPU_OPTIONS:---device cuda} \
        --methods "$group" \
        || { rc=$?; echo "$group: exit status $rc"; status=1; }
done
exit $status
