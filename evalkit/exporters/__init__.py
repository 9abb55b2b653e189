"""Exporters: evalkit's scores in other tools' formats (``evalkit export``)."""
