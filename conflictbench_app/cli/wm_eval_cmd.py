"""``conflictbench wm-eval``: score renderers on recorded trajectories (the paper's Tables 4 and 7)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from conflictbench_app.cli.common import db_option, db_path, echo_json, json_option, source_option
from conflictbench_app.cli.eval_cmd import _client, base_url_option, interrupt_note
from conflictbench_app.store import Store


def _clip_spec(text: str) -> Any:
    from conflictbench_app.worldmodel.types import ClipSpec

    try:
        frames, width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise click.BadParameter(f"{text!r} is not FRAMESxWIDTHxHEIGHT, e.g. 49x832x480.") from None
    return ClipSpec(frames=frames, width=width, height=height)


@click.command("wm-eval")
@click.option("--runs", "run_ids", required=True, multiple=True, help="Recorded runs to sample (repeatable).")
@click.option("--sample", default=50, show_default=True, help="Trajectories sampled, stratified by category.")
@click.option("--seed", default=1, show_default=True, help="The sampling seed.")
@click.option(
    "--renderers", required=True, help="Comma-separated: schematic, wan:WEIGHTS_DIR, replay:CLIPS_DIR."
)
@click.option("--judge", "judge_spec", required=True, help="The vision-language judge, PROFILE:MODEL.")
@base_url_option
@click.option("--concurrency", default=1, show_default=True, help="Judgments asked in parallel.")
@click.option("--attempts", default=3, show_default=True, help="Tries per judgment before it is 'unparsed'.")
@click.option(
    "--clip", "clip_text", default="49x832x480", show_default=True, help="Clip FRAMESxWIDTHxHEIGHT."
)
@click.option(
    "--cache",
    "cache_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The clip cache folder (default: the configured one).",
)
@click.option("--estimate-only", is_flag=True, help="Print the cost estimate and stop.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Also write the tables here (wm-eval.md, wm-eval.json).",
)
@source_option
@db_option
@json_option
def wm_eval(
    run_ids: tuple[str, ...],
    sample: int,
    seed: int,
    renderers: str,
    judge_spec: str,
    base_url: str | None,
    concurrency: int,
    attempts: int,
    clip_text: str,
    cache_dir: Path | None,
    estimate_only: bool,
    out: Path | None,
    source: Path | None,
    db: Path | None,
    as_json: bool,
) -> None:
    """Replay recorded trajectories through each renderer (same prompts, through the clip cache), sample five
    frames per clip, and have a judge score them on Instruction Following, Physical Plausibility, Commonsense and
    Task Visual Informativeness. Prints the cost estimate first; a killed run resumes when run again."""
    from conflictbench_app.evaluation import wm_eval as wm
    from conflictbench_app.evaluation.wm_tables import markdown, table4, table7
    from conflictbench_app.scenarios.library import load_library

    names = [part.strip() for part in renderers.split(",") if part.strip()]
    library = load_library(source)
    with Store(db_path(db)) as store:
        work = wm.plan(store, run_ids, names, library.get, sample=sample, seed=seed)
        estimate = work.estimate(judge_spec.partition(":")[2])
        _say_estimate(estimate, judge_spec, as_json)
        if estimate_only:
            return
        clip = _clip_spec(clip_text)
        models = {name: wm.build_renderer(name, cache_dir=cache_dir, clip=clip) for name in names}
        client = _client(judge_spec, base_url)
        with interrupt_note("the judgments so far are stored", "judge the rest"):
            result = wm.run_wm_eval(
                store,
                work,
                models,
                client,
                judge_spec,
                concurrency=concurrency,
                max_attempts=attempts,
                progress=_progress(work.judgments, as_json),
            )
        judgments = [j for j in store.wm_judgments(judge=judge_spec) if j.renderer in names]
    tables = {"table4": table4(judgments), "table7": table7(judgments)}
    summary = {a: result.count(a) for a in ("judged", "skipped", "failed", "missing")}
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "wm-eval.md").write_text(markdown(judgments), encoding="utf-8")
        (out / "wm-eval.json").write_text(json.dumps(tables, indent=2), encoding="utf-8")
    if as_json:
        echo_json({"estimate": estimate, **summary, **tables})
        return
    click.echo(", ".join(f"{v} {k}" for k, v in summary.items()))
    click.echo(markdown(judgments), nl=False)


def _say_estimate(estimate: dict[str, Any], judge: str, as_json: bool) -> None:
    if as_json:
        return
    usd = "unknown (the model is not priced)" if estimate["usd"] is None else f"about ${estimate['usd']:.2f}"
    click.echo(
        f"{estimate['clips']} clip(s), {estimate['judgments']} judgment(s), {estimate['frames']} frames for {judge}: "
        f"~{estimate['prompt_tokens']} prompt + {estimate['completion_tokens']} completion tokens, {usd}.",
        err=True,
    )


def _progress(total: int, quiet: bool) -> Any:
    counted = {"n": 0}

    def show(event: Any) -> None:
        if event.action in ("judged", "skipped", "failed"):
            counted["n"] += 1
        if quiet or event.action in ("rendered", "skipped"):
            return
        where = f"{event.renderer} {event.episode_id} step {event.step} {event.dimension}".rstrip()
        if event.action == "judged" and event.judgment is not None:
            j = event.judgment
            detail = "unparsed" if j.score is None else f"{j.score:.2f}"
        else:
            detail = event.error
        click.echo(f"[{counted['n']}/{total}] {event.action} {where}: {detail}", err=True)

    return show
