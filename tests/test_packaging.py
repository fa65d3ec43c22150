"""The wheel and the release metadata.

* The wheel built from the repository holds the package, every file of the
  collection (``problems/<family>/``, ``reference/<family>/``) and the
  licence (``.ci/wheel_contents.py`` says what is missing); unpacked as an
  installation, it finds its collection from any directory.
* The collection root is looked up in the documented order, the installed
  collection last, and is never written into.
* LICENSE, ``pyproject.toml``'s metadata, CHANGELOG.md and README.md's links
  are what a package index shows.

``.ci/wheel_check`` does the rest in CI: the wheel built from the sdist,
installed with its dependencies in a fresh environment.
"""

import os
import re
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

import pytest

from cvxmetric import collection as col
from cvxmetric.cli import main

REPO = Path(__file__).resolve().parents[1]
tomllib = pytest.importorskip("tomllib")
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
# what the build reads (MANIFEST.in puts the same in the sdist)
BUILD_INPUTS = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE",
                "CHANGELOG.md", "cvxmetric", "problems", "reference")


_CHECKER = ".ci/wheel_contents.py"


def _setuptools_version():
    try:
        return tuple(int(p) for p in metadata.version("setuptools").split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError):
        return None


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """A wheel built, without network, from a copy of the repository's build inputs."""
    version = _setuptools_version()
    if version is None or version < (77, 0):
        pytest.skip("building the wheel offline needs setuptools>=77 (the "
                    "build-system requirement) in this environment: "
                    "pip install 'setuptools>=77' (the `test` extra has it)")
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.py[cod]", ".*", "*.egg-info")
    for name in BUILD_INPUTS:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        else:
            shutil.copy2(path, src / name)
    run = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "-q", "-w", str(tmp / "dist"), str(src)],
        capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (built,) = (tmp / "dist").glob("cvxmetric-*.whl")
    return built


def test_wheel_holds_the_package_the_collection_and_the_licence(wheel, repo_module):
    checker = repo_module(_CHECKER)
    assert checker.problems(wheel, REPO) == []
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    for folder in ("problems", "reference"):
        families = {p.name for p in (REPO / folder).iterdir() if p.is_dir()}
        prefix = f"cvxmetric/{col.BUNDLED_COLLECTION}/{folder}/"
        shipped = {n.split("/")[3] for n in names if n.startswith(prefix)}
        assert shipped == families
    assert not any(n.startswith(("tests/", "problems/", "reference/")) for n in names)


def test_contents_checker_names_a_missing_file(wheel, tmp_path, repo_module):
    """The checker is not blind: a wheel without one reference file fails."""
    damaged = tmp_path / wheel.name
    dropped = min(n for n in zipfile.ZipFile(wheel).namelist() if "/reference/" in n)
    with zipfile.ZipFile(wheel) as zin, zipfile.ZipFile(damaged, "w") as zout:
        for item in zin.infolist():
            if item.filename != dropped:
                zout.writestr(item, zin.read(item.filename))
    assert repo_module(_CHECKER).problems(damaged, REPO) == [f"missing: {dropped}"]


def test_unpacked_wheel_finds_its_collection_from_any_directory(wheel, tmp_path):
    """The wheel's files as an installation (its purelib), run from an empty folder."""
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "CVXMETRIC_ROOT"}
    env["PYTHONPATH"] = str(site)  # ahead of the repository's editable install
    code = ("import sys; from cvxmetric.cli import main; "
            "sys.exit(main(sys.argv[1:]))")
    bundled = site / "cvxmetric" / col.BUNDLED_COLLECTION
    listing = subprocess.run([sys.executable, "-c", code, "list"], cwd=empty, env=env,
                             capture_output=True, text=True, check=False)
    assert listing.returncode == 0, listing.stderr[-2000:]
    assert f"collection root: {bundled.resolve()}" in listing.stdout
    name = col.verify_plan(REPO, "qwise_vector")[0][0].name  # has a method to verify
    check = subprocess.run([sys.executable, "-c", code, "verify", "--family",
                            "qwise_vector", "--only", name, "--no-progress"],
                           cwd=empty, env=env, capture_output=True, text=True,
                           check=False)
    assert check.returncode == 0, check.stdout[-2000:] + check.stderr[-2000:]
    assert name in check.stdout


# ---------------------------------------------------------------------------
# the lookup order, the installed collection last (no build needed)
# ---------------------------------------------------------------------------


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """A package installed away from any repository, with a bundled collection."""
    site = tmp_path / "site"
    package = site / "cvxmetric"
    package.mkdir(parents=True)
    bundled = package / col.BUNDLED_COLLECTION
    shutil.copytree(REPO / "problems" / "mmc", bundled / "problems" / "mmc")
    shutil.copytree(REPO / "reference" / "mmc", bundled / "reference" / "mmc")
    monkeypatch.setattr(col, "__file__", str(package / "collection.py"))
    monkeypatch.setattr(col, "resources", SimpleNamespace(files=lambda _: package))
    monkeypatch.delenv("CVXMETRIC_ROOT", raising=False)
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    return bundled


