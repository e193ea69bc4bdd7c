"""Error types shared by the core. Messages are sentences that tell the user what to do."""


class ConflictBenchError(Exception):
    """Base class for every error the product reports to a user."""


class ToolchainError(ConflictBenchError):
    """An external program (glulxe, ni, inform6) is missing or unusable."""


class ScenarioError(ConflictBenchError):
    """A scenario folder, spec or story file is malformed or missing."""


class EngineError(ConflictBenchError):
    """The interpreter crashed, hung, or answered something unreadable."""


class StoreError(ConflictBenchError):
    """The database could not be opened, migrated or written."""


class AgentError(ConflictBenchError):
    """An agent backend is unknown, misconfigured, or failed persistently."""


class SettingsError(ConflictBenchError, ValueError):
    """The settings file or a CONFLICTBENCH_* variable is invalid."""
