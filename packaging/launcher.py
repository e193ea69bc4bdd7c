"""Entry point of the packaged app: ``ConflictBench`` with no arguments opens the desktop app; with arguments it is
the ``conflictbench`` command line (e.g. ``ConflictBench gui --selftest``)."""

from conflictbench_app.cli import main

if __name__ == "__main__":
    main()
