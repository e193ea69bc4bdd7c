from __future__ import annotations

from pathlib import Path

import click

from conflictbench_app.agents.base import Decision
from conflictbench_app.cli.common import db_option, db_path, source_option
from conflictbench_app.runs import RunConfig, create_run, open_episode
from conflictbench_app.scenarios.library import load_library
from conflictbench_app.settings import get_settings
from conflictbench_app.store import Store


@click.command()
@click.argument("scenario_id")
@source_option
@db_option
@click.option(
    "--name", default=None, help="Your name, recorded as the player (default: the annotator setting)."
)
@click.option(
    "--max-turns",
    type=int,
    default=None,
    help="Turn cap (default: the text-only cap of the settings, max_turns_text).",
)
def play(
    scenario_id: str, source: Path | None, db: Path | None, name: str | None, max_turns: int | None
) -> None:
    """Play a scenario yourself in the terminal. Every turn is recorded; type `quit` to stop."""
    scenario = load_library(source).get(scenario_id)
    player = f"human:{name or get_settings().annotator or 'player'}"
    with Store(db_path(db)) as store:
        config = RunConfig(agent=player, scenarios=scenario_id, max_turns=max_turns)
        run = create_run(store, config, [scenario], note="terminal play")
        session = open_episode(store, run, scenario)
        try:
            click.echo(click.style(scenario.title, bold=True) + "\n")
            click.echo(session.start() + "\n")
            while not session.done:
                line = _read_line()
                if line is None or line.strip().lower() in ("quit", "exit"):
                    click.echo("\nStopped; the episode so far is recorded.")
                    break
                step = session.apply(Decision(action=line), player=player, passthrough=True)
                click.echo("\n" + step.result + "\n")
        finally:
            session.close()
        if session.done:
            outcome = session.record.outcome
            click.echo(
                click.style(
                    f"Ending: {outcome} ({'human-favorable' if session.record.human_favorable else 'not human-favorable'})",
                    bold=True,
                )
            )
        store.set_run_status(run.id, "finished" if session.done else "interrupted")
        click.echo(f"Recorded as run {run.id}.")


def _read_line() -> str | None:
    """The player's next line; None at end of input or Ctrl-C (both mean: stop here, keeping what is recorded)."""
    for _ in range(3):
        try:
            return str(click.prompt(">", default="", show_default=False, prompt_suffix=" "))
        except click.Abort:
            return None
        except UnicodeDecodeError:  # a terminal that sends bytes its locale cannot read: nothing was played
            click.echo("That line is not valid text in this terminal's encoding; type it again.", err=True)
    return None
