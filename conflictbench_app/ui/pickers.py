"""The agent picker shared by Play and the batch-run panel."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox


def fill_agent_box(box: QComboBox, *, first: tuple[str, str] | None = None) -> None:
    """Offer the scripted agents and every ``PROFILE:MODEL`` the provider profiles list (after ``first``, a
    ``(text, data)`` item such as the human player), keeping what the user had chosen or typed."""
    from conflictbench_app.agents.registry import offered_agents

    current = box.currentText()
    box.clear()
    if first is not None:
        box.addItem(*first)
    for spec in offered_agents():
        box.addItem(spec, spec)
    if current:
        box.setCurrentText(current)
