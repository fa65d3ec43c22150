"""The MMC theory page (docs/mmc/) is executable: the first ```python block
of its estimators page runs and prints the ```text block after it (helpers reused from tests/test_docs.py)."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MMC_DOC = ROOT / "docs" / "mmc" / "estimators.md"
#: Every file of the theory page (docs/mmc/index.md and its sub-pages).
MMC_PAGES = sorted((ROOT / "docs" / "mmc").glob("*.md"))


@pytest.fixture(scope="module")
def mmc_example(docs_helpers):
    """The example's blocks run in turn in one namespace (the second
    continues the first): ``(printed lines, expected lines)``."""
    pairs = docs_helpers.python_text_pairs(
        MMC_DOC.read_text().split("\n## What runs")[0], str(MMC_DOC))
    assert len(pairs) == 2, "the example and its estimator continuation"
    code = "\n".join(c for c, _ in pairs)
    want = "".join(w for _, w in pairs)
    return docs_helpers.run_code(code, str(MMC_DOC)), want.splitlines()


def test_mmc_example_output(mmc_example, docs_helpers):
    got, want = mmc_example
    assert any(w.startswith("exact objective:") for w in want)
    # "exact objective:" is compared numerically (NUMERIC_PREFIXES)
    docs_helpers._check_lines(got, want, lambda w: True)


def test_mmc_page_names_existing_code():
    text = "\n".join(p.read_text() for p in MMC_PAGES)
    import cvxmetric.mmc as mmc

    for name in mmc.__all__:
        assert name in text, f"docs/mmc/ does not mention {name}"
    for path in ("cvxmetric/mmc/_problem.py", "cvxmetric/mmc/exact.py",
                 "cvxmetric/mmc/fast.py", "cvxmetric/mmc/estimator.py",
                 "cvxmetric/mmc/_collection.py", "cvxmetric/bench/mmc.py"):
        assert path in text and (ROOT / path).is_file()


def test_bench_case_rows():
    from cvxmetric.bench import format_table
    from cvxmetric.bench import mmc as _bench

    out = _bench.run_case({"diagonal": True, "method": "newton", "seed": 0})
    assert out.get("error") is None and out["status"] == "optimal"
    assert out["cert_rel_gap"] <= 1e-6
    row = {"problem": "mmc-synthetic-diagonal", "method": "newton",
           "d": _bench.D_FEATURES, "N": _bench.N_PAIRS, "n": out["n"],
           "objective": out["objective"], "gap": 0.0, "gap_kind": "vs exact",
           "seconds": out["seconds"], "peak_mb": out["peak_mb"],
           "base_mb": out["base_mb"], "status": out["status"],
           "n_iter": out["n_iter"], "error": None}
    assert "mmc-synthetic-diagonal" in format_table([row])
