"""Math libraries run one thread in a case, whatever the host's cores (docs/sandbox.md, LIMITS).

numpy's wheels bundle OpenBLAS, which starts a thread per core. On a 64-core node that is more tasks
than a case's ``processes`` limit allows, and OpenBLAS then spins: a correct numpy program was TLE.
A ``processes`` limit below this machine's cores stands in for the large node here.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from arbiter.languages.cpp.compile import CompileSpec, compile_cpp
from arbiter.sandbox.config import SandboxConfig
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import Sandbox

VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")

MATMUL = """import os
import numpy as np
a = np.random.default_rng(1).random((1200, 1200))
b = a @ a
threads = open("/proc/self/status").read().split("Threads:")[1].split()[0]
print(threads, round(float(b.trace()), 3) > 0)
"""


def test_every_case_sees_one_thread_for_math_libraries():
    py = "import os\nprint(' '.join(os.environ.get(v, '-') for v in %r))\n" % (VARS,)
    cpp = ('#include <cstdio>\n#include <cstdlib>\nint main(){const char* v[]={"OPENBLAS_NUM_THREADS",'
           '"OMP_NUM_THREADS","MKL_NUM_THREADS","NUMEXPR_NUM_THREADS"};for(auto n:v){const char* s=getenv(n);'
           'printf("%s ", s ? s : "-");}puts("");}\n')
    comp = compile_cpp(cpp, CompileSpec(command="g++ -O2 main.cpp -o main"))
    assert comp.ok, comp.message
    with Sandbox(files={"main": comp.binary}) as sb:
        assert sb.load_python(py) is None
        ex = sb.run_python(b"")
        assert ex.ok and ex.stdout.split() == [b"1"] * 4, ex
        ex = sb.run(["/prog/main"], b"")
        assert ex.ok and ex.stdout.split() == [b"1"] * 4, ex


@pytest.fixture(scope="module")
def openblas_site():
    """A site folder holding the test venv's numpy wheel (OpenBLAS inside), where the sandbox can see it
    (the venv may sit under /work or /tmp, which the sandbox's own mounts hide)."""
    spec = importlib.util.find_spec("numpy")
    if spec is None or spec.origin is None or sys.version_info[:2] != (3, 11):
        pytest.skip("needs the test venv's numpy wheel for the sandbox's Python 3.11")
    pkg = Path(spec.origin).parent
    site = Path(tempfile.mkdtemp(prefix="arbiter-openblas-", dir="/var/tmp"))
    try:
        for name in ("numpy", "numpy.libs"):
            if (pkg.parent / name).is_dir():
                shutil.copytree(pkg.parent / name, site / name, symlinks=True)
        os.chmod(site, 0o755)
        yield str(site)
    finally:
        shutil.rmtree(site, ignore_errors=True)


def test_openblas_starts_one_thread_and_fits_a_tight_process_limit(openblas_site):
    cfg = SandboxConfig(python_site=(openblas_site,), extra_ro_binds=(openblas_site,))
    with Sandbox(config=cfg, limits=Limits(cpu_seconds=10, processes=1)) as sb:
        assert sb.load_python(MATMUL) is None
        ex = sb.run_python(b"")
    assert ex.ok and ex.stdout == b"1 True\n", (ex.status, ex.stdout, ex.stderr[-300:])
