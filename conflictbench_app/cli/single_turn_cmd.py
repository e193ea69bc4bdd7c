"""``single-turn``: the paper's single-turn forms of the same dilemmas (and ``single-turn score`` for PacifAIst
answers), beside the multi-turn run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from conflictbench_app.cli.common import (
    db_option,
    db_path,
    echo_json,
    executor_options,
    json_option,
    source_option,
)
from conflictbench_app.cli.eval_cmd import _client, base_url_option
from conflictbench_app.executors import get_executor
from conflictbench_app.store import Store


@click.group("single-turn", invoke_without_command=True)
@click.option("--agent", "agent_spec", default=None, help="The model to ask, PROFILE:MODEL.")
@click.option("--judge", "judge_spec", default=None, help="The judge of free-form answers, PROFILE:MODEL.")
@source_option
@click.option(
    "--scenarios", "which", default="all", show_default=True, help="all, EP1, EP2, EP3 or ID,ID,..."
)
@click.option(
    "--pacifaist",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Your copy of PacifAIst_dataset.csv: ask its items with the selected scenarios' ids.",
)
@click.option("--items", default=None, help="With --pacifaist: these item ids instead (ID,ID,...).")
@click.option("--forms", default="multiple_choice,free_form", show_default=True, help="Forms to ask.")
@click.option("--seed", default=1, show_default=True, help="Seed of the option shuffling.")
@base_url_option
@click.option(
    "--judge-base-url", default=None, help="Endpoint of the judge, when it differs from --base-url."
)
@db_option
@click.option("--concurrency", default=1, show_default=True, help="Calls in parallel.")
@executor_options
@json_option
@click.pass_context
def single_turn(
    ctx: click.Context,
    agent_spec: str | None,
    judge_spec: str | None,
    source: Path | None,
    which: str,
    pacifaist: Path | None,
    items: str | None,
    forms: str,
    seed: int,
    base_url: str | None,
    judge_base_url: str | None,
    db: Path | None,
    concurrency: int,
    executor: str,
    ray_address: str | None,
    as_json: bool,
) -> None:
    """The single-turn comparison: each scenario's dilemma asked once, multiple choice (options shuffled by a
    seed, mapped back) and free form (judged); with --pacifaist, the PacifAIst items of the same ids."""
    if ctx.invoked_subcommand is not None:
        return
    if not agent_spec:
        raise click.UsageError("Give --agent PROFILE:MODEL (or use `single-turn score`).")
    from conflictbench_app.evaluation.single_turn import Judge, run_single_turn, summarize

    chosen_forms = [f.strip() for f in forms.split(",") if f.strip()]
    selected = _selected_items(source, which, pacifaist, items, chosen_forms)
    judge_obj = Judge(_client(judge_spec, judge_base_url or base_url), judge_spec) if judge_spec else None
    show = (
        None
        if as_json
        else lambda a: click.echo(
            f"{a.item_id:9} {a.source:9} {a.task_type:15} {_aligned_word(a.aligned)} {a.error or ''}"
        )
    )
    with Store(db_path(db)) as store:
        batch, answers = run_single_turn(
            store,
            _client(agent_spec, base_url),
            agent_spec,
            selected,
            seed=seed,
            judge=judge_obj,
            progress=show,
            executor=get_executor(executor, address=ray_address),
            concurrency=concurrency,
        )
    summary = [{"agent": k[0], "source": k[1], "task_type": k[2], **v} for k, v in summarize(answers).items()]
    if as_json:
        echo_json({"batch_id": batch, "summary": summary})
        return
    for s in summary:
        click.echo(
            f"{s['source']} {s['task_type']}: ASR {100 * s['asr']['all']:.1f}% over {s['n']}, refusals {100 * s['refusal_rate']:.1f}%"
        )
    click.echo(f"batch {batch}")


def _aligned_word(value: bool | None) -> str:
    return {True: "aligned   ", False: "misaligned", None: "unscored  "}[value]


def _selected_items(
    source: Path | None, which: str, pacifaist: Path | None, items: str | None, forms: list[str]
) -> list[Any]:
    from conflictbench_app.evaluation.single_turn import FORMS, pacifaist_items, scenario_items
    from conflictbench_app.scenarios.library import load_library

    unknown = [f for f in forms if f not in FORMS]
    if unknown:
        raise click.UsageError(f"Unknown form(s) {', '.join(unknown)}; use {', '.join(FORMS)}.")
    if pacifaist is not None and items:
        return pacifaist_items(pacifaist, [i.strip() for i in items.split(",") if i.strip()], forms)
    scenarios = load_library(source).select(which)
    if pacifaist is not None:
        return pacifaist_items(pacifaist, [s.id for s in scenarios], forms)
    return scenario_items(scenarios, forms)


@single_turn.command("score")
@click.option(
    "--pacifaist",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="Your copy of PacifAIst_dataset.csv (for the options' texts).",
)
@click.option(
    "--answers",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="A results CSV as PacifAIst publishes them (scenario_id, ..., response).",
)
@json_option
def score(pacifaist: Path, answers: Path, as_json: bool) -> None:
    """Score published PacifAIst answers: P-Score (multiple choice) overall and per EP1/EP2/EP3, refusal rate,
    and every item where our reading differs from the published one, explained."""
    from conflictbench_app.evaluation.pacifaist import score_answers

    report = score_answers(answers, pacifaist)
    if as_json:
        echo_json(report.to_dict())
        return
    fmt = lambda v: "–" if v is None else f"{v:.2f}%"  # noqa: E731
    click.echo(f"Items {report.items} (multiple choice {report.multiple_choice})")
    click.echo(f"P-Score (multiple choice): {fmt(report.p_score)}")
    for sub, value in report.p_score_by_subcategory.items():
        click.echo(f"  {sub}: {fmt(value)}")
    click.echo(f"Refusal rate (all items): {fmt(report.refusal_rate)}")
    if report.published:
        pub = report.published
        subs = ", ".join(f"{k} {fmt(v)}" for k, v in pub["p_score_by_subcategory"].items())
        click.echo(
            f"Published columns: P-Score {fmt(pub['p_score'])} ({subs}); refusal rate {fmt(pub['refusal_rate'])}"
        )
    if report.unparsed_multiple_choice:
        click.echo(f"Multiple-choice answers without a letter: {', '.join(report.unparsed_multiple_choice)}")
    letters = [d for d in report.differences if d.field == "parsed_choice"]
    click.echo(f"Letter readings that differ from the published parsed_choice: {len(letters)}")
    for d in report.differences:
        click.echo(
            f"  {d.scenario_id} {d.field}: published {d.published or '-'}, ours {d.ours or '-'}. {d.explanation}"
        )


# -- report ----------------------------------------------------------------------------------------------------
