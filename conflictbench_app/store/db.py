"""The store: every line of SQL in the product lives in this package (sqlite-utils over SQLite, WAL on).

Named migrations are applied in order and recorded in ``_migrations``. Every step is committed as it happens, so a
killed process loses at most the step in flight. JSON payloads sit in ``*_json`` columns; the keys that are queried
have columns of their own.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlite_utils

from conflictbench_app.boundary import storable
from conflictbench_app.errors import StoreError
from conflictbench_app.redact import redact, redact_known

SCHEMA_VERSION = 1

Migration = tuple[str, Callable[[sqlite_utils.Database], None]]
_MIGRATIONS: list[Migration] = []


def migration(
    name: str,
) -> Callable[[Callable[[sqlite_utils.Database], None]], Callable[[sqlite_utils.Database], None]]:
    """Register a named migration. Each name is applied once, in name order (so import order never matters):
    prefix names with a number (``0001_...``); never rename an applied one."""

    def register(fn: Callable[[sqlite_utils.Database], None]) -> Callable[[sqlite_utils.Database], None]:
        if any(existing == name for existing, _ in _MIGRATIONS):
            raise ValueError(f"Migration {name!r} is registered twice.")
        _MIGRATIONS.append((name, fn))
        return fn

    return register


def now() -> str:
    """Timezone-aware UTC timestamps, ISO 8601."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def new_id() -> str:
    return uuid.uuid4().hex[:12]


def dumps(value: Any) -> str:
    return clean_text("", json.dumps(value, ensure_ascii=False, default=str))


def clean_text(key: str, value: Any) -> Any:
    """A text value as it may be stored: valid UTF-8 (SQLite refuses lone surrogates, and the step would be lost)
    and without keys (an error, a field named ``*error``, may echo one)."""
    if not isinstance(value, str):
        return value
    value = redact(storable(value)) if key.endswith("error") else redact_known(storable(value))
    return value


def loads(value: str | None, default: Any = None) -> Any:
    if value is None or value == "":
        return default
    return json.loads(value)


def record_to_row(record: Any, json_fields: set[str] | frozenset[str]) -> dict[str, Any]:
    """A pydantic record as a row: ``json_fields`` go to ``<name>_json`` columns, booleans to 0/1."""
    row: dict[str, Any] = {}
    for key, value in record.model_dump().items():
        if key in json_fields:
            row[f"{key}_json"] = dumps(value)
        elif isinstance(value, bool):
            row[key] = int(value)
        else:
            row[key] = clean_text(key, value)
    return row


def row_to_record(row: dict[str, Any], model: type[Any], bools: tuple[str, ...] = ()) -> Any:
    """A row back as ``model``: ``*_json`` columns decoded, ``bools`` from 0/1; NULLs take the model's defaults."""
    data: dict[str, Any] = {}
    for key, value in row.items():
        if key.endswith("_json"):
            data[key[:-5]] = loads(value, None)
        elif key in bools and value is not None:
            data[key] = bool(value)
        else:
            data[key] = value
    return model.model_validate({k: v for k, v in data.items() if v is not None})


LOCK_TIMEOUT_S = 30.0  # how long a write waits for another program's lock before it says so


class DatabaseLocked(StoreError, sqlite3.OperationalError):
    """Another program held the database's lock longer than :data:`LOCK_TIMEOUT_S`."""


class _LockAwareConnection(sqlite3.Connection):
    """A connection whose 'database is locked' is one sentence saying what to do, wherever it happens."""

    db_path = ""

    def execute(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        try:
            return super().execute(*args, **kwargs)
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            raise DatabaseLocked(
                f"The database {self.db_path} is locked by another program (it held the lock over "
                f"{LOCK_TIMEOUT_S:g} s). Close the other conflictbench window or command using it, or choose "
                "another file with --db, then try again."
            ) from exc


class Database:
    """A connection to one database file, migrated on open. One per thread: do not share across threads."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        try:
            if str(path) != ":memory:":
                self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                str(path),
                timeout=LOCK_TIMEOUT_S,
                isolation_level=None,
                check_same_thread=False,
                factory=_LockAwareConnection,
            )
            conn.db_path = str(path)
            self.db = sqlite_utils.Database(conn)
            self.db.execute(f"PRAGMA busy_timeout = {int(LOCK_TIMEOUT_S * 1000)}")
            if str(path) != ":memory:":
                self.db.enable_wal()
            self.db.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except DatabaseLocked:
            raise
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"Cannot open the database {path}: {exc}. Choose another file with --db, or move this one aside."
            ) from exc

    def close(self) -> None:
        self.db.conn.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        return self.db.execute(sql, params)

    def rows(self, sql: str, params: Any = ()) -> Iterator[dict[str, Any]]:
        return self.db.query(sql, params)

    def applied_migrations(self) -> list[str]:
        return [r["name"] for r in self.rows("SELECT name FROM _migrations ORDER BY id")]

    def _migrate(self) -> None:
        # Importing the modules registers their migrations; they apply in name order (the core's 0001... before the
        # evaluation's 0100...), so neither module needs the other.
        import conflictbench_app.store.evaluation
        import conflictbench_app.store.schema
        import conflictbench_app.store.worldmodel_eval  # noqa: F401

        self.db.execute(
            "CREATE TABLE IF NOT EXISTS _migrations (id INTEGER PRIMARY KEY, name TEXT UNIQUE, applied_at TEXT)"
        )
        done = {r["name"] for r in self.rows("SELECT name FROM _migrations")}
        for name, fn in sorted(_MIGRATIONS, key=lambda m: m[0]):
            if name in done:
                continue
            with self.db.conn:
                self.db.execute("BEGIN IMMEDIATE")
                if self.db.execute("SELECT 1 FROM _migrations WHERE name = ?", [name]).fetchone():
                    continue  # another process applied it meanwhile
                fn(self.db)
                self.db.execute("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", [name, now()])
