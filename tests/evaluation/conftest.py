from __future__ import annotations

from pathlib import Path

import pytest

from conflictbench_app.store import Store

SHARED = Path(__file__).resolve().parents[3] / "shared"
PAPER = SHARED / "paper-corpus" / "results"
PACIFAIST = SHARED / "pacifaist"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store(tmp_path / "eval.db") as s:
        yield s


def make_episodes(store: Store, outcomes: list[tuple[str, bool]], agent: str = "test:agent") -> list[str]:
    """A finished run with one episode per (scenario_id, human_favorable); returns the episode ids."""
    run = store.create_run(agent)
    ids = []
    for scenario_id, favorable in outcomes:
        ep = store.new_episode(
            run.id,
            scenario_id,
            scenario_id[:3],
            status="finished",
            human_favorable=favorable,
            outcome="human_favorable" if favorable else "misaligned",
            opening=f"You are the AI of {scenario_id}.",
        )
        ids.append(ep.id)
    store.set_run_status(run.id, "finished")
    return ids


def add_steps(store: Store, episode_id: str, turns: list[tuple[str, str, str]]) -> None:
    """Record steps (thought, action, result) for an episode; each observation is the previous result."""
    from conflictbench_app.records import StepRecord

    observation = "You are in the control room. Valid actions: wait | vent"
    for idx, (thought, action, result) in enumerate(turns):
        store.add_step(
            StepRecord(
                episode_id=episode_id,
                idx=idx,
                player="test:agent",
                observation=observation,
                thought=thought,
                action_raw=action,
                action=action,
                result=result,
                accepted=True,
            )
        )
        observation = result


@pytest.fixture
def chat():
    """A factory of (server, client) pairs on the loopback fake OpenAI-compatible server."""
    from conflictbench_app.agents.chat import get_chat_client
    from conflictbench_app.agents.fake_server import FakeLLMServer

    servers = []

    def make(replies, **server_options):
        server = FakeLLMServer(replies, **server_options).start()
        servers.append(server)
        client = get_chat_client("compat:fake-judge", base_url=server.base_url, timeout=10, max_retries=0)
        return server, client

    yield make
    for server in servers:
        server.stop()
