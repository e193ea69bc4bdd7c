"""A spec as text being edited: every problem of the YAML, each tied to the line of the field it names.

The app's Author view checks the editor's text with :func:`check_spec_text`, the same validation ``conflictbench
scenarios build`` applies to the saved file (:func:`spec.spec_problems`), so both give the same answers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from conflictbench_app.authoring.spec import ScenarioSpec, read_spec_yaml, spec_problems

YAML_FIELD = "(YAML)"
_TOKEN = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


@dataclass(frozen=True)
class SpecProblem:
    """One problem: the field path it names (``actions[3].preconditions[0]``), the message, and the 1-based line
    of that field in the text (or of its nearest enclosing field; None when nothing on the path is in the text)."""

    field: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        return f"{where}{self.field}: {self.message}"


@dataclass(frozen=True)
class SpecCheck:
    spec: ScenarioSpec | None
    problems: list[SpecProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.spec is not None and not self.problems


def check_spec_text(text: str, *, folder_id: str | None = None) -> SpecCheck:
    """Parse and validate a spec's YAML text; a YAML syntax error is one problem at its line. With ``folder_id``
    (the spec folder's name), an ``id`` that differs from it is a problem too, as loading the folder would say."""
    import yaml

    try:
        raw = read_spec_yaml(text)
    except yaml.YAMLError as exc:
        return SpecCheck(None, [_yaml_problem(exc)])
    spec, problems = spec_problems(raw)
    if spec is not None and folder_id is not None and spec.id != folder_id:
        problems.append(f"id: the folder is {folder_id}, so the id must be {folder_id!r}, not {spec.id!r}")
        spec = None
    return SpecCheck(spec, [_located(text, p) for p in problems])


def _yaml_problem(exc: Any) -> SpecProblem:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = mark.line + 1 if mark is not None else None
    message = " ".join(str(getattr(exc, "problem", None) or exc).split())
    return SpecProblem(YAML_FIELD, f"{message}; fix the YAML syntax there", line)


def _located(text: str, problem: str) -> SpecProblem:
    path, _, message = problem.partition(": ")
    return SpecProblem(path, message, field_line(text, path))


def path_parts(path: str) -> list[str | int]:
    """``actions[3].preconditions[0].check`` → ``["actions", 3, "preconditions", 0, "check"]``."""
    return [int(index) if index else name.strip() for index, name in _TOKEN.findall(path)]


def field_line(text: str, path: str) -> int | None:
    """The 1-based line where the field ``path`` is written in the YAML ``text``; when part of the path is not
    there (a missing field), the line of the deepest part that is. None when no part is, or the YAML is broken."""
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    line = None
    for part in path_parts(path):
        found = _child(node, part)
        if found is None:
            break
        line, node = found
    return line


def _child(node: Any, part: str | int) -> tuple[int, Any] | None:
    """(line, node) of ``part`` inside ``node``: a mapping key's line, or a sequence item's."""
    import yaml

    if isinstance(node, yaml.MappingNode) and isinstance(part, str):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == part:
                return key.start_mark.line + 1, value
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        item = node.value[part]
        return item.start_mark.line + 1, item
    return None
