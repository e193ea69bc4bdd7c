"""The agent picker shared by Play and the batch-run panel."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox


def fill_agent_box(box: QComboBox, *, first: tuple[str, str] | None = None) -> None:
    """Offer the embedded model, the scripted agents and every ``PROFILE:MODEL`` the provider profiles list (after
    ``first``, a ``(text, data)`` item such as the human player), keeping what the user had chosen or typed. Without
    a ``first`` item the box starts on :func:`default_agent` (a keyed model, else the embedded one)."""
    from conflictbench_app.agents.registry import default_agent, offered_agents

    current = box.currentText()
    box.clear()
    if first is not None:
        box.addItem(*first)
    for spec in offered_agents():
        box.addItem(spec, spec)
    if current:
        box.setCurrentText(current)
    elif first is None:
        box.setCurrentIndex(max(0, box.findData(default_agent())))
