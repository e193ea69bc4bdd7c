"""Evaluation commands: judge, label, agreement, regret, report (single-turn is in ``single_turn_cmd``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from conflictbench_app.cli.common import (
    db_option,
    db_path,
    echo_json,
    executor_options,
    include_assisted_option,
    json_option,
    source_option,
)
from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.executors import get_executor
from conflictbench_app.store import Store

base_url_option = click.option(
    "--base-url", default=None, help="Endpoint of an OpenAI-compatible server (overrides the profile's)."
)


def _client(spec: str, base_url: str | None) -> Any:
    from conflictbench_app.agents.chat import get_chat_client

    if ":" not in spec:
        raise click.UsageError(f"{spec!r} is not a model; give PROFILE:MODEL, e.g. openai:gpt-4o.")
    return get_chat_client(spec, base_url=base_url)


# -- judge -----------------------------------------------------------------------------------------------------


@click.command()
@click.argument("run_id")
@click.option(
    "--judge", "judge_spec", required=True, help="The judge model, PROFILE:MODEL (e.g. openai:gpt-4o)."
)
@click.option(
    "--all", "all_episodes", is_flag=True, help="Judge every episode, human-favorable endings included."
)
@click.option("--redo", is_flag=True, help="Judge again episodes this judge has already judged.")
@click.option(
    "--attempts", default=3, show_default=True, help="Tries per episode before a verdict is 'unparsed'."
)
@click.option("--concurrency", default=1, show_default=True, help="Episodes judged in parallel.")
@click.option(
    "--prompt",
    "prompt_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Your own rubric file (the judge's system prompt); its hash is stored with every verdict.",
)
@base_url_option
@include_assisted_option
@db_option
@executor_options
@json_option
def judge(
    run_id: str,
    judge_spec: str,
    all_episodes: bool,
    redo: bool,
    attempts: int,
    concurrency: int,
    prompt_file: Path | None,
    base_url: str | None,
    include_assisted: bool,
    db: Path | None,
    executor: str,
    ray_address: str | None,
    as_json: bool,
) -> None:
    """Judge the alignment of a run's episodes (Alignment Success Rate).

    As in the paper, episodes that reached the human-favorable ending count as aligned and the judge reads the
    others; --all has it read every episode. Its answer is read strictly (one JSON object), whatever the rubric.
    """
    from conflictbench_app.evaluation.judge import JudgeProgress, judge_run
    from conflictbench_app.evaluation.prompts import prompt_from_file

    prompt = prompt_from_file(prompt_file) if prompt_file else None

    def show(item: JudgeProgress) -> None:
        if as_json:
            return
        v = item.verdict
        what = item.error if item.action == "failed" else (v.verdict if v else item.error or "")
        click.echo(f"{item.episode.scenario_id:9} {item.action:8} {what}")

    client = _client(judge_spec, base_url)
    with Store(db_path(db)) as store, interrupt_note("verdicts stored so far are kept", "judge the rest"):
        done = judge_run(
            store,
            run_id,
            client,
            judge_spec,
            all_episodes=all_episodes,
            redo=redo,
            max_attempts=attempts,
            concurrency=concurrency,
            progress=show,
            include_assisted=include_assisted,
            prompt=prompt,
            executor=get_executor(executor, address=ray_address),
        )
    rows = [
        {
            "episode_id": d.episode.id,
            "scenario_id": d.episode.scenario_id,
            "action": d.action,
            "verdict": d.verdict.verdict if d.verdict else None,
            "rationale": d.verdict.rationale if d.verdict else None,
            "error": d.error,
        }
        for d in done
    ]
    if as_json:
        echo_json(rows)
    failed = [r for r in rows if r["action"] == "failed"]
    if failed:
        raise ConflictBenchError(
            f"{len(failed)} episode(s) could not be judged; run the command again to retry them."
        )


# -- labels ----------------------------------------------------------------------------------------------------


@click.command()
@click.argument("run_id", required=False)
@click.option("--annotator", required=True, help="Your name, stored with every label.")
@click.option(
    "--episode", "episode_id", default=None, help="Label one episode (with --label, no questions asked)."
)
@click.option("--label", "value", type=click.Choice(["aligned", "misaligned", "unsure"]), default=None)
@click.option("--note", default="", help="A note stored with the label.")
@click.option("--all", "relabel", is_flag=True, help="Also show episodes you have already labelled.")
@db_option
def label(
    run_id: str | None,
    annotator: str,
    episode_id: str | None,
    value: str | None,
    note: str,
    relabel: bool,
    db: Path | None,
) -> None:
    """Label episodes as aligned, misaligned or unsure, in the terminal.

    Labels are appended with your name and the time; they never overwrite a judge's verdict or anyone's label.
    """
    from conflictbench_app.evaluation.judge import render_trajectory
    from conflictbench_app.evaluation.labels import LabelQueue

    with Store(db_path(db)) as store:
        if episode_id and value:
            store.add_label(episode_id, value, annotator, note)
            click.echo(f"labelled {episode_id} {value}")
            return
        if not run_id and not episode_id:
            raise click.UsageError("Give a RUN_ID to label its episodes, or --episode ID --label VALUE.")
        queue = LabelQueue(
            store,
            annotator,
            run_id=run_id,
            episode_ids=[episode_id] if episode_id else None,
            include_labelled=relabel,
        )
        total = queue.remaining
        while queue.current is not None:
            episode = queue.current
            click.echo(
                click.style(
                    f"\n=== {queue.index + 1}/{total}  {episode.scenario_id}  ({episode.id}) ===", bold=True
                )
            )
            click.echo(render_trajectory(episode, queue.steps()))
            click.echo(f"Ending: {episode.outcome}")
            try:
                answer = click.prompt(
                    "[a]ligned, [m]isaligned, [u]nsure, [s]kip, [q]uit",
                    type=click.Choice(["a", "m", "u", "s", "q"]),
                    show_choices=False,
                )
                if answer == "q":
                    break
                if answer == "s":
                    queue.skip()
                    continue
                text = click.prompt("Note (optional)", default="", show_default=False)
            except click.Abort:  # end of input or Ctrl-C: the labels saved so far stay
                click.echo()
                break
            queue.label({"a": "aligned", "m": "misaligned", "u": "unsure"}[answer], text)
        click.echo(
            f"{len(store.labels(run_id=run_id, annotator=annotator.strip()))} label(s) by {annotator}."
        )


# -- agreement -------------------------------------------------------------------------------------------------


@click.command()
@click.option("--run", "run_ids", multiple=True, help="Only these runs (repeatable). Default: all.")
@click.option("--judge", "judge_spec", default=None, help="Only this judge's verdicts. Default: every judge.")
@db_option
@json_option
def agreement(run_ids: tuple[str, ...], judge_spec: str | None, db: Path | None, as_json: bool) -> None:
    """Agreement of the judge with human labels, and of humans with each other.

    Accuracy, macro precision/recall/F1, Cohen's kappa, the confusion matrix and the disagreements. Each
    annotator's latest label counts; 'unsure' labels and unparsed verdicts are left out and counted.
    """
    from conflictbench_app.evaluation.agreement import agreement as compute
    from conflictbench_app.evaluation.agreement import human_human_pairs, judge_human_pairs

    runs = list(run_ids) or None
    with Store(db_path(db)) as store:
        labels = store.labels(run_id=runs)
        verdicts = store.verdicts(run_id=runs, judge=judge_spec)
        scenario_of = {
            e.id: e.scenario_id
            for r in (runs or [r.id for r in store.list_runs()])
            for e in store.episodes(r)
        }
    result = {
        "judge_vs_human": {j: compute(p).to_dict() for j, p in judge_human_pairs(verdicts, labels).items()},
        "human_vs_human": compute(human_human_pairs(labels)).to_dict(),
    }
    if as_json:
        echo_json(result)
        return
    for name, report in result["judge_vs_human"].items():
        _print_agreement(f"Judge {name} vs humans", report, scenario_of)
    if not result["judge_vs_human"]:
        click.echo("Judge vs humans: no episode has both a judge verdict and a human label.")
    _print_agreement("Human vs human", result["human_vs_human"], scenario_of)


def _print_agreement(title: str, r: dict[str, Any], scenario_of: dict[str, str]) -> None:
    fmt = lambda v: "–" if v is None else f"{100 * v:.2f}"  # noqa: E731
    click.echo(click.style(title, bold=True))
    click.echo(
        f"  pairs {r['n']} (excluded {r['excluded']})  accuracy {fmt(r['accuracy'])}  kappa {fmt(r['kappa'])}"
    )
    click.echo(f"  macro precision {fmt(r['precision'])}  recall {fmt(r['recall'])}  F1 {fmt(r['f1'])}")
    c = r["confusion"]
    click.echo("  confusion (rows: reference, columns: other):  aligned  misaligned")
    for ref in ("aligned", "misaligned"):
        click.echo(f"    {ref:10} {c[ref]['aligned']:>8} {c[ref]['misaligned']:>11}")
    for note in r["notes"]:
        click.echo(f"  note: {note}")
    for d in r["disagreements"]:
        who = f"{d['reference_rater']}={d['reference']} vs {d['other_rater']}={d['other']}"
        click.echo(f"  disagree: {scenario_of.get(d['episode_id'], '?')} ({d['episode_id']}) {who}")


# -- regret ----------------------------------------------------------------------------------------------------


class _RegretGroup(click.Group):
    """``regret RUN_ID`` tests a run; ``regret stages`` writes the stages file. A first argument that is not a
    subcommand is a run id, for the ``test`` subcommand."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["test", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_RegretGroup)
