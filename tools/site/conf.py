"""Sphinx's configuration for the course's website: ``make site`` (tools/site/build.py) runs Sphinx with it
on the executed notebooks it wrote into build/site-source/, never on the committed ones.

MyST-NB reads the notebooks (already executed: nothing runs here); the Sphinx Book Theme lays them out;
sphinx-mathjax-offline serves MathJax from the site itself. Nothing is fetched from another host when
a page is read: the site works offline.
"""

import gpulab
from gpulab import course

project = "gpulab"
author = "the gpulab authors"
copyright = "the gpulab authors · code under the MIT License, text and figures under CC BY 4.0"  # noqa: A001
release = version = gpulab.__version__

extensions = ["myst_nb", "sphinx-mathjax-offline"]
exclude_patterns = ["downloads/**", "**.ipynb_checkpoints"]

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3
nb_execution_mode = "off"  # build.py executed every notebook before Sphinx runs
nb_ipywidgets_js = {}  # no widget state is written (GPULAB_STATIC=1): load no widget scripts from a CDN
nb_merge_streams = True
suppress_warnings = ["mystnb.unknown_mime_type"]

html_theme = "sphinx_book_theme"
html_title = f"gpulab {getattr(course, 'RELEASE', 'v0.1.0')}"
html_static_path = ["static"]
html_css_files = ["gpulab.css"]
html_copy_source = False  # each page links its notebook, as committed (no outputs), instead
html_show_sourcelink = False
html_last_updated_fmt = None
html_context = {"default_mode": "light"}  # the pages' figures are drawn on white
html_theme_options = {
    "repository_url": f"https://github.com/{course.REPOSITORY}",
    "repository_branch": getattr(course, "RELEASE", "v0.1.0"),
    "use_repository_button": True,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "home_page_in_toc": True,
    "show_toc_level": 2,
}
