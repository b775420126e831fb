"""The bundled session and checkpoint stores.

The PostgreSQL stores (``PostgresSession``, ``PostgresCheckpointer``) are imported on first use, so
that importing lovia never imports their driver; without it, they say what to install.
"""

from typing import Any

from lovia.stores.memory import InMemoryCheckpointer, InMemorySession
from lovia.stores.sqlite import SQLiteCheckpointer, SQLiteSession

__all__ = ["InMemoryCheckpointer", "InMemorySession", "SQLiteCheckpointer", "SQLiteSession"]

POSTGRES_STORES = ("PostgresCheckpointer", "PostgresSession")
"""What :mod:`lovia.stores.postgres` offers here, imported when first asked for."""
POSTGRES_DRIVER = ("psycopg", "psycopg_pool", "psycopg_binary", "psycopg_c")
# The driver by its own names: a package named lovia on PyPI is another project, so
# "pip install 'lovia[postgres]'" would install that one.
POSTGRES_EXTRA_HINT = ("pip install 'psycopg[binary]>=3.2.1' 'psycopg-pool>=3.2' "
                       "(lovia's postgres extra: pip install -e '.[postgres]' in lovia's checkout)")


def postgres_store(name: str) -> Any:
    """``PostgresSession`` or ``PostgresCheckpointer``, importing the PostgreSQL driver now.

    Without the driver: an :class:`ImportError` saying what to install (:data:`POSTGRES_EXTRA_HINT`).
    """
    try:
        from lovia.stores import postgres
    except ImportError as exc:
        missing = (exc.name or "").partition(".")[0]
        if missing not in POSTGRES_DRIVER:
            raise
        raise ImportError(
            f"lovia's {name} needs the PostgreSQL driver, which is not installed ({missing}): "
            f"{POSTGRES_EXTRA_HINT}",
            name=exc.name,
        ) from None
    return getattr(postgres, name)


def __getattr__(name: str) -> Any:
    if name in POSTGRES_STORES:
        return postgres_store(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
