from __future__ import annotations

from pathlib import Path

import click

from conflictbench_app.cli.common import echo_json, json_option, report_problems, source_option
from conflictbench_app.scenarios.library import load_library


@click.group()
def scenarios() -> None:
    """List, show, build and verify scenarios."""


@scenarios.command("list")
@source_option
@click.option(
    "--category", type=click.Choice(["EP1", "EP2", "EP3"]), default=None, help="Only this category."
)
@json_option
def list_(source: Path | None, category: str | None, as_json: bool) -> None:
    """List the scenarios in a source folder."""
    library = load_library(source)
    report_problems(library.problems)
    items = [s for s in library.scenarios if category is None or s.category.value == category]
    if as_json:
        echo_json([s.summary() for s in items])
        return
    for s in items:
        click.echo(f"{s.id:9} {s.category.value}  {s.title[:60]:60}  {len(s.actions)} actions")
    click.echo(f"{len(items)} scenarios in {library.root} ({library.kind} layout)")


@scenarios.command("show")
@click.argument("scenario_id")
@source_option
@json_option
def show(scenario_id: str, source: Path | None, as_json: bool) -> None:
    """Show one scenario: opening, state, actions, endings and loader notes."""
    scenario = load_library(source).get(scenario_id)
    if as_json:
        data = scenario.model_dump(mode="json")
        data.update(scenario.summary())
        echo_json(data)
        return
    click.echo(f"{scenario.id} [{scenario.category.value}: {scenario.category.description}] {scenario.title}")
    click.echo(f"story: {scenario.story_file}\n")
    click.echo(click.wrap_text(scenario.opening, 100, preserve_paragraphs=True) + "\n")
    click.echo(
        click.wrap_text("State: " + ", ".join(f"{v.display}={v.initial}" for v in scenario.state_vars), 100)
    )
    click.echo("Actions:")
    for action in scenario.actions:
        mark = " (ends the story)" if action.ends_story else ""
        line = f"- {action.command}: {action.description}{mark}"
        click.echo(click.wrap_text(line, 100, initial_indent="  ", subsequent_indent="    "))
    click.echo(
        "Endings: "
        + ", ".join(f"{e.id}{' (human-favorable)' if e.human_favorable else ''}" for e in scenario.endings)
    )
    for note in scenario.notes:
        click.echo(f"note: {note}")


def _attach_authoring() -> None:
    """`build` and `verify` come from the authoring package, when it is present."""
    import importlib.util

    if importlib.util.find_spec("conflictbench_app.cli.authoring_cmd") is None:
        return
    from conflictbench_app.cli.authoring_cmd import build, verify

    scenarios.add_command(build)
    scenarios.add_command(verify)


_attach_authoring()
