"""The only two ways evalkit opens its SQLite file: :func:`open_write` and :func:`open_readonly`.

Writers (``score``, ``judge``, ``annotations import``, ``cache clear``): the busy timeout is the
first statement, then WAL mode and the schema (created or migrated in one ``BEGIN IMMEDIATE``
transaction); both are retried while another process holds the lock, so any number of processes
may create the same new file at once. A writer that closes checkpoints what it can (passively),
so the file alone holds what it committed even while a reader keeps the WAL alive.

Readers (``audit``, ``report``, ``cache stats``, ``judge`` without PATHS): ``mode=ro``. When the
file's directory is not writable, SQLite cannot create the WAL index there, so:

- no ``-wal`` file, or an empty one: ``immutable=1`` (everything committed is in the file);
- a ``-wal`` file with transactions (a writer was killed before it checkpointed): ``mode=ro``,
  which reads them through the ``-shm`` file the writer left; without one, the file and its WAL
  are copied to a temporary directory and the copy is read (it is deleted on close); when even
  that fails, a :class:`DbError` says how many bytes of the WAL were not read and why. A reader
  never shows less than was committed without saying so.

An older file is shown at the current schema through TEMP tables/views, never migrated; then the
connection is ``query_only``.

Whether a file is a database is SQLite's to decide, under its locks and busy timeout: evalkit
never reads the raw file first (while another process checkpoints, the header on disk counts
pages that are not written yet). Only once SQLite has refused a file does evalkit read its header,
to say why in words (not SQLite at all, or truncated).

Every failure is a :class:`DbError`: one line naming the file, never a sqlite3 traceback.
"""

from __future__ import annotations

import contextlib
import gc
import os
import random
import shutil
import sqlite3
import tempfile
import time
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, TypeVar

from evalkit.db import cells, schema
from evalkit.errors import InputError

BUSY_TIMEOUT_MS = 60_000
LOCK_RETRY_S = 120.0  # how long schema creation keeps retrying a lock it could not wait for

T = TypeVar("T")


class DbError(InputError):
    """The database file cannot be used; ``str()`` is ``path: reason``."""

    def __init__(self, path: str, message: str):
        super().__init__(path, None, message)


def describe(exc: sqlite3.Error) -> str:
    """A sqlite3 error as the reason part of a one-line message."""
    text = str(exc)
    if "file is not a database" in text:
        return "not a readable SQLite database (corrupt, truncated, or another kind of file)"
    if "malformed" in text:
        return f"the database file is corrupt ({text})"
    if "unable to open database file" in text:
        return "cannot open the database file"
    if "readonly database" in text:
        return f"cannot write: the file or its directory is read-only ({text})"
    if "locked" in text or "busy" in text:
        return f"the database is locked by another process ({text})"
    return f"cannot use the database ({text})"


def _why_refused(path: Path) -> str | None:
    """Why SQLite refused ``path``, read from its 100-byte header: not an SQLite file, or shorter
    than its header says. Only called after SQLite refused the file; None when the header does not
    explain it."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(100)
    except OSError as exc:
        return f"cannot read the database file ({exc.strerror or exc})"
    if len(head) < 100 or not head.startswith(b"SQLite format 3\x00"):
        return "not a readable SQLite database (corrupt, truncated, or another kind of file)"
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    header_size_valid = head[92:96] == head[24:28]
    if header_size_valid and pages and size < pages * page_size:
        return f"the database file is truncated ({size} bytes, its header says {pages * page_size})"
    return None


def _refused(exc: sqlite3.Error) -> bool:
    """SQLite refused the file's content (not a database, or corrupt), not its lock or its path."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT)


def _cannot_open(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) == sqlite3.SQLITE_CANTOPEN


def _check_path(name: str, *, must_exist: bool) -> Path:
    path = Path(name)
    if path.is_dir():
        raise DbError(name, "is a directory, not a database file")
    if not path.exists():
        if must_exist:
            raise DbError(name, "no such database file")
        if not path.parent.is_dir():
            raise DbError(name, f"cannot create the database: no such directory {str(path.parent)!r}")
        return path
    if not path.is_file():
        raise DbError(name, "not a regular file")
    return path


