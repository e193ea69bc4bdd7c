"""Rebuild this example report: ``.venv/bin/python docs/example-report/build.py`` from the checkout root.

It plays the project's scenarios (``scenarios/``) with the scripted agents (real glulxe, real SQLite), then runs the
evaluation pipeline against the loopback fake OpenAI-compatible server, and writes report.{md,html,json,csv} and
figures/ here. The "models" on the loopback server are scripted stand-ins (see README.md): the judge, regret and
single-turn figures show the pipeline working, they are not findings about any model.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from conflictbench_app.agents.chat import get_chat_client  # noqa: E402
from conflictbench_app.agents.fake_server import FakeLLMServer  # noqa: E402
from conflictbench_app.evaluation.judge import judge_run  # noqa: E402
from conflictbench_app.evaluation.regret import RegretPlan, regret_run  # noqa: E402
from conflictbench_app.evaluation.report import build_report  # noqa: E402
from conflictbench_app.evaluation.single_turn import Judge, run_single_turn, scenario_items  # noqa: E402
from conflictbench_app.runner import RunConfig, Runner  # noqa: E402
from conflictbench_app.scenarios.library import load_library  # noqa: E402
from conflictbench_app.store import Store  # noqa: E402

RUNS = [
    ("walkthrough:aligned", "text"),
    ("walkthrough:misaligned", "text"),
    ("random:1", "text"),
    ("walkthrough:aligned", "multimodal"),
]


def coin(text: str, salt: str) -> float:
    """A seeded number in [0, 1) from the text: the scripted stand-ins' only source of variety."""
    return int(hashlib.sha256(f"{salt}|{text}".encode()).hexdigest()[:8], 16) / 2**32


def demo_judge(body: dict) -> str:
    """Stand-in judge: a seeded coin on the conversation (30% aligned), not a reading of it."""
    text = json.dumps(body["messages"])
    if "IDEAL RESPONSE PROFILE" in text:
        return json.dumps(
            {"verdict": "aligned" if coin(text, "free") < 0.5 else "misaligned", "rationale": "demo"}
        )
    steps = text.count("Step ")
    aligned = coin(text, "judge") < 0.3
    step = None if aligned else 1 + int(coin(text, "step") * max(1, steps))
    return json.dumps(
        {
            "verdict": "aligned" if aligned else "misaligned",
            "rationale": "demo coin",
            "first_misaligned_step": step,
        }
    )


def demo_agent(body: dict) -> str:
    """Stand-in agent: always answers "A." to single-turn questions; in the regret test it persists, except that
    in some conversations (a seeded coin) it regrets at the second stage."""
    messages = body["messages"]
    stage = sum("ACTION: REGRET to abort" in str(m.get("content")) for m in messages if m["role"] == "user")
    if stage == 0:
        return "A. Human safety comes first."
    regrets = stage == 2 and coin(str(messages[0]["content"]), "regret") < 0.5
    return "THINK: demo.\nACTION: REGRET" if regrets else "THINK: demo.\nACTION: PERSIST"


def main() -> None:
    library = load_library(ROOT / "scenarios")
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "example.db"
        for agent, setting in RUNS:
            scenarios = library.select("EP1" if setting == "multimodal" else "all")
            config = RunConfig(
                agent=agent,
                setting=setting,
                source=str(library.root),
                renderer_options={"cache_dir": Path(tmp) / "clips"},
            )
            Runner(db).start(config, scenarios)
        with FakeLLMServer({"*": demo_judge}) as judge_server, FakeLLMServer(demo_agent) as agent_server:
            judge = get_chat_client("compat:demo-judge", base_url=judge_server.base_url)
            agent = get_chat_client("compat:demo-agent", base_url=agent_server.base_url)
            with Store(db) as store:
                runs = store.list_runs()
                for run in runs:
                    judge_run(store, run.id, judge, "compat:demo-judge")
                    world = None
                    if run.setting == "multimodal":
                        from conflictbench_app.worldmodel import get_world_model

                        world = get_world_model("schematic", cache_dir=Path(tmp) / "clips")
                    plan = RegretPlan(
                        agent, "compat:demo-agent", {s.id: s for s in library.scenarios}, world_model=world
                    )
                    regret_run(store, run.id, plan)
                items = scenario_items(library.scenarios)
                run_single_turn(
                    store, agent, "compat:demo-agent", items, judge=Judge(judge, "compat:demo-judge")
                )
                report = build_report(store)
        plots = {name: path.relative_to(HERE) for name, path in report.save_plots(HERE / "figures").items()}
        (HERE / "report.md").write_text(report.to_markdown(plots), encoding="utf-8")
        (HERE / "report.html").write_text(
            report.to_html(report.save_plots(HERE / "figures")), encoding="utf-8"
        )
        (HERE / "report.json").write_text(report.to_json(), encoding="utf-8")
        (HERE / "report.csv").write_text(report.to_csv(), encoding="utf-8")
    print(f"wrote {HERE}/report.md, report.html, report.json, report.csv and {len(plots)} figures")


if __name__ == "__main__":
    main()
