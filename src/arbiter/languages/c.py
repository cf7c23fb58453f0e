"""GNU C: gcc, ``-std=gnu11 -O2 -lm`` by default (Codeforces' GNU C11), on the C++ machinery.

The command allowlist, toolchain fingerprint, compile cache (keyed by language) and compile
sandbox are those of :mod:`arbiter.languages.cpp`; C gets no precompiled header. See
``docs/languages.md``.
"""

from __future__ import annotations

import re

from arbiter.languages.base import SelfTest
from arbiter.languages.cpp.command import Dialect
from arbiter.languages.cpp.language import GccLanguage

C_DIALECT = Dialect(
    language="c",
    driver_re=re.compile(r"^(?:/usr(?:/local)?/bin/)?(?:(?:x86_64|aarch64|i686)-linux-gnu-)?(gcc|cc|clang)"
                         r"(-\d+(?:\.\d+)*)?$"),
    source_re=re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*\.c$"),
    std_re=re.compile(r"^--?std=(?:c|gnu)(?:89|90|99|9x|11|1x|17|18|2x|23)$"),
    drivers="gcc/clang", driver_examples="gcc, gcc-N, cc, clang or clang-N",
    sources="C source file name (.c)", standards="-std=cNN or -std=gnuNN",
    default_compiler="gcc", default_flags=("-std=gnu11", "-O2", "-lm"), default_source="main.c")

C = GccLanguage(C_DIALECT, (".c",), SelfTest(
    source='#include <stdio.h>\nint main(void) {\n    long long x, s = 0;\n'
           '    while (scanf("%lld", &x) == 1) s += x;\n    printf("%lld\\n", s);\n    return 0;\n}\n',
    stdin=b"1 2 3\n", expected=b"6\n"))
