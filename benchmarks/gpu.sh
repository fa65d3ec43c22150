#!/usr/bin/env bash
# Fast solvers on one GPU (torch, CUDA) against NumPy on the CPU in the same
# run: installs what it needs, then runs benchmarks/gpu.py (under 10 minutes
# on one H100).  Arguments are passed on (e.g. --methods slr_newton).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -e ".[array-api,dask]" torch
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
exec python benchmarks/gpu.py --device cuda "$@"
