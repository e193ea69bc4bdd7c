"""Rules over the whole library of specs, not one spec: distinct seeds, identities, places, titles and openings, and
seeds that name a real PacifAIst item of the spec's category in the range reserved for it (CONTRACTS §1).

Each check returns problems as sentences naming the scenarios involved, so a test can show every clash at once.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Sequence
from itertools import combinations
from pathlib import Path

from conflictbench_app.authoring.spec import ScenarioSpec

# Two openings sharing more than this fraction of their word trigrams read as one scenario re-skinned.
MAX_TRIGRAM_OVERLAP = 0.40
# The seeds each of our ids may take: the first five of a category (101..105) expand items 060..099; later ones
# 100..250 (EP3: 100..200), so that no seed is one the paper's own games used and parallel authors never collide.
FIRST_IDS = range(101, 106)
EXISTING_SEEDS = range(60, 100)
NEW_SEEDS = {"EP1": range(100, 251), "EP2": range(100, 251), "EP3": range(100, 201)}


def trigrams(text: str) -> set[tuple[str, str, str]]:
    """The set of word trigrams of ``text`` (lower-case words of letters and digits)."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return set(zip(words, words[1:], words[2:], strict=False))


def trigram_overlap(a: str, b: str) -> float:
    """The share of the smaller opening's trigrams that the other also has (0..1): a short opening pasted into a
    long one counts as fully shared."""
    ta, tb = trigrams(a), trigrams(b)
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / min(len(ta), len(tb))


def distinctness_problems(specs: Sequence[ScenarioSpec]) -> list[str]:
    """Two specs sharing a seed, an identity, a place or a title, or openings over :data:`MAX_TRIGRAM_OVERLAP`."""
    problems: list[str] = []
    for field in ("seed", "identity", "place", "title"):
        problems += _shared(specs, field)
    for a, b in combinations(specs, 2):
        overlap = trigram_overlap(a.opening, b.opening)
        if overlap > MAX_TRIGRAM_OVERLAP:
            problems.append(
                f"{a.id} and {b.id}: their openings share {overlap:.0%} of their word trigrams "
                f"(at most {MAX_TRIGRAM_OVERLAP:.0%}); rewrite one in its own words"
            )
    return problems


def _shared(specs: Iterable[ScenarioSpec], field: str) -> list[str]:
    owners: dict[str, list[str]] = {}
    for spec in specs:
        key = " ".join(str(getattr(spec, field)).lower().split())
        owners.setdefault(key, []).append(spec.id)
    return [
        f"{', '.join(ids)} share the {field} {key!r}; every scenario needs its own"
        for key, ids in owners.items()
        if len(ids) > 1
    ]


def seed_range_problems(specs: Iterable[ScenarioSpec]) -> list[str]:
    """Seeds outside the range reserved for the spec's id."""
    problems = []
    for spec in specs:
        number, seed = int(spec.id[4:]), int(spec.seed[4:])
        allowed = EXISTING_SEEDS if number in FIRST_IDS else NEW_SEEDS[spec.category]
        if seed not in allowed:
            problems.append(
                f"{spec.id}: seed {spec.seed} is outside {spec.category}-{allowed.start:03d}.."
                f"{allowed.stop - 1:03d}, the range reserved for this id"
            )
    return problems


def read_seed_subcategories(dataset: Path) -> dict[str, str]:
    """``scenario_id`` -> ``subcategory`` from the PacifAIst CSV (its leading ``#`` lines are a licence note)."""
    with dataset.open(encoding="utf-8", newline="") as handle:
        rows = csv.DictReader(line for line in handle if not line.startswith("#"))
        return {row["scenario_id"]: row["subcategory"] for row in rows}


def seed_dataset_problems(specs: Iterable[ScenarioSpec], subcategories: dict[str, str]) -> list[str]:
    """Seeds that are not in the dataset, or whose subcategory is not the spec's category."""
    problems = []
    for spec in specs:
        found = subcategories.get(spec.seed)
        if found is None:
            problems.append(f"{spec.id}: seed {spec.seed} is not a scenario_id of the PacifAIst dataset")
        elif found != spec.category:
            problems.append(f"{spec.id}: seed {spec.seed} is a {found} item, not {spec.category}")
    return problems
