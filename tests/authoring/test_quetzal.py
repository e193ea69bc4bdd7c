"""Exact state keys from the Quetzal save: hidden differences separate states, paths do not."""

from __future__ import annotations

from pathlib import Path

import pytest

from conflictbench_app.authoring.inform7 import compile_source
from conflictbench_app.authoring.quetzal import StateKeys, chunks, encode_memory, memory, rebuild
from conflictbench_app.engine.glulxe import GlulxGame

HIDDEN = Path(__file__).resolve().parents[1] / "data" / "hidden" / "story.ni"


@pytest.fixture(scope="module")
def hidden_story(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from conflictbench_app.errors import ToolchainError
    from conflictbench_app.toolchain import find_inform7

    try:
        tools = find_inform7()
    except ToolchainError as exc:
        pytest.skip(f"the Inform 7 compiler is not installed ({exc})")
    out = tmp_path_factory.mktemp("hidden") / "hidden.ulx"
    compile_source(HIDDEN.read_text(encoding="utf-8"), out, tools=tools)
    return out


def _key_after(game: GlulxGame, keys: StateKeys, root: bytes, commands: list[str]) -> tuple[str, str]:
    game.load_snapshot(root)
    text = ""
    for command in commands:
        text = game.send(command).text
    return keys.key(game.snapshot()), text


@pytest.mark.compiler
def test_hidden_state_separates_and_paths_merge(hidden_story: Path) -> None:
    with GlulxGame(hidden_story) as game:
        keys, root = StateKeys.learn(game, ["press red", "press blue", "reset"])
        red, red_text = _key_after(game, keys, root, ["press red"])
        blue, blue_text = _key_after(game, keys, root, ["press blue"])
        assert red_text == blue_text == "Click."
        assert red != blue  # the same words on screen, a different hidden number
        # Inform 7 remembers which actions have happened ("if we have pressed red"), so both paths take the same ones; its
        # parser also keeps the last two-word command's second word in a global (not masked: it is the game's own
        # memory), so both paths end with the same two-word command.
        via_red, _ = _key_after(game, keys, root, ["press red", "reset", "press blue"])
        via_blue, _ = _key_after(game, keys, root, ["reset", "press red", "press blue"])
        assert via_red == via_blue  # the same state by two paths
        never_blue, _ = _key_after(game, keys, root, ["press red", "reset", "press red"])
        assert never_blue != via_red
        # Saving the same state again (a new save stream, a new Glk object id) keeps its key.
        assert keys.key(game.snapshot()) == never_blue


@pytest.mark.compiler
@pytest.mark.parametrize(("lever", "merged"), [(False, True), (True, False)])
def test_memory_no_listed_action_reads_is_left_out(hidden_story: Path, lever: bool, merged: bool) -> None:
    # Red then blue leaves the secret at 2, blue then red at 1: the same turns, the same actions done, one byte
    # apart. Without the lever no listed action reads the secret (each button overwrites it): the transplant shows
    # it dead and the two states share a key. With the lever, which prints what the secret holds, they must not.
    commands = ["press red", "press blue", "reset", *(["pull lever"] if lever else [])]
    with GlulxGame(hidden_story) as game:
        keys, root = StateKeys.learn(game, commands, commands)
        assert keys.dead is not None and keys.dead.joint
        assert keys.dead.trials > 0 and keys.dead.live > 0  # the turn counter, at least, is live
        red_blue, _ = _key_after(game, keys, root, ["press red", "press blue"])
        blue_red, _ = _key_after(game, keys, root, ["press blue", "press red"])
        assert (red_blue == blue_red) is merged
        if lever:
            game.load_snapshot(root)
            game.send("press blue")
            game.send("press red")
            assert "hatch opens" in game.send("pull lever").text  # so the two states really differ


def test_rebuild_round_trips_a_real_save(tiny_story: Path) -> None:
    with GlulxGame(tiny_story) as game:
        game.start()
        save = game.snapshot()
        ram = memory(save)
        assert memory(rebuild(save, mem=ram)) == ram
        assert encode_memory(ram) == chunks(save)["CMem"] or memory(rebuild(save, mem=ram)) == ram
        changed = bytearray(chunks(save)["Stks"])
        assert chunks(rebuild(save, stack=bytes(changed)))["Stks"] == bytes(changed)
        game.load_snapshot(rebuild(save, mem=ram))  # the interpreter takes a rebuilt save back


def test_chunks_reads_a_real_save(tiny_story: Path) -> None:
    with GlulxGame(tiny_story) as game:
        game.start()
        parts = chunks(game.snapshot())
    assert {"IFhd", "CMem", "Stks"} <= set(parts)
    with pytest.raises(ValueError, match="Quetzal"):
        chunks(b"not a save")


def test_memory_expands_zero_runs() -> None:
    import struct

    cmem = b"\x00\x00\x00\x07" + b"a\x00\x02b\x00\x00"  # "a", three zeros, "b", one zero
    body = b"IFZS" + b"CMem" + struct.pack(">I", len(cmem)) + cmem
    save = b"FORM" + struct.pack(">I", len(body)) + body
    assert memory(save) == b"\x00\x00\x00\x07" + b"a\x00\x00\x00b\x00"
