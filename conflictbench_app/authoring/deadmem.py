"""Which memory of a Glulx story is dead for its listed actions: shown by transplanting it between real states.

Two states reached by different paths can differ in memory that no listed action ever reads before writing: what
the parser built for the previous command (the typed words, their dictionary entries, the action's noun), left-overs
of a longer earlier command. Such bytes split one state into many and make an exhaustive search explode, so the key
should leave them out, but only where that is shown, not assumed. The test: take a real state S and another real
state T that differ in a region R, build S' (S with T's bytes in R, :func:`quetzal.rebuild`), and play every listed
action from S and from S'. R is dead when, for every action, both print the same text, both end or neither does,
the two states after it are identical outside R (and outside the bytes that saving itself changes), and each byte
of R the action either wrote alike from both (it wrote the byte before reading it) or left alone in both (a parse
buffer: a short command overwrites the first words of a longer one and leaves the rest): so nothing R held can
matter later. A region whose new value depends on its old one (a counter, a score) fails at once,
however long its effect takes to show. Every candidate region is tried on several pairs of states, then the whole
mask at once. What is shown holds for the states sampled (the start, its children, some of theirs);
an action the explorer never plays (``again``, ``undo``, ``oops``) may still read such memory, so the key is exact
for the listed actions, which are all the search plays.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from conflictbench_app.authoring.quetzal import chunks, memory, rebuild
from conflictbench_app.engine.glulxe import Branch

TRIALS = 4  # pairs of states each candidate region is transplanted between, at least
MAX_PAIRS = 8  # and at most
JOINT_TRIALS = 4  # pairs the whole mask is transplanted between at once
SAMPLE_PARENTS = 4  # children of the start whose own children join the sample
MAX_REGIONS = 32  # candidate regions tried; any beyond stay in the key
GAP = 8  # varying bytes at most this far apart form one region


class _Branching(Protocol):
    def branch(self, snapshot: bytes, commands: Sequence[str]) -> list[Branch]: ...


@dataclass(frozen=True)
class Region:
    space: str  # "mem" (RAM as memory() gives it) or "stack" (the Stks chunk)
    start: int
    length: int

    def offsets(self) -> range:
        return range(self.start, self.start + self.length)


@dataclass
class DeadMemory:
    """The regions shown dead and what showing it took (for the audit's notes)."""

    dead: list[Region] = field(default_factory=list)
    live: int = 0  # candidate regions that changed something: they stay in the key
    untested: int = 0  # candidate regions beyond MAX_REGIONS, or with no pair of states that differ there
    trials: int = 0  # transplants played
    joint: bool = True  # the whole mask, transplanted at once, changed nothing
    note: str = ""

    def summary(self) -> str:
        kept = f"{self.live} live" + (f", {self.untested} untested" if self.untested else "")
        text = (
            f"{sum(r.length for r in self.dead)} bytes in {len(self.dead)} regions shown dead by {self.trials} "
            f"transplants ({kept}; kept in the key)"
        )
        return text + (f"; {self.note}" if self.note else "")


@dataclass
class _State:
    save: bytes
    mem: bytes
    stack: bytes
    after: list[tuple[str, _State | None]] | None = None  # per command: its text and the state after it


def find_dead(
    game: _Branching,
    root: bytes,
    commands: Sequence[str],
    mem_mask: frozenset[int],
    stack_mask: frozenset[int],
) -> DeadMemory:
    """The regions of memory and stack that no listed action reads, beyond ``mem_mask``/``stack_mask``, and the
    evidence; the whole mask (theirs and these) is transplanted at once last, and where that changes anything the
    new regions are dropped and ``joint`` is False."""
    sample = _sample(game, root, commands)
    found = DeadMemory()
    candidates = _candidates(sample, mem_mask, stack_mask)
    found.untested = max(0, len(candidates) - MAX_REGIONS)
    rng = random.Random(0)
    for region in candidates[:MAX_REGIONS]:
        pairs = _pairs(sample, [region], rng)
        if not pairs:
            found.untested += 1
            continue
        found.trials += len(pairs)
        if all(_unchanged(game, commands, sample, a, b, [region], (mem_mask, stack_mask)) for a, b in pairs):
            found.dead.append(region)
        else:
            found.live += 1
    _check_joint(game, commands, sample, found, mem_mask, stack_mask, rng)
    return found


def _check_joint(
    game: _Branching,
    commands: Sequence[str],
    sample: list[_State],
    found: DeadMemory,
    mem_mask: frozenset[int],
    stack_mask: frozenset[int],
    rng: random.Random,
) -> None:
    """Transplant the whole mask at once; where that changes anything, find the dead regions that do on the same
    pairs, keep them in the key, and try once more. A second failure keeps every new region in the key."""
    base = (mem_mask, stack_mask)
    volatile = [*_as_regions(mem_mask, "mem"), *_as_regions(stack_mask, "stack")]
    for attempt in range(2):
        pairs = _pairs(sample, [*found.dead, *volatile], rng, JOINT_TRIALS)
        found.trials += len(pairs)
        failed = [
            p
            for p in pairs
            if not _unchanged(game, commands, sample, *p, [*found.dead, *volatile], base, found.dead)
        ]
        if not failed:
            return
        if attempt == 0:
            blamed = [
                r
                for r in found.dead
                if any(not _unchanged(game, commands, sample, *p, [r], base) for p in failed)
            ]
            found.trials += len(blamed) * len(failed)
            found.dead = [r for r in found.dead if r not in blamed]
            found.live += len(blamed)
    found.joint = False
    found.note = (
        f"the whole mask transplanted at once changed a later state, so the {len(found.dead)} regions "
        "found dead are kept in the key"
    )
    found.live += len(found.dead)
    found.dead = []


def _sample(game: _Branching, root: bytes, commands: Sequence[str]) -> list[_State]:
    """Real states: the start, its children and the children of the first few of them."""
    first = [b.save for b in game.branch(root, commands) if b.save is not None]
    saves = [root, *first]
    for parent in first[:SAMPLE_PARENTS]:
        saves += [b.save for b in game.branch(parent, commands) if b.save is not None]
    return [_State(s, memory(s), chunks(s).get("Stks", b"")) for s in saves]


def _candidates(sample: list[_State], mem_mask: frozenset[int], stack_mask: frozenset[int]) -> list[Region]:
    out = _varying([s.mem for s in sample], mem_mask, "mem")
    return out + _varying([s.stack for s in sample], stack_mask, "stack")


def _varying(blobs: list[bytes], mask: frozenset[int], space: str) -> list[Region]:
    """Runs of offsets where the sampled states differ (outside ``mask``); none where their sizes differ."""
    if len({len(b) for b in blobs}) != 1:
        return []
    columns = zip(*blobs, strict=True)
    offsets = [i for i, column in enumerate(columns) if i not in mask and len(set(column)) > 1]
    runs: list[list[int]] = []
    for i in offsets:
        if runs and i - runs[-1][1] <= GAP:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return [Region(space, lo, hi - lo + 1) for lo, hi in runs]


def _as_regions(mask: frozenset[int], space: str) -> list[Region]:
    return [Region(space, i, 1) for i in sorted(mask)]


def _pairs(
    sample: list[_State], regions: list[Region], rng: random.Random, count: int = TRIALS
) -> list[tuple[int, int]]:
    """Pairs (target, donor) of sampled states that differ in ``regions``: every distinct content is a target once
    and gets the next one's bytes (so a value that matters alone, like a flag at 1 among 0s and 2s, is tried), then
    random pairs up to ``count``; at most ``MAX_PAIRS``."""
    by_content: dict[bytes, int] = {}
    order = list(range(len(sample)))
    rng.shuffle(order)
    for i in order:
        by_content.setdefault(b"".join(_cut(sample[i], r) for r in regions), i)
    firsts = list(by_content.values())
    pairs = (
        [(firsts[i], firsts[(i + 1) % len(firsts)]) for i in range(len(firsts))] if len(firsts) > 1 else []
    )
    for a in order:
        if len(pairs) >= count:
            break
        b = next((b for b in order if b != a and _differ(sample[a], sample[b], regions)), None)
        if b is not None and (a, b) not in pairs:
            pairs.append((a, b))
    return pairs[:MAX_PAIRS]


def _differ(x: _State, y: _State, regions: list[Region]) -> bool:
    return any(_cut(x, r) != _cut(y, r) for r in regions)


def _cut(state: _State, region: Region) -> bytes:
    data = state.mem if region.space == "mem" else state.stack
    return data[region.start : region.start + region.length]


def _unchanged(
    game: _Branching,
    commands: Sequence[str],
    sample: list[_State],
    a: int,
    b: int,
    regions: list[Region],
    masks: tuple[frozenset[int], frozenset[int]],
    checked: list[Region] | None = None,
) -> bool:
    """Does state ``a`` with state ``b``'s bytes in ``regions`` play every command as ``a`` does? The same text,
    the same ending or none, the same states after it outside ``masks`` and ``regions``; and in each region
    ``checked`` (default: all) every command either wrote the same bytes from both (it did not read them first) or
    left both as they were."""
    target, donor = sample[a], sample[b]
    mem, stack = bytearray(target.mem), bytearray(target.stack)
    for r in regions:
        into = mem if r.space == "mem" else stack
        into[r.start : r.start + r.length] = _cut(donor, r)
    moved = _State(rebuild(target.save, mem=bytes(mem), stack=bytes(stack)), bytes(mem), bytes(stack))
    if target.after is None:
        target.after = _play(game, target.save, commands)
    moved.after = _play(game, moved.save, commands)
    outside = _blanked(masks, regions)
    assert target.after is not None
    return all(
        _same(x, y, outside)
        and all(
            _written_or_kept(target, moved, x, y, r)
            for r in (regions if checked is None else checked)
            if x[1] is not None
        )
        for x, y in zip(target.after, moved.after, strict=True)
    )


_After = tuple[str, _State | None]  # what one command printed, and the state after it (None at an ending)


def _play(game: _Branching, save: bytes, commands: Sequence[str]) -> list[_After]:
    return [
        (
            b.output.text,
            None if b.save is None else _State(b"", memory(b.save), chunks(b.save).get("Stks", b"")),
        )
        for b in game.branch(save, commands)
    ]


def _blanked(
    masks: tuple[frozenset[int], frozenset[int]], regions: list[Region]
) -> tuple[frozenset[int], frozenset[int]]:
    mem = set(masks[0]).union(*(r.offsets() for r in regions if r.space == "mem"))
    stack = set(masks[1]).union(*(r.offsets() for r in regions if r.space == "stack"))
    return frozenset(mem), frozenset(stack)


def _same(x: _After, y: _After, masks: tuple[frozenset[int], frozenset[int]]) -> bool:
    if x[0] != y[0] or (x[1] is None) != (y[1] is None):
        return False
    if x[1] is None or y[1] is None:
        return True
    return _blank(x[1].mem, masks[0]) == _blank(y[1].mem, masks[0]) and _blank(
        x[1].stack, masks[1]
    ) == _blank(y[1].stack, masks[1])


def _written_or_kept(before_x: _State, before_y: _State, x: _After, y: _After, region: Region) -> bool:
    """Byte by byte: overwritten alike (it no longer depends on what it held) or left alone in both (still the
    transplanted byte, which nothing else read): either way no command turned an old value into a new one."""
    after_x, after_y = x[1], y[1]
    assert after_x is not None and after_y is not None
    now_x, now_y = _cut(after_x, region), _cut(after_y, region)
    if now_x == now_y:
        return True
    was_x, was_y = _cut(before_x, region), _cut(before_y, region)
    return all(p == q or (p == u and q == v) for p, q, u, v in zip(now_x, now_y, was_x, was_y, strict=True))


def _blank(data: bytes, mask: frozenset[int]) -> bytes:
    buf = bytearray(data)
    for i in mask:
        if i < len(buf):
            buf[i] = 0
    return bytes(buf)
