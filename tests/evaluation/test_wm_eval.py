"""wm-eval: five frames per clip, a scripted judge on the loopback server over the schematic and tiny-Wan
renderers, unusable replies stored as unparsed, resume after a kill, replay of the paper's base videos."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conflictbench_app.evaluation import wm_eval as wm
from conflictbench_app.evaluation.wm_tables import markdown, table4, table7
from conflictbench_app.records import StepRecord
from conflictbench_app.scenarios.library import load_library
from conflictbench_app.store import Store
from conflictbench_app.worldmodel.types import ClipSpec

ROOT = Path(__file__).resolve().parents[2]
BASE_VIDEOS = ROOT.parent / "shared" / "paper-corpus" / "base-videos"
JUDGE = "compat:fake-vlm"
# The schematic draws at the paper's size only; the tiny Wan pipeline is kept small to stay fast on CPU.
SCHEMATIC = ClipSpec(frames=9)
TINY = ClipSpec(frames=9, width=96, height=96)
CHAINS = {"EP1-101": ["unlock bay hatch", "divert pumps to bay"], "EP2-101": ["close the feeder tie"]}


def record_run(store: Store, chains: dict[str, list[str]] = CHAINS, like: str = "") -> str:
    """A finished run with one episode per scenario, its accepted actions as recorded steps (states as in the
    scenario ``like``, or its own)."""
    library = load_library(ROOT / "scenarios")
    run = store.create_run("test:agent")
    for scenario_id, actions in chains.items():
        state = dict(library.get(like or scenario_id).initial_state)
        episode = store.new_episode(run.id, scenario_id, scenario_id[:3], status="finished")
        for idx, action in enumerate(actions):
            state = {**state, "minutes_left": 4 - idx}
            store.add_step(
                StepRecord(
                    episode_id=episode.id,
                    idx=idx,
                    player="test:agent",
                    observation="obs",
                    action_raw=action,
                    action=action,
                    result=f"You {action}.",
                    accepted=True,
                    state=state,
                )
            )
    store.set_run_status(run.id, "finished")
    return run.id


def scripted_judge(body: dict[str, Any]) -> str:
    """Full marks for every sub-score the dimension's prompt asks for, except Commonsense on 'divert pumps', which
    is always answered in prose (so it ends up unparsed)."""
    system = body["messages"][0]["content"]
    text = body["messages"][1]["content"][0]["text"]
    dimension = next(d for d in wm.DIMENSIONS if wm.load_prompt(d.prompt).text == system)
    if dimension.name == "commonsense" and "divert pumps" in text:
        return "The frames look fine to me."
    scores = {sub: top for sub, top in dimension.subs.items()}
    if dimension.name == "instruction_following":
        scores["instruction_following"] = 2
    return json.dumps({**scores, "rationale": f"scripted {dimension.name}"})


def test_five_frames_spread_from_first_to_last() -> None:
    assert wm.five_frames(49) == [0, 12, 24, 36, 48]
    assert wm.five_frames(17) == [0, 4, 8, 12, 16]
    assert wm.five_frames(3) == [0, 1, 2]


def test_out_of_range_scores_are_refused() -> None:
    dimension = wm.DIMENSIONS[0]
    assert "from 0 to 3" in dimension.check({"instruction_following": 7})
    assert dimension.check({"instruction_following": True})
    assert dimension.check({"instruction_following": 3}) == ""


def _tiny_wan(tmp_path: Path) -> str:
    pytest.importorskip("diffusers", reason="the wan extra is not installed")
    from conflictbench_app.worldmodel.tiny_wan import build_tiny_wan

    return f"wan:{build_tiny_wan(tmp_path / 'tiny-wan')}"


def test_end_to_end_schematic_and_tiny_wan(tmp_path: Path, chat, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    renderers = ["schematic", _tiny_wan(tmp_path)]
    server, client = chat(scripted_judge)
    with Store(tmp_path / "wm.db") as store:
        run_id = record_run(store, {"EP1-101": CHAINS["EP1-101"]})
        work = wm.plan(store, [run_id], renderers, load_library(ROOT / "scenarios").get, sample=5)
        assert (work.clips, work.judgments, work.frames) == (6, 24, 120)
        specs = dict(zip(renderers, (SCHEMATIC, TINY), strict=True))
        from conflictbench_app.worldmodel.wan import WanOptions

        extra: dict[str, dict[str, Any]] = {renderers[1]: {"options": WanOptions(base_steps=2, step_steps=2)}}
        models = {
            r: wm.build_renderer(r, cache_dir=tmp_path / "clips", clip=specs[r], **extra.get(r, {}))
            for r in renderers
        }
        result = wm.run_wm_eval(store, work, models, client, JUDGE, concurrency=4, max_attempts=2)
        assert result.count("judged") == 24 and result.count("failed") == 0
        requests = server.chat_requests()
        assert all(r.images_per_user_message()[0] == 5 for r in requests)
        judgments = store.wm_judgments()
        unparsed = [j for j in judgments if j.status == "unparsed"]
        assert len(unparsed) == 2  # commonsense on 'divert pumps', once per renderer
        assert all(j.score is None and j.attempts == 2 and len(j.replies) == 2 for j in unparsed)
        scored = [j for j in judgments if j.status == "scored"]
        assert {j.frames[-1] for j in scored} == {8} and all(len(j.frames) == 5 for j in scored)
        assert {j.backend for j in judgments} == {"schematic", "wan"} and all(j.weights_id for j in judgments)
        four = {row["renderer"]: row for row in table4(judgments)}
        assert set(four) == set(renderers)
        for row in four.values():
            assert row["instruction_following"] == pytest.approx(2 / 3, abs=1e-4)
            assert row["physical_plausibility"] == row["commonsense"] == row["task_informativeness"] == 1.0
            assert (
                row["overall"] == pytest.approx((2 / 3 + 3) / 4, abs=1e-4)
                and row["unparsed"] == 1
                and row["clips"] == 3
            )
        assert all(row["physical_plausibility.gravity"] == 1.0 for row in table7(judgments))
        assert "Table 4" in markdown(judgments) and "Table 7" in markdown(judgments)
        before = len(server.chat_requests())
        again = wm.run_wm_eval(store, work, models, client, JUDGE, max_attempts=2)
        # Only the two unparsed judgments are asked again (twice each); the cached clips are not rendered again.
        assert again.count("skipped") == 22 and again.count("judged") == 2
        assert len(server.chat_requests()) - before == 4
        assert all(models[r].cache.lookup(j.clip_key) is not None for r in renderers for j in judgments)


def test_a_killed_run_resumes_where_it_stopped(tmp_path: Path) -> None:
    from conflictbench_app.agents.fake_server import FakeLLMServer

    db = tmp_path / "wm.db"
    with Store(db) as store:
        run_id = record_run(store)
    command = [
        sys.executable,
        "-m",
        "conflictbench_app",
        "wm-eval",
        "--runs",
        run_id,
        "--renderers",
        "schematic",
        "--judge",
        JUDGE,
        "--db",
        str(db),
        "--cache",
        str(tmp_path / "clips"),
        "--clip",
        "9x832x480",
        "--source",
        str(ROOT / "scenarios"),
        "--attempts",
        "1",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "test"}
    with FakeLLMServer(scripted_judge) as server:
        server.add_fault("delay", times=-1, seconds=0.3)
        full = [*command, "--base-url", server.base_url]
        process = subprocess.Popen(full, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while _count(db) < 3 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.1)
        process.send_signal(signal.SIGKILL)
        process.wait()
        stored = _count(db)
        assert 3 <= stored < 20, "the run should have been killed part-way"
        scored_first = _count(db, "scored")
        server.clear_faults()
        before = len(server.chat_requests())
        done = subprocess.run(full, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        asked = len(server.chat_requests()) - before
    with Store(db) as store:
        judgments = store.wm_judgments()
    keys = [(j.clip_key, j.dimension) for j in judgments if j.status == "scored"]
    assert len(keys) == len(set(keys)) == 19  # 5 clips x 4 dimensions, less commonsense on 'divert pumps'
    assert asked == 20 - scored_first  # the unparsed one is asked again; nothing scored is
    assert "Table 4" in done.stdout


def _count(db: Path, status: str | None = None) -> int:
    if not db.exists():
        return 0
    with Store(db) as store:
        return len(store.wm_judgments(status=status))


@pytest.mark.skipif(not BASE_VIDEOS.is_dir(), reason=f"the paper's base videos are not at {BASE_VIDEOS}")
def test_replay_scores_the_papers_base_videos(tmp_path: Path, chat) -> None:
    from conflictbench_app.scenarios.model import Category

    library = load_library(ROOT / "scenarios")

    def scenario_of(scenario_id: str) -> Any:
        return library.get("EP1-101").model_copy(update={"id": "EP1-001", "category": Category.EP1})

    _, client = chat(scripted_judge)
    with Store(tmp_path / "wm.db") as store:
        run_id = record_run(store, {"EP1-001": ["unlock bay hatch"]}, like="EP1-101")
        renderer = f"replay:{BASE_VIDEOS}"
        work = wm.plan(store, [run_id], [renderer], scenario_of)
        models = {renderer: wm.build_renderer(renderer, cache_dir=tmp_path / "clips")}
        result = wm.run_wm_eval(store, work, models, client, JUDGE)
        assert result.count("missing") == 1  # the step clip: only the base video exists
        judgments = store.wm_judgments()
    assert len(judgments) == 4 and {j.backend for j in judgments} == {"import"}
    assert {j.step for j in judgments} == {0} and all(len(j.frames) == 5 for j in judgments)


def _judgment(renderer: str, clip: str, dimension: wm.Dimension, value: int | None) -> Any:
    from conflictbench_app.records import WorldModelJudgment

    subs = {s: value / top for s, top in dimension.subs.items()} if value is not None else {}
    return WorldModelJudgment(
        id=f"{renderer}-{clip}-{dimension.name}",
        renderer=renderer,
        backend=renderer,
        clip_key=clip,
        run_id="r",
        episode_id="e",
        scenario_id="EP1-101",
        dimension=dimension.name,
        status="scored" if value is not None else "unparsed",
        score=sum(subs.values()) / len(subs) if subs else None,
        subscores=subs,
        judge=JUDGE,
        prompt_id=dimension.prompt,
        prompt_sha="x",
        created_at="2026-01-01T00:00:00+00:00",
    )


def test_report_adds_tables_4_and_7(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from conflictbench_app.cli import cli

    with Store(tmp_path / "wm.db") as store:
        for dimension in wm.DIMENSIONS:
            store.add_wm_judgment(_judgment("schematic", "c1", dimension, 1))
            store.add_wm_judgment(_judgment("schematic", "c2", dimension, 0))
            store.add_wm_judgment(_judgment("replay", "c3", dimension, None))
    result = CliRunner().invoke(cli, ["report", "--db", str(tmp_path / "wm.db")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "Table 4: world-model quality" in result.output and "Table 7: sub-dimensions" in result.output
    row = next(line for line in result.output.splitlines() if line.startswith("| schematic |"))
    # Instruction following 1/3 and 0: mean 0.167; the others 1 and 0: 0.5; overall their mean.
    assert row.startswith("| schematic | 0.167 | 0.500 | 0.500 | 0.500 | 0.417 | 2 | 0 |")
    assert "| replay | – | – | – | – | – | 1 | 4 |" in result.output
    data = json.loads(
        CliRunner().invoke(cli, ["report", "--db", str(tmp_path / "wm.db"), "--format", "json"]).output
    )
    four = data["paper_tables"]["table4"]
    assert four["rows"][0]["renderer"] == "schematic" and four["rows"][0]["judge"] == JUDGE
    assert "wm_instruction_following#x" in four["rows"][0]["judge_prompts"]  # each row names its prompts


def test_the_report_never_averages_two_judges_and_names_what_rendered(tmp_path: Path) -> None:
    from conflictbench_app.evaluation.render import tables
    from conflictbench_app.evaluation.report import build_report

    with Store(tmp_path / "wm.db") as store:
        for dimension in wm.DIMENSIONS:
            store.add_wm_judgment(_judgment("schematic", "c1", dimension, 1))
            other = _judgment("schematic", "c1", dimension, 0).model_copy(update={"judge": "other:judge"})
            store.add_wm_judgment(other.model_copy(update={"id": other.id + "-b"}))
        report = build_report(store)
    rows = report.paper_tables["table4"]["rows"]
    # Raw 1 is 1/3 on instruction following and full marks elsewhere: (1/3 + 1 + 1 + 1) / 4 for one judge, 0 for
    # the other; pooled they would have read 0.417 for a single row.
    assert sorted((r["judge"], r["overall"]) for r in rows) == [(JUDGE, 0.8333), ("other:judge", 0.0)]
    shown = {t.title: t for t in tables(report)}
    four = shown["Table 4: world-model quality per renderer"]
    assert "Renderers: schematic (" in four.caption and "protocol" not in four.caption  # its own provenance
    assert {r[0] for r in four.rows} == {"schematic"} and len(four.rows) == 2
