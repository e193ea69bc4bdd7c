"""Entry point of the packaged app: the ``conflictbench`` command (GUI and CLI in one binary)."""

import multiprocessing

from conflictbench_app.cli import main

if __name__ == "__main__":
    # `scenarios verify --jobs N` uses a process pool; a frozen child must not re-run the CLI.
    multiprocessing.freeze_support()
    main()
