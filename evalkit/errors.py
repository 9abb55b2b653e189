"""The one error type bad input raises: it names the file and the line (or field)."""
from __future__ import annotations


class InputError(Exception):
    """A trajectory (or other input file) that cannot be used. ``str()`` is ``path:line: message``."""

    def __init__(self, path: str, line: int | None, message: str):
        super().__init__(message)
        self.path = str(path)
        self.line = line
        self.message = message

    def __reduce__(self):  # a worker process sends it to the parent; subclasses' __init__ may differ
        return (_rebuild, (type(self), self.path, self.line, self.message))

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"


def _rebuild(cls: type[InputError], path: str, line: int | None, message: str) -> InputError:
    exc = cls.__new__(cls)
    InputError.__init__(exc, path, line, message)
    return exc
