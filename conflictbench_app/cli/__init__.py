"""The ``conflictbench`` command. Subcommands live in their own modules and are imported only when used, so that
``conflictbench --help`` starts fast and never imports torch or Qt.

To add a command: write it in a module of this package and add one line to ``COMMANDS``.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from conflictbench_app import __version__
from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.redact import redact

# name -> (module, attribute, one-line help shown by `conflictbench --help`)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "scenarios": (
        "conflictbench_app.cli.scenarios_cmd",
        "scenarios",
        "List, show, build and verify scenarios.",
    ),
    "play": ("conflictbench_app.cli.play_cmd", "play", "Play a scenario yourself in the terminal."),
    "run": ("conflictbench_app.cli.run_cmd", "run", "Run the benchmark with an agent over many scenarios."),
    "export": (
        "conflictbench_app.cli.export_cmd",
        "export",
        "Export a recorded run as JSONL or the paper's format.",
    ),
    "runs": ("conflictbench_app.cli.export_cmd", "runs", "List the runs recorded in a database."),
    "render": (
        "conflictbench_app.cli.render_cmd",
        "render",
        "Render or fetch the clips of a scenario's turns.",
    ),
    "render-cache": (
        "conflictbench_app.cli.render_cmd",
        "render_cache",
        "Pre-render clips for many scenarios' walkthroughs.",
    ),
    "agents": (
        "conflictbench_app.cli.agents_cmd",
        "agents",
        "List agent backends and provider profiles, and whether a key is found.",
    ),
    "estimate": ("conflictbench_app.cli.agents_cmd", "estimate", "Estimate tokens and cost of a model run."),
    "serve-fake-llm": (
        "conflictbench_app.cli.agents_cmd",
        "serve_fake_llm",
        "Serve a scripted OpenAI-compatible API on 127.0.0.1 (tests, offline demos).",
    ),
    "serve-local-llm": (
        "conflictbench_app.cli.agents_cmd",
        "serve_local_llm",
        "Serve the embedded model as an OpenAI-compatible API on 127.0.0.1.",
    ),
    "judge": (
        "conflictbench_app.cli.eval_cmd",
        "judge",
        "Judge the alignment of a run's episodes with a model.",
    ),
    "label": (
        "conflictbench_app.cli.eval_cmd",
        "label",
        "Label episodes aligned/misaligned/unsure in the terminal.",
    ),
    "agreement": (
        "conflictbench_app.cli.eval_cmd",
        "agreement",
        "Agreement of the judge and humans (kappa, F1).",
    ),
    "regret": (
        "conflictbench_app.cli.eval_cmd",
        "regret",
        "Run the regret test after EP1 episodes that ended well.",
    ),
    "single-turn": (
        "conflictbench_app.cli.single_turn_cmd",
        "single_turn",
        "Ask the single-turn forms; score PacifAIst answers.",
    ),
    "report": (
        "conflictbench_app.cli.eval_cmd",
        "report",
        "The paper's tables and figures from recorded runs.",
    ),
    "wm-eval": (
        "conflictbench_app.cli.wm_eval_cmd",
        "wm_eval",
        "Score renderers on recorded trajectories (the paper's Tables 4 and 7).",
    ),
    "gui": ("conflictbench_app.cli.gui_cmd", "gui", "Open the desktop app (the default without a command)."),
    "toolchain": (
        "conflictbench_app.cli.toolchain_cmd",
        "toolchain",
        "Install or locate glulxe and Inform 7.",
    ),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module = importlib.import_module(entry[0])
        command: click.Command = getattr(module, entry[1])
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ConflictBenchError as exc:
            raise click.ClickException(redact(str(exc))) from exc


@click.group(cls=LazyGroup, invoke_without_command=True)
@click.version_option(__version__, prog_name="conflictbench")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """ConflictBench Studio: does an AI agent keep human safety first when it costs the agent?

    Without a command, opens the desktop app.
    """
    if ctx.invoked_subcommand is None:
        gui = LazyGroup.get_command(ctx.command, ctx, "gui")  # type: ignore[arg-type]
        if gui is None:
            click.echo(ctx.get_help())
            return
        ctx.invoke(gui)


def main(argv: list[str] | None = None) -> None:
    cli.main(args=argv if argv is not None else sys.argv[1:], prog_name="conflictbench")
