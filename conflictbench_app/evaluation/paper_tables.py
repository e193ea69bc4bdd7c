"""The paper's numbered tables, computed as the paper computes them, from a :class:`Report` and the store.

Our numbering follows the paper's: Table 1 scenarios per category; Table 2 TSR and ASR per model and setting
(``avg`` = the mean of the three category rates, ``pooled`` = the rate over all episodes, labelled); Table 3 the
judge's agreement with human labels; Table 5 the regret test; Table 6 the length of failed episodes; Table 8 per
category, single-turn vs multi-turn text vs multimodal; Table 9 the mean step at which an alignment failure (the
judge's first misaligned step) occurs, per model and setting, with the overall mean.

Each table is a plain dict (``title``, ``caption``, ``columns``, ``kinds``, ``rows``) so that JSON carries it as it
is and the renderers show it. A row is one run (or one judge): runs of different protocols, renderers, judges or
judge prompts never share a cell, and every row names the ones it used.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import mean
from typing import Any

from conflictbench_app.evaluation.single_turn import summarize
from conflictbench_app.records import SingleTurnAnswer

CATEGORIES = ("EP1", "EP2", "EP3")
RUN_COLUMNS = ["agent", "demo_model", "setting", "protocol", "renderer", "judge", "judge_prompt", "run_id"]


def paper_tables(store: Any, report: Any, answers: Sequence[SingleTurnAnswer]) -> dict[str, Any]:
    """Tables 1, 2, 3, 5, 6, 8 and 9 of ``report`` (built by ``build_report``)."""
    return {
        "table1": table1(store, report),
        "table2": table2(report),
        "table3": table3(store, report),
        "table5": table5(report),
        "table6": table6(report),
        "table8": table8(report, answers),
        "table9": table9(report),
    }


def _table(
    title: str, caption: str, columns: list[str], kinds: dict[str, str], rows: list[dict[str, Any]]
) -> dict[str, Any]:
    return {"title": title, "caption": caption, "columns": columns, "kinds": kinds, "rows": rows}


def _run_cells(t: Any) -> dict[str, Any]:
    return {
        "agent": t.agent,
        "demo_model": t.demo,
        "setting": t.setting,
        "protocol": t.protocol,
        "renderer": t.renderer,
        "judge": t.judge or "",
        "judge_prompt": t.judge_prompt or "",
        "run_id": t.run_id,
    }


def table1(store: Any, report: Any) -> dict[str, Any]:
    """Scenarios per category (distinct scenario ids played in the reported runs), per source."""
    seen: dict[str, dict[str, set[str]]] = {}
    for t in report.runs:
        for e in store.episodes(t.run_id):
            seen.setdefault(e.source, {c: set() for c in CATEGORIES}).setdefault(e.category, set()).add(
                e.scenario_id
            )
    rows = []
    for source, by_cat in sorted(seen.items()):
        counts = {c: len(by_cat.get(c, ())) for c in CATEGORIES}
        rows.append({"source": source, **counts, "total": sum(counts.values())})
    columns = ["source", *CATEGORIES, "total"]
    kinds = {c: "count" for c in [*CATEGORIES, "total"]}
    caption = "Distinct scenarios played in the reported runs, per category and source."
    return _table("Table 1. Scenarios per category", caption, columns, kinds, rows)


def _rates(cells: dict[str, Any], avg: float | None) -> dict[str, Any]:
    return {**{c: cells[c].value for c in CATEGORIES}, "avg": avg, "pooled": cells["all"].value}


def table2(report: Any) -> dict[str, Any]:
    """TSR and ASR per category, their average (mean of the category rates) and the pooled rate, per run."""
    rows = []
    for t in report.runs:
        row = {**_run_cells(t), "episodes": t.episodes}
        for metric, cells in (("tsr", t.tsr), ("asr", t.asr)):
            for key, value in _rates(cells, t.avg.get(metric)).items():
                row[f"{metric}_{key}"] = value
        rows.append(row)
    rates = [f"{m}_{k}" for m in ("tsr", "asr") for k in (*CATEGORIES, "avg", "pooled")]
    caption = (
        "TSR: share of episodes that reached the human-favorable ending; ASR: share judged aligned. Avg. is the mean "
        "of the three category rates, as in the paper; pooled is the rate over all episodes. One row per run."
    )
    kinds = {**{r: "rate" for r in rates}, "episodes": "count"}
    return _table(
        "Table 2. Task and alignment success rates", caption, [*RUN_COLUMNS, "episodes", *rates], kinds, rows
    )


def table3(store: Any, report: Any) -> dict[str, Any]:
    """The judge's agreement with human labels, per judge and judge prompt, over the reported runs."""
    from conflictbench_app.evaluation.agreement import agreement, judge_human_pairs
    from conflictbench_app.evaluation.report import prompt_label

    run_ids = [t.run_id for t in report.runs]
    labels = store.labels(run_id=run_ids) if run_ids else []
    verdicts = store.verdicts(run_id=run_ids) if run_ids else []
    by_prompt: dict[str, list[Any]] = {}
    for v in verdicts:
        if v.basis == "judge":
            by_prompt.setdefault(prompt_label(v), []).append(v)
    rows = []
    for prompt, group in sorted(by_prompt.items()):
        for judge, pairs in sorted(judge_human_pairs(group, labels).items()):
            figures = agreement(pairs).to_dict()
            rows.append(
                {
                    "judge": judge,
                    "judge_prompt": prompt,
                    "pairs": figures["n"],
                    "excluded": figures["excluded"],
                    "accuracy": figures["accuracy"],
                    "f1": figures["f1"],
                    "kappa": figures["kappa"],
                }
            )
    columns = ["judge", "judge_prompt", "pairs", "excluded", "accuracy", "f1", "kappa"]
    kinds = {"pairs": "count", "excluded": "count", "accuracy": "rate", "f1": "rate", "kappa": "number"}
    caption = (
        "Judge vs human labels (each annotator's latest label as the reference), per judge and judge prompt; "
        "'unsure' labels and unparsed verdicts are excluded and counted."
    )
    return _table("Table 3. Judge-human agreement", caption, columns, kinds, rows)


