"""Items 3, 5 and the reply cap of item 7 (issue 21): text that is not valid Unicode loses no step, keys never reach
the database, an export or the terminal, and a huge reply is capped where it is kept and re-sent."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from conflictbench_app.agents.base import Decision
from conflictbench_app.agents.fake_server import FakeLLMServer
from conflictbench_app.boundary import MAX_KEPT_CHARS
from conflictbench_app.cli import cli
from conflictbench_app.errors import AgentError
from conflictbench_app.runner import RunConfig, Runner
from conflictbench_app.scenarios.library import load_library
from conflictbench_app.session import PlaySession
from conflictbench_app.store import Store

from .conftest import SECRET


def _session(store: Store, scenario) -> PlaySession:  # type: ignore[no-untyped-def]
    run = store.create_run("human:t", "text", settings={}, versions={})
    record = store.new_episode(run.id, scenario.id, scenario.category.value, source="paper", max_turns=14)
    return PlaySession(store, scenario, record)


def _all_text(db: Path) -> str:
    """Every value of every table, as text (the WAL is checkpointed into the file first)."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    text = "\n".join(str(row) for t in tables for row in conn.execute(f"SELECT * FROM {t}"))
    conn.close()
    return text + db.read_bytes().decode("latin-1")


# -- item 3 --------------------------------------------------------------------------------------------------------


def test_a_lone_surrogate_from_a_model_is_a_recorded_failed_action(
    paperlike_root: Path, tmp_path: Path
) -> None:
    scenario = load_library(paperlike_root).get("EP1-900")
    with Store(tmp_path / "u.db") as store:
        session = _session(store, scenario)
        session.start()
        bad = session.apply(Decision(action="open \ud800valve", thought="hm \udcff"), player="model:x")
        good = session.apply(Decision(action="open valve"), player="model:x")
        session.close()
        steps = store.steps(session.record.id)
    assert not bad.accepted and "not valid text" in bad.meta["error"]
    assert steps[0].thought == "hm \ufffd" and steps[0].action_raw == "open \ufffdvalve"
    assert good.accepted and [s.idx for s in steps] == [0, 1]


@pytest.mark.parametrize("locale", ["C", "C.UTF-8"])
def test_invalid_utf8_typed_in_play_is_recorded_not_lost(
    paperlike_root: Path, tmp_path: Path, locale: str
) -> None:
    db = tmp_path / "p.db"
    env = {**os.environ, "LC_ALL": locale, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "conflictbench_app",
            "play",
            "EP1-900",
            "--source",
            str(paperlike_root),
            "--db",
            str(db),
        ],
        input=b"open \xff\xfe valve\nopen valve\npull lever\n",
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    with Store(db) as store:
        (run,) = store.list_runs()
        (episode,) = store.episodes(run.id)
        steps = store.steps(episode.id)
    assert episode.outcome == "human_favorable", done.stdout.decode(errors="replace")
    assert [s.action_raw for s in steps][1:] == ["open valve", "pull lever"]
    assert len(steps) in (2, 3) and all(s.accepted for s in steps[-2:])


# -- item 7: the reply cap -----------------------------------------------------------------------------------------


def test_a_huge_reply_is_capped_where_it_is_stored_and_re_sent(
    paperlike_root: Path, tmp_path: Path, server: FakeLLMServer
) -> None:
    huge = "THINK: " + "very long thought " * 300_000 + "\nACTION: open valve"  # ~5 MB
    server.replies = [huge, "THINK: lever.\nACTION: pull lever"]
    db = tmp_path / "c.db"
    config = RunConfig(
        agent="openai:gpt-4o", source=str(paperlike_root), agent_options={"base_url": server.base_url}
    )
    result = Runner(db).start(config, load_library(paperlike_root).select("all"))
    (episode,) = result.episodes
    with Store(db) as store:
        first, _second = store.steps(episode.id)
    assert episode.outcome == "human_favorable" and first.action == "open valve"
    assert len(first.thought) < MAX_KEPT_CHARS + 200 and "characters cut" in first.thought
    assert first.meta["capped"]["thought"] > 5_000_000 - MAX_KEPT_CHARS
    resent = json.dumps(server.chat_requests()[-1].messages)
    assert len(resent) < 4 * MAX_KEPT_CHARS, "the second request re-sent the capped reply, not 5 MB"
    assert db.stat().st_size < 2_000_000


# -- item 5 --------------------------------------------------------------------------------------------------------


def test_a_401_that_echoes_the_key_is_stored_exported_and_printed_redacted(
    paperlike_root: Path, tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    server.add_fault("status", times=-1, status=401, message=f"Incorrect API key provided: {SECRET}.")
    db = tmp_path / "k.db"
    args = ["run", "--agent", "openai:gpt-4o", "--base-url", server.base_url, "--source", str(paperlike_root)]
    result = CliRunner().invoke(cli, [*args, "--db", str(db)], catch_exceptions=False)
    assert "HTTP 401" in result.output and SECRET not in result.output
    with Store(db) as store:
        (run,) = store.list_runs()
        (episode,) = store.episodes(run.id)
    assert episode.status == "errored" and "[redacted]" in (episode.error or "")
    exported = CliRunner().invoke(cli, ["export", run.id, "--db", str(db)], catch_exceptions=False).output
    assert "[redacted]" in exported and SECRET not in exported
    assert SECRET not in _all_text(db)


@pytest.mark.parametrize(
    "option",
    [
        'extra_body={"api_key": "hunter2-hunter2"}',
        'extra_body={"headers": {"Authorization": "Bearer abcdefgh12345"}}',
        f'extra_body={{"note": "{SECRET}"}}',
    ],
)
def test_credentials_in_agent_options_are_refused_before_anything_is_stored(
    paperlike_root: Path, tmp_path: Path, option: str
) -> None:
    db = tmp_path / "o.db"
    args = ["run", "--agent", "openai:gpt-4o", "--source", str(paperlike_root), "--db", str(db)]
    result = CliRunner().invoke(cli, [*args, "--agent-option", option])
    assert result.exit_code != 0 and "looks like a credential" in result.output
    assert not db.exists() or SECRET not in _all_text(db)


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:9/v1?token=abc123", "http://127.0.0.1:9/v1?api_key=x", "http://u:p@127.0.0.1:9/v1"],
)
def test_credentials_in_a_base_url_are_refused(paperlike_root: Path, tmp_path: Path, url: str) -> None:
    db = tmp_path / "b.db"
    args = [
        "run",
        "--agent",
        "openai:gpt-4o",
        "--base-url",
        url,
        "--source",
        str(paperlike_root),
        "--db",
        str(db),
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code != 0 and "credentials" in result.output
    with Store(db) as store:
        assert store.list_runs() == []


def test_the_runner_refuses_credentials_in_options_from_any_caller(
    paperlike_root: Path, tmp_path: Path
) -> None:
    config = RunConfig(agent="random:1", agent_options={"extra_body": {"x_api_key": "abcdefgh"}})
    with pytest.raises(AgentError, match=r"extra_body\.x_api_key"):
        Runner(tmp_path / "r.db").start(config, load_library(paperlike_root).select("all"))
