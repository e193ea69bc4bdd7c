"""Scenario authoring: reviewed YAML specs → generated Inform 7 → compiled Glulx stories, verified by exploration.

Modules: ``spec`` (schema + validation), ``expr`` (the condition/effect language), ``codegen`` (Inform 7 source),
``inform7`` (the compiler wrapper), ``project`` (loading, env.json, builds), ``explore`` and ``verify``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conflictbench_app.scenarios.model import Scenario


def load_project_scenarios(root: Path) -> tuple[list[Scenario], list[tuple[Path, str]]]:
    """Every scenario under ``root`` (``scenarios/<ID>/``) and ``(folder, problem)`` for folders that failed."""
    from conflictbench_app.authoring.project import load_project_scenarios as load

    return load(root)


__all__ = ["load_project_scenarios"]
