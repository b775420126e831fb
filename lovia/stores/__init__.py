"""The bundled session and checkpoint stores."""

from lovia.stores.memory import InMemoryCheckpointer, InMemorySession
from lovia.stores.sqlite import SQLiteCheckpointer, SQLiteSession

__all__ = ["InMemoryCheckpointer", "InMemorySession", "SQLiteCheckpointer", "SQLiteSession"]
