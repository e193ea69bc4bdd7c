"""The explored state graph of a story, drawn: states in columns by how many actions reach them, an arrow for each
accepted action (refusals change nothing and are left out), endings on the right in green (human-favorable) or red
(harmful), and the shortest human-favorable path in blue. Ctrl+wheel zooms; the view scrolls.

The graph and its figures are the core's (:mod:`conflictbench_app.authoring.stategraph`); this only draws them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QPainter, QPainterPath, QPen, QPolygonF, QResizeEvent, QWheelEvent
from PySide6.QtWidgets import (
    QGraphicsEllipseItem,
    QGraphicsItem,
    QGraphicsPathItem,
    QGraphicsRectItem,
    QGraphicsScene,
    QGraphicsSimpleTextItem,
    QGraphicsView,
    QWidget,
)

from conflictbench_app.authoring.stategraph import Outcome, StateGraph, depths, follow
from conflictbench_app.ui.theme import ACCENT, BAD, GOOD, INK, MUTED

COLUMN = 110  # px between depth columns, at least (wider when columns are tall, to keep the drawing wide)
ROW = 14  # px between states in a column
ASPECT = 2.0  # the drawing's width to height, about: the view is wider than tall
RADIUS = 5  # nodes keep their size on screen at any zoom (so do the lines' widths)
EDGE = QColor(MUTED)
EDGE.setAlpha(70)


@dataclass
class Drawing:
    """What was drawn, by key: for tests and for the view's own highlighting."""

    states: dict[str, QGraphicsEllipseItem] = field(default_factory=dict)
    endings: dict[str, QGraphicsRectItem] = field(default_factory=dict)
    edges: dict[tuple[str, str], QGraphicsPathItem] = field(default_factory=dict)  # (state, target) → arrow
    highlighted: list[tuple[str, str]] = field(
        default_factory=list
    )  # the shortest human-favorable path's edges
    favorable: dict[str, bool] = field(default_factory=dict)  # ending id → human-favorable
    at: dict[str, QPointF] = field(default_factory=dict)  # state or ending → its centre in the scene
    bounds: QRectF = field(default_factory=QRectF)  # the nodes' centres, with a margin
    label_px: float = 0.0  # the widest ending label, in screen pixels (labels keep their size at any zoom)


def describe_state(key: str) -> str:
    """A state key as lines of ``variable = value`` (our stories' keys are the state window's JSON)."""
    try:
        values = json.loads(key)
    except ValueError:
        return key if len(key) <= 200 else key[:200] + "…"
    if not isinstance(values, dict):
        return str(values)
    return "\n".join(f"{name} = {value}" for name, value in values.items())


