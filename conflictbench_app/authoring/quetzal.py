"""Exact state identity for Glulx stories: a digest of the interpreter's own save file (Quetzal, ``IFZS``).

A glulxe save holds ``IFhd`` (the story's header: the same for every save), ``CMem`` (all of RAM, XOR-ed against the
story file and run-length coded), ``MAll`` (the heap's allocation map) and ``Stks`` (the VM stack at the save). RAM
and the heap are the game's whole state, every hidden variable included. A few bytes differ between two saves of the
very same state, because saving and restoring are themselves Glk operations: the save stream's object id (kept in a
global and in a local on the stack) and the library's restore bookkeeping. And the parser's scratch memory (its input
buffer, word table and error codes) keeps leftovers of earlier, longer commands, so the same state reached by two
paths differs there. :class:`StateKeys` learns those offsets per story: it saves one state twice in a row, again
after restoring it, and after lines of nonsense words the parser rejects (which change no game state but fill its
buffers), and leaves out the 32-bit words that differed. Given the listed actions it also finds, by transplanting
memory between real states (:mod:`deadmem`), what the parser and the library keep of earlier commands that no
listed action reads (the action's noun, the previous words' dictionary entries), and checks the whole mask that way.
Everything else is kept: a game variable, hidden or not, that any listed action reads is in the key, so two states
that differ in one never share it.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from conflictbench_app.authoring.deadmem import DeadMemory
    from conflictbench_app.engine.glulxe import Branch

# Lines no story understands (one long, one of many words, one short), to fill the parser's buffers and word table.
_NONSENSE = (
    "xqzv " * 24,
    " ".join(["qx"] * 60),
    "zzxq",
)


class _Snapshotting(Protocol):
    def snapshot(self) -> bytes: ...
    def load_snapshot(self, data: bytes) -> object: ...
    def send(self, line: str) -> object: ...
    def branch(self, snapshot: bytes, commands: Sequence[str]) -> list[Branch]: ...


def chunks(save: bytes) -> dict[str, bytes]:
    """The IFF chunks of a Quetzal save, by id. Raises ValueError for anything else."""
    if save[:4] != b"FORM" or save[8:12] != b"IFZS":
        raise ValueError("not a Quetzal (IFZS) save file")
    out: dict[str, bytes] = {}
    i = 12
    while i + 8 <= len(save):
        size = struct.unpack(">I", save[i + 4 : i + 8])[0]
        out[save[i : i + 4].decode("latin-1")] = save[i + 8 : i + 8 + size]
        i += 8 + size + (size & 1)
    return out


def _chunk_order(save: bytes) -> list[str]:
    order, i = [], 12
    while i + 8 <= len(save):
        size = struct.unpack(">I", save[i + 4 : i + 8])[0]
        order.append(save[i : i + 4].decode("latin-1"))
        i += 8 + size + (size & 1)
    return order


def encode_memory(mem: bytes) -> bytes:
    """``CMem`` for RAM given as :func:`memory` returns it (the size word, then XOR-ed bytes): zero runs coded."""
    out = bytearray(mem[:4])
    i, n = 4, len(mem)
    while i < n:
        j = i
        while j < n and mem[j] == 0 and j - i < 256:
            j += 1
        if j == i:
            out.append(mem[i])
            i += 1
        else:
            out += bytes((0, j - i - 1))
            i = j
    return bytes(out)


def rebuild(save: bytes, *, mem: bytes | None = None, stack: bytes | None = None) -> bytes:
    """``save`` with its RAM and/or stack replaced: a state no path may have reached, to test what memory matters."""
    parts = chunks(save)
    if mem is not None:
        parts.pop("UMem", None)
        parts["CMem"] = encode_memory(mem)
    if stack is not None:
        parts["Stks"] = stack
    order = [c for c in _chunk_order(save) if c in parts] + [c for c in parts if c not in _chunk_order(save)]
    body = b"IFZS" + b"".join(
        c.encode("latin-1") + struct.pack(">I", len(parts[c])) + parts[c] + b"\0" * (len(parts[c]) & 1)
        for c in order
    )
    return b"FORM" + struct.pack(">I", len(body)) + body


def memory(save: bytes) -> bytes:
    """RAM as the save records it (XOR against the story file): ``CMem`` expanded, or ``UMem`` as it is."""
    parts = chunks(save)
    if "UMem" in parts:
        return parts["UMem"]
    data = parts["CMem"]
    # CMem: a 4-byte memory size, then bytes where 0x00 n stands for n+1 zero bytes (one find per run: every
    # explored state's save is expanded, so this loop is on the explorer's hot path).
    out = bytearray(data[:4])
    i = 4
    while (j := data.find(0, i)) >= 0 and j + 1 < len(data):
        out += data[i:j]
        out += bytes(data[j + 1] + 1)
        i = j + 2
    out += data[i:]
    return bytes(out)


class StateKeys:
    """Keys for the states of one story, with the offsets that saving itself changes left out."""

    def __init__(
        self,
        mem_mask: frozenset[int] = frozenset(),
        stack_mask: frozenset[int] = frozenset(),
        dead: DeadMemory | None = None,
    ) -> None:
        self.mem_mask = mem_mask
        self.stack_mask = stack_mask
        self.dead = dead  # what :mod:`deadmem` showed, where it was asked to

    @classmethod
    def learn(
        cls, game: _Snapshotting, words: Sequence[str] = (), commands: Sequence[str] = ()
    ) -> tuple[StateKeys, bytes]:
        """Learn the volatile offsets from the game's current state; returns the keys and a save of that state
        taken after a restore (as every other state's save is). ``words``: the story's command words, so that the
        word table's dictionary slots are filled too (by lines that start with a word no story knows as a verb).
        ``commands``: the listed actions; given, the memory they never read is found too (:func:`deadmem.find_dead`)
        and the whole mask is checked by transplanting it between real states."""
        first = game.snapshot()
        others = [game.snapshot()]
        vocab = sorted({w for line in words for w in line.split()})
        probes = [*_NONSENSE, *(f"zzxq {' '.join(order)}" for order in (vocab, vocab[::-1]) if order)]
        for line in probes:
            game.load_snapshot(first)
            game.send(line)
            others.append(game.snapshot())
        game.load_snapshot(first)
        restored = game.snapshot()
        others.append(restored)
        mem = memory(first)
        stack = chunks(first).get("Stks", b"")
        mem_mask: set[int] = set()
        stack_mask: set[int] = set()
        for other in others:
            mem_mask |= _differing(mem, memory(other))
            stack_mask |= _differing(stack, chunks(other).get("Stks", b""))
        keys = cls(_words(mem_mask), _words(stack_mask))
        if commands:
            from conflictbench_app.authoring.deadmem import find_dead  # it builds on this module

            keys = keys.with_dead(find_dead(game, restored, commands, keys.mem_mask, keys.stack_mask))
            game.load_snapshot(restored)  # the transplants left the game elsewhere
        return keys, restored

    def with_dead(self, dead: DeadMemory) -> StateKeys:
        mem = set(self.mem_mask).union(*(r.offsets() for r in dead.dead if r.space == "mem"))
        stack = set(self.stack_mask).union(*(r.offsets() for r in dead.dead if r.space == "stack"))
        return StateKeys(frozenset(mem), frozenset(stack), dead)

    def describe(self) -> str:
        """How states are keyed, for a report: what is left out of the digest and why."""
        text = (
            f"a digest of the save's memory, heap map and stack, less {len(self.mem_mask)} memory and "
            f"{len(self.stack_mask)} stack bytes"
        )
        return text + (f" ({self.dead.summary()})" if self.dead is not None else "")

    def key(self, save: bytes) -> str:
        """The state's key: a digest of RAM, heap map and stack, without the learned volatile offsets."""
        parts = chunks(save)
        digest = hashlib.blake2b(digest_size=16)
        for data, mask in ((memory(save), self.mem_mask), (parts.get("Stks", b""), self.stack_mask)):
            digest.update(len(data).to_bytes(8, "big"))
            digest.update(_masked(data, mask))
        digest.update(parts.get("MAll", b""))
        return digest.hexdigest()


def _words(offsets: set[int]) -> frozenset[int]:
    """Every offset of each 32-bit word that holds one: a Glk object id or a counter changes its low byte on one
    save and a higher one on another (RAM as :func:`memory` gives it starts with the size word, so both it and the
    stack are word-aligned at offset 0)."""
    return frozenset(j for i in offsets for j in range(i - i % 4, i - i % 4 + 4))


def _differing(a: bytes, b: bytes) -> set[int]:
    if len(a) != len(b):
        # A different length is a different shape of state, not a few volatile bytes: nothing can be masked.
        return set()
    return {i for i in range(len(a)) if a[i] != b[i]} if a != b else set()


def _masked(data: bytes, mask: frozenset[int]) -> bytes:
    if not mask:
        return data
    buf = bytearray(data)
    for i in mask:
        if i < len(buf):
            buf[i] = 0
    return bytes(buf)
