"""`evalkit view`: a local web viewer over the database (the ``view`` extra: Starlette, Jinja2, uvicorn).

:mod:`evalkit.view.drilldown` (pure, no web stack) explains one run; :mod:`evalkit.view.queries`
reads the database; :mod:`evalkit.view.app` serves pages and JSON. Importing this package imports
none of them.
"""
