"""ConflictBench Studio: play, run, record and review the ConflictBench benchmark."""

__version__ = "0.1.0"
