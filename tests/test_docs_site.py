"""The documentation site: it builds with warnings as errors, its API
reference covers ``cvxmetric.__all__``, and a headless Chromium finds its
pages whole (math typeset, figures loaded, links resolving, no console
errors, nothing fetched from outside the site).

Needs the ``docs`` extra (``pip install -e ".[docs]"``): skipped without
it.  The browser check also needs a Chromium (``/usr/bin/chromium``, or
``CVXMETRIC_CHROMIUM``) and the ``playwright`` package of the extra; it is
skipped, with the reason, when either is missing.  ``.ci/docs_check``
installs both and runs this module.  ``CVXMETRIC_SITE_SHOTS=DIR`` saves a
screenshot of each page checked to DIR.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

import cvxmetric

ROOT = Path(__file__).resolve().parents[1]
DOCS_MODULES = ("sphinx", "myst_parser", "numpydoc", "sphinx_gallery",
                "pydata_sphinx_theme", "matplotlib", "mathjax")
MISSING = [m for m in DOCS_MODULES if importlib.util.find_spec(m) is None]

# .ci/docs_check sets CVXMETRIC_DOCS_REQUIRED: there a missing dependency
# fails the build below instead of skipping.
pytestmark = pytest.mark.skipif(
    bool(MISSING) and not os.environ.get("CVXMETRIC_DOCS_REQUIRED"), reason="the docs extra is not installed (missing: "
    + ", ".join(MISSING) + "); pip install -e '.[docs]'")

#: the pages the browser opens: home, a theory page with math, the API
#: page of Qwise, a gallery example that ran and drew figures.
PAGES = {
    "home": "index.html",
    "theory": "qwise/formulation.html",
    "api": "generated/cvxmetric.Qwise.html",
    "gallery": "auto_examples/omdml_digits.html",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Build the site once: ``sphinx -W --keep-going -b html``."""
    out = tmp_path_factory.mktemp("site") / "html"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep
               + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q",
         "-b", "html", str(ROOT / "docs"), str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, (
        "the site does not build with warnings as errors:\n"
        + (proc.stdout + proc.stderr)[-6000:])
    return out


def test_site_builds_with_every_page(site):
    for page in PAGES.values():
        assert (site / page).is_file(), page
    # MathJax is served by the site itself
    assert (site / "_static" / "mathjax" / "tex-chtml.js").is_file()


def test_api_reference_covers_all(site):
    missing = [n for n in cvxmetric.__all__
               if not (site / "generated" / f"cvxmetric.{n}.html").is_file()]
    assert not missing


def test_gallery_ran_and_drew(site):
    # every example ran with its quick settings and drew at least one
    # figure, captured from its open figures (no file written by it)
    examples = sorted(p.stem for p in (ROOT / "examples").glob("*.py")
                      if not p.name.startswith("_"))
    assert examples
    for name in examples:
        html = (site / "auto_examples" / f"{name}.html").read_text()
        assert "sphx-glr-single-img" in html or "sphx-glr-multi-img" in html, name
        assert f"../_images/sphx_glr_{name}_001.png" in html, name
        assert (site / "_images" / f"sphx_glr_{name}_001.png").is_file(), name
    # figures go to the build, never to the tracked docs/img or examples/
    assert not list((ROOT / "examples").glob("*.png"))
    changed = subprocess.run(["git", "status", "--porcelain", "--", "docs/img"],
                             cwd=ROOT, capture_output=True, text=True, check=False)
    assert changed.returncode != 0 or changed.stdout == ""


# --- the browser check --------------------------------------------------------

def _chromium():
    path = os.environ.get("CVXMETRIC_CHROMIUM") or shutil.which("chromium") \
        or "/usr/bin/chromium"
    return path if Path(path).is_file() else None


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    if importlib.util.find_spec("playwright") is None:
        pytest.skip("playwright is not installed (docs extra)")
    chromium = _chromium()
    if chromium is None:
        pytest.skip("no Chromium: apt-get install chromium, or set "
                    "CVXMETRIC_CHROMIUM")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=chromium, headless=True,
            args=["--no-sandbox", "--disable-gpu",
                  "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  "--no-first-run"])
        yield b
        b.close()


def _status(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


@pytest.mark.parametrize("name", list(PAGES))
def test_page_in_browser(server, browser, name):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems, outside = [], []
    page.on("console", lambda m: m.type == "error" and problems.append(
        f"console: {m.text}"))
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("response", lambda r: r.status >= 400 and problems.append(
        f"HTTP {r.status}: {r.url}"))

    def route(r):
        if r.request.url.startswith(server):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.goto(server + PAGES[name], wait_until="load")
    # Sphinx loads MathJax only on pages with math; it typesets after
    # load: wait for its startup promise
    if page.locator('script[src*="mathjax"]').count():
        page.wait_for_function("() => window.MathJax && MathJax.startup "
                               "&& MathJax.startup.promise", timeout=60000)
        page.evaluate("() => MathJax.startup.promise")

    n_math = page.locator("mjx-container").count()
    n_err = page.locator("mjx-merror").count()
    raw = page.locator(".math").count()
    if name in ("home", "theory"):
        assert n_math > 0, "no typeset math on the page"
    assert n_err == 0, f"{n_err} formulas MathJax could not typeset"
    assert n_math >= raw, f"{raw - n_math} math elements left untypeset"

    images = page.eval_on_selector_all(
        "img", "els => els.map(e => [e.currentSrc || e.src, e.complete "
               "&& e.naturalWidth > 0])")
    broken = [src for src, ok in images if not ok]
    assert not broken, f"figures that did not load: {broken}"
    if name == "gallery":
        assert any("sphx_glr" in src for src, _ in images), \
            "the example's figure is not on its page"

    links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
    internal = sorted({urllib.parse.urldefrag(u)[0] for u in links
                       if u.startswith(server)})
    dead = [u for u in internal if _status(u) != 200]
    assert not dead, f"internal links that do not resolve: {dead}"

    shots = os.environ.get("CVXMETRIC_SITE_SHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        if name == "gallery":
            page.locator("img.sphx-glr-single-img, img.sphx-glr-multi-img"
                         ).first.scroll_into_view_if_needed()
        page.screenshot(path=str(Path(shots) / f"{name}.png"))
    page.close()
    assert not outside, f"requests outside the site: {outside}"
    assert not problems, "\n".join(problems)
