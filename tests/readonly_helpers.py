"""Shared pieces of the read-only database tests: running as `nobody` when the tests run as root
(file permissions do not bind root; util-linux `setpriv` drops the privileges for real), and a
directory `nobody` can reach."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
needs_unprivileged = pytest.mark.skipif(
    os.geteuid() == 0 and shutil.which("setpriv") is None,
    reason="running as root, where file modes do not apply, and no setpriv to drop privileges",
)


def unprivileged() -> list[str]:
    """The command prefix that runs a process as `nobody` when this one is root, else nothing."""
    return AS_NOBODY if os.geteuid() == 0 else []


@contextlib.contextmanager
def shared_directory(prefix: str) -> Iterator[Path]:
    """A new directory `nobody` can reach (pytest's tmp_path sits under a 0700 directory), removed
    after, whatever modes the test left on the directories inside it."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    try:
        yield path
    finally:
        for p in [path, *path.rglob("*")]:
            if p.is_dir():
                p.chmod(0o755)
        shutil.rmtree(path)
