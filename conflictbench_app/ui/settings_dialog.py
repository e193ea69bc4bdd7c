"""Settings: providers and their API keys (kept in the OS keyring, never in a file the app writes), the world-model
backend and weights folder, the database, the annotator's name. Writes the settings TOML file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.settings import settings_file

EDITABLE = ("db", "scenarios_dir", "renderer", "wan_model_dir", "annotator")


class SettingsError(ConflictBenchError):
    """The settings could not be saved."""


def toml_dumps(data: dict[str, Any]) -> str:
    """A small TOML writer for the settings file: scalars, paths, and one level of tables (``[providers.x]``)."""
    lines: list[str] = []
    tables: list[tuple[str, dict[str, Any]]] = []
    for key, value in data.items():
        if isinstance(value, dict):
            tables.append((key, value))
        elif value is not None:
            lines.append(f"{key} = {_toml_value(value)}")
    for name, table in tables:
        for sub, value in table.items():
            if isinstance(value, dict):
                scalars = {k: v for k, v in value.items() if not isinstance(v, dict) and v is not None}
                lines += ["", f"[{name}.{_toml_key(sub)}]"] + [
                    f"{k} = {_toml_value(v)}" for k, v in scalars.items()
                ]
                for inner, inner_value in value.items():
                    if isinstance(inner_value, dict) and inner_value:
                        lines += ["", f"[{name}.{_toml_key(sub)}.{inner}]"]
                        lines += [f"{k} = {_toml_value(v)}" for k, v in inner_value.items()]
            elif value is not None:
                lines += ["", f"[{name}]", f"{sub} = {_toml_value(value)}"]
    return "\n".join(lines).strip() + "\n"


def _toml_key(key: str) -> str:
    return key if key.replace("-", "").replace("_", "").isalnum() else '"' + key.replace('"', '\\"') + '"'


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    text = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{text}"'


def read_settings_file(path: Path) -> dict[str, Any]:
    import tomllib

    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"The settings file {path} is not valid TOML ({exc}); fix or delete it.") from exc


def write_settings(changes: dict[str, Any], path: Path | None = None) -> Path:
    """Merge ``changes`` into the settings file (keys never go here) and clear the cached settings."""
    from conflictbench_app.settings import get_settings

    path = path or settings_file()
    data = read_settings_file(path)
    for key, value in changes.items():
        if value in (None, ""):
            data.pop(key, None)
        else:
            data[key] = str(value) if isinstance(value, Path) else value
    if any(k.lower() == "key" or "api_key" in k.lower() for k in _all_keys(data)):
        raise SettingsError("API keys belong in the OS keyring, not in the settings file.")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(toml_dumps(data), encoding="utf-8")
    tmp.replace(path)
    get_settings.cache_clear()
    return path


def _all_keys(data: dict[str, Any]) -> list[str]:
    keys = []
    for key, value in data.items():
        keys.append(key)
        if isinstance(value, dict):
            keys += _all_keys(value)
    return keys


def set_api_key(profile: str, value: str) -> None:
    """Store a provider's API key in the OS keyring (service ``conflictbench``, user = profile name)."""
    import keyring
    import keyring.errors
    from keyring.backends import fail

    from conflictbench_app.agents.keys import KEYRING_SERVICE

    if isinstance(keyring.get_keyring(), fail.Keyring):
        raise SettingsError(
            "No OS keyring is available on this system; set the provider's key variable in your environment instead."
        )
    try:
        if value:
            keyring.set_password(KEYRING_SERVICE, profile, value)
        else:
            keyring.delete_password(KEYRING_SERVICE, profile)
    except keyring.errors.KeyringError as exc:
        raise SettingsError(
            f"The OS keyring refused the key ({type(exc).__name__}); try again or use the key variable."
        ) from exc


