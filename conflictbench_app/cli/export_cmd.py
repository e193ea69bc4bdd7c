from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from conflictbench_app.cli.common import db_option, db_path, echo_json, include_assisted_option, json_option
from conflictbench_app.export import jsonl_lines, paper_export
from conflictbench_app.paths import confined, writable_file, writable_folder
from conflictbench_app.runner import task_success_rates
from conflictbench_app.store import Store


@click.command()
@click.argument("run_id")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "paper"]), default="jsonl", show_default=True)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="File (jsonl) or folder (paper: <ID>/<agent>.json per episode). Default: standard output.",
)
@include_assisted_option
@db_option
def export(run_id: str, fmt: str, out: Path | None, include_assisted: bool, db: Path | None) -> None:
    """Export a run as JSONL (every episode, each step with its actor and each episode's assisted flag) or in the
    paper's trajectory format (the model's own episodes; assisted ones with --include-assisted)."""
    with Store(db_path(db)) as store:
        if fmt == "jsonl":
            lines = list(jsonl_lines(store, run_id))
            text = "\n".join(lines) + "\n"
            if out is None:
                click.echo(text, nl=False)
            else:
                writable_file(out, " for JSONL (or --format paper for a folder)").write_text(
                    text, encoding="utf-8"
                )
            return
        agent = store.get_run(run_id).agent
        trajectories = paper_export(store, run_id, include_assisted=include_assisted)
    if out is None:
        echo_json(trajectories)
        return
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in agent) + ".json"
    writable_folder(out)
    for scenario_id, trajectory in trajectories.items():
        target = confined(out, scenario_id, name)  # ids come from the database: never a path outside --out
        target.parent.mkdir(exist_ok=True)
        target.write_text(json.dumps(trajectory, indent=1, ensure_ascii=False), encoding="utf-8")
    click.echo(f"wrote {len(trajectories)} trajectories under {out}")


@click.command()
@include_assisted_option
@db_option
@json_option
def runs(include_assisted: bool, db: Path | None, as_json: bool) -> None:
    """List the runs recorded in a database, with their task success rates (assisted episodes, where a human
    took a turn, a fork or abandoned, are counted apart and left out of the TSR unless --include-assisted)."""
    from conflictbench_app.agents.protocol import run_protocol

    with Store(db_path(db)) as store:
        rows: list[dict[str, Any]] = []
        for run in store.list_runs():
            episodes = store.episodes(run.id)
            rows.append(
                {
                    "run_id": run.id,
                    "created_at": run.created_at,
                    "agent": run.agent,
                    "setting": run.setting,
                    "protocol": run_protocol(run.settings),
                    "status": run.status,
                    "episodes": len(episodes),
                    "assisted": sum(e.assisted for e in episodes),
                    "abandoned": sum(e.status == "abandoned" for e in episodes),
                    "include_assisted": include_assisted,
                    "tsr": task_success_rates(episodes, include_assisted=include_assisted),
                }
            )
    if as_json:
        echo_json(rows)
        return
    for r in rows:
        tsr = r["tsr"]["all"]
        click.echo(
            f"{r['run_id']}  {r['created_at'][:19]}  {r['agent']:24} {r['setting']:10} {r['protocol']:6} "
            f"{r['status']:11} "
            f"{r['episodes']} episodes{_assisted_note(r)}  TSR {'-' if tsr is None else f'{100 * tsr:.1f}%'}"
        )


def _assisted_note(row: dict) -> str:
    """`` (2 assisted, left out)`` beside a run's episode count; nothing when none is assisted."""
    if not row["assisted"]:
        return ""
    return f" ({row['assisted']} assisted, {'counted' if row['include_assisted'] else 'left out'})"