def regret() -> None:
    """The regret test: after EP1 episodes that ended well, three escalating pressure stages ask the agent to
    persist or to regret and abort. `regret RUN_ID` runs it; `regret stages` fixes imported scenarios' stages."""


@regret.command("stages")
@source_option
@click.option(
    "--agent", "writer_spec", required=True, help="The model that writes the stages, PROFILE:MODEL."
)
@base_url_option
@json_option
def regret_stages(source: Path | None, writer_spec: str, base_url: str | None, as_json: bool) -> None:
    """Write the regret stages of every EP1 scenario of --source once, to regret_stages.json beside the
    environments; every later regret test (of any model) reuses them. Scenarios already in the file are kept."""
    from conflictbench_app.evaluation.regret_stages import write_stage_file
    from conflictbench_app.scenarios.library import load_library

    library = load_library(source)
    show = None if as_json else lambda sid: click.echo(f"{sid:9} written")
    path, written, kept, _usage = write_stage_file(
        library.root, library.scenarios, _client(writer_spec, base_url), writer_spec, progress=show
    )
    if as_json:
        echo_json({"file": str(path), "written": written, "kept": kept})
        return
    click.echo(f"{path}: {len(written)} scenario(s) written, {len(kept)} kept as they were.")


@regret.command("test")
@click.argument("run_id")
@click.option(
    "--agent", "agent_spec", default=None, help="The model under test, PROFILE:MODEL (default: the run's)."
)
@click.option(
    "--stage-writer",
    default=None,
    help="Have this model write missing stages once into the source's regret_stages.json (default: templates).",
)
@source_option
@click.option(
    "--renderer", default=None, help="World model for stage clips in a multimodal run (default: the run's)."
)
@click.option("--redo", is_flag=True, help="Test again episodes already tested with this agent.")
@base_url_option
@include_assisted_option
@db_option
@click.option("--concurrency", default=1, show_default=True, help="Calls in parallel.")
@executor_options
@json_option
def regret_test(
    run_id: str,
    agent_spec: str | None,
    stage_writer: str | None,
    source: Path | None,
    renderer: str | None,
    redo: bool,
    base_url: str | None,
    include_assisted: bool,
    db: Path | None,
    concurrency: int,
    executor: str,
    ray_address: str | None,
    as_json: bool,
) -> None:
    """Regret-test a run: after EP1 episodes that ended well, three escalating pressure stages (the same for every
    model: the scenario's own, its source's regret_stages.json, or our templates) ask the agent to persist or to
    regret and abort; a regret ends the test as a failure."""
    from conflictbench_app.evaluation.jobs import regret_plan
    from conflictbench_app.evaluation.regret import regret_rates, regret_run
    from conflictbench_app.records import scored_episodes

    with Store(db_path(db)) as store:
        plan = regret_plan(
            store.get_run(run_id),
            agent_spec,
            base_url=base_url,
            source=source,
            renderer=renderer,
            stage_writer=stage_writer,
            redo=redo,
            include_assisted=include_assisted,
        )
        show = None if as_json else lambda t: click.echo(f"{t.scenario_id:9} {t.result:10} {t.error or ''}")
        with interrupt_note("the tests finished so far are stored", "test the rest"):
            tests = regret_run(
                store,
                run_id,
                plan,
                progress=show,
                executor=get_executor(executor, address=ray_address),
                concurrency=concurrency,
            )
        counted = {e.id for e in scored_episodes(store.episodes(run_id), include_assisted=include_assisted)}
        rates = regret_rates([t for t in store.regret_tests(run_id=run_id) if t.episode_id in counted])
    if as_json:
        echo_json(
            {
                "tests": [t.model_dump() for t in tests],
                "rates": [{"agent": a, "setting": s, **g} for (a, s), g in rates.items()],
            }
        )
        return
    if not tests:
        click.echo("No EP1 episode of this run reached the human-favorable ending untested.")
    for (name, setting), group in rates.items():
        rate = "–" if group["rate"] is None else f"{100 * group['rate']:.1f}%"
        click.echo(
            f"{name} ({setting}): regret rate {rate} over {len(group['regretted']) + len(group['persisted'])} test(s)"
        )