class SettingsDialog(QDialog):
    """Edit the settings file and the keyring entries."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        from conflictbench_app.settings import get_settings

        self.setWindowTitle("Settings")
        self.resize(760, 560)
        self.settings = get_settings()
        layout = QVBoxLayout(self)
        form = QFormLayout()
        self.annotator = QLineEdit(self.settings.annotator, self)
        self.annotator.setPlaceholderText("Your name, recorded with every label and every turn you play")
        self.db = self._path_row(str(self.settings.db), file=True)
        self.scenarios_dir = self._path_row(str(self.settings.scenarios_dir), file=False)
        self.renderer = QComboBox(self)
        from conflictbench_app.worldmodel import BACKENDS

        self.renderer.addItems(sorted(BACKENDS))
        self.renderer.setCurrentText(self.settings.renderer)
        self.wan_model_dir = self._path_row(str(self.settings.wan_model_dir or ""), file=False)
        form.addRow("Annotator name", self.annotator)
        form.addRow("Database", self.db)
        form.addRow("Scenarios folder", self.scenarios_dir)
        form.addRow("World model", self.renderer)
        form.addRow("Wan weights folder", self.wan_model_dir)
        layout.addLayout(form)
        layout.addWidget(QLabel("<b>Model providers</b> (keys are kept in the OS keyring)", self))
        self.providers = QTableWidget(0, 4, self)
        self.providers.setHorizontalHeaderLabels(["Profile", "Endpoint", "Key variable", "Key"])
        self.providers.verticalHeader().setVisible(False)
        self.providers.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.providers.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.providers.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        layout.addWidget(self.providers, 1)
        keys = QHBoxLayout()
        self.key_button = QPushButton("Set API key for the selected profile…", self)
        self.key_button.clicked.connect(self._ask_key)
        self.message = QLabel("", self)
        self.message.setWordWrap(True)
        keys.addWidget(self.key_button)
        keys.addWidget(self.message, 1)
        layout.addLayout(keys)
        layout.addWidget(QLabel(f"<span style='color:#616e7c'>Settings file: {settings_file()}</span>", self))
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.save)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self._fill_providers()

    def _path_row(self, value: str, *, file: bool) -> QWidget:
        row = QWidget(self)
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        edit = QLineEdit(value, row)
        browse = QPushButton("Browse…", row)

        def pick() -> None:
            chosen = (
                QFileDialog.getSaveFileName(self, "Database file", edit.text())[0]
                if file
                else QFileDialog.getExistingDirectory(self, "Folder", edit.text())
            )
            if chosen:
                edit.setText(chosen)

        browse.clicked.connect(pick)
        layout.addWidget(edit, 1)
        layout.addWidget(browse)
        row.setProperty("edit", edit)
        row.edit = edit  # type: ignore[attr-defined]
        return row

    def _fill_providers(self) -> None:
        from conflictbench_app.agents.keys import find_key
        from conflictbench_app.agents.providers import all_profiles

        profiles = all_profiles()
        self.providers.setRowCount(len(profiles))
        for row, (name, profile) in enumerate(sorted(profiles.items())):
            found = find_key(name, profile.key_env)
            status = (
                "not needed" if not profile.key_required else (found.source if found.found else "missing")
            )
            for col, value in enumerate((name, profile.base_url, profile.key_env, status)):
                self.providers.setItem(row, col, QTableWidgetItem(value))

    def _ask_key(self) -> None:
        row = self.providers.currentRow()
        if row < 0:
            self.message.setText("Select a provider profile first.")
            return
        profile = self.providers.item(row, 0).text()
        value, ok = QInputDialog.getText(
            self, "API key", f"API key for {profile} (stored in the OS keyring):", QLineEdit.EchoMode.Password
        )
        if ok:
            self.store_key(profile, value.strip())

    def store_key(self, profile: str, value: str) -> None:
        try:
            set_api_key(profile, value)
        except SettingsError as exc:
            self.message.setText(str(exc))
            return
        self.message.setText(f"Key for {profile} {'saved in' if value else 'removed from'} the OS keyring.")
        self._fill_providers()

    def values(self) -> dict[str, Any]:
        return {
            "annotator": self.annotator.text().strip(),
            "db": self.db.edit.text().strip(),  # type: ignore[attr-defined]
            "scenarios_dir": self.scenarios_dir.edit.text().strip(),  # type: ignore[attr-defined]
            "renderer": self.renderer.currentText(),
            "wan_model_dir": self.wan_model_dir.edit.text().strip(),  # type: ignore[attr-defined]
        }

    def save(self) -> None:
        current = {k: getattr(self.settings, k) for k in EDITABLE}
        changed = {k: v for k, v in self.values().items() if str(current[k] or "") != v}
        try:
            if changed:
                write_settings(changed)
        except (SettingsError, OSError) as exc:
            self.message.setText(f"Could not save the settings: {exc}")
            return
        self.accept()
