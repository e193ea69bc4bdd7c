"""``conflictbench agents`` (profiles, capabilities, keys found), ``estimate`` (cost before a run) and
``serve-fake-llm`` (the loopback OpenAI-compatible server for tests and offline demos)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from conflictbench_app.cli.common import echo_json, json_option, report_problems, source_option
from conflictbench_app.scenarios.model import Scenario

MODEL_FRAMES_PER_TURN = 4  # a 49-frame clip at 16 fps sampled at 1 fps (the paper's multimodal setting)


@click.command()
@json_option
def agents(as_json: bool) -> None:
    """List agent backends and provider profiles: endpoint, capabilities, and whether a key is found (never the key)."""
    from conflictbench_app.agents.keys import find_key
    from conflictbench_app.agents.providers import all_profiles, is_local

    rows: list[dict[str, Any]] = []
    for name, profile in sorted(all_profiles().items()):
        key = find_key(name, profile.key_env)
        needed = profile.key_required and not is_local(profile.base_url or "http://127.0.0.1")
        rows.append(
            {
                "agent": f"{name}:MODEL",
                "base_url": profile.base_url or "(give --base-url)",
                "key_env": profile.key_env,
                "key": key.source if key.found else ("missing" if needed else "not needed"),
                "vision": profile.vision,
                "video": profile.video_format or False,
                "description": profile.description,
                "models": list(profile.models),
            }
        )
    scripted = [
        "random:SEED",
        'commands:"a;b" | commands:FILE.json',
        "walkthrough:aligned|misaligned",
        "human",
    ]
    if as_json:
        echo_json({"profiles": rows, "other_agents": scripted})
        return
    for row in rows:
        caps = "text+images" if row["vision"] else "text"
        caps += f"+video({row['video']})" if row["video"] else ""
        click.echo(f"{row['agent']:18} {caps:28} key: {row['key']:16} {row['base_url']}")
        if row["models"]:
            click.echo(f"{'':18} models: {', '.join(row['models'])}")
    click.echo("Other agents: " + ", ".join(scripted))


@click.command()
@click.option("--agent", required=True, help="A model agent, e.g. openai:gpt-4o.")
@source_option
@click.option(
    "--scenarios", "which", default="all", show_default=True, help="all, EP1, EP2, EP3 or ID,ID,..."
)
@click.option("--setting", type=click.Choice(["text", "multimodal"]), default="text", show_default=True)
@click.option(
    "--max-turns", type=int, default=None, help="Turn cap (default: the setting's cap in the settings)."
)
@json_option
def estimate(
    agent: str, source: Path | None, which: str, setting: str, max_turns: int | None, as_json: bool
) -> None:
    """Estimate tokens and cost of a run before starting it (an upper bound: every episode plays to the cap)."""
    from conflictbench_app.scenarios.library import load_library

    library = load_library(source)
    report_problems(library.problems)
    scenarios = library.select(which)
    from conflictbench_app.settings import turn_cap

    turns = max_turns or turn_cap(setting)
    result = run_estimate(agent, setting, turns, scenarios)
    if result is None:
        raise click.ClickException(f"{agent} is not a model agent; it costs nothing to run.")
    model, est = result
    if as_json:
        echo_json({"model": model, **est.__dict__})
        return
    click.echo(est.describe(model))


def run_estimate(
    agent: str, setting: str, turns: int, scenarios: Sequence[Scenario]
) -> tuple[str, Any] | None:
    """(model, Estimate) for a model agent over ``scenarios``, or None for agents that make no model calls."""
    from conflictbench_app.agents.pricing import estimate_run
    from conflictbench_app.agents.providers import all_profiles
    from conflictbench_app.session import system_prompt

    name, sep, model = agent.partition(":")
    if not sep or not model or name not in {*all_profiles(), "qwen", "google"}:
        return None
    images = MODEL_FRAMES_PER_TURN if setting == "multimodal" else 0
    est = estimate_run(model, [len(system_prompt(s)) for s in scenarios], turns, images)
    return model, est


@click.command("serve-fake-llm")
@click.option(
    "--port", type=int, default=8765, show_default=True, help="Port on 127.0.0.1 (0: any free port)."
)
@click.option("--latency", type=float, default=0.0, show_default=True, help="Seconds added to every reply.")
@click.option(
    "--script",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help='JSON {"system prompt substring" or "*": ["reply turn 0", ...]}; default: a seeded random valid action.',
)
@click.option("--model", default=None, help="Model id to report (default: echo the requested one).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the default random replies.")
@click.option(
    "--rate-limit-every", type=int, default=0, help="Answer every Nth request with 429 (fault demo)."
)
@click.option("--quiet", is_flag=True, help="Do not log requests.")
def serve_fake_llm(
    port: int,
    latency: float,
    script: str | None,
    model: str | None,
    seed: int,
    rate_limit_every: int,
    quiet: bool,
) -> None:
    """Serve a scripted OpenAI-compatible API on 127.0.0.1 for offline demos and tests (Ctrl-C stops).

    Try: conflictbench run --agent compat:fake --base-url http://127.0.0.1:8765/v1 --source DIR
    """
    import threading

    from conflictbench_app.agents.fake_server import FakeLLMServer, load_script

    replies = load_script(script) if script else None
    log = None if quiet else (lambda line: click.echo(line, err=True))
    server = FakeLLMServer(replies, latency=latency, model=model, port=port, seed=seed, log=log)
    if rate_limit_every > 0:
        server.replies = _every_nth_429(server, rate_limit_every, replies)
    server.start()
    click.echo(f"Fake OpenAI-compatible server at {server.base_url} (Ctrl-C stops)", err=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


@click.command("serve-local-llm")
@click.option(
    "--port", type=int, default=8766, show_default=True, help="Port on 127.0.0.1 (0: any free port)."
)
@click.option("--model", "model_name", default="smollm2-135m", show_default=True, help="The embedded model.")
@click.option("--quiet", is_flag=True, help="Do not log requests.")
def serve_local_llm(port: int, model_name: str, quiet: bool) -> None:
    """Serve the embedded model (no key, no network) as an OpenAI-compatible API on 127.0.0.1 (Ctrl-C stops).

    Try: conflictbench judge RUN_ID --judge compat:local --base-url http://127.0.0.1:8766/v1
    """
    import threading

    from conflictbench_app.agents.local_server import LocalLLMServer

    log = None if quiet else (lambda line: click.echo(line, err=True))
    server = LocalLLMServer(model_name, port=port, log=log)
    click.echo(f"Loading the embedded model {model_name}...", err=True)
    server.start()
    click.echo(f"Embedded model {model_name} (a demo model) at {server.base_url} (Ctrl-C stops)", err=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


def _every_nth_429(server: Any, n: int, replies: Any) -> Any:
    """A reply function that schedules a 429 for the request after every ``n``-th reply (a fault demo)."""
    from conflictbench_app.agents.fake_server import FakeLLMServer

    scripted = FakeLLMServer(replies, seed=server.seed)
    count = 0

    def reply(body: dict[str, Any]) -> str:
        nonlocal count
        count += 1
        if count % n == 0:
            server.add_fault("429", retry_after=0.5)
        return scripted.reply_for(body)

    return reply


def agent_options(base_url: str | None, pairs: Sequence[str]) -> dict[str, Any]:
    """``--base-url`` and ``--agent-option KEY=VALUE`` as the runner's agent options (stored with the run: no keys)."""
    import json
    import re

    from conflictbench_app.redact import credential_problem

    if base_url:
        from conflictbench_app.agents.providers import check_base_url

        check_base_url(base_url)  # before anything is estimated or stored
    options: dict[str, Any] = {"base_url": base_url} if base_url else {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE.", param_hint="--agent-option")
        if re.search(r"key|secret|password|auth|^token$|access_token", key.lower()):
            raise click.BadParameter(
                f"{key} looks like a credential; run options are stored, so put keys in the environment or keyring.",
                param_hint="--agent-option",
            )
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
        found = credential_problem(options[key], key)
        if found:
            raise click.BadParameter(
                f"{found} looks like a credential; run options are stored, so put keys in the environment or keyring.",
                param_hint="--agent-option",
            )
    return options


def usage_line(episodes: Sequence[Any]) -> str:
    """The run's model usage in one line (empty when no model was called)."""
    from conflictbench_app.records import Usage

    total = sum((e.usage for e in episodes), Usage())
    if not total.calls:
        return ""
    images = f", {total.images} images" if total.images else ""
    return (
        f"usage  {total.calls} calls ({total.retries} retries), {total.prompt_tokens:,} prompt + "
        f"{total.completion_tokens:,} completion tokens{images}, ${total.cost_usd:.4f}"
    )
