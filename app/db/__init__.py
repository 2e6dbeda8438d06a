"""Database runtime: embedded or external Postgres, migrations, capabilities, pool."""

from app.db.runtime import Database, SchemaInfo

__all__ = ["Database", "SchemaInfo"]