def table5(report: Any) -> dict[str, Any]:
    """The regret test per run and agent under test."""
    rows = [
        {
            "agent": r["agent"],
            "setting": r["setting"],
            "protocol": r.get("protocol", ""),
            "run_id": r.get("run_id", ""),
            "stage_sources": ", ".join(r.get("stage_sources", [])),
            "tests": r["tests"],
            "regretted": len(r["regretted"]),
            "persisted": len(r["persisted"]),
            "inconclusive": len(r["inconclusive"]),
            "regret_rate": r["rate"],
        }
        for r in report.regret
    ]
    columns = ["agent", "setting", "protocol", "run_id", "stage_sources", "tests", "regretted", "persisted"]
    columns += ["inconclusive", "regret_rate"]
    kinds = {k: "count" for k in ("tests", "regretted", "persisted", "inconclusive")} | {
        "regret_rate": "rate"
    }
    caption = "Regret rate over conclusive tests of EP1 episodes that ended well; stage_sources say where the stage texts came from."
    return _table("Table 5. Regret test", caption, columns, kinds, rows)


def table6(report: Any) -> dict[str, Any]:
    """Mean steps of failed episodes (the human-favorable ending not reached), per category, per run."""
    rows = []
    for t in report.runs:
        lengths = t.category_failed_length
        values = [lengths.get(c) for c in CATEGORIES if lengths.get(c) is not None]
        rows.append(
            {
                **_run_cells(t),
                "failed": len(t.failed_episodes),
                **{c: lengths.get(c) for c in CATEGORIES},
                "avg": mean(values) if values else None,
                "pooled": lengths.get("all"),
            }
        )
    columns = [*RUN_COLUMNS, "failed", *CATEGORIES, "avg", "pooled"]
    kinds = {"failed": "count"} | {c: "number" for c in (*CATEGORIES, "avg", "pooled")}
    caption = "Mean steps of episodes that did not reach the human-favorable ending. Avg.: mean of the category means."
    return _table("Table 6. Length of failed episodes", caption, columns, kinds, rows)


def table8(report: Any, answers: Sequence[SingleTurnAnswer]) -> dict[str, Any]:
    """Per agent, protocol and category: single-turn ASR (each form and source) beside multi-turn text and
    multimodal ASR (the latest run of each setting, named)."""
    single = summarize(answers)
    latest: dict[tuple[str, str, str], Any] = {}
    for t in report.runs:  # oldest first: the latest run of each (agent, protocol, setting) wins
        latest[(t.agent, t.protocol, t.setting)] = t
    pairs = sorted({(a, p) for a, p, _ in latest} | {(a, "") for a, _, _ in single if not _played(a, latest)})
    rows = []
    for agent, protocol in pairs:
        for cat in CATEGORIES:
            row: dict[str, Any] = {"agent": agent, "protocol": protocol, "category": cat}
            for (who, source, form), figures in sorted(single.items()):
                if who == agent:
                    row[f"single_{source}_{form}"] = figures["asr"][cat]
            for setting in ("text", "multimodal"):
                t = latest.get((agent, protocol, setting))
                row[f"multi_{setting}"] = t.asr[cat].value if t else None
                row[f"multi_{setting}_run"] = t.run_id if t else ""
            rows.append(row)
    keys = sorted({k for r in rows for k in r if k.startswith("single_")})
    columns = ["agent", "protocol", "category", *keys, "multi_text", "multi_multimodal"]
    columns += ["multi_text_run", "multi_multimodal_run"]
    kinds = {k: "rate" for k in [*keys, "multi_text", "multi_multimodal"]}
    caption = (
        "ASR per category: single-turn answers (unscored ones count as not aligned) beside the latest multi-turn "
        "run of each setting under the row's protocol (its run id given)."
    )
    return _table("Table 8. Single-turn vs multi-turn, per category", caption, columns, kinds, rows)


def _played(agent: str, latest: dict[tuple[str, str, str], Any]) -> bool:
    return any(a == agent for a, _, _ in latest)


def table9(report: Any) -> dict[str, Any]:
    """The mean step of the first misaligned verdict, per run (model and setting), and the overall mean."""
    rows = []
    for t in report.runs:
        steps = list(t.break_steps.values())
        rows.append(
            {
                **_run_cells(t),
                "misaligned": len(steps),
                "mean_step": mean(steps) if steps else None,
            }
        )
    overall = []
    for protocol in sorted({r["protocol"] for r in rows}):
        means = [r["mean_step"] for r in rows if r["protocol"] == protocol and r["mean_step"] is not None]
        overall.append(
            {
                "agent": "overall (mean of the rows)",
                "protocol": protocol,
                "misaligned": sum(r["misaligned"] for r in rows if r["protocol"] == protocol),
                "mean_step": mean(means) if means else None,
            }
        )
    columns = [*RUN_COLUMNS, "misaligned", "mean_step"]
    caption = (
        "Mean step (1-based) of the first misaligned action, as the judge read it, over episodes judged misaligned; "
        "the overall row averages the rows of each protocol, each model and setting weighted equally."
    )
    table = _table(
        "Table 9. When alignment fails",
        caption,
        columns,
        {"misaligned": "count", "mean_step": "number"},
        rows,
    )
    table["rows"] += overall
    return table
