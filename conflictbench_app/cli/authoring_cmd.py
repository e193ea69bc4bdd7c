"""``scenarios build``, ``verify``, ``audit`` and ``stats`` (attached to the ``scenarios`` group in ``scenarios_cmd``).

Top-level imports stay light: the authoring modules load only when a command runs.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from conflictbench_app.authoring.verify import Report
    from conflictbench_app.records import AuditReport


def _default_root() -> Path:
    from conflictbench_app.settings import get_settings

    return get_settings().scenarios_dir


@click.command("build")
@click.argument("ids", nargs=-1)
@click.option(
    "--root", type=click.Path(path_type=Path, file_okay=False), help="Scenarios folder (default: settings)."
)
@click.option("--force", is_flag=True, help="Compile even when the story is up to date.")
def build(ids: tuple[str, ...], root: Path | None, force: bool) -> None:
    """Compile changed specs (scenarios/<ID>/scenario.yaml) into story.ulx and env.json."""
    from conflictbench_app.authoring.project import build_folder, spec_folders
    from conflictbench_app.errors import ConflictBenchError

    folders = [f for f in spec_folders(root or _default_root()) if not ids or f.name in ids]
    _check_ids(ids, folders)
    failed = 0
    for folder in folders:
        try:
            result = build_folder(folder, force=force)
        except ConflictBenchError as exc:
            failed += 1
            click.echo(f"{folder.name}: FAILED\n{exc}", err=True)
            continue
        if result.compiled:
            click.echo(f"{result.id}: compiled in {result.seconds:.2f} s ({result.reason})")
        else:
            click.echo(f"{result.id}: up to date")
    if failed:
        raise click.ClickException(f"{failed} scenario(s) failed to build; see the problems above.")


def _check_ids(ids: tuple[str, ...], folders: list[Path]) -> None:
    unknown = sorted(set(ids) - {f.name for f in folders})
    if unknown:
        raise click.ClickException(
            f"No spec folder for: {', '.join(unknown)}. Check the ids or --root/--source."
        )


@click.command("verify")
@click.argument("ids", nargs=-1)
@click.option(
    "--source",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="Our scenarios folder (default) or a paper results tree (folders with env.json and .ulx).",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of reports.")
@click.option(
    "--jobs", "-j", type=click.IntRange(1, 64), default=None, help="Stories explored at once (default: CPUs)."
)
@click.option(
    "--max-states",
    type=click.IntRange(10),
    default=None,
    help="Safety cap: stop exploring a paper story after this many distinct states (default 1000; reported as not explored fully, with the reason).",
)
def verify(
    ids: tuple[str, ...], source: Path | None, as_json: bool, jobs: int | None, max_states: int | None
) -> None:
    """Replay walkthroughs, explore every action sequence, and check the design rules of each story."""
    from conflictbench_app.authoring.project import spec_folders
    from conflictbench_app.authoring.verify import PAPER_MAX_STATES, verify_paper, verify_project

    root = source or _default_root()
    ours = bool(spec_folders(root))
    jobs = jobs or min(4, os.cpu_count() or 1)
    if ours:
        reports = verify_project(root, list(ids), jobs=jobs)
    else:
        limit = max_states or PAPER_MAX_STATES
        reports = verify_paper(root, list(ids), jobs=jobs, max_states=limit)
    if ids and not reports:
        raise click.ClickException(f"No scenario matches {', '.join(ids)} under {root}.")
    if ours:
        _keep(root, reports)
    if as_json:
        click.echo(json.dumps([r.to_json() for r in reports], indent=2))
    else:
        for report in reports:
            print_report(report)
    if ours and not all(r.ok for r in reports):
        sys.exit(1)


def _keep(root: Path, reports: list[Report]) -> None:
    """Keep our reports for `scenarios stats` and `scenarios show` (keyed by spec, story and code)."""
    from conflictbench_app.authoring.stats import save_reports
    from conflictbench_app.settings import get_settings

    save_reports(get_settings().cache_dir, root, [r.to_json() for r in reports])


@click.command("audit")
@click.argument("ids", nargs=-1)
@click.option(
    "--source",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="A paper results tree (folders with env.json and a .ulx story).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["md", "json"]),
    default="md",
    show_default=True,
    help="Report format.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the report here (default: print it).",
)
@click.option(
    "--from-json",
    "from_json",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Render a saved JSON audit again (in --format) instead of exploring.",
)
@click.option(
    "--jobs", "-j", type=click.IntRange(1, 64), default=None, help="Stories explored at once (default: CPUs)."
)
@click.option(
    "--max-states",
    type=click.IntRange(10),
    default=None,
    help="Safety cap on distinct states per story (default 5000); a story it stops is reported as not complete.",
)
def audit(
    ids: tuple[str, ...],
    source: Path | None,
    fmt: str,
    out: Path | None,
    from_json: Path | None,
    jobs: int | None,
    max_states: int | None,
) -> None:
    """Per category and per game: what the paper's design rules say and what exhaustive exploration proves."""
    from conflictbench_app.authoring.audit_md import render_markdown
    from conflictbench_app.records import AuditReport

    rendered_by = ""
    if from_json is not None:
        report = AuditReport.model_validate_json(from_json.read_text(encoding="utf-8"))
        rendered_by = f"conflictbench scenarios audit --from-json {from_json} --format {fmt}"
    else:
        report = _audit_source(ids, source, fmt, out, jobs, max_states)
    text = render_markdown(report, rendered_by) if fmt == "md" else report.model_dump_json(indent=2) + "\n"
    if out is None:
        click.echo(text, nl=False)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    click.echo(f"{out}: {len(report.games)} game(s) audited", err=True)


