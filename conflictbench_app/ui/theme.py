"""The look: Fusion with one restrained palette and a style sheet. Colours are named once here."""

from __future__ import annotations

from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QApplication

INK = "#1f2933"
MUTED = "#616e7c"
PAPER = "#f5f7fa"
PANEL = "#ffffff"
LINE = "#d9e2ec"
ACCENT = "#2f6fdf"
GOOD = "#2e8540"
BAD = "#c0392b"
WARN = "#b7791f"
CATEGORY_COLORS = {"EP1": "#7b4dd6", "EP2": "#1c8a8a", "EP3": "#c2571a"}
LABEL_COLORS = {"aligned": GOOD, "misaligned": BAD, "unsure": WARN}

STYLE = f"""
QWidget {{ color: {INK}; font-size: 10pt; }}
QMainWindow, QDialog {{ background: {PAPER}; }}
QFrame#Card, QWidget#Card {{ background: {PANEL}; border: 1px solid {LINE}; border-radius: 8px; }}
QLabel#Title {{ font-size: 15pt; font-weight: 600; }}
QLabel#Subtitle {{ color: {MUTED}; }}
QLabel#Section {{ color: {MUTED}; font-size: 8pt; font-weight: 700; letter-spacing: 1px; }}
QLabel#Chip {{ border-radius: 9px; padding: 1px 8px; color: white; font-weight: 600; font-size: 8pt; }}
QLabel#Banner {{ background: #fff4e5; border: 1px solid #f0c36d; border-radius: 6px; padding: 6px 10px; }}
QLabel#Error {{ background: #fdecea; border: 1px solid #f5b7b1; border-radius: 6px; padding: 6px 10px; }}
QTabWidget::pane {{ border: none; }}
QTabBar::tab {{ padding: 8px 18px; margin-right: 2px; border: none; color: {MUTED}; font-weight: 600; }}
QTabBar::tab:selected {{ color: {ACCENT}; border-bottom: 3px solid {ACCENT}; }}
QPushButton {{ background: {PANEL}; border: 1px solid {LINE}; border-radius: 6px; padding: 5px 12px; }}
QPushButton:hover {{ border-color: {ACCENT}; }}
QPushButton:disabled {{ color: #9aa5b1; background: #eef2f6; }}
QPushButton#Primary {{ background: {ACCENT}; color: white; border: 1px solid {ACCENT}; font-weight: 600; }}
QPushButton#Primary:disabled {{ background: #9db8ea; border-color: #9db8ea; }}
QPushButton#Good {{ background: {GOOD}; color: white; border: none; font-weight: 600; }}
QPushButton#Bad {{ background: {BAD}; color: white; border: none; font-weight: 600; }}
QPushButton#Warn {{ background: {WARN}; color: white; border: none; font-weight: 600; }}
QPushButton#Good:disabled, QPushButton#Bad:disabled, QPushButton#Warn:disabled {{
    background: #eef2f6; color: #9aa5b1; border: 1px solid {LINE}; }}
QLineEdit, QPlainTextEdit, QTextEdit, QComboBox, QSpinBox, QDoubleSpinBox {{
    background: {PANEL}; border: 1px solid {LINE}; border-radius: 6px; padding: 4px 6px;
    selection-background-color: {ACCENT};
}}
QLineEdit:focus, QPlainTextEdit:focus, QTextEdit:focus {{ border-color: {ACCENT}; }}
QListWidget, QTableWidget, QTreeWidget {{
    background: {PANEL}; border: 1px solid {LINE}; border-radius: 8px; alternate-background-color: #f8fafc;
}}
QListWidget::item {{ padding: 2px; }}
QListWidget::item:selected, QTableWidget::item:selected {{ background: #e3ecfb; color: {INK}; }}
QHeaderView::section {{ background: {PAPER}; border: none; border-bottom: 1px solid {LINE}; padding: 4px;
    font-weight: 600; color: {MUTED}; }}
QProgressBar {{ border: 1px solid {LINE}; border-radius: 6px; background: {PANEL}; text-align: center; height: 16px; }}
QProgressBar::chunk {{ background: {ACCENT}; border-radius: 5px; }}
QSlider::groove:horizontal {{ height: 4px; background: {LINE}; border-radius: 2px; }}
QSlider::handle:horizontal {{ background: {ACCENT}; width: 12px; margin: -5px 0; border-radius: 6px; }}
QSlider::sub-page:horizontal {{ background: {ACCENT}; border-radius: 2px; }}
QStatusBar {{ color: {MUTED}; }}
"""


def apply_theme(app: QApplication) -> None:
    """Fusion, a light palette and the style sheet; the same on every platform (screenshots match users' screens)."""
    app.setStyle("Fusion")
    palette = QPalette()
    palette.setColor(QPalette.ColorRole.Window, QColor(PAPER))
    palette.setColor(QPalette.ColorRole.Base, QColor(PANEL))
    palette.setColor(QPalette.ColorRole.Text, QColor(INK))
    palette.setColor(QPalette.ColorRole.WindowText, QColor(INK))
    palette.setColor(QPalette.ColorRole.Highlight, QColor(ACCENT))
    palette.setColor(QPalette.ColorRole.HighlightedText, QColor("#ffffff"))
    app.setPalette(palette)
    font = QFont(app.font())
    font.setPointSize(10)
    app.setFont(font)
    app.setStyleSheet(STYLE)


def chip_style(color: str) -> str:
    return f"background: {color};"
