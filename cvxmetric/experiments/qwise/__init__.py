"""The Qwise paper's applications (Law, Thome, Cord 2016, Sec. 5-7):
:mod:`.pages` (web-page versions), :mod:`.temporal` (temporal change
detection), :mod:`.taxonomy` (class taxonomies), :mod:`.attributes`
(relative attributes)."""
