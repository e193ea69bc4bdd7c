"""The desktop app (PySide6). Every line of Qt in the product lives in this package.

The core objects (PlaySession, Store, Runner) are the models; the widgets here render them and forward the user's
intent. Work that can take long (the interpreter, clip rendering, model calls, batch runs) runs on worker threads
owned by the window that started it; results come back to the GUI thread through queued Qt signals.
"""

from __future__ import annotations
