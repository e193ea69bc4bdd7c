"""The store. ``Store(path)`` opens (and migrates) a database; all SQL lives in this package.

Areas add a mixin module here (its migrations in ``schema.py`` or its own module imported by ``schema.py``) and
join it to :class:`Store` below.
"""

from __future__ import annotations

from pathlib import Path

from conflictbench_app.store.db import Database
from conflictbench_app.store.evaluation import EvaluationMixin
from conflictbench_app.store.runs import RunsMixin
from conflictbench_app.store.worldmodel_eval import WorldModelEvalMixin


class Store(RunsMixin, EvaluationMixin, WorldModelEvalMixin):
    def __init__(self, path: Path | str) -> None:
        self.database = Database(path)

    @property
    def path(self) -> Path:
        return self.database.path

    def close(self) -> None:
        self.database.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["Store"]
