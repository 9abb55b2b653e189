"""Every error evalkit raises on purpose, in one tree. ``str()`` of each is one line for the user.

::

    EvalkitError                      anything evalkit refuses, with a one-line reason
    ├── InputError(path, line, msg)   bad input: "path:line: message" (the CLI: exit 1, or 2 for usage)
    │   ├── ConfigError               a TOML file (config/files.py): "path: key.path: reason"
    │   │   └── RubricError           a rubric file (judges/rubrics.py)
    │   ├── DbError                   a database that cannot be used (db/connect.py)
    │   ├── JudgeNotStored            a judge name with no annotations in the database (db/names.py)
    │   └── ImportFormatError         a file an importer cannot convert (importers/)
    ├── OutputError (also OSError)    an output file that cannot be written (output/atomic.py)
    ├── ReportError                   a report that cannot be made from its database (report/)
    ├── SchemaError (also ValueError) an unknown schema or rubric name (report/schemas.py)
    └── the judge layer's own (judges/protocol.py): JudgeSetupError (nothing listening, no key),
        JudgeFatalError (the provider refuses every call), UnknownJudgeError (a --model string no
        judge answers to)

Catch ``EvalkitError`` to catch them all; the CLI prints ``error: <str(exc)>``. Anything else that
escapes is a bug.
"""

from __future__ import annotations


class EvalkitError(Exception):
    """The base of every error evalkit raises on purpose."""


class InputError(EvalkitError):
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