class StateGraphView(QGraphicsView):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setScene(QGraphicsScene(self))
        self.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.drawing = Drawing()
        self.zoomed = False  # the user zoomed: a resize keeps their zoom instead of fitting again
        self.setToolTip("Hover a state or an arrow for details; drag to pan, Ctrl+wheel to zoom.")

    def clear(self, message: str = "") -> None:
        self.scene().clear()
        self.scene().setSceneRect(QRectF())  # back to the items' own bounds
        self.resetTransform()
        self.drawing = Drawing()
        if message:
            text = self.scene().addSimpleText(message)
            text.setBrush(QColor(MUTED))

    def show_graph(self, graph: StateGraph, path: list[str]) -> None:
        """Draw ``graph``, with the edges of ``path`` (commands from the start) highlighted."""
        self.clear()
        column_of = depths(graph)
        sizes = _column_sizes(column_of)
        columns = len(sizes) + 1  # the endings' column too
        width = max(COLUMN, ASPECT * max(sizes.values()) * ROW / columns)
        self._place_states(graph, column_of, width)
        self._place_endings(graph, (columns - 1) * width)
        self._draw_edges(graph)
        self._highlight(graph, path)
        xs = [p.x() for p in self.drawing.at.values()]
        ys = [p.y() for p in self.drawing.at.values()]
        self.drawing.bounds = QRectF(min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys))
        self.fit()

    def fit(self) -> None:
        """The whole graph in view, never magnified past its natural size (the endings' labels, drawn at their
        own size, get their room on the right)."""
        self.zoomed = False
        self.resetTransform()
        rect = self.drawing.bounds
        if not self.drawing.at:
            return
        margin = 24.0
        pad = self.drawing.label_px + 2 * margin
        view = self.viewport().size()
        scale = min(
            (view.width() - pad) / max(rect.width(), 1.0),
            (view.height() - 2 * margin) / max(rect.height(), 1.0),
            1.0,
        )
        scale = max(scale, 0.02)
        self.scale(scale, scale)
        m = margin / scale
        self.scene().setSceneRect(rect.adjusted(-m, -m, (pad - margin) / scale, m))
        self.centerOn(self.scene().sceneRect().center())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if not self.zoomed:
            self.fit()

    def wheelEvent(self, event: QWheelEvent) -> None:
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            factor = 1.2 if event.angleDelta().y() > 0 else 1 / 1.2
            self.scale(factor, factor)
            self.zoomed = True
            event.accept()
            return
        super().wheelEvent(event)

    # -- drawing -----------------------------------------------------------------------------------------------

    def _place_states(self, graph: StateGraph, column_of: dict[str, int], width: float) -> None:
        rows: dict[int, int] = {}
        sizes = _column_sizes(column_of)
        for state, depth in column_of.items():
            row = rows.get(depth, 0)
            rows[depth] = row + 1
            at = QPointF(depth * width, (row - (sizes[depth] - 1) / 2) * ROW)
            self.drawing.at[state] = at
            self.drawing.states[state] = self._state_node(graph, state, depth, at)

    def _state_node(self, graph: StateGraph, state: str, depth: int, at: QPointF) -> QGraphicsEllipseItem:
        r = RADIUS * (1.6 if state == graph.root else 1)
        node = self.scene().addEllipse(QRectF(-r, -r, 2 * r, 2 * r), _pen(INK, 1), QBrush(QColor("#ffffff")))
        _pin(node, at)
        where = "the start" if state == graph.root else f"{depth} action(s) from the start"
        unexpanded = "" if state in graph.edges else "\n(not expanded: a limit stopped the search)"
        node.setToolTip(f"State at {where}\n{describe_state(state)}{unexpanded}")
        if state == graph.root:
            label = QGraphicsSimpleTextItem("start", node)
            label.setPos(-14, -r - 18)
        return node

    def _place_endings(self, graph: StateGraph, x: float) -> None:
        endings = _endings(graph)
        ys = [p.y() for p in self.drawing.at.values()] or [0.0]
        top, height = min(ys), max(max(ys) - min(ys), ROW * (len(endings) + 1))
        step = height / (len(endings) + 1)
        for i, (ending, outcome) in enumerate(endings.items()):
            at = QPointF(x, top + step * (i + 1))
            self.drawing.at[ending] = at
            self.drawing.endings[ending] = self._ending_node(ending, outcome, at)
            self.drawing.favorable[ending] = outcome.human_favorable

    def _ending_node(self, ending: str, outcome: Outcome, at: QPointF) -> QGraphicsRectItem:
        color = QColor(GOOD if outcome.human_favorable else BAD)
        node = self.scene().addRect(QRectF(-8, -8, 16, 16), _pen(color.darker(130).name(), 1.5), color)
        _pin(node, at)
        kind = "human-favorable" if outcome.human_favorable else "harmful"
        clock = " (the clock ran out)" if outcome.by_clock else ""
        node.setToolTip(f"Ending {ending}: {kind}{clock}")
        label = QGraphicsSimpleTextItem(ending, node)
        label.setBrush(color.darker(120))
        label.setPos(12, -9)
        self.drawing.label_px = max(self.drawing.label_px, 12 + label.boundingRect().width())
        return node

    def _draw_edges(self, graph: StateGraph) -> None:
        commands: dict[tuple[str, str], list[str]] = {}
        for state, row in graph.edges.items():
            for command, outcome in row.items():
                if outcome.kind != "refused" and outcome.target != state:  # a loop changes nothing to see
                    commands.setdefault((state, outcome.target), []).append(command)
        for (state, target), words in commands.items():
            self.drawing.edges[(state, target)] = self._arrow(state, target, words)

    def _arrow(self, state: str, target: str, words: list[str]) -> QGraphicsPathItem:
        start, end = self.drawing.at[state], self.drawing.at[target]
        item = self.scene().addPath(_arrow_path(start, end), _pen(EDGE, 1))
        item.setBrush(QBrush(EDGE))
        item.setZValue(1)
        item.setToolTip("\n".join(words))
        return item

    def _highlight(self, graph: StateGraph, path: list[str]) -> None:
        pen = _pen(ACCENT, 3)
        for state, _command, outcome in follow(graph, path):
            item = self.drawing.edges.get((state, outcome.target))
            if item is None:
                continue  # a refusal on the path: nothing moved
            item.setPen(pen)
            item.setBrush(QBrush(QColor(ACCENT)))
            item.setZValue(3)
            self.drawing.highlighted.append((state, outcome.target))
            node = self.drawing.states.get(outcome.target)
            if node is not None:
                node.setBrush(QBrush(QColor(ACCENT)))


def _column_sizes(column_of: dict[str, int]) -> dict[int, int]:
    sizes: dict[int, int] = {}
    for depth in column_of.values():
        sizes[depth] = sizes.get(depth, 0) + 1
    return sizes


def _endings(graph: StateGraph) -> dict[str, Outcome]:
    """Every ending reached, human-favorable ones first, then by id."""
    found = {o.target: o for row in graph.edges.values() for o in row.values() if o.kind == "ending"}
    return dict(sorted(found.items(), key=lambda kv: (not kv[1].human_favorable, kv[0])))


def _pen(color: str | QColor, width: float) -> QPen:
    """A cosmetic pen: as wide on screen at any zoom."""
    pen = QPen(QColor(color), width)
    pen.setCosmetic(True)
    return pen


def _pin(node: QGraphicsItem, at: QPointF) -> None:
    """Place a node at ``at``, drawn at its own size whatever the zoom, above the arrows."""
    node.setPos(at)
    node.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
    node.setZValue(4)


def _arrow_path(start: QPointF, end: QPointF) -> QPainterPath:
    """A line from ``start`` to ``end`` with a small head a third of the way from its end (the nodes keep their
    size on screen while the line scales, so a head at the very end would hide under the target)."""
    line = end - start
    length = max((line.x() ** 2 + line.y() ** 2) ** 0.5, 1e-6)
    unit = QPointF(line.x() / length, line.y() / length)
    tip = start + line * 0.67
    base = tip - unit * 7
    normal = QPointF(-unit.y(), unit.x()) * 3
    path = QPainterPath(start)
    path.lineTo(end)
    path.addPolygon(QPolygonF([tip, base + normal, base - normal, tip]))
    return path


LEGEND = (
    f"<span style='color:{INK}'>○ state</span> &nbsp; <span style='color:{GOOD}'>■ human-favorable ending</span> "
    f"&nbsp; <span style='color:{BAD}'>■ harmful ending</span> &nbsp; "
    f"<span style='color:{ACCENT}'>━ shortest human-favorable path</span> &nbsp; "
    f"<span style='color:{MUTED}'>Ctrl+wheel zooms · drag pans</span>"
)
