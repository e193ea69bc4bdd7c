"""Settings: providers, their models and API keys (kept in the OS keyring, never in a file the app writes), the
world-model backend and weights folder, the database, the annotator's name. Writes the settings TOML file through
``conflictbench_app.settings.write_settings``."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
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

from conflictbench_app.agents.keys import set_api_key
from conflictbench_app.agents.providers import Profile, profile_settings
from conflictbench_app.errors import SettingsError
from conflictbench_app.settings import read_settings_file, settings_file, write_settings

EDITABLE = ("db", "scenarios_dir", "renderer", "wan_model_dir", "annotator")


NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-_")


class ProviderEditor(QDialog):
    """Add a provider profile, or edit one's endpoint, key variable, capabilities and models."""

    def __init__(self, profile: Profile | None, taken: set[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Edit provider" if profile else "Add provider")
        self.taken = taken
        self.existing = profile
        form = QFormLayout(self)
        self.name = QLineEdit(profile.name if profile else "", self)
        self.name.setReadOnly(profile is not None)
        self.name.setPlaceholderText("e.g. myserver")
        self.base_url = QLineEdit(profile.base_url if profile else "", self)
        self.base_url.setPlaceholderText("https://api.example.com/v1")
        self.key_env = QLineEdit(profile.key_env if profile else "", self)
        self.key_env.setPlaceholderText("MYSERVER_API_KEY (empty: the server needs no key)")
        self.vision = QCheckBox("Takes images (the multimodal setting sends each turn's 1-fps frames)", self)
        self.vision.setChecked(profile.vision if profile else True)
        self.models = QLineEdit(", ".join(profile.models) if profile else "", self)
        self.models.setPlaceholderText("model ids, comma-separated, e.g. gpt-4o, gpt-5")
        self.problem = QLabel("", self)
        self.problem.setObjectName("Error")
        self.problem.setWordWrap(True)
        form.addRow("Profile name", self.name)
        form.addRow("Endpoint (base URL)", self.base_url)
        form.addRow("Key variable", self.key_env)
        form.addRow("", self.vision)
        form.addRow("Models", self.models)
        form.addRow(self.problem)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self.result_profile: Profile | None = None

    def profile(self) -> Profile:
        """The edited profile; raises SettingsError with a sentence when a field is wrong."""
        from dataclasses import replace

        from conflictbench_app.agents.providers import check_base_url
        from conflictbench_app.errors import AgentError

        name = self.name.text().strip().lower()
        if self.existing is None:
            if not name or not set(name) <= NAME_CHARS:
                raise SettingsError("The profile name takes letters, digits, '-' and '_' (e.g. myserver).")
            if name in self.taken:
                raise SettingsError(
                    f"A profile called {name!r} exists already; select it and edit it instead."
                )
        url = self.base_url.text().strip().rstrip("/")
        try:
            check_base_url(url)
        except AgentError as exc:
            raise SettingsError(str(exc)) from exc
        key_env = self.key_env.text().strip()
        if key_env and not key_env.replace("_", "").isalnum():
            raise SettingsError(
                "The key variable is the NAME of an environment variable (e.g. MYSERVER_API_KEY)."
            )
        models = tuple(dict.fromkeys(m.strip() for m in self.models.text().split(",") if m.strip()))
        base = self.existing or Profile(name=name, base_url=url)
        return replace(base, base_url=url, key_env=key_env, vision=self.vision.isChecked(), models=models)

    def _accept(self) -> None:
        try:
            self.result_profile = self.profile()
        except SettingsError as exc:
            self.problem.setText(str(exc))
            return
        self.accept()


class SettingsDialog(QDialog):
    """Edit the settings file and the keyring entries. Provider edits are written on Save; keys go to the keyring
    at once (they never touch the file)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        from conflictbench_app.agents.providers import all_profiles
        from conflictbench_app.settings import get_settings

        self.setWindowTitle("Settings")
        self.resize(860, 580)
        self.settings = get_settings()
        self.profiles: dict[str, Profile] = all_profiles()
        self.changed_profiles: set[str] = set()
        layout = QVBoxLayout(self)
        layout.addLayout(self._general_form())
        layout.addWidget(QLabel("<b>Model providers</b> (keys are kept in the OS keyring)", self))
        self.providers = QTableWidget(0, 5, self)
        self.providers.setHorizontalHeaderLabels(["Profile", "Endpoint", "Key variable", "Key", "Models"])
        self.providers.verticalHeader().setVisible(False)
        self.providers.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.providers.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        header = self.providers.horizontalHeader()
        for column in (0, 2, 3):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        for column in (1, 4):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Stretch)
        self.providers.doubleClicked.connect(lambda _index: self._edit_provider())
        layout.addWidget(self.providers, 1)
        layout.addLayout(self._provider_buttons())
        layout.addWidget(QLabel(f"<span style='color:#616e7c'>Settings file: {settings_file()}</span>", self))
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.save)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self._fill_providers()

    def _general_form(self) -> QFormLayout:
        from conflictbench_app.worldmodel import BACKENDS

        form = QFormLayout()
        self.annotator = QLineEdit(self.settings.annotator, self)
        self.annotator.setPlaceholderText("Your name, recorded with every label and every turn you play")
        self.db = self._path_row(str(self.settings.db), file=True)
        self.scenarios_dir = self._path_row(str(self.settings.scenarios_dir), file=False)
        self.renderer = QComboBox(self)
        self.renderer.addItems(sorted(BACKENDS))
        self.renderer.setCurrentText(self.settings.renderer)
        self.wan_model_dir = self._path_row(str(self.settings.wan_model_dir or ""), file=False)
        form.addRow("Annotator name", self.annotator)
        form.addRow("Database", self.db)
        form.addRow("Scenarios folder", self.scenarios_dir)
        form.addRow("World model", self.renderer)
        form.addRow("Wan weights folder", self.wan_model_dir)
        return form

    def _provider_buttons(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.add_button = QPushButton("Add provider…", self)
        self.add_button.clicked.connect(self._add_provider)
        self.edit_button = QPushButton("Edit provider and models…", self)
        self.edit_button.clicked.connect(self._edit_provider)
        self.key_button = QPushButton("Set API key…", self)
        self.key_button.clicked.connect(self._ask_key)
        self.message = QLabel("", self)
        self.message.setWordWrap(True)
        for button in (self.add_button, self.edit_button, self.key_button):
            row.addWidget(button)
        row.addWidget(self.message, 1)
        return row

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
        row.edit = edit  # type: ignore[attr-defined]
        return row

    def _fill_providers(self) -> None:
        from conflictbench_app.agents.keys import find_key

        self.providers.setRowCount(len(self.profiles))
        for row, (name, profile) in enumerate(sorted(self.profiles.items())):
            found = find_key(name, profile.key_env)
            status = (
                "not needed" if not profile.key_required else (found.source if found.found else "missing")
            )
            models = ", ".join(profile.models) or "(any: type PROFILE:MODEL)"
            for col, value in enumerate((name, profile.base_url, profile.key_env, status, models)):
                item = QTableWidgetItem(value)
                item.setToolTip(value)
                self.providers.setItem(row, col, item)

    def _selected_profile(self) -> str | None:
        row = self.providers.currentRow()
        if row < 0:
            self.message.setText("Select a provider profile first.")
            return None
        return self.providers.item(row, 0).text()

    def _add_provider(self) -> None:
        editor = ProviderEditor(None, set(self.profiles), self)
        if editor.exec() == QDialog.DialogCode.Accepted and editor.result_profile is not None:
            self.set_profile(editor.result_profile)

    def _edit_provider(self) -> None:
        name = self._selected_profile()
        if name is None:
            return
        editor = ProviderEditor(self.profiles[name], set(self.profiles), self)
        if editor.exec() == QDialog.DialogCode.Accepted and editor.result_profile is not None:
            self.set_profile(editor.result_profile)

    def set_profile(self, profile: Profile) -> None:
        """Add or replace a provider profile (written to the settings file on Save)."""
        self.profiles[profile.name] = profile
        self.changed_profiles.add(profile.name)
        self.message.setText(f"{profile.name}: changed; Save writes it to the settings file.")
        self._fill_providers()

    def _ask_key(self) -> None:
        profile = self._selected_profile()
        if profile is None:
            return
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
        changed: dict[str, Any] = {k: v for k, v in self.values().items() if str(current[k] or "") != v}
        if self.changed_profiles:
            providers = dict(read_settings_file().get("providers", {}))
            for name in sorted(self.changed_profiles):
                providers[name] = profile_settings(self.profiles[name])
            changed["providers"] = providers
        try:
            if changed:
                write_settings(changed)
        except (SettingsError, OSError) as exc:
            self.message.setText(f"Could not save the settings: {exc}")
            return
        self.accept()
