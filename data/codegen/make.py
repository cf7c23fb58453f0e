"""Build the codegen sample (``rows.jsonl``, ``weak.jsonl``, ``strong.jsonl``): four verl rows in the card's
three ground-truth encodings and eight responses per row from a "weak" and a "strong" model, written here
(correct programs and typical bugs), so that ``arbiter score``, ``arbiter curate goldilocks`` and
``arbiter report`` can be tried on data shipped in the repo. ``EXPECTED`` records which responses are
correct by construction (1) and which are not (0). Usage: ``python data/codegen/make.py`` (rewrites the files
next to it). See ``data/codegen/README.md``.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
SYSTEM = "You are a helpful programming assistant. Reply with one markdown code block holding a Python program."


def _prompt(statement: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": statement}]


def _stdin_dict(cases: list[tuple[str, str]]) -> str:
    return json.dumps({"inputs": [i for i, _ in cases], "outputs": [o for _, o in cases]})


def _stdin_list(cases: list[tuple[str, str]]) -> str:
    return json.dumps([{"type": "stdin_stdout", "input": i, "output": o} for i, o in cases])


def _calls(fn: str, cases: list[tuple[list, object]]) -> str:
    return json.dumps([{"type": "function_call", "fn_name": fn, "input": args, "output": [out]} for args, out in cases])


SUM_CASES = [("1 2\n", "3\n"), ("-5 5\n", "0\n"), ("1000000000 1000000000\n", "2000000000\n"), ("7 -10\n", "-3\n")]
REV_CASES = [("hello\n", "olleh\n"), ("a\n", "a\n"), ("racecar\n", "racecar\n"), ("Arbiter\n", "retibrA\n")]
PRIMES_CASES = [("10\n", "4\n"), ("2\n", "1\n"), ("1\n", "0\n"), ("5000000\n", "348513\n")]
PAIR_CASES = [([[2, 7, 11, 15], 9], [0, 1]), ([[3, 2, 4], 6], [1, 2]), ([[3, 3], 6], [0, 1]),
              ([[1, 5, 8, 12, 20], 32], [3, 4])]

ROWS = [
    {"data_source": "code_contests_o", "index": "sample_sum", "tests": _stdin_dict(SUM_CASES), "statement":
     "Two integers a and b are given on one line, separated by a space (each between -10^9 and 10^9). Print their "
     "sum on a line of its own. The answer may not fit in 32 bits, so take care with the arithmetic in languages "
     "with fixed-width integers; in Python any integer will do."},
    {"data_source": "code_taco", "index": "sample_reverse", "tests": _stdin_dict(REV_CASES), "statement":
     "A single word of lowercase and uppercase English letters is given on the only line of the input. Print the "
     "word written backwards, that is, its letters in reverse order, on one line. The word has between one and "
     "one hundred letters and contains no spaces."},
    {"data_source": "code_primeintellect", "index": "sample_primes", "tests": _stdin_list(PRIMES_CASES),
     "time_limit": 1.0, "statement":
     "Given one integer n (1 <= n <= 5 * 10^6) on the only line of the input, print how many prime numbers are "
     "less than or equal to n. A prime number is an integer greater than one whose only divisors are one and "
     "itself. The time limit is one second, so checking every number by trial division will be too slow."},
    {"data_source": "code_primeintellect", "index": "sample_pair", "tests": _calls("two_sum", PAIR_CASES),
     "statement":
     "Write a function two_sum(nums, target) that returns the indices [i, j], with i < j, of the two numbers of "
     "the list nums whose sum is target. Exactly one such pair exists in every test, and the same element may not "
     "be used twice. Return the two indices as a list of two integers, the smaller one first."},
]


def _block(code: str) -> str:
    return f"Here is my solution.\n\n```python\n{code.strip()}\n```\n"


SUM_OK = "a, b = map(int, input().split())\nprint(a + b)"
SUM_WA = "a, b = map(int, input().split())\nprint(a - b)"
SUM_RE = "a, b = input().split()\nprint(a + b + 1)"
REV_OK = "print(input()[::-1])"
REV_OK2 = "s = input().strip()\nprint(''.join(reversed(s)))"
REV_WA = "print(input())"
PRIMES_SLOW = """
n = int(input())
count = 0
for k in range(2, n + 1):
    if all(k % d for d in range(2, int(k ** 0.5) + 1)):
        count += 1
print(count)
"""
PRIMES_WA = "n = int(input())\nprint(sum(1 for k in range(2, n + 1) if k % 2 or k == 2))"
PAIR_OK = """
def two_sum(nums, target):
    seen = {}
    for i, x in enumerate(nums):
        if target - x in seen:
            return [seen[target - x], i]
        seen[x] = i
"""
PAIR_OK2 = """
def two_sum(nums, target):
    for i in range(len(nums)):
        for j in range(i + 1, len(nums)):
            if nums[i] + nums[j] == target:
                return [i, j]
"""
PAIR_WA = """
def two_sum(nums, target):
    for i in range(len(nums)):
        for j in range(len(nums)):
            if nums[i] + nums[j] == target:
                return [i, j]
"""
NO_CODE = "I think the answer is to add the two numbers together and print the result."

#: Per row index: the weak and the strong model's 8 responses, each ``(program or None, correct)``.
RESPONSES = {
    "sample_sum": {"weak": [(SUM_OK, 1), (SUM_WA, 0), (SUM_OK, 1), (SUM_RE, 0), (SUM_OK, 1), (None, 0),
                            (SUM_OK, 1), (SUM_WA, 0)],
                   "strong": [(SUM_OK, 1)] * 8},
    "sample_reverse": {"weak": [(REV_OK, 1), (REV_OK2, 1)] * 4, "strong": [(REV_OK, 1)] * 8},
    "sample_primes": {"weak": [(PRIMES_WA, 0), (PRIMES_SLOW, 0), (PRIMES_WA, 0), (PRIMES_WA, 0)] * 2,
                      "strong": [(PRIMES_SLOW, 0), (PRIMES_WA, 0)] * 4},
    "sample_pair": {"weak": [(PAIR_WA, 0), (PAIR_OK2, 1), (PAIR_WA, 0), (PAIR_WA, 0)] * 2,
                    "strong": [(PAIR_OK, 1), (PAIR_OK2, 1), (PAIR_WA, 0), (PAIR_OK, 1)] * 2},
}


def rows() -> list[dict]:
    out = []
    for r in ROWS:
        extra = {"index": r["index"], **({"time_limit": r["time_limit"]} if "time_limit" in r else {})}
        out.append({"data_source": r["data_source"], "prompt": _prompt(r["statement"]), "ability": "code",
                    "reward_model": {"style": "rule", "ground_truth": r["tests"]}, "extra_info": extra})
    return out


def completions(model: str) -> list[dict]:
    return [{"key": f"{r['data_source']}:{r['index']}",
             "responses": [_block(code) if code else NO_CODE for code, _ in RESPONSES[r["index"]][model]]}
            for r in ROWS]


#: ``{model: {row key: [1 or 0 per response]}}``: which responses are correct by construction.
EXPECTED = {model: {f"{r['data_source']}:{r['index']}": [ok for _, ok in RESPONSES[r["index"]][model]] for r in ROWS}
            for model in ("weak", "strong")}


def _write(name: str, records: list[dict]) -> None:
    (HERE / name).write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in records), encoding="utf-8")


def main() -> None:
    _write("rows.jsonl", rows())
    _write("weak.jsonl", completions("weak"))
    _write("strong.jsonl", completions("strong"))


if __name__ == "__main__":
    main()
