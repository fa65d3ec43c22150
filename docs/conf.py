"""Sphinx configuration of the cvxmetric documentation site.

Build (offline, warnings as errors)::

    pip install -e ".[docs]"
    python -m sphinx -W --keep-going -b html docs docs/_build/html

Why Sphinx: the docstrings are numpydoc already, and the sites users know
for this kind of package (scikit-learn, CVXPY, metric-learn) are Sphinx
sites with an autosummary API reference and a sphinx-gallery of examples.
The Markdown pages under ``docs/`` are pages of the site as they are
(MyST, with ``$...$`` math); MathJax is served from the built site itself
(the ``django-static-mathjax`` wheel ships MathJax 3), so no page loads
anything from the network when it is viewed.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS))

import cvxmetric  # noqa: E402

project = "cvxmetric"
author = "The cvxmetric developers"
copyright = "the cvxmetric developers"  # noqa: A001
release = version = cvxmetric.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.json",
                    "auto_examples/*.md5", "**/*.codeobj.json"]
templates_path = ["_templates"]

# --- pages ------------------------------------------------------------------
# Pages of the site that are not a paper's theory page; every other
# ``docs/*.md``, and every ``docs/<family>/index.md`` (a paper's page split
# into sub-pages listed by its own toctree), is a theory (family) page and
# is listed on theory.md by ``_family_pages`` below, so a new family page
# needs no edit here.
NOT_FAMILY = {
    "index", "theory", "api", "benchmarks", "developer",
    # Developer pages
    "architecture", "add_a_formulation", "formats", "model", "certify",
    # Benchmarks
    "conformance", "performance",
    # user guide (beside guide/): the metric-learn migration page
    "metric_learn",
    # the user guide's folder
    "guide",
}


def _family_pages():
    pages = [p.stem for p in DOCS.glob("*.md")]
    pages += [f"{p.parent.name}/index" for p in DOCS.glob("*/index.md")]
    return sorted(p for p in pages if p.split("/")[0] not in NOT_FAMILY)


def _inject(app, docname, source):
    """Fill theory.md's list of family pages."""
    if "<!-- family pages -->" in source[0]:
        source[0] = source[0].replace("<!-- family pages -->",
                                      "\n".join(_family_pages()))


def _write_api_page():
    """Write api.rst (not committed): one autosummary entry per name of
    ``cvxmetric.__all__``, so that the reference follows ``__all__``."""
    names = "\n".join(f"   {n}" for n in cvxmetric.__all__)
    text = API_PAGE.format(names=names)
    path = DOCS / "api.rst"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


API_PAGE = """\
API reference
=============

.. module:: cvxmetric

Everything :mod:`cvxmetric` exports (``cvxmetric.__all__``), generated
from the docstrings when the site is built.

.. currentmodule:: cvxmetric

.. autosummary::
   :toctree: generated
   :nosignatures:

{names}
"""
# Stubs of names no longer in __all__ would stay behind as orphan pages.
shutil.rmtree(DOCS / "generated", ignore_errors=True)
_write_api_page()


# --- MyST -------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 4
myst_dmath_double_inline = True

# --- math: MathJax 3 from the site itself -----------------------------------
def _local_mathjax():
    """Copy MathJax's es5 build into a folder served as ``_static/mathjax``."""
    import mathjax  # the django-static-mathjax wheel (docs extra)

    src = Path(mathjax.__file__).resolve().parent / "static" / "mathjax" / "es5"
    dest = Path(tempfile.mkdtemp(prefix="cvxmetric-mathjax-"))
    keep = ("tex-chtml.js", "input", "output", "a11y", "ui", "sre",
            "adaptors", "core.js", "startup.js", "loader.js")
    for name in keep:
        s = src / name
        if s.is_dir():
            shutil.copytree(s, dest / "mathjax" / name)
        elif s.exists():
            (dest / "mathjax").mkdir(exist_ok=True)
            shutil.copy2(s, dest / "mathjax" / name)
    return dest


html_static_path = ["_static", str(_local_mathjax())]
mathjax_path = "mathjax/tex-chtml.js"
mathjax3_config = {
    "tex": {"tags": "ams"},
    # No menu or assistive-technology fetches at view time: everything the
    # page needs is in tex-chtml.js and its fonts under _static/mathjax.
    "options": {"enableMenu": False},
}

# --- API reference ----------------------------------------------------------
autosummary_generate = True
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# A public name without a docstring fails the build (GL08).
numpydoc_validation_checks = {"GL08"}
# Private helpers and what scikit-learn / dataclasses generate are not
# ours to document.
numpydoc_validation_exclude = {r"\._", r"\.__", r"set_.*_request$"}

# --- gallery ----------------------------------------------------------------
from _gallery import sphinx_gallery_conf, title_examples  # noqa: E402,F401

# --- HTML -------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "cvxmetric"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    # no external icons or version switcher: nothing fetched at view time
    "icon_links": [],
}
html_show_sourcelink = False
# A first visit has no stored mode: without a default the theme logs a
# console error ("invalid theme mode").
html_context = {"default_mode": "light"}

# --- warnings ---------------------------------------------------------------
nitpicky = True
# Type words of the numpydoc "Parameters" sections that are prose, not
# classes (``array-like``, ``(n, d) ndarray``, ``str or None``, ...) and
# classes of other packages (no intersphinx: the build is offline).
nitpick_ignore_regex = [
    # Objects outside ``cvxmetric.__all__`` (sub-modules, private bases,
    # sklearn's functions): the reference documents ``__all__`` only.
    (r"py:.*", r"cvxmetric\.[a-z_]+(\..*)?|.*\._[A-Za-z].*|sklearn\..*"),
    # Unqualified names in docstrings (``:data:`MAX_SCORE_PAIRS```,
    # ``:attr:`rel_gap```, ``:func:`register```): module constants,
    # numpydoc "Attributes" entries and helpers of a sub-module, none of
    # which has an entry of its own in a reference limited to __all__.
    # A qualified reference (``cvxmetric.Name``) that does not resolve
    # still fails the build.
    (r"py:(data|attr|func|class|meth)", r"[A-Za-z_][A-Za-z0-9_]*"),
    (r"py:class", r"(array-like|array_like|ndarray|optional|callable|"
                  r"default.*|shape.*|of|or|and|int|float|str|bool|dict|"
                  r"list|tuple|None|object|type|iterable|sequence|"
                  r"np\..*|numpy\..*|scipy\..*|sklearn\..*|cvxpy\..*|cp\..*|"
                  r"pandas\..*|pathlib\..*|os\..*|typing\..*|.*\(.*|.*\).*|"
                  r"\{.*|.*\}|'.*'|\".*\"|[0-9].*|.*_like)"),
]
suppress_warnings = [
    # MyST: the Markdown pages start their sections at "##" under a "#"
    # title and some skip a level inside (e.g. "####" after "##"); the
    # pages are edited elsewhere in this round, so the skips stay.
    "myst.header",
]


def _skip_member(app, what, name, obj, skip, options):
    # scikit-learn generates set_<method>_request for metadata routing.
    if re.fullmatch(r"set_.*_request", name):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_member)
    app.connect("source-read", _inject)
    app.connect("source-read", title_examples)
