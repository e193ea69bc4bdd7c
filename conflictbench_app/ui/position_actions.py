"""Save / restore a position in Play, as an interactive-fiction interpreter's SAVE and RESTORE: Ctrl+S and Ctrl+O
while Play is shown (the window's Play menu holds the same actions). The work is the core's
(:mod:`conflictbench_app.positions`), run on the play session's thread; a restore goes on in a new branch, marked
assisted, and the player who restored plays the next turn."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog

from conflictbench_app.settings import user_data_dir

if TYPE_CHECKING:
    from conflictbench_app.ui.play_view import PlayView

POSITION_FILTER = "Saved positions (*.cbpos)"


class PositionActions(QObject):
    """The Save position / Restore position actions of one Play view."""

    def __init__(self, view: PlayView) -> None:
        super().__init__(view)
        self.view = view
        self.save_action = self._action("Save position…", "Ctrl+S", self.save)
        self.save_action.setToolTip("Save where the story stands now (the story's own save) to a file")
        self.restore_action = self._action("Restore position…", "Ctrl+O", self.restore)
        self.restore_action.setToolTip(
            "Go on from a saved position, in a new branch of the episode it came from"
        )
        view.live.positionSaved.connect(self._on_saved)
        self.set_enabled(False)

    def _action(self, text: str, keys: str, slot: Any) -> QAction:
        action = QAction(text, self.view)
        action.setShortcut(QKeySequence(keys))
        action.triggered.connect(lambda _checked=False: slot())
        self.view.addAction(action)
        return action

    def set_enabled(self, on: bool) -> None:
        """On while Play is shown only: elsewhere Ctrl+S is another mode's (Review saves a label with it)."""
        for action in (self.save_action, self.restore_action):
            action.setEnabled(on)

    def save(self, path: str | Path | None = None) -> None:
        """Save the position of the episode in progress (asks where when ``path`` is None)."""
        view = self.view
        record = view.live.record
        if not view.active or view.live.done or record is None:
            view.console.show_status(
                "Nothing to save: start an episode (or fork a turn of a finished one) first."
            )
            return
        if path is None:
            suggested = user_data_dir() / "positions" / f"{record.scenario_id}-turn{len(view.live.steps)}"
            suggested.parent.mkdir(parents=True, exist_ok=True)
            path, _ = QFileDialog.getSaveFileName(view, "Save the position", str(suggested), POSITION_FILTER)
            if not path:
                return
        view.console.show_status("Saving the position…")
        view.live.save_position(path)

    def restore(self, path: str | Path | None = None) -> None:
        """Go on from a saved position (asks which when ``path`` is None) in a new branch; you play next."""
        view = self.view
        if view.scenario is None:
            view.show_error("Choose the scenario of the saved position in the Library first.")
            return
        if path is None:
            folder = str(user_data_dir() / "positions")
            path, _ = QFileDialog.getOpenFileName(view, "Restore a position", folder, POSITION_FILTER)
            if not path:
                return
        if not view.confirm_leave("Restoring a saved position"):
            return
        view.driver.take_over()  # the player who restores plays the next turn
        view.console.show_status("Restoring the position…")
        view.live.restore_position(path, view.scenario)

    def _on_saved(self, saved: Any) -> None:
        position, path = saved
        self.view.console.show_status(
            f"Position after turn {position.at_step} saved to {path}. Ctrl+O goes back to it."
        )
