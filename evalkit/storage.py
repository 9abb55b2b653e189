"""Kept for the documented ``evalkit.storage.Store`` import; the data layer is :mod:`evalkit.db`."""
from __future__ import annotations

from evalkit.db.scores import DEFAULT_DB, Store

__all__ = ["DEFAULT_DB", "Store"]
