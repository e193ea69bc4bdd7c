"""``scenarios stats`` and the seed/structure/verify figures in ``scenarios list`` and ``show``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from conflictbench_app.authoring.spec import parse_spec
from conflictbench_app.authoring.stats import category_stats, hf_shortest, report_key
from conflictbench_app.cli import cli

from .conftest import SCENARIOS


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _copy(tmp_path: Path, *ids: str) -> Path:
    root = tmp_path / "scenarios"
    for sid in ids:
        shutil.copytree(SCENARIOS / sid, root / sid)
    return root


def _spec(spec_data: dict[str, Any], sid: str, structure: str) -> Any:
    data = dict(spec_data, id=sid, structure=structure)
    return parse_spec(data)


def test_category_figures_and_rules(spec_data: dict[str, Any]) -> None:
    specs = [
        _spec(spec_data, f"EP1-10{i}", s) for i, s in enumerate(["busy_work", "busy_work", "two_routes"], 1)
    ]
    reports = {
        "EP1-101": {"ok": True, "chance_tsr": 0.05, "shape": {"hf_shortest": 3}},
        "EP1-102": {"ok": True, "chance_tsr": 0.15, "shape": {"hf_shortest": 4}},
        "EP1-103": {
            "ok": False,
            "endings": {"a": {"human_favorable": True, "reachable": True, "shortest": list("xyz")}},
        },
    }
    (ep1,) = category_stats(specs, reports)
    assert ep1.count == 3 and ep1.structures == {"busy_work": 2, "two_routes": 1}
    assert (ep1.chance_tsr_mean, ep1.chance_tsr_max, ep1.chance_tsr_missing) == (0.1, 0.15, 1)
    assert ep1.hf_shortest_mean == 10 / 3 and ep1.verified_ok == 2
    assert ep1.problems == (
        "2 distinct structures; the category needs at least 6",
        "busy_work is used by 2 of 3 scenarios (over 25%)",
        "two_routes is used by 1 of 3 scenarios (over 25%)",
        "EP1-102: chance_tsr 0.150 is over 0.1",
        "EP1-103: scenarios verify fails",
    )
    assert hf_shortest({"endings": {}}) is None


def test_stats_json_verifies_then_reuses_kept_reports(tmp_path: Path) -> None:
    root = _copy(tmp_path, "EP1-101", "EP2-101")
    first = json.loads(_invoke("scenarios", "stats", "--source", str(root), "--json", "-j", "1"))
    assert first["reports"] == {"total": 2, "verified_now": 2, "kept": 0}
    assert "scenarios verify" in first["source"]
    ep1 = first["categories"]["EP1"]
    assert ep1["count"] == 1 and ep1["structures"] == {"busy_work": 1}
    assert ep1["hf_shortest_mean"] == 3 and ep1["verified_ok"] == 1
    again = json.loads(_invoke("scenarios", "stats", "--source", str(root), "--json"))
    assert again["reports"] == {"total": 2, "verified_now": 0, "kept": 2}
    # An edit to the spec (here its walkthroughs) makes the kept report no longer apply.
    key = report_key(root / "EP1-101")
    spec = root / "EP1-101" / "scenario.yaml"
    spec.write_text(spec.read_text(encoding="utf-8") + "\n# reviewed\n", encoding="utf-8")
    assert report_key(root / "EP1-101") != key
    third = json.loads(_invoke("scenarios", "stats", "--source", str(root), "--json"))
    assert third["reports"]["verified_now"] == 1
    text = _invoke("scenarios", "stats", "--source", str(root))
    # A one-scenario category breaks the variety rules, and stats says which.
    assert "EP2: 1 scenarios, 1 pass verify" in text and "structures: prepare_then_act 1" in text
    assert "prepare_then_act is used by 1 of 1 scenarios (over 25%)" in text


def test_list_shows_the_seed_and_show_the_structure_and_verify_figures(tmp_path: Path) -> None:
    root = _copy(tmp_path, "EP1-102")
    assert "seed EP1-087" in _invoke("scenarios", "list", "--source", str(root))
    shown = _invoke("scenarios", "show", "EP1-102", "--source", str(root))
    assert "seed: EP1-087   structure: two_routes" in shown
    assert "verify ok" in shown and "from scenarios verify" in shown and "(run now)" in shown
    assert (
        "chance_tsr 0.070 (exact, from verify's explored state graph)" in shown and "shape hf3-m2-b" in shown
    )
    data = json.loads(_invoke("scenarios", "show", "EP1-102", "--source", str(root), "--json"))
    assert data["seed"] == "EP1-087" and data["verify"]["ok"] is True
    assert "kept report" in data["verify"]["source"]


def test_stats_refuses_a_folder_without_specs(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["scenarios", "stats", "--source", str(tmp_path)])
    assert result.exit_code != 0 and "No scenario specs under" in result.output