@click.command()
@click.argument("run_ids", nargs=-1)
@click.option(
    "--format", "fmt", type=click.Choice(["md", "csv", "json", "html"]), default="md", show_default=True
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the report here (figures as PNG beside it). Default: standard output, no figures.",
)
@click.option(
    "--judge", "judge_spec", default=None, help="Count only this judge's verdicts (default: the latest)."
)
@click.option("--no-plots", is_flag=True, help="Do not draw the figures.")
@include_assisted_option
@db_option
def report(
    run_ids: tuple[str, ...],
    fmt: str,
    out: Path | None,
    judge_spec: str | None,
    no_plots: bool,
    include_assisted: bool,
    db: Path | None,
) -> None:
    """The paper's tables from recorded runs: TSR and ASR per category, regret rates, single-turn vs multi-turn
    ASR, the length of failed episodes; each figure lists the episodes behind it."""
    from conflictbench_app.evaluation.report import build_report

    with Store(db_path(db)) as store:
        result = build_report(
            store, list(run_ids) or None, judge=judge_spec, include_assisted=include_assisted
        )
    plots: dict[str, Path] = {}
    if out is not None and not no_plots and fmt in ("md", "html"):
        saved = result.save_plots(out.parent / "figures")
        plots = {name: path.relative_to(out.parent) if fmt == "md" else path for name, path in saved.items()}
    text = {
        "md": lambda: result.to_markdown(plots),
        "csv": result.to_csv,
        "json": result.to_json,
        "html": lambda: result.to_html(plots),
    }[fmt]()
    if out is None:
        click.echo(text, nl=False)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    click.echo(f"wrote {out}" + (f" and {len(plots)} figure(s) in {out.parent / 'figures'}" if plots else ""))


@contextlib.contextmanager
def interrupt_note(kept: str, rest: str) -> Iterator[None]:
    """Ctrl-C ends the command with one sentence: what is kept, and that the same command goes on from there."""
    try:
        yield
    except KeyboardInterrupt:
        raise click.ClickException(
            f"Interrupted: {kept}; run the same command again to {rest} (finished work is skipped)."
        ) from None
