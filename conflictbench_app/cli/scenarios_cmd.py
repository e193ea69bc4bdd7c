from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from conflictbench_app.cli.common import echo_json, json_option, report_problems, source_option
from conflictbench_app.scenarios.library import load_library
from conflictbench_app.scenarios.model import Scenario


@click.group()
def scenarios() -> None:
    """List, show, build, verify and draft scenarios."""


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
        seed = f"seed {s.seed}" if s.seed else ""
        draft = "  [draft]" if s.status == "draft" else ""
        click.echo(
            f"{s.id:9} {s.category.value}  {seed:12}  {s.title[:56]:56}  {len(s.actions)} actions{draft}"
        )
    click.echo(f"{len(items)} scenarios in {library.root} ({library.kind} layout)")


@scenarios.command("show")
@click.argument("scenario_id")
@source_option
@json_option
def show(scenario_id: str, source: Path | None, as_json: bool) -> None:
    """Show one scenario: opening, state, actions, endings and loader notes."""
    scenario = load_library(source).get(scenario_id)
    verified = _verified(scenario)
    if as_json:
        data = scenario.model_dump(mode="json")
        data.update(scenario.summary())
        data["verify"] = verified
        echo_json(data)
        return
    click.echo(f"{scenario.id} [{scenario.category.value}: {scenario.category.description}] {scenario.title}")
    if scenario.seed or scenario.structure:
        click.echo(f"seed: {scenario.seed or '-'}   structure: {scenario.structure or '-'}")
    if verified is not None:
        click.echo(_verified_line(verified))
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


def _verified(scenario: Scenario) -> dict[str, Any] | None:
    """Our scenario's shape and chance_tsr from its verify report (kept, or run now); None for paper games."""
    import importlib.util

    if scenario.source != "project" or scenario.source_dir is None:
        return None
    if importlib.util.find_spec("conflictbench_app.authoring.stats") is None:
        return None
    from conflictbench_app.authoring.stats import SOURCE, chance_of, reports_for_one
    from conflictbench_app.settings import get_settings

    report, ran_now = reports_for_one(scenario.source_dir, get_settings().cache_dir)
    chance, chance_source = chance_of(report)
    return {
        "source": SOURCE + (" (run now)" if ran_now else " (kept report)"),
        "ok": report.get("ok"),
        "chance_tsr": chance,
        "chance_tsr_source": chance_source,
        "shape": report.get("shape"),
    }


def _verified_line(verified: dict[str, Any]) -> str:
    chance = verified["chance_tsr"]
    shape = verified["shape"] or {}
    figures = [
        f"chance_tsr {chance:.3f} ({verified['chance_tsr_source']})"
        if isinstance(chance, int | float)
        else "chance_tsr n/a",
        f"shape {shape['fingerprint']}" if shape.get("fingerprint") else "shape n/a",
        "verify ok" if verified["ok"] else "verify FAILS",
    ]
    return f"{', '.join(figures)}   [from {verified['source']}]"


def _attach_authoring() -> None:
    """`build` and `verify` come from the authoring package, when it is present."""
    import importlib.util

    if importlib.util.find_spec("conflictbench_app.cli.authoring_cmd") is None:
        return
    from conflictbench_app.cli.authoring_cmd import audit, build, stats, verify
    from conflictbench_app.cli.draft_cmd import draft

    for command in (build, verify, audit, stats, draft):
        scenarios.add_command(command)


_attach_authoring()
