"""The transplant rule of :mod:`deadmem`, byte by byte: what a command may do to a region for it to be dead."""

from __future__ import annotations

import pytest

from conflictbench_app.authoring.deadmem import Region, _State, _written_or_kept

REGION = Region("mem", 2, 4)


def _state(region: bytes) -> _State:
    mem = b"\xaa\xbb" + region + b"\xcc"
    return _State(b"", mem, b"")


@pytest.mark.parametrize(
    ("target", "donor", "after_target", "after_donor", "dead"),
    [
        # A parse buffer: the new command's two words overwrite the first two bytes alike, the rest is left alone.
        (b"\x01\x02\x03\x04", b"\x09\x08\x07\x06", b"\x05\x05\x03\x04", b"\x05\x05\x07\x06", True),
        (
            b"\x01\x02\x03\x04",
            b"\x09\x08\x07\x06",
            b"\x01\x02\x03\x04",
            b"\x09\x08\x07\x06",
            True,
        ),  # untouched
        (b"\x01\x02\x03\x04", b"\x09\x08\x07\x06", b"\x00\x00\x00\x00", b"\x00\x00\x00\x00", True),  # cleared
        # A counter: its new value comes from its old one, in both runs.
        (b"\x00\x00\x00\x01", b"\x00\x00\x00\x05", b"\x00\x00\x00\x02", b"\x00\x00\x00\x06", False),
        # Written, but differently: what the region held decided what was written.
        (b"\x01\x02\x03\x04", b"\x09\x08\x07\x06", b"\x01\x02\x03\x05", b"\x09\x08\x07\x06", False),
    ],
)
def test_a_region_is_dead_only_where_each_byte_is_written_alike_or_kept(
    target: bytes, donor: bytes, after_target: bytes, after_donor: bytes, dead: bool
) -> None:
    before_x, before_y = _state(target), _state(donor)
    x, y = ("", _state(after_target)), ("", _state(after_donor))
    assert _written_or_kept(before_x, before_y, x, y, REGION) is dead
