"""The system libraries Qt's X11 plugin needs are checked before the window opens: the app (and the bootstrap) say
which are missing and the exact apt-get line, instead of Qt aborting with a message that names another library."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from conflictbench_app.cli import cli, gui_cmd


@pytest.fixture
def x11(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISPLAY", ":99")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)


def test_a_missing_library_is_named_with_its_install_line(x11: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        gui_cmd, "QT_XCB_LIBRARIES", {"libc.so.6": "libc6", "libcb-no-such-lib.so.9": "libxcb-no-such9"}
    )
    assert gui_cmd.missing_qt_packages() == ["libxcb-no-such9"]
    result = CliRunner().invoke(cli, ["gui"])
    assert result.exit_code != 0
    assert "sudo apt-get install libxcb-no-such9" in result.output and "libc6" not in result.output


def test_nothing_is_asked_offscreen_or_when_all_are_there(x11: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gui_cmd, "QT_XCB_LIBRARIES", {"libc.so.6": "libc6"})
    assert gui_cmd.missing_qt_libraries_problem() is None
    monkeypatch.setattr(gui_cmd, "QT_XCB_LIBRARIES", {"libcb-no-such-lib.so.9": "libxcb-no-such9"})
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    assert gui_cmd.missing_qt_libraries_problem() is None
