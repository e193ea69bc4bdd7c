"""``scenarios stats``: the library per category (count, structures, ``chance_tsr``, shortest human-favorable path),
read from ``scenarios verify`` reports.

Verify reports are kept in the cache (``<cache_dir>/verify/<ID>-<key>.json``), keyed by the spec, the story and the
exploration code, so a report is reused only for exactly the story, walkthroughs and code that produced it; anything
else is verified afresh. Every figure says where it came from (:data:`SOURCE`).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Any

from conflictbench_app.authoring import explore as _explore
from conflictbench_app.authoring import stategraph as _stategraph
from conflictbench_app.authoring import verify as _verify
from conflictbench_app.authoring.project import STORY_FILE, spec_folders
from conflictbench_app.authoring.spec import SPEC_FILE, ScenarioSpec, load_spec

SOURCE = "scenarios verify (exact exploration of each compiled story)"
CACHE_VERSION = 1
# The library's structural rules (issues #13-#15): per category at least this many structures, none over this share,
# and no scenario a random agent passes more often than MAX_CHANCE_TSR.
MIN_STRUCTURES = 6
MAX_STRUCTURE_SHARE = 0.25
MAX_CHANCE_TSR = 0.10


def report_key(folder: Path) -> str:
    """What a verify report depends on: the spec (walkthroughs included), the story and the exploration code."""
    digest = hashlib.sha256(f"v{CACHE_VERSION}".encode())
    code = (Path(m.__file__ or "") for m in (_explore, _stategraph, _verify))
    for path in (folder / SPEC_FILE, folder / STORY_FILE, *code):
        digest.update(path.read_bytes() if path.is_file() else b"-")
    return digest.hexdigest()[:16]


def _cache_file(cache_dir: Path, folder: Path) -> Path:
    return cache_dir / "verify" / f"{folder.name}-{report_key(folder)}.json"


def save_reports(cache_dir: Path, root: Path, reports: list[dict[str, Any]]) -> None:
    """Keep our verify reports (``Report.to_json()``) for ``stats`` and ``show``."""
    folders = {f.name: f for f in spec_folders(root)}
    for report in reports:
        folder = folders.get(report["id"])
        if folder is None or report.get("checks", {}).get("loads") is False:
            continue
        path = _cache_file(cache_dir, folder)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=1), encoding="utf-8")


def cached_report(cache_dir: Path, folder: Path) -> dict[str, Any] | None:
    """The kept report for exactly this spec, story and code, or None."""
    path = _cache_file(cache_dir, folder)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def chance_of(report: dict[str, Any]) -> tuple[float | None, str]:
    """A report's chance_tsr and where it came from (None when verify left it undetermined)."""
    if isinstance(report.get("chance_tsr"), int | float):
        return float(report["chance_tsr"]), "exact, from verify's explored state graph"
    return None, ""


def reports_for(root: Path, cache_dir: Path, *, jobs: int = 1) -> tuple[dict[str, dict[str, Any]], int]:
    """A verify report for every spec under ``root`` (kept ones reused, the rest run now and kept); returns them by
    id and how many were run now."""
    folders = spec_folders(root)
    found = {f.name: r for f in folders if (r := cached_report(cache_dir, f)) is not None}
    missing = [f.name for f in folders if f.name not in found]
    if missing:
        fresh = [r.to_json() for r in _verify.verify_project(root, missing, jobs=jobs)]
        save_reports(cache_dir, root, fresh)
        found.update({r["id"]: r for r in fresh})
    return found, len(missing)


def reports_for_one(folder: Path, cache_dir: Path) -> tuple[dict[str, Any], bool]:
    """One spec folder's verify report (kept, or run now and kept) and whether it was run now."""
    kept = cached_report(cache_dir, folder)
    if kept is not None:
        return kept, False
    (report,) = _verify.verify_project(folder.parent, [folder.name])
    data = report.to_json()
    save_reports(cache_dir, folder.parent, [data])
    return data, True