def _audit_source(
    ids: tuple[str, ...],
    source: Path | None,
    fmt: str,
    out: Path | None,
    jobs: int | None,
    max_states: int | None,
) -> AuditReport:
    from conflictbench_app.authoring.audit import AUDIT_MAX_STATES, audit_tree
    from conflictbench_app.scenarios.paper import is_paper_tree

    if source is None:
        raise click.ClickException("Pass --source DIR (a paper results tree) or --from-json FILE.")
    if not is_paper_tree(source):
        raise click.ClickException(
            f"No env.json under {source}: audit reads paper environments (folders with env.json and a .ulx)."
        )
    command = " ".join(["conflictbench scenarios audit", "--source", str(source), "--format", fmt, *ids])
    if max_states:
        command += f" --max-states {max_states}"
    report = audit_tree(
        source,
        list(ids),
        jobs=jobs or min(4, os.cpu_count() or 1),
        max_states=max_states or AUDIT_MAX_STATES,
        command=command + (f" --out {out}" if out else ""),
    )
    if ids and not report.games:
        raise click.ClickException(f"No environment matches {', '.join(ids)} under {source}.")
    return report


@click.command("stats")
@click.option(
    "--source",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="Our scenarios folder (default: settings).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option(
    "--jobs", "-j", type=click.IntRange(1, 64), default=None, help="Stories explored at once (default: CPUs)."
)
def stats(source: Path | None, as_json: bool, jobs: int | None) -> None:
    """Per category: count, structures, mean and max chance_tsr, mean shortest human-favorable path (from verify)."""
    from conflictbench_app.authoring.project import spec_folders
    from conflictbench_app.authoring.stats import library_stats
    from conflictbench_app.settings import get_settings

    root = source or _default_root()
    if not spec_folders(root):
        raise click.ClickException(
            f"No scenario specs under {root}; stats covers our own library (folders with scenario.yaml)."
        )
    data = library_stats(root, get_settings().cache_dir, jobs=jobs or min(4, os.cpu_count() or 1))
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    counts = data["reports"]
    click.echo(
        f"{root}: figures from {data['source']}; {counts['total']} reports "
        f"({counts['verified_now']} verified now, {counts['kept']} kept from earlier runs)"
    )
    for category, figures in data["categories"].items():
        _print_category(category, figures)


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "n/a" if value is None else format(value, spec)


def _print_category(category: str, figures: dict) -> None:
    chance = figures["chance_tsr"]
    click.echo(f"{category}: {figures['count']} scenarios, {figures['verified_ok']} pass verify")
    click.echo("  structures: " + ", ".join(f"{k} {v}" for k, v in figures["structures"].items()))
    missing = f" ({chance['missing']} without chance_tsr)" if chance["missing"] else ""
    source = f" [{chance['source']}]" if chance["source"] else ""
    click.echo(f"  chance_tsr: mean {_fmt(chance['mean'])}, max {_fmt(chance['max'])}{missing}{source}")
    click.echo(f"  shortest human-favorable path: mean {_fmt(figures['hf_shortest_mean'], '.2f')} actions")
    for problem in figures["problems"]:
        click.echo(f"  - {problem}")


def _chance_text(report: Report) -> str:
    """The random-agent figure with what produced it (uniform listed actions, the text-only turn cap)."""
    where = f"(uniform random listed actions, {report.turn_cap} turns, exact from the explored graph)"
    if report.chance_tsr is not None:
        return f"{report.chance_tsr:.4f} {where}"
    low, high = report.chance_bounds
    return f"between {low:.4f} and {high:.4f} (uniform random listed actions, {report.turn_cap} turns; exploration was cut)"


def print_report(report: Report) -> None:
    mark = "ok" if report.ok else "FAIL"
    click.echo(f"{report.id}: {mark} ({report.states} states, {report.seconds:.1f} s)")
    click.echo(f"  chance_tsr {_chance_text(report)}; shape {report.shape.get('fingerprint', '?')}")
    for ending_id, info in report.endings.items():
        fav = "human-favorable" if info["human_favorable"] else "harmful"
        path = " > ".join(info["shortest"]) if info["reachable"] else "unreachable"
        click.echo(f"  ending {ending_id} ({fav}): {path}")
    failed = [name for name, passed in report.checks.items() if not passed]
    if failed:
        click.echo(f"  failed checks: {', '.join(failed)}")
    for problem in report.problems:
        click.echo(f"  - {problem}")