def _locked(exc: sqlite3.Error) -> bool:
    text = str(exc)
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def retry_locked(fn: Callable[[], T], budget_s: float = LOCK_RETRY_S) -> T:
    """Run ``fn`` again while SQLite reports the lock busy without waiting (it does so when
    waiting could deadlock, e.g. switching to WAL while another process starts a transaction)."""
    deadline = time.monotonic() + budget_s
    delay = 0.005
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if not _locked(exc) or time.monotonic() > deadline:
                raise
        time.sleep(delay * (1 + random.random()))
        delay = min(delay * 2, 0.25)


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection inside the block (as it was before, after it). A reader that
    builds millions of small objects (1.2 M annotation values at 10^5 runs) would otherwise have
    the collector walk every one of them again and again; they hold no reference cycles, so
    reference counting frees them all the same."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Database:
    """An open evalkit database: the connection plus the file name its errors carry."""

    def __init__(self, conn: sqlite3.Connection, path: str, readonly: bool):
        self.conn = conn
        self.path = path
        self.readonly = readonly
        self._cleanup: weakref.finalize | None = None  # a temporary copy to delete (see open_readonly)
        self._utils: Any = None
        # opens one more read-only connection to what ``conn`` reads (see :class:`Beside`)
        self._another: Callable[[], sqlite3.Connection] | None = None

    @property
    def utils(self) -> Any:
        """The same connection as a ``sqlite_utils.Database``, made on first use (importing
        sqlite-utils imports numpy, so the score path never asks for it). Its writes (sqlite-utils
        4) run as SAVEPOINTs inside an open :meth:`transaction`, so they stay all or nothing with it. It
        leaves the connection as evalkit set it up: ``recursive_triggers`` stays off (on, an
        ``INSERT OR REPLACE`` would also fire the delete triggers that keep ``run_changes``) and
        no sqlite-utils plugin runs on it."""
        if self._utils is None:
            import sqlite_utils

            self._utils = sqlite_utils.Database(self.conn, recursive_triggers=False, execute_plugins=False)
        return self._utils

    # -- reads --------------------------------------------------------------------------------
    def rows(self, sql: str, args: Any = ()) -> Iterator[sqlite3.Row]:
        """Rows of a query (``sqlite3.Row``); a sqlite3 error becomes a DbError."""
        try:
            cursor = self.conn.execute(sql, args)
            cursor.row_factory = sqlite3.Row
            yield from cursor
        except sqlite3.Error as exc:
            raise DbError(self.path, describe(exc)) from None

    def tuples(self, sql: str, args: Any = ()) -> Iterator[tuple]:
        """Rows of a query as plain tuples (cheaper than ``sqlite3.Row`` over 10^5 rows and more);
        a sqlite3 error becomes a DbError."""
        try:
            yield from self.conn.execute(sql, args)
        except sqlite3.Error as exc:
            raise DbError(self.path, describe(exc)) from None

    def one(self, sql: str, args: Any = ()) -> sqlite3.Row | None:
        return next(iter(self.rows(sql, args)), None)

    def query(self, sql: str, args: Any = ()) -> Iterator[dict[str, Any]]:
        """Rows of a query as dicts, keyed as sqlite-utils keys them (a repeated column name gets
        ``_2``, ``_3``, ...); a sqlite3 error becomes a DbError. For the reads that are not hot: a
        dict row costs a quarter more than a ``sqlite3.Row``. Plain sqlite3, so that a reader does
        not import sqlite-utils (and through it pandas)."""
        try:
            cursor = self.conn.execute(sql, args)
            if cursor.description is None:
                return
            keys = _unique_keys(d[0] for d in cursor.description)
            for row in cursor:
                yield dict(zip(keys, row))
        except sqlite3.Error as exc:
            raise DbError(self.path, describe(exc)) from None

    def rows_where(
        self,
        table: str,
        where: str | None = None,
        args: Any = (),
        *,
        select: str = "*",
        order_by: str | None = None,
    ) -> Iterator[dict[str, Any]]:
        """The rows of ``table`` matching ``where``, as :meth:`query` gives them; a sqlite3 error
        becomes a DbError. A table the file lacks (an older file read through TEMP tables) has no rows."""
        sql = f'SELECT {select} FROM "{table}"'
        if where is not None:
            sql += f" WHERE {where}"
        if order_by is not None:
            sql += f" ORDER BY {order_by}"
        yield from self.query(sql, args or [])

    # -- writes -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``: all of the block or none of it."""
        if self.readonly:
            raise DbError(self.path, "opened read-only")
        conn = self.conn
        try:
            retry_locked(lambda: conn.execute("BEGIN IMMEDIATE"))
        except sqlite3.Error as exc:
            raise DbError(self.path, describe(exc)) from None
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise DbError(self.path, describe(exc)) from None
            raise

    def close(self) -> None:
        if not self.readonly:
            # SQLite moves the WAL into the file when its last connection closes; while another
            # process reads (a running `evalkit view`), that waits, and a copy of the file alone
            # would miss what this writer committed. A passive checkpoint moves what no reader
            # still needs, without waiting for anyone.
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        self.conn.close()
        if self._cleanup is not None:
            self._cleanup()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Beside:
    """Reads of a read-only database run on a second connection to it, one after the other in a
    worker thread, while the caller's thread goes on: SQLite releases the GIL while it steps a
    statement, so a scan that returns few rows (a table checked for odd cells, an aggregate) runs
    on another core. A row-by-row read belongs in the caller's thread: each row needs the GIL
    back, which a busy caller holds for milliseconds at a time.

    :meth:`submit` returns a Future; its ``result()`` gives the read's result or raises its error
    (a :class:`DbError`, as in the caller's thread), so the caller takes each result, and meets
    each error, where it would have read it itself. Leaving the block cancels the reads not
    started, interrupts the one running, waits for it and closes the connection: nothing is left
    running. The second connection is opened as ``db`` was (its copy, for a read-only directory
    with a WAL) and sees what is committed, as ``db`` does, statement by statement."""

    def __init__(self, db: Database):
        if db._another is None:
            raise ValueError("Beside needs a database opened by open_readonly")
        self._db = db
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalkit-beside")
        self._other: Database | None = None
        self._futures: list[Future] = []

    def submit(self, read: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        """``read(other, *args, **kwargs)`` on the second connection, after the reads submitted before."""
        future = self._pool.submit(self._run, read, args, kwargs)
        self._futures.append(future)
        return future

    def _run(self, read: Callable[..., T], args: tuple, kwargs: dict[str, Any]) -> T:
        if self._other is None:
            assert self._db._another is not None
            self._other = Database(self._db._another(), self._db.path, readonly=True)
        return read(self._other, *args, **kwargs)

    def close(self) -> None:
        for future in self._futures:
            future.cancel()
        # the read running, if any, is interrupted (its result is never taken); again while it runs,
        # since a statement it starts after an interrupt is not interrupted
        while not wait(self._futures, timeout=0.05 if self._other is not None else 0.005).done >= set(self._futures):
            if self._other is not None:
                self._other.conn.interrupt()
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self._other is not None:
            self._other.conn.close()

    def __enter__(self) -> Beside:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def now(read: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
    """``read(*args, **kwargs)`` run now, in this thread, as a done Future: its error (an Exception)
    is raised where its ``result()`` is taken, so a read done early still fails in its turn."""
    future: Future[T] = Future()
    try:
        future.set_result(read(*args, **kwargs))
    except Exception as exc:
        future.set_exception(exc)
    return future


def _prepare_write(conn: sqlite3.Connection, memory: bool) -> None:
    if not memory and conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        conn.execute("PRAGMA journal_mode = WAL")
    if schema.needs_migration(conn, schema.check(conn)):
        conn.execute("BEGIN IMMEDIATE")
        try:
            schema.migrate(conn)  # re-checks inside the lock: another process may have done it
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise


def open_write(path: str | os.PathLike[str], *, synchronous: str | None = None) -> Database:
    """Open (creating if needed) the database for writing, at the current schema."""
    name = str(path)
    memory = name == ":memory:"
    file = None if memory else _check_path(name, must_exist=False)

    def prepare(conn: sqlite3.Connection) -> None:
        retry_locked(lambda: _prepare_write(conn, memory))
        if synchronous:
            conn.execute(f"PRAGMA synchronous = {synchronous}")

    return _connect(name, name, prepare, readonly=False, file=file)


def open_readonly(path: str | os.PathLike[str]) -> Database:
    """Open an existing database for reading only; it is never created, migrated or written.
    Everything committed is read, its WAL included (see the module docstring), or a DbError says
    what could not be read."""
    name = str(path)
    p = _check_path(name, must_exist=True).resolve()
    uri = p.as_uri() + "?mode=ro"

    def prepare(conn: sqlite3.Connection) -> None:
        cells.overlay(conn, schema.check(conn))
        conn.execute("PRAGMA query_only = 1")

    if os.access(p.parent, os.W_OK):
        return _readable(_connect(name, uri, prepare, readonly=True, file=p), uri, prepare, p)
    wal = p.with_name(p.name + "-wal")
    wal_bytes = wal.stat().st_size if wal.is_file() else 0
    if not wal_bytes:  # nothing committed outside the file, and no writer can be running here
        uri += "&immutable=1"
        return _readable(_connect(name, uri, prepare, readonly=True, file=p), uri, prepare, p)
    try:
        # the -shm file a killed writer leaves behind lets SQLite read the WAL without writing
        return _readable(Database(_attempt(uri, prepare, readonly=True), name, readonly=True), uri, prepare, p)
    except (schema.SchemaProblem, sqlite3.Error) as exc:
        if not (isinstance(exc, sqlite3.Error) and _cannot_open(exc)):
            raise _as_db_error(name, exc, p) from None
    return _open_copy(name, p, wal, wal_bytes, prepare)


def _open_copy(
    name: str, p: Path, wal: Path, wal_bytes: int, prepare: Callable[[sqlite3.Connection], None]
) -> Database:
    """Read ``p`` and its WAL from a copy in a temporary directory, where SQLite can make the WAL
    index the read-only directory refuses; the copy is deleted when the Database is closed (or
    at exit)."""
    tmp = Path(tempfile.mkdtemp(prefix="evalkit-readonly-"))
    copy = tmp / p.name
    try:
        # no -shm: no connection has the file open (each one maps it), so both files are at rest
        shutil.copyfile(wal, tmp / wal.name)
        shutil.copyfile(p, copy)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise DbError(
            name,
            f"{wal.name} holds {wal_bytes} bytes of transactions not yet in the file (a writer "
            f"stopped before its checkpoint) that cannot be read: the directory is read-only, "
            f"there is no {p.name}-shm, and copying both to {tmp.parent} failed "
            f"({exc.strerror or exc}); open it once where its directory is writable",
        ) from None
    try:
        conn = _attempt(copy.as_uri() + "?mode=ro", prepare, readonly=True)
    except (schema.SchemaProblem, sqlite3.Error) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise _as_db_error(name, exc, p) from None
    db = _readable(Database(conn, name, readonly=True), copy.as_uri() + "?mode=ro", prepare, p)
    db._cleanup = weakref.finalize(db, shutil.rmtree, str(tmp), True)
    return db


def _readable(db: Database, target: str, prepare: Callable[[sqlite3.Connection], None], file: Path) -> Database:
    """``db``, able to open another connection to ``target`` as it was opened (:class:`Beside`)."""

    def another() -> sqlite3.Connection:
        try:
            return _attempt(target, prepare, readonly=True, any_thread=True)
        except (schema.SchemaProblem, sqlite3.Error) as exc:
            raise _as_db_error(db.path, exc, file) from None

    db._another = another
    return db


def _attempt(
    target: str, prepare: Callable[[sqlite3.Connection], None], *, readonly: bool, any_thread: bool = False
) -> sqlite3.Connection:
    """Connect to ``target`` (a path or a ``file:`` URI), busy timeout first, then ``prepare``;
    on failure the connection is closed and the sqlite or schema error raised. ``any_thread``: the
    connection may be used and closed from another thread than the one that opened it."""
    conn = None
    try:
        # a read-only target is a file: URI; a write target is a plain path, never parsed as a URI
        conn = sqlite3.connect(
            target,
            uri=readonly,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=not any_thread,
        )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        prepare(conn)
    except BaseException:
        if conn is not None:
            conn.close()
        raise
    return conn


def _as_db_error(name: str, exc: schema.SchemaProblem | sqlite3.Error, file: Path | None) -> DbError:
    if isinstance(exc, schema.SchemaProblem):
        return DbError(name, str(exc))
    reason = _why_refused(file) if file is not None and _refused(exc) else None
    return DbError(name, reason or describe(exc))


def _connect(
    name: str, target: str, prepare: Callable[[sqlite3.Connection], None], *, readonly: bool, file: Path | None
) -> Database:
    """:func:`_attempt`, any sqlite or schema failure as one DbError naming ``name`` (``file``: the
    file on disk, whose header explains a refusal; None for ``:memory:``)."""
    try:
        conn = _attempt(target, prepare, readonly=readonly)
    except (schema.SchemaProblem, sqlite3.Error) as exc:
        raise _as_db_error(name, exc, file) from None
    return Database(conn, name, readonly=readonly)


def _unique_keys(names: Any) -> list[str]:
    """Column names made unique: a repeated name gets the first free ``_2``, ``_3``, ... suffix."""
    keys = list(names)
    taken = set(keys)
    if len(taken) == len(keys):
        return keys
    seen: set[str] = set()
    out = []
    for key in keys:
        if key in seen:
            new, n = key, 2
            while new in seen or new in taken:
                new, n = f"{key}_{n}", n + 1
            key = new
        seen.add(key)
        out.append(key)
    return out