@dataclass(frozen=True)
class CategoryStats:
    category: str
    count: int
    structures: dict[str, int]
    chance_tsr_mean: float | None
    chance_tsr_max: float | None
    hf_shortest_mean: float | None
    verified_ok: int
    # Scenarios whose report has no chance_tsr (verify did not compute it): the means leave them out.
    chance_tsr_missing: int
    chance_tsr_source: str = ""
    problems: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "structures": self.structures,
            "chance_tsr": {
                "mean": _round(self.chance_tsr_mean),
                "max": _round(self.chance_tsr_max),
                "missing": self.chance_tsr_missing,
                "source": self.chance_tsr_source,
            },
            "hf_shortest_mean": _round(self.hf_shortest_mean),
            "verified_ok": self.verified_ok,
            "problems": list(self.problems),
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def hf_shortest(report: dict[str, Any]) -> int | None:
    """The shortest human-favorable path of a report: ``shape.hf_shortest`` when given, else from its endings."""
    shape = report.get("shape") or {}
    if "hf_shortest" in shape:
        return shape["hf_shortest"]
    lengths = [
        len(e["shortest"])
        for e in report.get("endings", {}).values()
        if e.get("human_favorable") and e.get("reachable") and e.get("shortest")
    ]
    return min(lengths, default=None)


def category_stats(specs: list[ScenarioSpec], reports: dict[str, dict[str, Any]]) -> list[CategoryStats]:
    """Per category, in EP1, EP2, EP3 order (categories with no scenario are left out)."""
    out = []
    for category in ("EP1", "EP2", "EP3"):
        mine = [s for s in specs if s.category == category]
        if not mine:
            continue
        got = [reports.get(s.id, {}) for s in mine]
        found = [chance_of(r) for r in got]
        chances = [c for c, _ in found if c is not None]
        sources = sorted({src for c, src in found if c is not None})
        lengths = [n for r in got if (n := hf_shortest(r)) is not None]
        structures = dict(Counter(s.structure for s in mine).most_common())
        out.append(
            CategoryStats(
                category=category,
                count=len(mine),
                structures=structures,
                chance_tsr_mean=mean(chances) if chances else None,
                chance_tsr_max=max(chances) if chances else None,
                hf_shortest_mean=mean(lengths) if lengths else None,
                verified_ok=sum(1 for r in got if r.get("ok")),
                chance_tsr_missing=len(mine) - len(chances),
                chance_tsr_source="; ".join(sources),
                problems=tuple(_rule_problems(mine, got, structures)),
            )
        )
    return out


def _rule_problems(
    specs: list[ScenarioSpec], reports: list[dict[str, Any]], structures: dict[str, int]
) -> list[str]:
    problems = []
    if len(structures) < MIN_STRUCTURES:
        problems.append(
            f"{len(structures)} distinct structures; the category needs at least {MIN_STRUCTURES}"
        )
    for name, n in structures.items():
        if n > MAX_STRUCTURE_SHARE * len(specs):
            problems.append(
                f"{name} is used by {n} of {len(specs)} scenarios (over {MAX_STRUCTURE_SHARE:.0%})"
            )
    for spec, report in zip(specs, reports, strict=True):
        chance, _ = chance_of(report)
        if chance is not None and chance > MAX_CHANCE_TSR:
            problems.append(f"{spec.id}: chance_tsr {chance:.3f} is over {MAX_CHANCE_TSR}")
        if not report.get("ok"):
            problems.append(f"{spec.id}: scenarios verify fails")
    return problems


def library_stats(root: Path, cache_dir: Path, *, jobs: int = 1) -> dict[str, Any]:
    """The ``scenarios stats --json`` document."""
    specs = [load_spec(f / SPEC_FILE) for f in spec_folders(root)]
    reports, ran = reports_for(root, cache_dir, jobs=jobs)
    return {
        "source": SOURCE,
        "root": str(root),
        "reports": {"total": len(reports), "verified_now": ran, "kept": len(reports) - ran},
        "categories": {c.category: c.to_json() for c in category_stats(specs, reports)},
    }
