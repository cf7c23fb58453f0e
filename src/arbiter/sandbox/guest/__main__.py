"""Start the guest server: ``python3 -I -S -B -X utf8 .../guest/__main__.py IN_FD OUT_FD ...``.

Imports the package from its parent folder, then takes that folder off ``sys.path`` and the
package out of ``sys.modules``: a program finds neither, as when the server was one script.
"""

import os
import sys


def _start():
    here = os.path.dirname(os.path.abspath(__file__))
    parent, name = os.path.split(here)
    sys.path.insert(0, parent)
    try:
        server = __import__(name + ".server", fromlist=["main"])
    finally:
        del sys.path[0]
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]
    server.main()


if __name__ == "__main__":
    _start()
