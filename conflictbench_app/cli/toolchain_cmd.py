from __future__ import annotations

import json

import click

from conflictbench_app import toolchain as tc
from conflictbench_app.errors import ToolchainError


@click.group()
def toolchain_group() -> None:
    """Install or locate the interpreter (RemGlk glulxe) and the Inform 7 compiler."""


@toolchain_group.command("install")
@click.option("--force", is_flag=True, help="Download and unpack again even if present.")
def install(force: bool) -> None:
    """Download the glulxe and Inform 7 wheels (no dependencies) and unpack the programs."""
    tc.install(force=force, log=click.echo)


@toolchain_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def status(as_json: bool) -> None:
    """Show where each program was found, or what is missing."""
    found: dict[str, str | None] = {}
    for name, finder in (("glulxe", tc.find_glulxe), ("inform7", lambda: tc.find_inform7().ni)):
        try:
            found[name] = str(finder())
        except ToolchainError:
            found[name] = None
    if as_json:
        click.echo(json.dumps(found))
        return
    for name, path in found.items():
        click.echo(f"{name:8} {path or 'missing: run `conflictbench toolchain install`'}")


toolchain = toolchain_group
