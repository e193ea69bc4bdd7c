"""``scenarios draft``: a scenario spec drafted by a model from a PacifAIst seed or a paper environment, repaired
until it builds and verifies (attached to the ``scenarios`` group in ``scenarios_cmd``). The work is done by
:mod:`conflictbench_app.authoring.draft`; this module only reads options and prints."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from conflictbench_app.authoring.draft import DraftJob, DraftResult
    from conflictbench_app.authoring.draft_seed import Seed
    from conflictbench_app.records import DraftRecord, DraftTry

DATASET_NAME = "PacifAIst_dataset.csv"


def default_dataset() -> Path | None:
    """``../shared/pacifaist/PacifAIst_dataset.csv`` beside the working folder or the project, when present."""
    project = Path(__file__).resolve().parents[2]
    for base in (Path.cwd().parent, project.parent):
        path = base / "shared" / "pacifaist" / DATASET_NAME
        if path.is_file():
            return path
    return None


@click.command("draft")
@click.option("--seed", "seed_id", default=None, help="The PacifAIst item to expand, e.g. EP1-037.")
@click.option(
    "--from-paper", "paper_id", default=None, help="Rewrite one of the paper's environments (needs --source)."
)
@click.option(
    "--source",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=None,
    help="With --from-paper: the paper's results tree (folders with env.json and .ulx).",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(256),
    default=None,
    help="The token limit of each reply (default: the provider's; a spec is ~3,500 tokens).",
)
@click.option(
    "--max-states",
    type=click.IntRange(10),
    default=None,
    help="With --from-paper: states explored to name the paper story's design problems (default 400).",
)
@click.option(
    "--agent", required=True, help="The model that writes the spec, as PROFILE:MODEL (openai:gpt-5)."
)
@click.option(
    "--tries", type=click.IntRange(1, 10), default=3, show_default=True, help="Asks, the first included."
)
@click.option(
    "--id", "spec_id", default=None, help="The new scenario's id (default: the next free <category>-1xx)."
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="The scenarios folder the draft is written into (default: the configured scenarios folder).",
)
@click.option(
    "--example",
    "example_id",
    default=None,
    help="Our scenario shown as the example (default: <category>-101).",
)
@click.option(
    "--base-url", default=None, help="Endpoint of an OpenAI-compatible server (overrides the profile's)."
)
@click.option(
    "--pacifaist",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    default=None,
    help=f"Your copy of {DATASET_NAME} (default: ../shared/pacifaist/{DATASET_NAME} when present).",
)
def draft(
    seed_id: str | None,
    paper_id: str | None,
    source: Path | None,
    agent: str,
    tries: int,
    spec_id: str | None,
    out: Path | None,
    example_id: str | None,
    base_url: str | None,
    pacifaist: Path | None,
    max_states: int | None,
    max_tokens: int | None,
) -> None:
    """Draft a new scenario with a model: ask, check, build, verify, send the problems back (up to --tries).

    The result is written as <out>/<ID>/ marked `status: draft`: listed, but never in a benchmark run until a person
    reviews it and sets `status: reviewed`.
    """
    from conflictbench_app.agents.chat import get_chat_client
    from conflictbench_app.agents.providers import check_base_url, split_spec
    from conflictbench_app.authoring.draft import DraftJob, draft_scenario, estimate_draft, next_free_id
    from conflictbench_app.settings import get_settings

    if base_url:
        check_base_url(base_url)
    seed = _seed(seed_id, paper_id, source, pacifaist, max_states)
    settings = get_settings()
    out = out or settings.scenarios_dir
    job = DraftJob(
        seed=seed,
        spec_id=spec_id or next_free_id([out, settings.scenarios_dir], seed.category),
        out=out,
        example=_example(example_id, seed.category, [out, settings.scenarios_dir]),
        agent=agent,
        tries=tries,
        keep_dir=settings.cache_dir / "drafts",
        max_tokens=max_tokens,
    )
    _check_job(job)
    click.echo(estimate_draft(job, split_spec(agent)[1]).describe(agent), err=True)
    client = get_chat_client(agent, base_url=base_url, timeout=300.0)
    click.echo(f"drafting {job.spec_id} from {seed.source} with {agent} (example {job.example.parent.name})")
    result = draft_scenario(client, job, on_try=_print_try)
    _print_result(result)


def _seed(
    seed_id: str | None,
    paper_id: str | None,
    source: Path | None,
    dataset: Path | None,
    max_states: int | None,
) -> Seed:
    from conflictbench_app.authoring.draft_seed import PAPER_MAX_STATES, pacifaist_seed, paper_seed

    if (seed_id is None) == (paper_id is None):
        raise click.UsageError("Give either --seed PACIFAIST_ID or --from-paper ID (with --source DIR).")
    if paper_id is not None:
        if source is None:
            raise click.UsageError("--from-paper needs --source, the paper's results tree.")
        return paper_seed(source, paper_id, max_states=max_states or PAPER_MAX_STATES)
    dataset = dataset or default_dataset()
    if dataset is None:
        raise click.UsageError(
            f"No PacifAIst dataset found; pass your copy of {DATASET_NAME} with --pacifaist."
        )
    return pacifaist_seed(dataset, str(seed_id))


def _example(example_id: str | None, category: str, roots: list[Path]) -> Path:
    from conflictbench_app.authoring.spec import SPEC_FILE

    wanted = example_id or f"{category}-101"
    for root in roots:
        path = root / wanted / SPEC_FILE
        if path.is_file():
            return path
    raise click.UsageError(
        f"No example spec {wanted} under {', '.join(str(r) for r in roots)}; name one of ours with --example."
    )


def _check_job(job: DraftJob) -> None:
    from conflictbench_app.authoring.draft import seed_used_by

    if not job.spec_id.startswith(f"{job.seed.category}-"):
        raise click.UsageError(f"--id {job.spec_id} is not an {job.seed.category} id, the seed's category.")
    taken = seed_used_by(job.out, job.seed.id)
    if taken:
        raise click.UsageError(
            f"The seed {job.seed.id} is already taken by {taken}; every seed is used once."
        )


def _print_try(attempt: DraftTry) -> None:
    if attempt.stage == "ok":
        click.echo(f"try {attempt.number}: built and verified")
        return
    click.echo(
        f"try {attempt.number}: failed at {attempt.stage} ({len(attempt.problems)} problem(s), sent back)"
    )
    for problem in attempt.problems:
        click.echo(f"  - {problem}")


def _print_result(result: DraftResult) -> None:
    from conflictbench_app.cli.authoring_cmd import print_report

    record = result.record
    if result.report is not None:
        click.echo("verify report of the last try:")
        print_report(result.report)
    click.echo(f"prompt {record.prompt_id} (sha256 {record.prompt_sha}); " + _usage(record))
    if result.folder is not None:
        click.echo(
            f"{record.scenario_id}: written to {result.folder} (status: draft). Review it, then set "
            "`status: reviewed` in its scenario.yaml to let benchmark runs take it."
        )
        return
    kept = f" The last candidate is kept in {result.kept}." if result.kept else ""
    raise click.ClickException(
        f"No try of {len(record.tries)} produced a spec that verifies.{kept} Fix it by hand, or draft again with "
        "more --tries or another --agent."
    )


def _usage(record: DraftRecord) -> str:
    usage = record.usage
    return (
        f"usage {usage.calls} calls, {usage.prompt_tokens:,} prompt + {usage.completion_tokens:,} completion tokens, "
        f"${usage.cost_usd:.4f}"
    )
