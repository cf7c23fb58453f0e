"""Import preambles that peer harnesses run before a Python program.

Programs written for those harnesses rely on them (e.g. a LeetCode-style ``class Solution`` that
annotates with ``List[int]`` without importing it), so judging them without the preamble would
fail correct code. Each preamble is run by the judge in the program's namespace
(:attr:`arbiter.judge.task.Task.prelude`).
"""

from arbiter.sandbox.session import keep_compiled

#: The import block run before every program (``Task.prelude``) unless a row brings its own. It
#: plays the role of the blocks the training harnesses prepend, so that a solution written against
#: them (``List[int]`` annotations, bare ``defaultdict``/``heappush``/``gcd``) does not fail with a
#: NameError it would not get in training: it binds every name of the APPS/TACO ``testing_util``
#: block (hendrycks/apps, FlagOpen/TACO) and of rllm's ``BASE_IMPORTS`` (DeepCoder's
#: reward) except ``pd`` (pandas is not installed); ``np`` is a lazy stand-in that imports numpy on
#: first use (importing it costs ~50 ms, and the sandbox's server imports it once, before any case
#: forks, when the program mentions ``np`` or ``numpy``). Explicit names only, no star imports of ``math``/``re``/
#: ``os``: those would shadow builtins (``math.pow`` has no modulus argument, ``re.compile`` is not
#: ``compile``). ``sys.setrecursionlimit(6 * 10**5)`` is ``prime_code``'s value. The names of the
#: functions under test are removed again after it (:func:`scrub_prelude`).
PYTHON_PRELUDE = """\
import bisect, collections, copy, datetime, decimal, fractions, functools, heapq, io, itertools
import json, math, operator, os, random, re, statistics, string, sys, time
from bisect import bisect, bisect_left, bisect_right, insort, insort_left, insort_right
from collections import ChainMap, Counter, OrderedDict, defaultdict, deque, namedtuple
from copy import deepcopy
from decimal import Decimal
from fractions import Fraction
from functools import cache, cmp_to_key, lru_cache, partial, reduce
from heapq import heapify, heappop, heappush, heappushpop, heapreplace, merge, nlargest, nsmallest
from itertools import (accumulate, chain, combinations, combinations_with_replacement, count, cycle,
                       groupby, islice, pairwise, permutations, product, repeat, starmap, zip_longest)
from math import (atan2, ceil, comb, cos, exp, fabs, factorial, floor, gcd, inf, isqrt, lcm, log, log2,
                  log10, perm, pi, prod, sin, sqrt, tan)
from operator import add, attrgetter, iand, itemgetter, mul, or_, sub, xor
from os.path import commonprefix
from random import randrange, shuffle
from string import ascii_letters, ascii_lowercase, ascii_uppercase, digits
from typing import (Any, Callable, DefaultDict, Deque, Dict, FrozenSet, Generator, Iterable, Iterator,
                    List, Mapping, Optional, Sequence, Set, Tuple, Union)
sys.setrecursionlimit(6 * 10 ** 5)
class _LazyNumpy:
    def __getattr__(self, name):
        import numpy
        globals()["np"] = numpy
        return getattr(numpy, name)
np = _LazyNumpy()
"""


def scrub_prelude(prelude: str, fn_names: set[str] | frozenset[str]) -> str:
    """``prelude`` followed by a line that removes the names of the functions under test from the
    namespace, so a program that does not define ``fn_name`` is never graded by calling a prelude
    import of the same name (an empty answer to "write ``gcd(a, b)``" would otherwise call
    ``math.gcd``; TACO's and LiveCodeBench's star-import preludes have this hole). The program's
    own definitions and imports run after the prelude and are unaffected. The caller leaves out
    names that the program's ``class Solution`` defines (the harness calls the method then)."""
    names = sorted(n for n in fn_names if n.isidentifier())
    if not prelude or not names:
        return prelude
    body = prelude if prelude.endswith("\n") else prelude + "\n"
    return body + f"for __arbiter_name in {tuple(names)!r}:\n    globals().pop(__arbiter_name, None)\n" \
                  "del __arbiter_name\n"


keep_compiled(PYTHON_PRELUDE)  # (what every sandbox's zygote keeps compiled: docs/sandbox.md)
