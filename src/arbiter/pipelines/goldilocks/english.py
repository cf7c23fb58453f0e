"""The English filter of ``arbiter curate``: a row's problem statement, what of it the detector
reads, and lingua's confidence that it is English.

English filter (the card's step 4, :class:`EnglishFilter`): lingua reads the problem statement,
the last user message, without what is not the statement (:func:`detection_text`): fenced code
blocks, the known DeepCoder / PrimeIntellect / LiveCodeBench / TACO instruction sentences
(:data:`WRAPPER_SENTENCES`, wherever they stand), and the dataset's template lines: lines that
occur in the statements of at least 3 rows and at least 2% of the rows (:func:`template_lines`,
found in a first pass over the dataset). Otherwise an English instruction wrapped around a short
Chinese or Russian statement reads as English. A row without a user message (or an empty one)
has no statement: decision ``no_statement``, not kept.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from arbiter.pipelines.goldilocks.flag import ENGLISH_MIN, check_rate


#: How many rows go to lingua at once (its parallel method; memory is one batch of rows).
ENGLISH_BATCH = 256
#: Template lines (:func:`template_lines`): a line is template when it occurs in the statements of
#: at least this many rows ...
TEMPLATE_MIN_ROWS = 3
#: ... and at least this share of the dataset's rows.
TEMPLATE_MIN_SHARE = 0.02


# ------------------------------------------------------------------ English filter


_LETTER = re.compile(r"[^\W\d_]")
SURROGATE = re.compile("[\ud800-\udfff]")

#: Instruction sentences that the card's sources wrap around a problem statement (DeepCoder's
#: PrimeIntellect, TACO and LiveCodeBench-v5 prompts, as the public preprocessing scripts write
#: them): not the statement, so not read by the English filter, wherever they stand (inline too).
#: Matched case-insensitively with any whitespace between words; ``{name}`` stands for one word
#: (a language or function name). Code-Contests-O's fixed I/O instruction block is found as
#: template lines (:func:`template_lines`), like any other dataset's.
WRAPPER_SENTENCES = (
    # PrimeIntellect (code_primeintellect; rllm's template for the other DeepCoder subsets too)
    "Solve the following coding problem using the programming language {name}:",
    "The input will be stdin and you should print your solution to stdout",
    "The input will be given via stdin and the output should be printed to stdout by your code.",
    "You should use input() to input and print() to output in your code.",
    "Now solve the problem and return the code.",
    "Write your solution by modifying this code:",
    "Your solution should implemented in the function {name}.",
    "Your solution should be implemented in the function {name}.",
    "The inputs will be passed to it and it should return the correct solution.",
    # TACO (code_taco)
    "Solve the programming task below in a Python markdown code block.",
    "Write Python code to solve the problem.",
    "Present the code in at the end.",  # around a fenced block, which is removed first
    # LiveCodeBench (code_lcbv5)
    "You are an expert Python programmer.",
    "You will be given a question (problem specification) and will generate a correct Python program that "
    "matches the specification and passes all tests.",
    "You will NOT return anything except for the program.",
    "You will use the following starter code to write the solution to the problem and enclose your code "
    "within delimiters.",
    "Read the inputs from stdin solve the problem and write the answer to stdout (do not directly test on the "
    "sample inputs).",
    "Enclose your code within delimiters as follows.",
    "Ensure that when the python program runs, it reads the inputs, runs the algorithm and writes output to STDOUT.",
    "### Format:",
    "### Answer: (use the provided format with backticks)",
    "### Question:",
)


def _sentence_pattern(sentence: str) -> str:
    words = []
    for w in sentence.split():
        if w.startswith("{name}"):  # one word, then the sentence's punctuation ("{name}:", "{name}.")
            words.append(r"\S+?" + re.escape(w[len("{name}"):]))
        else:
            words.append(re.escape(w))
    return r"\s+".join(words)


_WRAPPERS = re.compile("|".join(f"(?:{_sentence_pattern(s)})" for s in WRAPPER_SENTENCES), re.I)


def statement_text(prompt: Iterable[Any]) -> str:
    """The problem statement of a verl ``prompt``: the content of its last ``user`` message (the
    card: Code-Contests-O rows carry one user turn, DeepCoder rows a system + user pair); ``""``
    without one. Messages may be dicts or :class:`arbiter.datasets.verl_rows.ChatMessage`."""
    text = ""
    for m in prompt or []:
        role = m.get("role") if isinstance(m, Mapping) else getattr(m, "role", None)
        content = m.get("content") if isinstance(m, Mapping) else getattr(m, "content", None)
        if role == "user" and isinstance(content, str):
            text = content
    return text


def _without_fences(text: str) -> str:
    """``text`` with each fenced block (```` ``` ````, the rest of its line, a newline, anything,
    then the next ```` ``` ````) replaced by a newline: what ``re.sub(r"```[^\n]*\n.*?```", "\n",
    text, flags=re.S)`` gives, in one pass (that regex retries its line scan at every backtick of
    a long run without a newline: quadratic)."""
    parts, pos = [], 0
    while True:
        start = text.find("```", pos)
        if start < 0:
            break
        nl = text.find("\n", start + 3)
        end = text.find("```", nl + 1) if nl >= 0 else -1
        if end < 0:  # no later start can match either: it would need this newline and a later ```
            break
        parts += (text[pos:start], "\n")
        pos = end + 3
    parts.append(text[pos:])
    return "".join(parts)


def _outside_code_and_wrappers(statement: str) -> str:
    return _WRAPPERS.sub(" ", _without_fences(statement))


def statement_lines(statement: str) -> set[str]:
    """The distinct non-blank lines of ``statement`` without its fenced code blocks and known
    instruction sentences (:data:`WRAPPER_SENTENCES`), stripped: what :func:`template_lines`
    counts and :func:`detection_text` looks up."""
    return {s for s in (line.strip() for line in _outside_code_and_wrappers(statement).split("\n")) if s}


class TemplateCounter:
    """Counts, over a dataset's statements, how many rows each line occurs in
    (:func:`statement_lines`), to find the dataset's template lines: the instruction block every
    row repeats. Memory: one dict entry per distinct line (its Python hash and a count; about
    100 bytes each, ~70 MB for the card's 31,176 candidate rows), plus the text of lines seen in
    ``min_rows`` rows."""

    def __init__(self, *, min_rows: int = TEMPLATE_MIN_ROWS, min_share: float = TEMPLATE_MIN_SHARE):
        self.min_rows = min_rows
        self.min_share = min_share
        self.rows = 0
        self._counts: Counter = Counter()
        self._texts: dict[int, str] = {}

    def add(self, statement: str) -> None:
        """Count one row's statement."""
        self.rows += 1
        for line in statement_lines(statement):
            h = hash(line)
            n = self._counts[h] = self._counts[h] + 1
            if n == self.min_rows:
                self._texts[h] = line

    def lines(self) -> dict[str, int]:
        """``line -> rows`` for the lines in at least ``min_rows`` rows and at least ``min_share``
        of the rows (inclusive)."""
        need = max(self.min_rows, self.min_share * self.rows)
        return {text: self._counts[h] for h, text in self._texts.items() if self._counts[h] >= need}


def template_lines(statements: Iterable[str], *, min_rows: int = TEMPLATE_MIN_ROWS,
                   min_share: float = TEMPLATE_MIN_SHARE) -> dict[str, int]:
    """The template lines of a dataset, ``line -> rows it occurs in``: stripped lines
    (:func:`statement_lines`) that occur in the statements of at least ``min_rows`` rows (3) and
    at least ``min_share`` of the rows (2%, inclusive). A dataset's fixed instruction block ("Read
    the input from standard input ...") is such a line in every row of its source; a problem
    statement's own lines are not, unless the same statement is in several rows (the same problem
    from two sources) of a small dataset: :func:`detection_text` then keeps a row's rarest lines."""
    counter = TemplateCounter(min_rows=min_rows, min_share=min_share)
    for s in statements:
        counter.add(s)
    return counter.lines()


def detection_text(statement: str, template: Mapping[str, int] | Iterable[str] = frozenset()) -> str:
    """What the language detector reads: ``statement`` without what is not the problem statement:

    - closed fenced code blocks (```` ``` ```` ... ```` ``` ````: code, sample I/O and answer
      templates, which are not prose in any language);
    - the known instruction sentences of the card's sources (:data:`WRAPPER_SENTENCES`), also
      inline (PrimeIntellect's prompt puts "Solve the following coding problem using the
      programming language python:" on the statement's first line in some copies);
    - the lines (stripped) that are in ``template`` (the dataset's template lines,
      :func:`template_lines`: ``line -> rows``, or just the lines). When every line with a letter
      is a template line (the row's statement is itself in several rows), the row's rarest template
      lines (in the fewest rows; with lines only: all) are kept as its statement.

    LaTeX, inline code and numbers stay (lingua ignores digits and punctuation; ``$n$`` spans are
    too short to sway a statement). When nothing with a letter is left, the statement is read
    whole."""
    text = _outside_code_and_wrappers(statement)
    if template:
        if not isinstance(template, Mapping):
            template = dict.fromkeys(template, 1)
        lines = text.split("\n")
        counts = [template.get(line.strip()) for line in lines]
        kept = [line for line, c in zip(lines, counts) if c is None]
        if not any(_LETTER.search(line) for line in kept):
            rarest = min((c for line, c in zip(lines, counts) if c is not None and _LETTER.search(line)), default=None)
            kept = [line for line, c in zip(lines, counts) if c is None or c == rarest]
        text = "\n".join(kept)
    return text if _LETTER.search(text) else statement


def lenient_text(text: str) -> str:
    """``text`` with lone surrogates (a JSON ``"\\ud83d"`` without its pair) replaced by U+FFFD,
    so it can be encoded as UTF-8 (lingua, Parquet)."""
    return SURROGATE.sub("\ufffd", text)


_DETECTORS: dict[bool, Any] = {}
_DETECTORS_LOCK = threading.Lock()


def _detector(low_accuracy: bool) -> Any:
    with _DETECTORS_LOCK:
        det = _DETECTORS.get(low_accuracy)
        if det is None:
            try:
                from lingua import LanguageDetectorBuilder
            except ImportError as exc:  # pragma: no cover - a declared dependency
                raise RuntimeError("the English filter needs the lingua-language-detector package "
                                   "(pip install lingua-language-detector), or turn it off (--no-english-filter)") from exc
            builder = LanguageDetectorBuilder.from_all_languages()
            if low_accuracy:
                builder = builder.with_low_accuracy_mode()
            det = _DETECTORS[low_accuracy] = builder.build()
        return det


class EnglishFilter:
    """The card's step 4: keep a row when lingua's confidence that its problem statement
    (:func:`statement_text`, read through :func:`detection_text`) is English is at least
    ``min_confidence`` (the card: 0.999).

    The detector is lingua's ``LanguageDetectorBuilder.from_all_languages()`` (English against
    every language lingua knows, so a confidence of 0.999 means nothing else is plausible), high
    accuracy mode unless ``low_accuracy``; built once per process and shared. Costs: building is
    instant, but lingua loads its language models lazily on first use and keeps them: a few hundred
    ms and ~100 MB for statement-length text; in high accuracy mode the first text under about 200
    characters loads every n-gram model of every language (~7 s, ~900 MB). Very short texts
    also get lower English confidence in high accuracy mode (a clear 100-character English
    sentence: 0.75), so they fall under 0.999; real statements (hundreds of characters) get 1.0.
    Confidences of a batch are computed in parallel (lingua's own threads). Texts are read with
    lone surrogates replaced (:func:`lenient_text`). A prompt without a user message has no
    statement: :func:`curate_goldilocks` gives it its own decision (``no_statement``).

    Raises ``ValueError`` for ``min_confidence`` outside [0, 1]; the first detection raises
    ``RuntimeError`` when lingua is not installed.
    """

    def __init__(self, min_confidence: float = ENGLISH_MIN, *, low_accuracy: bool = False):
        self.min_confidence = check_rate("english_min", min_confidence)
        self.low_accuracy = low_accuracy

    def confidence(self, text: str) -> float:
        """lingua's confidence in [0, 1] that ``text`` (as given, not stripped) is English."""
        from lingua import Language

        return float(_detector(self.low_accuracy).compute_language_confidence(lenient_text(text), Language.ENGLISH))

    def confidences(self, texts: Sequence[str]) -> list[float]:
        """:meth:`confidence` of each text, computed in parallel."""
        from lingua import Language

        if not texts:
            return []
        return [float(c) for c in _detector(self.low_accuracy).compute_language_confidence_in_parallel(
            [lenient_text(t) for t in texts], Language.ENGLISH)]

    def is_english(self, statement: str, template: Mapping[str, int] | Iterable[str] = frozenset()) -> bool:
        """Whether the statement (:func:`detection_text` with ``template`` applied here) passes."""
        return self.confidence(detection_text(statement, template)) >= self.min_confidence


def with_confidence(items: Iterable[Any], text_of: Callable[[Any], str | None], english: EnglishFilter | None,
                    batch: int = ENGLISH_BATCH) -> Iterator[tuple[Any, float | None]]:
    """``(item, English confidence)`` in input order; ``None`` for items whose ``text_of`` is
    ``None`` (no detection needed) or without a filter. At most ``batch`` items are held."""
    pending: list[tuple[Any, str | None]] = []

    def flush() -> Iterator[tuple[Any, float | None]]:
        texts = [t for _, t in pending if t is not None]
        confs = iter(english.confidences(texts) if english is not None and texts else [])
        for item, text in pending:
            yield item, (next(confs) if text is not None and english is not None else None)
        pending.clear()

    for item in items:
        pending.append((item, text_of(item)))
        if len(pending) >= batch:
            yield from flush()
    yield from flush()


def english_detector_description(english: EnglishFilter | None, template: Mapping[str, int]) -> str | None:
    if english is None:
        return None
    return (f"lingua from_all_languages, {'low' if english.low_accuracy else 'high'} accuracy, on the last user "
            f"message without fenced code blocks, the known DeepCoder/PrimeIntellect/TACO/LiveCodeBench "
            f"instruction sentences and the dataset's {len(template)} template line(s) (lines in >= "
            f"{TEMPLATE_MIN_ROWS} rows and >= {TEMPLATE_MIN_SHARE:.0%} of the rows)")


#: How many template lines the report lists (each cut at :data:`TEMPLATE_LINE_SHOWN` characters).
TEMPLATE_LINES_SHOWN = 50
TEMPLATE_LINE_SHOWN = 300


def template_report(template: Mapping[str, int]) -> dict[str, Any]:
    """The report's view of the template lines: how many, and the most common ones with their rows."""
    ranked = sorted(template.items(), key=lambda kv: (-kv[1], kv[0]))[:TEMPLATE_LINES_SHOWN]
    return {"count": len(template), "lines": [{"rows": n, "line": line[:TEMPLATE_LINE_SHOWN]} for line, n in ranked]}
