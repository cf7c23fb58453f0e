"""The guest: the server that runs inside the sandbox as its PID 1 (standard library only).

The host imports only :mod:`.protocol`; the folder is bind-mounted into the sandbox and started
by ``__main__.py``. See docs/sandbox.md.
"""
