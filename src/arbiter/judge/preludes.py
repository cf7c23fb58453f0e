"""Import preambles that peer harnesses run before a Python program.

Programs written for those harnesses rely on them (e.g. a LeetCode-style ``class Solution`` that
annotates with ``List[int]`` without importing it), so judging them without the preamble would
fail correct code. Each preamble is run by the judge in the program's namespace
(:attr:`arbiter.judge.task.Task.prelude`).
"""

#: The APPS / TACO ``testing_util`` import block (hendrycks/apps, FlagOpen/TACO; also rllm's
#: taco.py and verl's prime_code), minus ``import numpy as np``: numpy is importable in the sandbox
#: (Debian's python3-numpy) but costs ~0.1 s per case to import, so programs import it themselves.
APPS_PRELUDE = (
    "import sys\n"
    "import time\n"
    "import itertools\n"
    "from itertools import accumulate, product, permutations, combinations\n"
    "import collections\n"
    "from collections import Counter, OrderedDict, deque, defaultdict, ChainMap\n"
    "from functools import lru_cache\n"
    "import math\n"
    "from math import sqrt, sin, cos, tan, ceil, fabs, floor, gcd, exp, log, log2\n"
    "import fractions\n"
    "from typing import List, Tuple\n"
    "import random\n"
    "import heapq\n"
    "from heapq import *\n"
)
