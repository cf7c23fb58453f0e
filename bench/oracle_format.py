"""Oracle answer format check: parse time of adversarial answers (issue 19, items 2 and 10-13).

``parse_answer`` runs its own grammar, then the reader checks (characters, reasoning rules, and
markdown-it-py's CommonMark block parse, twice, on answers the grammar accepts). Every parser of
untrusted text must be linear: for each shape below this prints the median seconds of
``parse_answer`` at 64 KiB and 1 MiB (the largest answer a return row may hold) and their ratio
(about 16 for linear work). Usage: ``python bench/oracle_format.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from arbiter.pipelines.oracle.format import parse_answer  # noqa: E402


def answer(code: str, reasoning: str = "x") -> str:
    return f"<reasoning>{reasoning}</reasoning>\n```cpp\n{code}\n```\n"


def fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


#: name -> size -> answer text (each accepted by the grammar unless the name says otherwise)
SHAPES = {
    "plain code lines": lambda n: answer(fill("int x = 1;\n", n)),
    "one long line": lambda n: answer("int main(){}//" + "a" * n),
    "whitespace run": lambda n: answer("int main(){}" + " " * n),
    "blank lines + indented": lambda n: answer(fill("\n    int a;\n", n)),
    "quote markers": lambda n: answer(fill("> > > > > > > > > > > > > > > > > > > > > > > > x\n", n)),
    "list markers": lambda n: answer(fill("- - - - - - - - - - - - - - - - - - - - - - - - x\n", n)),
    "html-ish lines": lambda n: answer(fill("<div>\n<!-- a -->\n<pre>\n", n)),
    "backticks inside lines": lambda n: answer(fill("x ``` ~~~ y\n", n)),
    "reasoning: nested quotes": lambda n: answer("int main(){}", fill(">" * 40 + " a\n", n)),
    "reasoning: many lines": lambda n: answer("int main(){}", fill("a\n\n   b\n", n)),
    "reasoning: ~~~ (refused)": lambda n: answer("int main(){}", fill("~~", n) + "~"),
    "many lone CR (refused)": lambda n: answer(fill("a\r", n)),
    "many bidi (refused)": lambda n: answer(fill("\u202e", n)),
    "code: raw-string openers": lambda n: answer(fill('R"', n)),
    "code: unclosed quotes": lambda n: answer(fill("'", n)),
    "code: spliced comments (refused)": lambda n: answer(fill("//\\\n", n)),
    "code: ) and delimiters": lambda n: answer('R"x(' + fill(')"x', n)),
    "code: Cyrillic identifiers": lambda n: answer(fill("\u0441\u0447\u0451\u0442 ", n)),
    "code: look-alike names (refused)": lambda n: answer(fill("\u0430b ab ", n)),
}


def median_seconds(text: str, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        parse_answer(text)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print(f"{'shape':28} {'ok':>3} {'64 KiB s':>9} {'1 MiB s':>9} {'ratio':>6}")
    for name, make in SHAPES.items():
        small, big = make(64 * 1024), make(1024 * 1024)
        a, b = median_seconds(small, args.rounds), median_seconds(big, args.rounds)
        ok = "yes" if parse_answer(small).ok else "no"
        print(f"{name:28} {ok:>3} {a:9.4f} {b:9.4f} {b / a if a else float('nan'):6.1f}")


if __name__ == "__main__":
    main()
