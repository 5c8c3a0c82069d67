"""A small host built the way real Flask apps are (written for these tests).

Shaped like the well-known Flask tutorial app: an application factory
(`app.create_app`), blueprints (`main`, `auth`, `errors`), Flask-SQLAlchemy
models, Flask-Login, Flask-Migrate with autogenerate, Flask-WTF forms with
CSRF, its own 404/500 pages, a layout that loads "CDN" assets and runs inline
scripts, and its own CLI command. chatmem's glue is `app/chatmem_glue.py`,
the lines integrate.md asks a host to write; nothing else knows chatmem.
"""