def test_installed_collection_comes_last(installed, tmp_path, monkeypatch):
    assert col.locate_root() == (installed.resolve(), "installed package data")
    (tmp_path / "empty" / "problems").mkdir()
    assert col.locate_root()[1] == "current directory"
    monkeypatch.setenv("CVXMETRIC_ROOT", str(tmp_path))
    assert col.locate_root() == (tmp_path.resolve(), "CVXMETRIC_ROOT")
    assert col.locate_root(installed.parent) == (installed.parent.resolve(), "--root")


def test_no_collection_anywhere_says_where_it_looked(installed):
    shutil.rmtree(installed)
    assert col.installed_root() is None
    with pytest.raises(col.CollectionError, match="no collection root found.*wheel"):
        col.locate_root()


def test_repository_comes_before_the_installed_collection(monkeypatch, tmp_path):
    monkeypatch.delenv("CVXMETRIC_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)
    assert col.installed_root() is None  # a checkout has no bundled copy
    assert col.locate_root() == (REPO, "package repository")


def test_cli_lists_and_never_writes_the_installed_collection(installed, capsys):
    assert main(["list", "--family", "mmc"]) == 0
    out = capsys.readouterr().out
    assert f"collection root: {installed.resolve()}" in out
    before = {p: p.stat().st_mtime_ns for p in installed.rglob("*")}
    for command in (["reference", "--family", "mmc", "--in-place"],
                    ["make-problems", "mmc", "--in-place"]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert "installed with the package" in err and "--out DIR" in err
    assert {p: p.stat().st_mtime_ns for p in installed.rglob("*")} == before


def test_help_states_the_lookup_order(capsys):
    assert main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    order = ["--root DIR", "$CVXMETRIC_ROOT", "problems/ folder",
             "repository next to the package", "installed with the package"]
    positions = [text.find(part) for part in order]
    assert -1 not in positions and positions == sorted(positions)


# ---------------------------------------------------------------------------
# release metadata
# ---------------------------------------------------------------------------


def test_licence_file_is_bsd_3_clause():
    text = (REPO / "LICENSE").read_text()
    assert PROJECT["license"] == "BSD-3-Clause"
    assert PROJECT["license-files"] == ["LICENSE"]
    assert text.startswith("BSD 3-Clause License")
    assert "Copyright (c) 2026, the cvxmetric developers" in text
    assert "Neither the name of the copyright holder" in text


def test_project_urls_authors_and_classifiers():
    urls = PROJECT["urls"]
    assert {"Homepage", "Documentation", "Source", "Issues"} <= set(urls)
    assert all(u.startswith("https://") for u in urls.values())
    assert urls["Source"] == "https://github.com/cvxmetric/cvxmetric"
    assert urls["Documentation"] == "https://cvxmetric.readthedocs.io"
    assert PROJECT["authors"] == [{"name": "The cvxmetric developers"}]
    assert PROJECT["keywords"]
    classifiers = PROJECT["classifiers"]
    assert all(re.fullmatch(r"[A-Z][^:]*( :: [^:]+)+", c) for c in classifiers)
    try:
        from trove_classifiers import classifiers as known
    except ImportError:
        known = None
    if known is not None:
        assert set(classifiers) <= known
    # PEP 639: the licence is the expression; a licence classifier is refused
    assert not any(c.startswith("License ::") for c in classifiers)
    low = int(re.fullmatch(r">=3\.(\d+)", PROJECT["requires-python"]).group(1))
    minors = sorted(int(m) for c in classifiers
                    for m in re.findall(r"^Programming Language :: Python :: 3\.(\d+)$", c))
    assert minors and minors[0] == low and minors == list(range(low, minors[-1] + 1))


def test_changelog_has_the_version_of_pyproject():
    text = (REPO / "CHANGELOG.md").read_text()
    assert "[Keep a Changelog](https://keepachangelog.com/" in text
    version = re.escape(PROJECT["version"])
    assert re.search(rf"^## \[{version}\] - \d{{4}}-\d{{2}}-\d{{2}}$", text, re.MULTILINE)
    assert re.search(rf"^\[{version}\]: https://", text, re.MULTILINE)


def _links(markdown):
    """Every link target of a Markdown text: inline, reference-style and HTML."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.DOTALL)  # code blocks
    text = re.sub(r"`[^`\n]*`", "", text)  # inline code
    return (re.findall(r"\]\(\s*<?([^)\s>]+)", text)
            + re.findall(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", text, re.MULTILINE)
            + re.findall(r"\b(?:href|src)\s*=\s*[\"']([^\"']+)", text))


def test_link_parser_sees_relative_links():
    text = ("[a](docs/x.md) ![b](img/y.png) [c](#sec) [d]: e.md\n"
            "[d]: docs/e.md\n<a href=\"f.md\">f</a> `[g](h.md)`")
    assert sorted(_links(text)) == ["#sec", "docs/e.md", "docs/x.md", "f.md", "img/y.png"]


def test_readme_links_are_absolute_and_name_files_of_the_repository():
    """A package index shows README.md without the repository beside it."""
    base = PROJECT["urls"]["Source"] + "/blob/main/"
    links = _links((REPO / "README.md").read_text())
    assert links
    relative = [u for u in links if not re.match(r"(https?|mailto):", u)]
    assert relative == [], (
        f"README.md: relative links {relative}; write them as {base}<path>")
    for url in links:
        if url.startswith(base):
            path = url[len(base):].split("#")[0]
            assert (REPO / path).exists(), f"README.md links {url}: no {path}"
