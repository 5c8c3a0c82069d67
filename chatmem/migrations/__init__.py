"""chatmem's Alembic environment and revisions (see `chatmem.migrate`)."""
