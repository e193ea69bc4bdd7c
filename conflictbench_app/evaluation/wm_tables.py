"""The paper's Tables 4 and 7 from stored world-model judgments: per renderer, the mean normalised score of each
dimension (and their mean, Overall), and of each sub-dimension. Unparsed judgments count in neither mean; how many
there were is shown beside the figures."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import mean
from typing import Any

from conflictbench_app.evaluation.wm_eval import DIMENSIONS
from conflictbench_app.records import WorldModelJudgment


def newest(judgments: Sequence[WorldModelJudgment]) -> list[WorldModelJudgment]:
    """The newest judgment per (renderer, clip, dimension, judge, prompt): a redone one replaces the old."""
    key = lambda j: (j.renderer, j.clip_key, j.dimension, j.judge, j.prompt_sha)  # noqa: E731
    return list({key(j): j for j in judgments}.values())


def table4(judgments: Sequence[WorldModelJudgment]) -> list[dict[str, Any]]:
    """One row per renderer: each dimension's mean score in [0, 1], Overall, clips, unparsed."""
    rows = []
    for renderer, group in _by_renderer(newest(judgments)).items():
        row: dict[str, Any] = {"renderer": renderer}
        for dimension in DIMENSIONS:
            row[dimension.name] = _mean([j.score for j in group if j.dimension == dimension.name])
        means = [row[d.name] for d in DIMENSIONS if row[d.name] is not None]
        row["overall"] = round(mean(means), 4) if len(means) == len(DIMENSIONS) else None
        row["clips"] = len({j.clip_key for j in group})
        row["unparsed"] = sum(1 for j in group if j.status == "unparsed")
        rows.append(row)
    return rows


def table7(judgments: Sequence[WorldModelJudgment]) -> list[dict[str, Any]]:
    """One row per renderer: each sub-dimension's mean score in [0, 1]."""
    rows = []
    for renderer, group in _by_renderer(newest(judgments)).items():
        row: dict[str, Any] = {"renderer": renderer}
        for dimension in DIMENSIONS:
            scored = [j for j in group if j.dimension == dimension.name and j.status == "scored"]
            for sub in dimension.subs:
                row[f"{dimension.name}.{sub}"] = _mean([j.subscores.get(sub) for j in scored])
        rows.append(row)
    return rows


def _by_renderer(judgments: Sequence[WorldModelJudgment]) -> dict[str, list[WorldModelJudgment]]:
    out: dict[str, list[WorldModelJudgment]] = {}
    for judgment in judgments:
        out.setdefault(judgment.renderer, []).append(judgment)
    return out


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(mean(present), 4) if present else None


def markdown(judgments: Sequence[WorldModelJudgment]) -> str:
    """Both tables as Markdown (empty when there are no judgments)."""
    if not judgments:
        return ""
    four, seven = table4(judgments), table7(judgments)
    titles = ["Renderer", *(d.title for d in DIMENSIONS), "Overall", "Clips", "Unparsed"]
    keys = ["renderer", *(d.name for d in DIMENSIONS), "overall", "clips", "unparsed"]
    lines = [
        "## Table 4: world-model quality per renderer (scores in [0, 1])",
        "",
        *_grid(titles, keys, four),
    ]
    sub_keys = ["renderer", *(f"{d.name}.{s}" for d in DIMENSIONS for s in d.subs)]
    sub_titles = ["Renderer", *(f"{d.title}: {s.replace('_', ' ')}" for d in DIMENSIONS for s in d.subs)]
    lines += [
        "",
        "## Table 7: sub-dimensions per renderer (scores in [0, 1])",
        "",
        *_grid(sub_titles, sub_keys, seven),
    ]
    return "\n".join(lines) + "\n"


def _grid(titles: list[str], keys: list[str], rows: list[dict[str, Any]]) -> list[str]:
    out = ["| " + " | ".join(titles) + " |", "|" + "---|" * len(titles)]
    for row in rows:
        out.append("| " + " | ".join(_cell(row[k]) for k in keys) + " |")
    return out


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def numbered(judgments: Sequence[WorldModelJudgment]) -> dict[str, dict[str, Any]]:
    """Tables 4 and 7 in the report's numbered-table form (``paper_tables``), or {} when no world model was judged.

    A row is one renderer under one judge. Each dimension has its own prompt; where a dimension was judged under
    more than one version of its prompt, only the newest version counts (as the report's ASR counts one judge
    prompt) and the row says how many judgments it left out. Scores of different judges are never averaged
    together, and each row names its judge and the prompts (id and hash) behind it."""
    if not judgments:
        return {}
    four: list[dict[str, Any]] = []
    seven: list[dict[str, Any]] = []
    for judge, (kept, prompts, left_out) in _by_judge(judgments).items():
        who = {"judge": judge, "judge_prompts": prompts, "left_out": left_out}
        four += [{**row, **who} for row in table4(kept)]
        seven += [{**row, "judge": judge, "judge_prompts": prompts} for row in table7(kept)]
    dims = [d.name for d in DIMENSIONS]
    subs = [f"{d.name}.{s}" for d in DIMENSIONS for s in d.subs]
    caption = (
        "Scores in [0, 1]: per renderer, the mean over its judged clips of the newest judgment of each clip and "
        "dimension (conflictbench wm-eval); unparsed judgments count in no mean; left out: judgments under an "
        f"older version of a dimension's prompt. Renderers: {_renderers(judgments)}."
    )
    return {
        "table4": {
            "title": "Table 4: world-model quality per renderer",
            "caption": caption,
            "columns": [
                "renderer",
                *dims,
                "overall",
                "clips",
                "unparsed",
                "judge",
                "judge_prompts",
                "left_out",
            ],
            "kinds": {c: "score" for c in [*dims, "overall"]},
            "rows": four,
        },
        "table7": {
            "title": "Table 7: sub-dimensions of world-model quality per renderer",
            "caption": caption,
            "columns": ["renderer", *subs, "judge", "judge_prompts"],
            "kinds": {c: "score" for c in subs},
            "rows": seven,
        },
    }


def _by_judge(
    judgments: Sequence[WorldModelJudgment],
) -> dict[str, tuple[list[WorldModelJudgment], str, int]]:
    """Per judge: the judgments under the newest version of each dimension's prompt, those prompts as
    ``id#hash``, and how many judgments older versions had."""
    out: dict[str, tuple[list[WorldModelJudgment], str, int]] = {}
    for judge in sorted({j.judge for j in judgments}):
        group = [j for j in judgments if j.judge == judge]
        newest: dict[str, WorldModelJudgment] = {}
        for j in group:
            if j.dimension not in newest or j.created_at > newest[j.dimension].created_at:
                newest[j.dimension] = j
        kept = [j for j in group if j.prompt_sha == newest[j.dimension].prompt_sha]
        prompts = ", ".join(sorted({f"{j.prompt_id}#{j.prompt_sha[:12]}" for j in newest.values()}))
        out[judge] = (kept, prompts, len(group) - len(kept))
    return out


def _renderers(judgments: Sequence[WorldModelJudgment]) -> str:
    """Each renderer with the backend and revision that made its clips."""
    seen: dict[str, set[str]] = {}
    for j in judgments:
        seen.setdefault(j.renderer, set()).add(f"{j.backend} {j.weights_id}".strip())
    return "; ".join(f"{name} ({', '.join(sorted(made))})" for name, made in sorted(seen.items()))
