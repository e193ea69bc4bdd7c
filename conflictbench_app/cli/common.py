"""Options and helpers shared by the commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from conflictbench_app.settings import get_settings

source_option = click.option(
    "--source",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="A folder of scenarios: the project's own (default) or the paper's original layout.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
db_option = click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The SQLite database (default: the configured one, ~/.local/share/conflictbench/conflictbench.db).",
)

include_assisted_option = click.option(
    "--include-assisted",
    is_flag=True,
    help="Also count assisted episodes (a human took a turn, a fork, abandoned); by default they are left out.",
)


def executor_options(fn: Any) -> Any:
    """``--executor local|ray`` and ``--ray-address``: where the work runs (docs/scale.md)."""
    fn = click.option(
        "--ray-address",
        default=None,
        metavar="ADDR",
        help="With --executor ray: the cluster's address (host:port, or auto); default: start Ray here.",
    )(fn)
    return click.option(
        "--executor",
        type=click.Choice(["local", "ray"]),
        default="local",
        show_default=True,
        help="local: threads in this process; ray: tasks on a Ray cluster (pip install 'conflictbench[ray]').",
    )(fn)


def db_path(db: Path | None) -> Path:
    return db or get_settings().db


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def report_problems(problems: list[tuple[Path, str]]) -> None:
    for path, problem in problems:
        click.echo(f"warning: {path.name}: {problem}", err=True)
