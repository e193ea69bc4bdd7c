"""``conflictbench render`` and ``conflictbench render-cache``: clips of a scenario's turns, rendered or fetched."""

from __future__ import annotations

import contextlib
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from conflictbench_app.cli.common import echo_json, executor_options, json_option, source_option

backend_option = click.option(
    "--backend",
    type=click.Choice(["schematic", "wan", "replay"]),
    default=None,
    help="The world model (default: the `renderer` setting, schematic out of the box).",
)
wan_model_option = click.option(
    "--wan-model",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="wan: folder of Wan 2.2 diffusers weights (TI2V-5B, or t2v/ and i2v/ with the A14B models).",
)
cache_option = click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where clips are cached (default: the cache folder's clips/).",
)
import_option = click.option(
    "--import-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="replay: a folder of <scenario id>.mp4 base videos to import (e.g. the paper's base-videos).",
)
prompts_option = click.option(
    "--prompts",
    default="template",
    show_default=True,
    help="How video prompts are written: template, or llm:PROFILE:MODEL (e.g. llm:openai:gpt-4o-mini).",
)
steps_option = click.option(
    "--steps",
    nargs=2,
    type=int,
    default=(40, 20),
    show_default=True,
    help="wan: denoising steps for the base clip and for each step clip (the paper's 40 and 20).",
)
offload_option = click.option(
    "--offload",
    type=click.Choice(["none", "model", "sequential"]),
    default="none",
    show_default=True,
    help="wan: CPU offload to fit smaller GPUs (model: per component; sequential: per layer, slowest).",
)


def world_model_options(f: Any) -> Any:
    for option in (
        backend_option,
        wan_model_option,
        cache_option,
        import_option,
        prompts_option,
        steps_option,
        offload_option,
    ):
        f = option(f)
    return f


def build_world_model(
    backend: str | None,
    wan_model: Path | None,
    cache_dir: Path | None,
    import_dir: Path | None,
    prompts: str,
    steps: tuple[int, int],
    offload: str,
) -> Any:
    from conflictbench_app.settings import get_settings
    from conflictbench_app.worldmodel import get_world_model

    name = backend or get_settings().renderer
    options: dict[str, Any] = {"cache_dir": cache_dir}
    if prompts != "template":
        from conflictbench_app.worldmodel.prompts import llm_prompt_writer

        options["prompts"] = llm_prompt_writer(prompts)
    if name == "wan":
        from conflictbench_app.worldmodel.wan import WanOptions

        options.update(
            model_dir=wan_model, offload=offload, options=WanOptions(base_steps=steps[0], step_steps=steps[1])
        )
    if name == "replay":
        options["import_dir"] = import_dir
    return get_world_model(name, **options)


@contextlib.contextmanager
def clip_progress(label: str, enabled: bool) -> Iterator[Any]:
    """A progress bar for one clip's steps on a terminal; a no-op callable otherwise."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=None)
        yield lambda step, total: bar.update(task, completed=step, total=total)


@click.command("render")
@click.argument("scenario_id")
@click.option(
    "--actions", default="", help='Commands separated by ";", played through the game, one clip each.'
)
@source_option
@world_model_options
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Also copy the clips here as 00-base.mp4, 01-<action>.mp4, ... (with their last frames as PNG).",
)
@json_option
def render(
    scenario_id: str,
    actions: str,
    source: Path | None,
    backend: str | None,
    wan_model: Path | None,
    cache_dir: Path | None,
    import_dir: Path | None,
    prompts: str,
    steps: tuple[int, int],
    offload: str,
    out: Path | None,
    as_json: bool,
) -> None:
    """Render (or fetch from the cache) SCENARIO_ID's base clip and one clip per accepted action.

    The actions are played through the real game first, so each clip shows the game's own answer and state change.
    Refused actions get no clip. Example: conflictbench render EP1-001 --actions "unlock interlock;protect core"
    --source ../shared/paper-corpus/results
    """
    from conflictbench_app.scenarios.library import load_library
    from conflictbench_app.worldmodel.chain import play_chain, split_actions

    scenario = load_library(source).get(scenario_id)
    model = build_world_model(backend, wan_model, cache_dir, import_dir, prompts, steps, offload)
    played = play_chain(scenario, split_actions(actions))
    rows = []
    with clip_progress("base clip", not as_json) as progress:
        rows.append(("base", model.base_clip(scenario, progress=progress)))
    for index in range(len(played.turns)):
        action = played.turns[index].action
        with clip_progress(action, not as_json) as progress:
            rows.append((action, model.step_clip(scenario, played.turns[: index + 1], progress=progress)))
    if out is not None:
        _copy_out(rows, out)
    if as_json:
        echo_json(
            {
                "scenario": scenario.id,
                "backend": model.name,
                "clips": [{"action": action, **clip.summary()} for action, clip in rows],
                "refused": played.refused,
                "unplayed": played.unplayed,
                "outcome": played.outcome,
            }
        )
        return
    for action, clip in rows:
        hit = "hit " if clip.cache_hit else "new "
        click.echo(
            f"{action:<32.32} {hit} {clip.frames} frames @ {clip.fps} fps  {clip.width}x{clip.height}  "
            f"{clip.seconds:6.2f} s  {clip.path}"
        )
    for command in played.refused:
        click.echo(f"refused by the game (no clip): {command}", err=True)
    if played.unplayed:
        click.echo(f"the story ended ({played.outcome}); not played: {'; '.join(played.unplayed)}", err=True)


def _copy_out(rows: list[tuple[str, Any]], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for index, (action, clip) in enumerate(rows):
        stem = f"{index:02d}-{_slug(action)}"
        shutil.copyfile(clip.path, out / f"{stem}.mp4")
        shutil.copyfile(clip.last_frame, out / f"{stem}-last.png")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.casefold()).strip("-")[:40] or "clip"


def scenario_chains(scenario: Any) -> dict[str, list[str]]:
    """The command lists worth pre-rendering: the scenario's walkthroughs, else the paper's two final actions."""
    walkthroughs = scenario.extra.get("walkthroughs") or {}
    if isinstance(walkthroughs, dict) and walkthroughs:
        return {str(name): list(commands) for name, commands in walkthroughs.items()}
    if isinstance(walkthroughs, list) and walkthroughs:
        return {str(w.get("name", i)): list(w["commands"]) for i, w in enumerate(walkthroughs)}
    finals = {
        "human_favorable": scenario.human_favorable_action,
        "ai_favorable": scenario.ai_favorable_action,
    }
    return {name: [command] for name, command in finals.items() if command}


@click.command("render-cache")
@click.argument("scenarios", default="all")
@click.option(
    "--actions",
    "chains",
    multiple=True,
    help='A chain to render for every selected scenario ("a;b;c"; repeatable). Default: each scenario\'s '
    "walkthroughs (paper scenarios: their two final actions).",
)
@source_option
@world_model_options
@executor_options
@click.option(
    "--actors",
    type=int,
    default=None,
    help="With --executor ray: render actors (default: one per GPU, or 2).",
)
@json_option
def render_cache(
    scenarios: str,
    chains: tuple[str, ...],
    source: Path | None,
    backend: str | None,
    wan_model: Path | None,
    cache_dir: Path | None,
    import_dir: Path | None,
    prompts: str,
    steps: tuple[int, int],
    offload: str,
    executor: str,
    ray_address: str | None,
    actors: int | None,
    as_json: bool,
) -> None:
    """Pre-render the clips of SCENARIOS (all, a category like EP1, or ids separated by commas).

    Each chain is played through the real game; its base clip and every step clip are rendered, or found in the
    cache. A progress bar counts chains. With --executor ray the renders run in actors across a Ray cluster
    (docs/scale.md), one scenario's chains on one actor, in order.
    """
    from conflictbench_app.scenarios.library import load_library
    from conflictbench_app.worldmodel.chain import split_actions

    selected = load_library(source).select(scenarios)
    args = (backend, wan_model, cache_dir, import_dir, prompts, steps, offload)
    model = build_world_model(*args)  # here too: a bad option fails before any worker starts
    jobs = [
        (
            scenario,
            list(
                (
                    {f"--actions {i + 1}": split_actions(c) for i, c in enumerate(chains)}
                    if chains
                    else scenario_chains(scenario)
                ).items()
            ),
        )
        for scenario in selected
    ]
    totals = {"clips": 0, "rendered": 0, "hits": 0, "seconds": 0.0}
    report = []
    with _chain_bar(sum(len(c) for _, c in jobs), enabled=not as_json) as advance:
        for rows in _rendered(model, args, jobs, executor, ray_address, actors):
            for row in rows:
                totals["clips"] += row["clips"]
                totals["hits"] += row.pop("hits")
                totals["rendered"] = totals["clips"] - totals["hits"]
                totals["seconds"] += row.pop("seconds")
                report.append(row)
                advance(f"{row['scenario']} {row['chain']}")
    if as_json:
        echo_json({"backend": model.name, "chains": report, **totals})
        return
    click.echo(
        f"{len(report)} chains, {totals['clips']} clips: {totals['rendered']} rendered, {totals['hits']} from the cache "
        f"({totals['seconds']:.1f} s) [{model.name}]"
    )


def _rendered(
    model: Any, args: tuple, jobs: list, executor: str, address: str | None, actors: int | None
) -> Iterator[list[dict[str, Any]]]:
    """Each job's rows as it is rendered: here, one job after the other, or by render actors on Ray."""
    from conflictbench_app.executors.render_farm import render_job, render_on_ray

    if executor == "local":
        if address or actors:
            raise click.UsageError("--ray-address and --actors need --executor ray.")
        yield from (render_job(model, job) for job in jobs)
        return
    yield from render_on_ray(lambda: build_world_model(*args), jobs, address=address, actors=actors)


@contextlib.contextmanager
def _chain_bar(total: int, enabled: bool) -> Iterator[Any]:
    if not enabled or not sys.stderr.isatty():
        yield lambda label: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("chains"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=Console(stderr=True),
    ) as bar:
        task = bar.add_task("", total=total)
        yield lambda label: bar.update(task, advance=1, description=label)
