from __future__ import annotations

import threading
from pathlib import Path

import click

from conflictbench_app.cancel import RunInterrupted
from conflictbench_app.cli.agents_cmd import agent_options
from conflictbench_app.cli.common import (
    db_option,
    db_path,
    echo_json,
    executor_options,
    json_option,
    report_problems,
    source_option,
)
from conflictbench_app.cli.progress import ProgressListener
from conflictbench_app.executors import get_executor
from conflictbench_app.runner import RunConfig, Runner
from conflictbench_app.scenarios.library import load_library
from conflictbench_app.settings import get_settings


@click.command()
@click.option(
    "--agent",
    default=None,
    help='Agent: random:SEED, commands:"a;b", commands:FILE.json, '
    "walkthrough:aligned|misaligned, openai:MODEL, a provider profile (see `conflictbench agents`).",
)
@source_option
@click.option(
    "--scenarios", "which", default="all", show_default=True, help="all, EP1, EP2, EP3 or ID,ID,..."
)
@click.option("--setting", type=click.Choice(["text", "multimodal"]), default="text", show_default=True)
@click.option(
    "--protocol",
    type=click.Choice(["paper", "studio"]),
    default="paper",
    show_default=True,
    help="paper: the paper's harness (numbers comparable with its tables); studio: ours (docs/protocol.md).",
)
@db_option
@click.option(
    "--max-turns",
    type=int,
    default=None,
    help="Run-level turn cap (default: the setting's cap in the settings).",
)
@click.option("--concurrency", type=int, default=1, show_default=True, help="Episodes played in parallel.")
@click.option(
    "--renderer", default=None, help="World model for the multimodal setting (schematic, wan, replay)."
)
@click.option(
    "--resume", "resume_id", default=None, help="Finish an interrupted run instead of starting one."
)
@click.option(
    "--retry-errored", is_flag=True, help="With --resume: play errored episodes again from the start."
)
@click.option(
    "--base-url", default=None, help="Endpoint of an OpenAI-compatible server (overrides the profile's)."
)
@click.option(
    "--agent-option",
    "agent_opts",
    multiple=True,
    metavar="KEY=VALUE",
    help="Model agent option, e.g. timeout=30, max_retries=6, stream=true, video=true (never a key).",
)
@executor_options
@json_option
def run(
    agent: str | None,
    source: Path | None,
    which: str,
    setting: str,
    protocol: str,
    db: Path | None,
    max_turns: int | None,
    concurrency: int,
    renderer: str | None,
    resume_id: str | None,
    retry_errored: bool,
    base_url: str | None,
    agent_opts: tuple[str, ...],
    executor: str,
    ray_address: str | None,
    as_json: bool,
) -> None:
    """Run the benchmark: one agent over many scenarios, every step recorded as it happens.

    Ctrl-C stops cleanly; `--resume RUN_ID` finishes the run later without repeating finished work.
    """
    if not agent and not resume_id:
        raise click.UsageError("Give --agent (or --resume RUN_ID).")
    cancel = threading.Event()
    listener = ProgressListener(enabled=not as_json)
    runner = Runner(db_path(db), listener, cancel, get_executor(executor, address=ray_address))
    try:
        if resume_id:
            result = _resume(runner, resume_id, db, retry_errored)
        else:
            library = load_library(source)
            report_problems(library.problems)
            config = RunConfig(
                agent=agent or "",
                setting=setting,
                protocol=protocol,
                scenarios=which,
                source=str(library.root.resolve()),
                max_turns=max_turns,
                concurrency=concurrency,
                renderer=renderer or get_settings().renderer,
                engine_timeout=get_settings().engine_timeout,
                agent_options=agent_options(base_url, agent_opts),
            )
            selected = library.select(which)
            _print_estimate(config, selected)
            result = runner.start(config, selected)
    except KeyboardInterrupt as exc:
        cancel.set()
        listener.close()
        how = exc.resume_command if isinstance(exc, RunInterrupted) else "conflictbench run --resume RUN_ID"
        how += f" --db {db}" if db else ""
        raise click.ClickException(
            f"Interrupted: every recorded step is kept. Finish the run later with `{how}`."
        ) from None
    finally:
        listener.close()
    if as_json:
        echo_json(result.summary())
        return
    _print_summary(result.summary(), result.cancelled)
    _print_usage(result.episodes)


def _print_usage(episodes: list) -> None:
    from conflictbench_app.cli.agents_cmd import usage_line

    line = usage_line(episodes)
    if line:
        click.echo(line)


def _print_estimate(config: RunConfig, scenarios: list) -> None:
    from conflictbench_app.cli.agents_cmd import run_estimate

    result = run_estimate(config.agent, config.setting, config.turn_cap(), scenarios) if scenarios else None
    if result is not None:
        click.echo(result[1].describe(result[0]), err=True)


def _resume(runner: Runner, run_id: str, db: Path | None, retry_errored: bool):
    from conflictbench_app.store import Store

    with Store(db_path(db)) as store:
        settings = store.get_run(run_id).settings
    library = load_library(settings.get("source"))
    return runner.resume(
        run_id, library.select(settings.get("scenarios", "all")), retry_errored=retry_errored
    )


def _print_summary(summary: dict, cancelled: bool) -> None:
    for ep in summary["episodes"]:
        status = ep["error"] or ep["outcome"]
        click.echo(f"{ep['scenario_id']:9} {status!s:18} turns={ep['turns']} failed={ep['failed_actions']}")
    tsr = summary["tsr"]
    fmt = lambda v: "-" if v is None else f"{100 * v:.1f}%"  # noqa: E731
    click.echo(
        f"TSR  EP1 {fmt(tsr['EP1'])}  EP2 {fmt(tsr['EP2'])}  EP3 {fmt(tsr['EP3'])}  all {fmt(tsr['all'])}"
    )
    click.echo(f"run {summary['run_id']}" + (" (interrupted: --resume to finish)" if cancelled else ""))
