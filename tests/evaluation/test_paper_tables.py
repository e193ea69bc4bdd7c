"""Reports as the paper computes them: Avg. is the mean of the category rates, the numbered tables are all there,
and a cell never pools runs of different protocols, judges or judge prompts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from conflictbench_app.cli import cli
from conflictbench_app.evaluation.report import build_report
from conflictbench_app.store import Store
from tests.evaluation.conftest import add_steps

OUTCOMES = [("EP1-001", True), ("EP1-002", False), ("EP1-003", False), ("EP2-001", False), ("EP3-001", True)]


def _run(store: Store, protocol: str | None, agent: str = "openai:gpt-4o") -> tuple[str, list[str]]:
    settings = {"protocol": protocol} if protocol else {}
    run = store.create_run(agent, settings=settings)
    ids = []
    for scenario_id, favorable in OUTCOMES:
        episode = store.new_episode(
            run.id,
            scenario_id,
            scenario_id[:3],
            status="finished",
            human_favorable=favorable,
            outcome="human_favorable" if favorable else "misaligned",
            steps=4,
        )
        add_steps(store, episode.id, [("t", "wait", "r")] * 4)
        ids.append(episode.id)
    store.set_run_status(run.id, "finished")
    return run.id, ids


def _judge(store: Store, ids: list[str], sha: str, step: int, episodes: slice) -> None:
    for episode_id in ids[episodes]:
        store.add_verdict(
            episode_id,
            "misaligned",
            judge="openai:gpt-4o",
            prompt_id="judge_trajectory@2",
            prompt_sha=sha,
            meta={"first_misaligned_step": step},
        )


def test_avg_is_the_mean_of_category_rates_and_every_table_is_there(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with Store(db) as store:
        paper, ids = _run(store, "paper")
        _judge(store, ids, "aaaa", 2, slice(1, 4))  # EP1-002, EP1-003, EP2-001 by one rubric
        _judge(store, ids, "bbbb", 9, slice(1, 2))  # and one episode by another rubric: never pooled with it
        store.add_label(ids[1], "misaligned", "ann")
        store.add_label(ids[2], "aligned", "ann")
        legacy, _ = _run(store, None, agent="openai:gpt-5")
    data = json.loads(CliRunner().invoke(cli, ["report", "--format", "json", "--db", str(db)]).output)
    # TSR: EP1 1/3, EP2 0, EP3 1 -> Avg. (the paper's) 4/9; pooled 2/5.
    assert data["avg"][paper]["tsr"] == pytest.approx(4 / 9)
    runs = {r["run_id"]: r for r in data["runs"]}
    assert runs[paper]["tsr"]["all"]["value"] == pytest.approx(2 / 5)
    assert data["avg"][paper]["asr"] == pytest.approx((1 / 3 + 0 + 1) / 3)
    assert set(data["paper_tables"]) == {f"table{n}" for n in (1, 2, 3, 5, 6, 8, 9)}
    tables = data["paper_tables"]
    assert tables["table1"]["rows"] == [{"source": "project", "EP1": 3, "EP2": 1, "EP3": 1, "total": 5}]
    row2 = next(r for r in tables["table2"]["rows"] if r["run_id"] == paper)
    assert row2["tsr_avg"] == pytest.approx(4 / 9) and row2["tsr_pooled"] == pytest.approx(2 / 5)
    assert (row2["protocol"], row2["judge"], row2["judge_prompt"]) == (
        "paper",
        "openai:gpt-4o",
        "judge_trajectory@2#aaaa",
    )
    # The runs' protocols: stored, or studio for a run recorded before protocols existed.
    assert {r["run_id"]: r["protocol"] for r in tables["table2"]["rows"]} == {
        paper: "paper",
        legacy: "studio",
    }
    # One judge prompt per run: the other rubric's verdict is left out and said so.
    assert runs[paper]["left_out_verdicts"] == 1 and any("not counted" in n for n in data["notes"])
    assert sorted(r["judge_prompt"] for r in tables["table3"]["rows"]) == [
        "judge_trajectory@2#aaaa",
        "judge_trajectory@2#bbbb",
    ]
    agreement = next(r for r in tables["table3"]["rows"] if r["judge_prompt"].endswith("aaaa"))
    assert agreement["pairs"] == 2 and agreement["accuracy"] == 0.5
    # Table 9: the first misaligned step of the counted verdicts only (2, not the other rubric's 9).
    row9 = next(r for r in tables["table9"]["rows"] if r.get("run_id") == paper)
    assert (row9["misaligned"], row9["mean_step"]) == (3, 2)
    overall = [r for r in tables["table9"]["rows"] if r["agent"].startswith("overall")]
    assert {r["protocol"] for r in overall} == {"paper", "studio"}
    # Table 8: per category, never mixing the two protocols' runs.
    row8 = [r for r in tables["table8"]["rows"] if r["agent"] == "openai:gpt-4o"]
    assert [(r["category"], r["protocol"], r["multi_text_run"]) for r in row8] == [
        ("EP1", "paper", paper),
        ("EP2", "paper", paper),
        ("EP3", "paper", paper),
    ]
    assert tables["table6"]["rows"][0]["EP1"] == 4


def test_every_rendered_caption_names_the_protocol(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with Store(db) as store:
        run_id, ids = _run(store, "paper")
        _judge(store, ids, "aaaa", 2, slice(1, 4))
        report = build_report(store)
    from conflictbench_app.evaluation.render import tables

    rendered = tables(report)
    assert [t.title.split(".")[0] for t in rendered if t.title.startswith("Table")] == [
        "Table 1",
        "Table 2",
        "Table 6",
        "Table 8",
        "Table 9",
    ]
    for table in rendered:
        assert f"run {run_id}: protocol paper, judge openai:gpt-4o (judge_trajectory@2#aaaa)" in table.caption
    main = rendered[1]
    assert main.headers[5:10] == ["TSR EP1", "TSR EP2", "TSR EP3", "TSR Avg.", "TSR pooled"]
    assert main.rows[0][8] == "44.4%" and main.rows[0][9] == "40.0% (2/5)"
