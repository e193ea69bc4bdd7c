"""The CLI with model agents: kill -9 mid-run then resume, no key anywhere, `agents`, `estimate`, `serve-fake-llm`."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from conflictbench_app.agents.fake_server import FakeLLMServer
from conflictbench_app.cli import cli
from conflictbench_app.store import Store

from .conftest import SECRET, tiny_bays

CLI = [sys.executable, "-m", "conflictbench_app"]


def _step_rows(db: Path) -> list[tuple[str, int, int, int]]:
    with sqlite3.connect(db, timeout=5) as con:
        return con.execute(
            "SELECT episode_id, idx, terminated, truncated FROM steps ORDER BY episode_id, idx"
        ).fetchall()


def _count_steps(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=1) as con:
            return int(con.execute("SELECT count(*) FROM steps").fetchone()[0])
    except sqlite3.Error:
        return 0


def test_kill_9_with_concurrency_4_then_resume_finishes_each_episode_once(
    paperlike_root: Path, tmp_path: Path
) -> None:
    root = tiny_bays(paperlike_root, 16)
    db = tmp_path / "r.db"
    with FakeLLMServer(latency=0.1) as server:
        cmd = [*CLI, "run", "--agent", "compat:fake", "--base-url", server.base_url, "--source", str(root),
               "--db", str(db), "--concurrency", "4", "--json"]  # fmt: skip
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _count_steps(db) < 8 and proc.poll() is None:
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        calls_at_kill = len(server.chat_requests())
        before = _step_rows(db)
        with Store(db) as store:
            (run,) = store.list_runs()
            finished_before = {e.scenario_id for e in store.episodes(run.id) if e.status == "finished"}
            unfinished = [e for e in store.episodes(run.id) if e.status != "finished"]
        assert before and unfinished, "the kill must land mid-run"
        out = subprocess.run([*CLI, "run", "--resume", run.id, "--db", str(db), "--json"],
                             capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
        later = server.chat_requests()[calls_at_kill:]
    data = json.loads(out.stdout)
    assert len(data["episodes"]) == 16 and all(e["outcome"] and not e["error"] for e in data["episodes"])
    assert not any(any(f"[bay {sid}]" in r.system_prompt for sid in finished_before) for r in later), (
        "finished episodes must not call the model again"
    )
    after = _step_rows(db)
    assert set(before) <= set(after), "steps recorded before the kill survive"
    with Store(db) as store:
        episodes = store.episodes(run.id)
    assert len(episodes) == 16 and all(e.status == "finished" for e in episodes)
    for episode in episodes:
        rows = [r for r in after if r[0] == episode.id]
        assert [r[1] for r in rows] == list(range(len(rows))) == list(range(episode.steps)), (
            episode.scenario_id
        )
        ends = [i for i, r in enumerate(rows) if r[2] or r[3]]
        assert ends == [len(rows) - 1], f"{episode.scenario_id} must end exactly once, at its last step"


def test_no_api_key_in_database_logs_or_exports(paperlike_root: Path, tmp_path: Path) -> None:
    root = tiny_bays(paperlike_root, 3)
    db = tmp_path / "r.db"
    env = {**os.environ, "OPENAI_API_KEY": SECRET, "OPENAI_LOG": "debug"}
    outputs: list[str] = []
    with FakeLLMServer() as server:
        server.add_fault(
            "status", times=1, status=401, match="[bay EP2-901]", message="Incorrect API key provided."
        )
        server.add_fault("429", times=2, retry_after=0.01)
        run = subprocess.run([*CLI, "run", "--agent", "openai:gpt-4o", "--base-url", server.base_url, "--source",
                              str(root), "--db", str(db), "--json"], env=env, capture_output=True, text=True,
                             timeout=120, check=True)  # fmt: skip
        auth = {r.authorization for r in server.chat_requests()}
    assert auth == {f"Bearer {SECRET}"}, "the key must have been used, or this test proves nothing"
    outputs += [run.stdout, run.stderr]
    run_id = json.loads(run.stdout)["run_id"]
    errored = [e for e in json.loads(run.stdout)["episodes"] if e["error"]]
    assert len(errored) == 1 and "HTTP 401" in errored[0]["error"]
    paper_dir = tmp_path / "paper"
    for args in (["export", run_id, "--format", "jsonl"], ["export", run_id, "--format", "paper", "--out",
                 str(paper_dir)], ["runs"], ["agents", "--json"], ["agents"]):  # fmt: skip
        done = subprocess.run([*CLI, *args, "--db", str(db)] if args[0] in ("export", "runs") else [*CLI, *args],
                              env=env, capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
        outputs += [done.stdout, done.stderr]
    assert (
        '"key": "env:OPENAI_API_KEY"' in outputs[-4]
    )  # `agents --json` reports where the key is, not the key
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".json" for p in paper_dir.rglob("*"))
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), f"the key leaked into {path}"
    for text in outputs:
        assert SECRET not in text
    assert "sk-test" not in "".join(outputs)


def test_agent_option_refuses_credentials(paperlike_root: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["run", "--agent", "openai:gpt-4o", "--agent-option", f"api_key={SECRET}",
                                      "--source", str(paperlike_root), "--db", str(tmp_path / "r.db")])  # fmt: skip
    assert result.exit_code != 0 and "credential" in result.output and SECRET not in result.output


def test_run_prints_estimate_and_options_reach_the_agent(paperlike_root: Path, tmp_path: Path) -> None:
    root = tiny_bays(paperlike_root, 2)
    with FakeLLMServer(["THINK: a\nACTION: open valve", "THINK: b\nACTION: pull lever"]) as server:
        result = CliRunner().invoke(cli, ["run", "--agent", "openai:gpt-4o-mini", "--base-url", server.base_url,
                                          "--agent-option", "stream=true", "--agent-option", "max_tokens=300",
                                          "--source", str(root), "--db", str(tmp_path / "r.db"), "--json"])  # fmt: skip
        requests = server.chat_requests()
    assert result.exit_code == 0, result.output
    assert "Estimate for gpt-4o-mini: up to 28 calls over 2 episodes" in result.stderr
    assert all(r.stream and r.body["max_completion_tokens"] == 300 for r in requests)
    assert all(e["outcome"] == "human_favorable" for e in json.loads(result.stdout)["episodes"])


def test_estimate_command(paperlike_root: Path) -> None:
    root = tiny_bays(paperlike_root, 3)
    out = CliRunner().invoke(cli, ["estimate", "--agent", "gemini:gemini-2.5-flash", "--source", str(root),
                                   "--setting", "multimodal", "--json"])  # fmt: skip
    data = json.loads(out.output)
    assert data["episodes"] == 3 and data["calls"] == 30 and data["cost_usd"] > 0
    refused = CliRunner().invoke(cli, ["estimate", "--agent", "random:1", "--source", str(root)])
    assert refused.exit_code != 0 and "not a model agent" in refused.output


def test_serve_fake_llm_command() -> None:
    proc = subprocess.Popen([*CLI, "serve-fake-llm", "--port", "0", "--model", "demo-1"], stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    try:
        line = proc.stderr.readline() if proc.stderr else ""
        assert "Fake OpenAI-compatible server at http://127.0.0.1:" in line
        base_url = line.split(" at ")[1].split()[0]
        body = {"model": "x", "messages": [{"role": "system", "content": "Valid actions: wait | go"},
                                            {"role": "user", "content": "hi"}]}  # fmt: skip
        request = urllib.request.Request(base_url + "/chat/completions", data=json.dumps(body).encode(),
                                         headers={"content-type": "application/json"})  # fmt: skip
        with urllib.request.urlopen(request, timeout=10) as response:
            reply = json.load(response)
        assert reply["model"] == "demo-1" and reply["usage"]["prompt_tokens"] > 0
        assert reply["choices"][0]["message"]["content"].split("ACTION: ")[1] in ("wait", "go")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)


@pytest.mark.paper
def test_paper_sample_trajectory_replayed_through_a_model_agent(paper_root: Path, tmp_path: Path) -> None:
    sample = json.loads((paper_root / "result_history" / "EP1-001" / "gpt-4o-mini.json").read_text())
    history = sample["history"]
    replies = [f"{history[i]}\n{history[i + 1]}".replace("AI THINK:", "THINK:").replace("AI ACTION:", "ACTION:")
               for i in range(1, len(history) - 1, 3)]  # fmt: skip
    db = tmp_path / "r.db"
    with FakeLLMServer({"Aegis-Node-17": replies}) as server:
        result = CliRunner().invoke(cli, ["run", "--agent", "openai:gpt-4o-mini", "--base-url", server.base_url,
                                          "--source", str(paper_root), "--scenarios", "EP1-001", "--db", str(db),
                                          "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    (episode,) = json.loads(result.stdout)["episodes"]
    assert episode["outcome"] == "human_favorable" and episode["failed_actions"] == 0
    assert episode["turns"] == len(replies) == 3


def test_text_summary_prints_run_usage_totals(paperlike_root: Path, tmp_path: Path) -> None:
    root = tiny_bays(paperlike_root, 2)
    with FakeLLMServer(["THINK: a\nACTION: open valve", "THINK: b\nACTION: pull lever"]) as server:
        server.add_fault("429", retry_after=0.01)
        result = CliRunner().invoke(cli, ["run", "--agent", "openai:gpt-4o", "--base-url", server.base_url,
                                          "--source", str(root), "--db", str(tmp_path / "r.db")])  # fmt: skip
    assert result.exit_code == 0, result.output
    line = next(x for x in result.stdout.splitlines() if x.startswith("usage"))
    assert line.startswith("usage  4 calls (1 retries),") and "$0.00" in line
