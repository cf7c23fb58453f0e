"""Goldilocks difficulty filtering of a verl code dataset (``arbiter curate``).

Follows ``spec/codegen_iquest_card.txt``, "Difficulty (goldilocks) filtering" and "Creation
pipeline" steps 2-4. Users curate their own RL prompt sets the card's way:

1. sample k completions per prompt (the card: 8) from a weak and a strong model;
2. score both with ``arbiter score`` (one ``--out`` folder each; the card's step 2 "executes every
   completion against the problem's test suite ... reusing the production checker so scoring
   matches training exactly": ``arbiter score`` scores as the verl reward does);
3. :func:`curate_goldilocks`: annotate every row from the two folders, keep the rows whose
   recomputed flag holds (:func:`is_goldilocks`, the card's step 3), then drop rows whose problem
   statement is not English with lingua confidence >= 0.999 (:class:`EnglishFilter`, step 4).

:func:`audit_annotations` checks a dataset that already carries the annotation in
``extra_info`` (the card's dataset does): stored pass rates against their scores, the score
counts, and the flag recomputed ("Consolidation recomputes the goldilocks flag").

Annotation (the card's "Schema" and "Difficulty filtering"), per row and per model:

- ``lower_scores`` / ``upper_scores``: the per-completion rewards in completion order, each
  ``1.0`` (the completion passes: reward 1.0, "it clears every case") or ``0.0`` (anything else:
  WA, TLE, RE, FORMAT_ERROR, ...). Lower = the weak model, upper = the strong model.
- ``lower_pass_rate`` / ``upper_pass_rate``: the fraction of completions that pass, exactly
  ``mean(scores)`` (``c / n``; with n = 8 a multiple of 1/8, exact in binary floating point).

Score folders made with ``arbiter score --parity prime_code`` are refused unless
``allow_parity``: there a ``SKIPPED`` verdict scores 1.0 when only the first 10 cases passed (the
rest never ran) and other verdicts get partial credit, while the card says a completion passes
"only if it clears every case". With ``allow_parity`` their verdicts are used as ``arbiter
score`` counts them (1.0 passes, a partial score does not) and the report records it.

Join (the card's 2026-08 fix: "the annotation cache was joined on an index that collides across
DeepCoder's subsets, mis-attributing scores. The fixed pipeline uses collision-proof
data_source-qualified join keys"): a dataset row and a score record meet on the row key
``"<data_source>:<extra_info.index>"`` (:func:`arbiter.datasets.verl_rows.row_key`, the key
``arbiter score`` writes as ``row_key``), never on a bare index. Each ``arbiter score`` verdict
also carries the sha256 of the ground truth it was judged against; a row whose ground truth
differs from the scored one is not annotated (``ground_truth_changed``). A row without
``extra_info.index`` is keyed by its position (``"<data_source>:#<position>"``); position N of
another file may be another row with the same tests (a reordered copy), so such a row is
annotated from a folder only when the folder's ``config.json`` records this very dataset (same
content sha256 and split), else it is not annotated (``positional_key``).

A row is never given a pass rate it was not scored for. It is reported (``annotation_problems``
in the report, ``missing_annotation`` in the counts) and left out of the output when, on either
side:

- ``missing``: the folder holds no verdict for its row key;
- ``invalid_task``: its verdicts are ``INVALID_TASK`` (unusable suite: the card's "list-encoded
  ground truths were silently unscored" defect is exactly a 0 that was not a verdict);
- ``sandbox_error``: some of its responses hit ``SANDBOX_ERROR`` in the folder's last run (not
  recorded by ``arbiter score``; rerun it to retry them);
- ``bad_score``: a verdict's ``score`` is NaN or outside [0, 1] (not a reward);
- ``incomplete``: its response indexes are not ``0..n-1`` (a verdict is missing in between);
- ``count_mismatch``: it has n completions where that folder's rows have k (``k``: given, else the
  most common count among the folder's complete rows; the card: 8);
- ``ground_truth_changed``: the folder judged another ground truth for this row key;
- ``positional_key``: the row has no ``extra_info.index`` and the folder scored another dataset
  file (or split), or records none.

Vacuous suites: ``arbiter score`` flags a row whose every expected output is empty (its verdicts'
``warning``, ``vacuous: true`` in ``problems.jsonl``): any program that prints nothing passes,
so its pass rates say nothing about difficulty. Such rows are dropped (decision ``vacuous``)
unless ``keep_vacuous``; kept ones are flagged in the rows log and listed in the report.

English filter (the card's step 4, :class:`EnglishFilter`): lingua reads the problem statement,
the last user message, without what is not the statement (:func:`detection_text`): fenced code
blocks, the known DeepCoder / PrimeIntellect / LiveCodeBench / TACO instruction sentences
(:data:`WRAPPER_SENTENCES`, wherever they stand), and the dataset's template lines: lines that
occur in the statements of at least 3 rows and at least 2% of the rows (:func:`template_lines`,
found in a first pass over the dataset). Otherwise an English instruction wrapped around a short
Chinese or Russian statement reads as English. A row without a user message (or an empty one)
has no statement: decision ``no_statement``, not kept.

Outputs of :func:`curate_goldilocks` (``OUT`` is ``<stem>.parquet`` or ``<stem>.jsonl``):

- ``OUT``: the kept rows, in dataset order, every column as read, with the annotation folded into
  ``extra_info`` (``index``, ``id`` and every other field kept; ``lower_pass_rate``,
  ``lower_scores``, ``upper_pass_rate``, ``upper_scores`` added or replaced). Written row group by
  row group to ``OUT.partial`` and renamed when done (an interrupted run leaves no truncated
  ``OUT``; the pass is cheap and is simply run again). Parquet: the schema is fixed before the
  first row is written (the input's Parquet schema, or the union of the rows' types found in the
  first pass; rows that cannot share one schema are refused then, before anything is written;
  an ``extra_info.index`` holding both numbers and strings is written as strings, the card's
  index being a string such as ``deepcoder_{i}``). Lone surrogates (JSON ``"\\ud83d"``): a JSONL
  output keeps them as ``\\u`` escapes (read back identical); Parquet strings are UTF-8, so they
  are replaced by U+FFFD there (listed per row in the rows log), except in ``reward_model`` (the
  scored tests would change): such a row is a ``bad_row``.
- ``<stem>.report.json``: options, inputs, the counts overall and per ``data_source`` (like the
  card's composition table), every annotation problem, bad row and vacuous row, the template
  lines removed for the English filter.
- ``<stem>.rows.jsonl``: one decision per dataset row (``kept``, ``floor``, ``ceiling``,
  ``floor+ceiling``, ``vacuous``, ``non_english``, ``no_statement``, ``missing_annotation``,
  ``bad_row``, ``duplicate_key``) with its pass rates and English confidence.

No output may overwrite an input: ``OUT``, the report and the rows log must differ from each
other, from the dataset (or lie inside it when it is a folder) and lie outside both score folders
(:func:`check_output_paths`, resolved paths); otherwise nothing is written.

Counts (:class:`Tally`, overall and per ``data_source``): ``candidates`` (rows with a readable,
unique key), ``missing_annotation``, ``vacuous`` (annotated rows with a vacuous suite),
``dropped_vacuous`` (those dropped: all of them unless ``keep_vacuous``), ``goldilocks`` (the flag
holds), ``dropped_floor`` (``upper_pass_rate < upper_min``: "nobody solves it"),
``dropped_ceiling`` (``lower_pass_rate > lower_max``: "everybody solves it"),
``dropped_floor_and_ceiling`` (both; also counted in each of the two), ``dropped_non_english``
(goldilocks rows dropped by the English filter; the card: 36), ``dropped_no_statement``
(goldilocks rows without a statement), ``kept``. So ``kept = goldilocks - dropped_non_english -
dropped_no_statement`` and ``goldilocks = candidates - missing_annotation - dropped_vacuous -
dropped_floor - dropped_ceiling + dropped_floor_and_ceiling``.

To annotate every row without filtering, run with ``lower_max=1.0, upper_min=0.0,
english_min=None, keep_vacuous=True`` (``--lower-max 1 --upper-min 0 --no-english-filter
--keep-vacuous``): every annotatable row is written with its annotation.
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arbiter.datasets.convert import check_output_path, parquet_schema
from arbiter.datasets.verl_rows import (
    VACUOUS_SUITE, RowError, dataset_format, iter_raw_rows, parse_row, row_key,
)
from arbiter.judge import jsonvalues
from arbiter.pipelines.codegen_scoring import CONFIG_FILE, VERDICTS_FILE, input_identity, text_sha256

#: The card's thresholds: kept when ``lower_pass_rate <= 0.875 AND upper_pass_rate >= 0.125``.
LOWER_MAX = 0.875
UPPER_MIN = 0.125
#: The card's English filter: "lingua confidence >= 0.999".
ENGLISH_MIN = 0.999
#: The card's ``extra_info`` annotation fields (Schema: ``{index, id, lower_pass_rate, lower_scores,
#: upper_pass_rate, upper_scores}``).
ANNOTATION_FIELDS = ("lower_pass_rate", "lower_scores", "upper_pass_rate", "upper_scores")

# reasons a row gets no annotation from one score folder (module docstring)
MISSING = "missing"
INVALID = "invalid_task"
SANDBOX = "sandbox_error"
BAD_SCORE = "bad_score"
INCOMPLETE = "incomplete"
COUNT = "count_mismatch"
TRUTH = "ground_truth_changed"
POSITIONAL = "positional_key"

# decisions (``<stem>.rows.jsonl``)
KEPT = "kept"
FLOOR = "floor"
CEILING = "ceiling"
BOTH = "floor+ceiling"
VACUOUS = "vacuous"
NON_ENGLISH = "non_english"
NO_STATEMENT = "no_statement"
MISSING_ANNOTATION = "missing_annotation"
BAD_ROW = "bad_row"
DUPLICATE = "duplicate_key"

#: How many rows go to lingua at once (its parallel method; memory is one batch of rows).
ENGLISH_BATCH = 256
#: Template lines (:func:`template_lines`): a line is template when it occurs in the statements of
#: at least this many rows ...
TEMPLATE_MIN_ROWS = 3
#: ... and at least this share of the dataset's rows.
TEMPLATE_MIN_SHARE = 0.02


class CurationInputError(ValueError):
    """An input that cannot be curated at all: a dataset that cannot be read or holds no rows, a
    score folder that is not an ``arbiter score`` output folder (or whose ``verdicts.jsonl`` has a
    line that is not a verdict record), a folder scored with ``--parity`` (unless allowed), an
    unusable ``--out`` or one that would overwrite an input or another output, rows that cannot
    share one Parquet schema, a threshold outside [0, 1]. The message names the option, the file
    and the line where one decides it (``arbiter curate`` exits 2 with it). Found before any
    output is written, except a dataset line that breaks mid-stream (the partial output is
    removed then)."""


# ------------------------------------------------------------------ the flag


def _check_rate(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def is_goldilocks(lower: float, upper: float, lower_max: float = LOWER_MAX, upper_min: float = UPPER_MIN) -> bool:
    """The card's flag: ``lower <= lower_max AND upper >= upper_min``, both inclusive ("lower_pass_rate
    <= 0.875 AND upper_pass_rate >= 0.125": the weak model does not solve the row every time, the
    strong one solves it at least once in 8).

    ``lower``/``upper``: the weak/strong model's pass rate in [0, 1]; thresholds in [0, 1]. With
    pass rates ``c / 8`` the comparisons are exact (0.875 and 0.125 are binary fractions). Raises
    ``ValueError`` for a value that is not a number in [0, 1] (NaN included).
    """
    return _check_rate("lower", lower) <= _check_rate("lower_max", lower_max) and \
        _check_rate("upper", upper) >= _check_rate("upper_min", upper_min)


def drop_reason(lower: float, upper: float, lower_max: float = LOWER_MAX, upper_min: float = UPPER_MIN) -> str:
    """Why :func:`is_goldilocks` fails: ``"floor"`` (``upper < upper_min``: no learnable signal),
    ``"ceiling"`` (``lower > lower_max``: no gradient), ``"floor+ceiling"`` (both: the weak model
    solves what the strong one does not), or ``""`` when the row is goldilocks. The card's
    "drops both the floor (nobody solves it ...) and the ceiling (everybody solves it ...)"."""
    floor = _check_rate("upper", upper) < _check_rate("upper_min", upper_min)
    ceiling = _check_rate("lower", lower) > _check_rate("lower_max", lower_max)
    return BOTH if floor and ceiling else FLOOR if floor else CEILING if ceiling else ""


def pass_rate(scores: Sequence[float]) -> float:
    """The fraction of ``scores`` equal to 1.0 (the card: "the per-model pass rate is the fraction of
    the 8 completions that pass"; "a completion passes only if it clears every case"). For 0/1
    scores this is exactly their mean. Raises ``ValueError`` for an empty list."""
    if not scores:
        raise ValueError("no scores")
    return sum(1 for s in scores if s == 1.0) / len(scores)


@dataclass(frozen=True)
class Annotation:
    """One row's goldilocks annotation (module docstring): per-completion 0/1 scores of the weak
    (``lower``) and strong (``upper``) model, in completion order, and their pass rates.
    ``vacuous``: either folder flagged the row's suite as vacuous (not part of the card's fields)."""

    lower_scores: tuple[float, ...]
    upper_scores: tuple[float, ...]
    vacuous: bool = False

    @property
    def lower_pass_rate(self) -> float:
        return pass_rate(self.lower_scores)

    @property
    def upper_pass_rate(self) -> float:
        return pass_rate(self.upper_scores)

    def extra_info(self) -> dict[str, Any]:
        """The four ``extra_info`` fields of the card's schema."""
        return {"lower_pass_rate": self.lower_pass_rate, "lower_scores": list(self.lower_scores),
                "upper_pass_rate": self.upper_pass_rate, "upper_scores": list(self.upper_scores)}


# ------------------------------------------------------------------ score folders


@dataclass
class _RowScores:
    passed: dict[int, bool] = field(default_factory=dict)  # response index -> score == 1.0
    truth: set[str] = field(default_factory=set)            # ground_truth_sha256 values seen
    invalid: bool = False
    vacuous: bool = False
    bad: dict[int, float] = field(default_factory=dict)    # response index -> a score NaN or outside [0, 1]


def _is_reward(score: float) -> bool:
    return 0.0 <= score <= 1.0  # False for NaN


@dataclass
class ScoreFolder:
    """The verdicts of one ``arbiter score --out`` folder, by row key.

    - ``path``; ``label``: the option it came from (``--weak``/``--strong``), used in messages;
    - ``rows``: ``row key -> _RowScores`` from ``verdicts.jsonl`` (the last record of a response
      key wins, as ``arbiter score`` reads it), with the vacuous-suite flag of its verdicts'
      ``warning``;
    - ``sandbox_errors``: ``row key -> responses`` that hit SANDBOX_ERROR in the folder's last run
      (``errors.jsonl``);
    - ``config``: its ``config.json`` (inputs' sha256 and verdict options) or ``None``;
    - ``skipped`` / ``partial``: how many verdicts are ``SKIPPED`` / score strictly between 0
      and 1 (both only occur with ``arbiter score --parity``).

    Memory: one small entry per response (the card: 31,176 rows x 8), never response text.
    """

    path: Path
    label: str
    rows: dict[str, _RowScores]
    sandbox_errors: Counter
    config: dict[str, Any] | None
    skipped: int = 0
    partial: int = 0
    #: whether this folder scored the very dataset being curated (set by :func:`curate_goldilocks`;
    #: rows keyed by position are annotated from it only then)
    dataset_matches: bool = False

    @classmethod
    def load(cls, path: str | os.PathLike, label: str = "score folder") -> "ScoreFolder":
        """Read ``verdicts.jsonl`` (streamed), ``errors.jsonl`` and ``config.json`` of an
        ``arbiter score`` output folder. Raises :class:`CurationInputError` naming ``label``, the
        file and the line for a path that is not a folder, a folder without ``verdicts.jsonl``, or
        a line that is not a verdict record (JSON with ``row_key``, an integer ``response_idx`` and
        a numeric ``score``; ``arbiter score`` repairs a line torn by a kill when it is rerun). A
        score that is NaN or outside [0, 1] is not refused here: that row gets no annotation
        (``bad_score``)."""
        p = Path(path)
        if not p.is_dir():
            raise CurationInputError(f"{label} {p}: not a folder (give an `arbiter score --out` folder)")
        vpath = p / VERDICTS_FILE
        if not vpath.is_file():
            raise CurationInputError(f"{label} {p}: no {VERDICTS_FILE}; not an `arbiter score` output folder")
        rows: dict[str, _RowScores] = {}
        skipped = partial = 0
        with open(vpath, "rb") as f:
            for number, raw in enumerate(f, 1):
                if not raw.strip():
                    continue
                try:
                    rec = json.loads(raw)
                except ValueError as exc:
                    raise CurationInputError(f"{label} {vpath} line {number}: not a JSON record ({exc}); a run killed "
                                             f"mid-write? rerun the same `arbiter score` command to repair it") from None
                if not isinstance(rec, dict):
                    raise CurationInputError(f"{label} {vpath} line {number}: not a verdict record")
                key, idx, score = rec.get("row_key"), rec.get("response_idx"), rec.get("score")
                if (not isinstance(key, str) or isinstance(idx, bool) or not isinstance(idx, int) or idx < 0
                        or isinstance(score, bool) or not isinstance(score, (int, float))):
                    raise CurationInputError(f"{label} {vpath} line {number}: not a verdict record (needs row_key, "
                                             f"an integer response_idx >= 0 and a numeric score)")
                r = rows.get(key)
                if r is None:
                    r = rows[key] = _RowScores()
                r.passed[idx] = score == 1.0
                if _is_reward(score):
                    r.bad.pop(idx, None)
                    partial += 0.0 < score < 1.0
                else:
                    r.bad[idx] = score
                if isinstance(rec.get("ground_truth_sha256"), str):
                    r.truth.add(rec["ground_truth_sha256"])
                verdict = rec.get("verdict")
                if verdict == "INVALID_TASK":
                    r.invalid = True
                elif verdict == "SKIPPED":
                    skipped += 1
                warning = rec.get("warning")
                if isinstance(warning, str) and warning.startswith(VACUOUS_SUITE):
                    r.vacuous = True
        sandbox: Counter = Counter()
        epath = p / "errors.jsonl"
        if epath.is_file():
            with open(epath, encoding="utf-8", errors="replace") as f:
                for line in f:
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(rec, dict) and rec.get("kind") == "sandbox_error" and isinstance(rec.get("row"), str):
                        sandbox[rec["row"]] += 1
        config = None
        cpath = p / CONFIG_FILE
        if cpath.is_file():
            try:
                loaded = json.loads(cpath.read_text(encoding="utf-8"))
                config = loaded if isinstance(loaded, dict) else None
            except (OSError, ValueError):
                config = None
        return cls(p, label, rows, sandbox, config, skipped=skipped, partial=partial)

    @property
    def parity(self) -> str | None:
        """The ``arbiter score --parity`` mode the folder was scored with: its ``config.json``
        option, else ``"prime_code"`` when its verdicts show it (``SKIPPED`` verdicts or partial
        scores, which only parity mode gives); ``None`` for all-or-nothing verdicts."""
        options = (self.config or {}).get("options")
        mode = options.get("parity") if isinstance(options, dict) else None
        if mode:
            return str(mode)
        return "prime_code" if self.skipped or self.partial else None

    def parity_detail(self) -> str:
        """How :attr:`parity` was found, for messages."""
        options = (self.config or {}).get("options")
        where = (f"{CONFIG_FILE} options.parity" if isinstance(options, dict) and options.get("parity")
                 else "its verdicts")
        return f"{where}; {self.skipped} SKIPPED verdict(s), {self.partial} partial score(s)"

    def scored_dataset(self) -> dict[str, Any] | None:
        """``config.json``'s ``dataset`` identity (``path``, ``bytes``, ``sha256``), or ``None``."""
        d = (self.config or {}).get("dataset")
        return d if isinstance(d, dict) else None

    def matches_dataset(self, identity: Mapping[str, Any], split: str | None) -> bool:
        """Whether the folder scored the dataset with this identity (:func:`input_identity`:
        same content sha256) and split, by its ``config.json``; ``False`` without one."""
        d = self.scored_dataset()
        return bool(d and d.get("sha256") and d.get("sha256") == identity.get("sha256")
                    and (self.config or {}).get("split") == split)

    def _complete(self, r: _RowScores) -> bool:
        return not r.invalid and not r.bad and set(r.passed) == set(range(len(r.passed)))

    def counts(self) -> Counter:
        """``n completions -> rows`` over the folder's complete rows (valid, indexes ``0..n-1``)."""
        return Counter(len(r.passed) for key, r in self.rows.items()
                       if self._complete(r) and key not in self.sandbox_errors)

    def default_k(self) -> int | None:
        """The most common completion count among complete rows (ties: the larger), or ``None``."""
        c = self.counts()
        return max(c, key=lambda n: (c[n], n)) if c else None

    def vacuous_rows(self) -> int:
        """Rows whose verdicts carry the vacuous-suite warning."""
        return sum(1 for r in self.rows.values() if r.vacuous)

    def scores(self, key: str, *, k: int | None, truth_sha: str | None,
               positional: bool = False) -> tuple[tuple[float, ...] | None, str, str, bool]:
        """``(scores, "", "", vacuous)`` for the row ``key`` (0/1 per completion, in response
        order; ``vacuous``: its verdicts flag a vacuous suite), or ``(None, reason, detail,
        False)`` with a reason of the module docstring. ``truth_sha``: sha256 of the dataset row's
        ground truth (:func:`arbiter.pipelines.codegen_scoring.text_sha256`), compared with the one
        the folder judged; ``k``: the expected completion count; ``positional``: the key is the
        row's position (no ``extra_info.index``), usable only when :attr:`dataset_matches`."""
        r = self.rows.get(key)
        if positional and not self.dataset_matches:
            d = self.scored_dataset()
            why = (f"{self.label} {self.path} records no dataset ({CONFIG_FILE} missing)" if d is None else
                   f"{self.label} {self.path} scored another dataset file or split (sha256 "
                   f"{str(d.get('sha256'))[:12]}..., {d.get('path')})")
            return None, POSITIONAL, (f"no extra_info.index: the row is keyed by its position, and {why}, where "
                                      f"this position may hold another row; give the rows an extra_info.index "
                                      f"or curate the file that was scored"), False
        if key in self.sandbox_errors:
            return None, SANDBOX, (f"{self.sandbox_errors[key]} response(s) hit SANDBOX_ERROR and are not recorded; "
                                   f"rerun `arbiter score` into {self.path}"), False
        if r is None:
            return None, MISSING, f"no verdict for this row key in {self.path}", False
        if r.invalid:
            return None, INVALID, "INVALID_TASK: its test suite is unusable (see the folder's verdicts)", False
        if r.bad:
            shown = ", ".join(f"#{i}: {v!r}" for i, v in sorted(r.bad.items())[:4])
            return None, BAD_SCORE, f"score not a reward in [0, 1] ({shown})", False
        n = len(r.passed)
        if set(r.passed) != set(range(n)):
            have = sorted(r.passed)
            return None, INCOMPLETE, f"response indexes {have[:12]}{' ...' if n > 12 else ''} are not 0..{n - 1}", False
        if truth_sha is not None and r.truth and r.truth != {truth_sha}:
            return None, TRUTH, "the folder judged another ground truth for this row key (rescore this dataset)", False
        if k is not None and n != k:
            return None, COUNT, f"{n} completion(s); this folder's rows have {k}", False
        return tuple(1.0 if r.passed[i] else 0.0 for i in range(n)), "", "", r.vacuous


def is_positional(row: Any) -> bool:
    """Whether a parsed row is keyed by its position (no ``extra_info.index``,
    :func:`arbiter.datasets.verl_rows.row_key`)."""
    return row.index is None or row.index == ""


def annotate(row: Any, weak: ScoreFolder, strong: ScoreFolder, *, k_lower: int | None,
             k_upper: int | None) -> tuple[Annotation | None, list[dict[str, str]]]:
    """Annotate one parsed row (:class:`arbiter.datasets.verl_rows.VerlRow`) from the weak
    (lower) and strong (upper) folders, joined on ``row.key`` (data_source-qualified; a row
    without an index only from a folder that scored this very dataset, ``dataset_matches``).

    Returns ``(Annotation, [])``, or ``(None, problems)`` with one ``{"side": "lower"|"upper",
    "reason", "detail"}`` per side that cannot annotate the row (module docstring); such a row
    has no pass rate, never 0."""
    truth = text_sha256(row.ground_truth)
    positional = is_positional(row)
    problems: list[dict[str, str]] = []
    sides: dict[str, tuple[float, ...]] = {}
    vacuous = False
    for side, folder, k in (("lower", weak, k_lower), ("upper", strong, k_upper)):
        scores, reason, detail, vac = folder.scores(row.key, k=k, truth_sha=truth, positional=positional)
        if scores is None:
            problems.append({"side": side, "reason": reason, "detail": detail})
        else:
            sides[side] = scores
            vacuous = vacuous or vac
    if problems:
        return None, problems
    return Annotation(sides["lower"], sides["upper"], vacuous), []


# ------------------------------------------------------------------ English filter


_FENCE = re.compile(r"```[^\n]*\n.*?```", re.S)
_LETTER = re.compile(r"[^\W\d_]")
_SURROGATE = re.compile("[\ud800-\udfff]")

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


def _outside_code_and_wrappers(statement: str) -> str:
    return _WRAPPERS.sub(" ", _FENCE.sub("\n", statement))


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
    return _SURROGATE.sub("\ufffd", text)


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
        self.min_confidence = _check_rate("english_min", min_confidence)
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


def _with_confidence(items: Iterable[Any], text_of: Callable[[Any], str | None], english: EnglishFilter | None,
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


# ------------------------------------------------------------------ output


def _annotation_arrow_fields() -> list:
    import pyarrow as pa

    return [pa.field("lower_pass_rate", pa.float64()), pa.field("lower_scores", pa.list_(pa.float64())),
            pa.field("upper_pass_rate", pa.float64()), pa.field("upper_scores", pa.list_(pa.float64()))]


def annotated_schema(schema: Any) -> Any:
    """``schema`` (pyarrow, of the input rows) with the four annotation fields in the
    ``extra_info`` struct (added after its fields, or replacing fields of the same name; a new
    ``extra_info`` column when there is none), without schema metadata (an HF ``datasets``
    feature description would no longer match). ``None`` when ``extra_info`` is not a struct."""
    import pyarrow as pa

    ann = _annotation_arrow_fields()
    if "extra_info" not in schema.names:
        return schema.append(pa.field("extra_info", pa.struct(ann))).remove_metadata()
    i = schema.get_field_index("extra_info")
    t = schema.field(i).type
    if pa.types.is_null(t):
        return schema.set(i, pa.field("extra_info", pa.struct(ann))).remove_metadata()
    if not pa.types.is_struct(t):
        return None
    kept = [t.field(j) for j in range(t.num_fields) if t.field(j).name not in ANNOTATION_FIELDS]
    return schema.set(i, pa.field("extra_info", pa.struct(kept + ann))).remove_metadata()


class UnwritableRow(ValueError):
    """A kept row that cannot be written to the output (a value Parquet cannot hold, a lone
    surrogate in its tests for Parquet, a value JSON cannot hold); :func:`curate_goldilocks`
    makes it a ``bad_row`` naming the row, and the batch goes on."""


def _surrogate_fields(value: Any, path: str = "") -> list[str]:
    """Dotted paths of the strings (and keys) in ``value`` that hold lone surrogates."""
    if isinstance(value, str):
        return [path or "."] if _SURROGATE.search(value) else []
    out: list[str] = []
    if isinstance(value, Mapping):
        for k, v in value.items():
            p = f"{path}.{k}" if path else str(k)
            if isinstance(k, str) and _SURROGATE.search(k):
                out.append(p)
            out += _surrogate_fields(v, p)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            out += _surrogate_fields(v, f"{path}[{i}]")
    return out


def _replace_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (and keys) replaced by U+FFFD."""
    if isinstance(value, str):
        return lenient_text(value)
    if isinstance(value, Mapping):
        return {(lenient_text(k) if isinstance(k, str) else k): _replace_surrogates(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_replace_surrogates(v) for v in value]
    return value


def json_line(value: Any, **kwargs: Any) -> bytes:
    """One JSON Lines record as UTF-8 bytes (:func:`arbiter.judge.jsonvalues.dumps`: integers of
    any size; non-ASCII text as is). A value holding lone surrogates (JSON ``"\\ud83d"`` read
    without its pair; not encodable as UTF-8) is written with ``\\u`` escapes instead, so it reads
    back identical. Raises what ``json.dumps`` raises for a value JSON cannot hold."""
    try:
        return (jsonvalues.dumps(value, ensure_ascii=False, **kwargs) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (jsonvalues.dumps(value, ensure_ascii=True, **kwargs) + "\n").encode("ascii")


def write_json_atomic(path: str | os.PathLike, data: Any) -> None:
    """Write ``data`` as indented JSON to ``path`` through ``<path>.partial`` and a rename; lone
    surrogates become ``\\u`` escapes (:func:`json_line`)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".partial")
    try:
        raw = (json.dumps(data, indent=1, ensure_ascii=False, default=str) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        raw = (json.dumps(data, indent=1, ensure_ascii=True, default=str) + "\n").encode("ascii")
    tmp.write_bytes(raw)
    os.replace(tmp, path)


def _short(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[:limit] + " ..."


class CuratedWriter:
    """Streaming writer of the kept rows to ``.parquet`` or ``.jsonl``.

    JSONL: one row per line (:func:`json_line`: integers of any size, lone surrogates kept as
    ``\\u`` escapes). Parquet: ``schema`` is required (the input's Parquet schema through
    :func:`annotated_schema`, or the schema :func:`curate_goldilocks` infers from every row in its
    first pass), so every row is checked against it when it is kept, not at the end; rows are
    written in row groups of ``rows_per_group``. Each row is converted on its own
    (:meth:`encode`): a row that cannot be written raises :class:`UnwritableRow` before anything of
    it is written. Parquet strings are UTF-8: lone surrogates are replaced by U+FFFD (the fields are
    returned), except in ``reward_model`` (the tests that were scored would change:
    :class:`UnwritableRow`). Everything goes to ``<path>.partial`` first and is renamed on
    :meth:`close`.

    ``arbiter.datasets.convert.RowWriter`` is not reused: its Parquet schema is fixed to the
    converter's ``extra_info`` fields (other columns and the annotation would be dropped), and it
    refuses an ``extra_info.index`` seen before in the file, which two data sources may share
    (the card's collision: rows are keyed by data_source and index here).

    Raises ``ValueError`` for a Parquet path without ``schema``, and pyarrow's errors for a
    schema Parquet cannot store.
    """

    def __init__(self, path: str | os.PathLike, schema: Any = None, *, rows_per_group: int = 512):
        self.path = Path(path)
        self.tmp = self.path.with_name(self.path.name + ".partial")
        self.parquet = self.path.suffix.lower() == ".parquet"
        if self.parquet and schema is None:
            raise ValueError(f"{self.path}: a Parquet output needs its schema")
        self.schema = schema
        self.rows_per_group = rows_per_group
        self.count = 0
        self._buf: list[Any] = []
        self._writer = None
        self._file = None
        if self.parquet:
            import pyarrow.parquet as pq

            try:
                self._writer = pq.ParquetWriter(self.tmp, schema)
            except BaseException:
                self.tmp.unlink(missing_ok=True)
                raise
        else:
            self._file = open(self.tmp, "wb")

    def encode(self, row: Mapping[str, Any]) -> tuple[Any, list[str]]:
        """``(payload, replaced)``: the row ready for :meth:`write_encoded` and the fields whose
        lone surrogates were replaced by U+FFFD (Parquet only). Raises :class:`UnwritableRow`."""
        if not self.parquet:
            try:
                return json_line(row), []
            except (TypeError, ValueError, RecursionError) as exc:
                raise UnwritableRow(f"not JSON-serializable ({_short(exc)})") from None
        import pyarrow as pa

        try:
            return pa.RecordBatch.from_pylist([dict(row)], schema=self.schema), []
        except UnicodeEncodeError:
            pass
        except (pa.ArrowException, ValueError, TypeError, OverflowError) as exc:
            raise UnwritableRow(f"does not fit the output's Parquet schema ({_short(exc)}); write .jsonl "
                                f"instead") from None
        fields = _surrogate_fields(row)
        tests = [f for f in fields if f.startswith("reward_model")]
        if tests:
            raise UnwritableRow(f"{tests[0]} holds a lone surrogate, which a Parquet string (UTF-8) cannot hold, "
                                f"and replacing it would change the tests that were scored; write .jsonl instead")
        try:
            return pa.RecordBatch.from_pylist([_replace_surrogates(dict(row))], schema=self.schema), fields
        except (pa.ArrowException, ValueError, TypeError, OverflowError) as exc:
            raise UnwritableRow(f"does not fit the output's Parquet schema ({_short(exc)}); write .jsonl "
                                f"instead") from None

    def write_encoded(self, payload: Any) -> None:
        """Write one row encoded by :meth:`encode`."""
        self.count += 1
        if self._file is not None:
            self._file.write(payload)
            return
        self._buf.append(payload)
        if len(self._buf) >= self.rows_per_group:
            self._flush()

    def write(self, row: Mapping[str, Any]) -> None:
        """Write one row (a dict of columns). Raises :class:`UnwritableRow`."""
        self.write_encoded(self.encode(row)[0])

    def _flush(self) -> None:
        if self._buf and self._writer is not None:
            import pyarrow as pa

            self._writer.write_table(pa.Table.from_batches(self._buf, schema=self.schema).combine_chunks())
            self._buf = []

    def close(self, *, keep: bool = True) -> None:
        """Finish the file and rename it into place; with ``keep=False`` remove what was written."""
        try:
            if self._writer is not None:
                if keep:
                    self._flush()
                    if not self.count:
                        self._writer.write_table(self.schema.empty_table())
                self._writer.close()
                self._writer = None
            if self._file is not None:
                self._file.close()
                self._file = None
            if keep:
                os.replace(self.tmp, self.path)
        finally:
            if not keep and self.tmp.exists():
                self.tmp.unlink()


def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _inside(path: Path, folder: Path) -> bool:
    resolved, top = path.resolve(), folder.resolve()
    if resolved == top or top in resolved.parents:
        return True
    for parent in resolved.parents:  # hard-linked or differently spelled folders
        try:
            if parent.exists() and os.path.samefile(parent, folder):
                return True
        except OSError:
            pass
    return False


def check_output_paths(outputs: Mapping[str, str | os.PathLike], inputs: Mapping[str, str | os.PathLike | None]) -> None:
    """Refuse outputs that would overwrite an input or each other, before anything is written.

    ``outputs``: option name -> path of a file to write (its ``<path>.partial`` temporary file is
    checked too); ``inputs``: option name -> an input file or folder (``None`` skipped). Every
    output must differ from every other output and from each input file, and must not lie inside
    an input folder (an HF dataset folder, an ``arbiter score`` folder). Paths are compared
    resolved (``..``, symlinks), and existing ones also by identity (``os.path.samefile``: hard
    links, case-insensitive file systems). Raises :class:`CurationInputError` naming both options.
    """
    written: list[tuple[str, Path]] = []
    for label, p in outputs.items():
        p = Path(p)
        written += [(label, p), (f"{label} (its temporary file)", p.with_name(p.name + ".partial"))]
    for label, p in written:
        for ilabel, i in inputs.items():
            if i is None:
                continue
            i = Path(i)
            if i.is_dir():
                if _inside(p, i):
                    raise CurationInputError(f"{label} {p} is inside {ilabel} {i}: writing it would change an input; "
                                             f"write it elsewhere")
            elif _same_file(p, i):
                raise CurationInputError(f"{label} {p} is {ilabel} ({i}): writing it would overwrite an input; "
                                         f"write it elsewhere")
    for n, (la, a) in enumerate(written):
        for lb, b in written[n + 1:]:
            if _same_file(a, b):
                raise CurationInputError(f"{la} and {lb} are the same file ({a}); one would overwrite the other")


# ------------------------------------------------------------------ counts


@dataclass
class Tally:
    """Counts of one ``data_source`` (or overall); see the module docstring. ``lower``/``upper``:
    the pass rates of the kept rows (for the card's "Difficulty (kept rows)" means and medians)."""

    candidates: int = 0
    missing_annotation: int = 0
    vacuous: int = 0
    dropped_vacuous: int = 0
    goldilocks: int = 0
    dropped_floor: int = 0
    dropped_ceiling: int = 0
    dropped_floor_and_ceiling: int = 0
    dropped_non_english: int = 0
    dropped_no_statement: int = 0
    kept: int = 0
    lower: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)

    def as_dict(self, total_kept: int) -> dict[str, Any]:
        def mean(v: list[float]) -> float | None:
            return sum(v) / len(v) if v else None

        return {
            "candidates": self.candidates, "missing_annotation": self.missing_annotation,
            "vacuous": self.vacuous, "dropped_vacuous": self.dropped_vacuous,
            "goldilocks": self.goldilocks, "dropped_floor": self.dropped_floor,
            "dropped_ceiling": self.dropped_ceiling, "dropped_floor_and_ceiling": self.dropped_floor_and_ceiling,
            "dropped_non_english": self.dropped_non_english, "dropped_no_statement": self.dropped_no_statement,
            "kept": self.kept,
            "kept_per_candidate": self.kept / self.candidates if self.candidates else None,
            "share_of_kept": self.kept / total_kept if total_kept else None,
            "mean_lower_pass_rate": mean(self.lower), "mean_upper_pass_rate": mean(self.upper),
            "median_lower_pass_rate": statistics.median(self.lower) if self.lower else None,
            "median_upper_pass_rate": statistics.median(self.upper) if self.upper else None,
        }


def _report_paths(out: Path, report: str | os.PathLike | None, rows_log: str | os.PathLike | None) -> tuple[Path, Path]:
    stem = out.name[: -len(out.suffix)] if out.suffix else out.name
    return (Path(report) if report is not None else out.with_name(f"{stem}.report.json"),
            Path(rows_log) if rows_log is not None else out.with_name(f"{stem}.rows.jsonl"))


# ------------------------------------------------------------------ first pass


def _arrow_index_type(types: set[str], int_in_range: bool) -> tuple[Any, bool]:
    """``(arrow type, as_string)`` for ``extra_info.index`` values of these Python types."""
    import pyarrow as pa

    single = {"int": pa.int64(), "str": pa.string(), "float": pa.float64(), "bool": pa.bool_()}
    if len(types) == 1:
        (t,) = types
        if t in single and (t != "int" or int_in_range):
            return single[t], False
    return pa.string(), True


class _SchemaBuilder:
    """The Parquet schema of the rows a curation may write, inferred (pyarrow) from every row that
    parses, before anything is written: the union of the rows' types, ``extra_info.index`` typed
    from its values (strings when they mix types, ``as_string``), the annotation fields added.
    Rows that pyarrow cannot convert on their own (an integer beyond int64, ...) are left out of
    the schema and listed in ``unwritable`` (position -> error): they become bad rows when kept
    (written against a schema that lacks their fields, they would lose them)."""

    BATCH = 256

    def __init__(self) -> None:
        self.schemas: list[Any] = []
        self.index_types: set[str] = set()
        self.int_in_range = True
        self.has_index = False
        self.unwritable: dict[int, str] = {}
        self._batch: list[tuple[int, dict[str, Any]]] = []

    def add(self, raw: Mapping[str, Any], position: int) -> None:
        ei = raw.get("extra_info")
        ei = {k: v for k, v in ei.items() if k not in ANNOTATION_FIELDS} if isinstance(ei, Mapping) else {}
        if "index" in ei:
            self.has_index = True
        index = ei.pop("index", None)
        if index is not None and index != "":
            self.index_types.add(type(index).__name__)
            if isinstance(index, int) and not isinstance(index, bool) and not -2 ** 63 <= index < 2 ** 63:
                self.int_in_range = False
        self._batch.append((position, {**raw, "extra_info": ei or None}))
        if len(self._batch) >= self.BATCH:
            self._infer()

    def _infer(self) -> None:
        import pyarrow as pa

        errors = (pa.ArrowException, ValueError, TypeError, OverflowError)
        try:
            self.schemas.append(pa.Table.from_pylist([r for _, r in self._batch]).schema)
        except errors:
            for position, r in self._batch:
                try:
                    self.schemas.append(pa.Table.from_pylist([r]).schema)
                except UnicodeEncodeError:
                    try:
                        self.schemas.append(pa.Table.from_pylist([_replace_surrogates(r)]).schema)
                    except errors as exc:
                        self.unwritable[position] = _short(exc)
                except errors as exc:
                    self.unwritable[position] = _short(exc)
        self._batch = []

    def schema(self) -> tuple[Any, bool]:
        """``(schema, index_as_string)``. Raises pyarrow's error when the rows cannot share one
        schema (a column holding numbers in some rows and text in others, ...)."""
        import pyarrow as pa

        self._infer()
        if not self.schemas:  # nothing to write: the converter's verl schema, with the annotation
            return annotated_schema(parquet_schema()), False
        unified = pa.unify_schemas(self.schemas, promote_options="permissive")
        index_type, as_string = _arrow_index_type(self.index_types, self.int_in_range)
        fields = [pa.field("index", index_type)] if self.has_index else []
        if "extra_info" in unified.names:
            i = unified.get_field_index("extra_info")
            t = unified.field(i).type
            if pa.types.is_struct(t):
                fields += [t.field(j) for j in range(t.num_fields)]
            elif not pa.types.is_null(t):
                raise ValueError(f"extra_info is not a struct ({t})")
            unified = unified.set(i, pa.field("extra_info", pa.struct(fields)))
        else:
            unified = unified.append(pa.field("extra_info", pa.struct(fields)))
        return annotated_schema(unified), as_string


@dataclass
class _Prescan:
    rows: int = 0
    positional: int = 0
    template: dict = field(default_factory=dict)
    schema: Any = None
    index_as_string: bool = False
    unwritable: dict = field(default_factory=dict)   # position -> why pyarrow cannot convert the row


def _prescan(dataset: Path, split: str | None, *, statements: bool, infer_schema: bool,
             template_min_rows: int = TEMPLATE_MIN_ROWS, template_min_share: float = TEMPLATE_MIN_SHARE) -> _Prescan:
    """The first pass over the dataset, streamed, before anything is written: counts the rows and
    the rows keyed by position (no ``extra_info.index``), finds the template lines when
    ``statements`` (:class:`TemplateCounter`), and infers the Parquet output schema when
    ``infer_schema`` (:class:`_SchemaBuilder`). A Parquet dataset is read by the columns needed
    only. Raises :class:`CurationInputError` for an unreadable or empty dataset."""
    result = _Prescan()
    counter = TemplateCounter(min_rows=template_min_rows, min_share=template_min_share) if statements else None
    builder = _SchemaBuilder() if infer_schema else None
    try:
        fmt = dataset_format(dataset)
        columns = None
        if fmt == "parquet" and builder is None:
            import pyarrow as pa
            import pyarrow.parquet as pq

            try:
                schema = pq.read_schema(dataset)
            except (pa.ArrowException, OSError) as exc:
                raise ValueError(f"{dataset}: not a readable Parquet file ({exc})") from None
            if "data_source" not in schema.names:
                raise ValueError(f"{dataset}: no 'data_source' column (columns: "
                                 f"{', '.join(schema.names[:10]) or 'none'}); not a verl dataset")
            columns = ["data_source"]
            if "extra_info" in schema.names:
                ei = schema.field("extra_info").type
                if hasattr(ei, "get_field_index") and ei.get_field_index("index") >= 0:
                    columns.append("extra_info.index")
            if statements and "prompt" in schema.names:
                columns.append("prompt")
        for position, raw in enumerate(iter_raw_rows(dataset, columns=columns, split=split, batch_size=256)):
            result.rows += 1
            ei = raw.get("extra_info")
            index = ei.get("index") if isinstance(ei, Mapping) else None
            if index is None or index == "":
                result.positional += 1
            if counter is not None:
                prompt = raw.get("prompt")
                counter.add(statement_text(prompt) if isinstance(prompt, (list, tuple)) else "")
            if builder is not None:
                try:
                    parse_row(raw, position)
                except RowError:
                    continue
                builder.add(raw, position)
    except (ValueError, OSError) as exc:
        raise CurationInputError(f"--dataset: {exc}") from None
    if not result.rows:
        raise CurationInputError(f"--dataset {dataset}: no rows (an empty file or split)")
    if counter is not None:
        result.template = counter.lines()
    if builder is not None:
        import pyarrow as pa

        try:
            result.schema, result.index_as_string = builder.schema()
            result.unwritable = builder.unwritable
        except (pa.ArrowException, ValueError, TypeError) as exc:
            raise CurationInputError(f"--out: the rows of --dataset {dataset} cannot share one Parquet schema "
                                     f"({_short(exc)}); write .jsonl instead") from None
    return result


def _input_schema(dataset: Path) -> Any:
    if dataset_format(dataset) != "parquet":
        return None
    import pyarrow.parquet as pq

    return annotated_schema(pq.read_schema(dataset))


def _folder_identity(folder: ScoreFolder) -> dict[str, Any]:
    """What the report says about a score folder: its inputs (from ``config.json``), options, rows,
    how many rows have each completion count, parity mode, vacuous rows."""
    cfg = folder.config or {}

    def pick(name: str) -> dict[str, Any] | None:
        value = cfg.get(name)
        return {k: value.get(k) for k in ("path", "sha256")} if isinstance(value, dict) else None

    return {"path": str(folder.path.resolve()), "dataset": pick("dataset"), "completions": pick("completions"),
            "split": cfg.get("split"), "options": cfg.get("options"), "rows": len(folder.rows),
            "completion_counts": dict(sorted(folder.counts().items())), "parity": folder.parity,
            "scored_this_dataset": folder.dataset_matches, "vacuous_rows": folder.vacuous_rows()}


def _check_thresholds(lower_max: float, upper_min: float, english_min: float | None) -> None:
    try:
        _check_rate("--lower-max", lower_max)
        _check_rate("--upper-min", upper_min)
        if english_min is not None:
            _check_rate("--english-min", english_min)
    except ValueError as exc:
        raise CurationInputError(str(exc)) from None


def _english_detector_description(english: EnglishFilter | None, template: Mapping[str, int]) -> str | None:
    if english is None:
        return None
    return (f"lingua from_all_languages, {'low' if english.low_accuracy else 'high'} accuracy, on the last user "
            f"message without fenced code blocks, the known DeepCoder/PrimeIntellect/TACO/LiveCodeBench "
            f"instruction sentences and the dataset's {len(template)} template line(s) (lines in >= "
            f"{TEMPLATE_MIN_ROWS} rows and >= {TEMPLATE_MIN_SHARE:.0%} of the rows)")


#: How many template lines the report lists (each cut at :data:`TEMPLATE_LINE_SHOWN` characters).
TEMPLATE_LINES_SHOWN = 50
TEMPLATE_LINE_SHOWN = 300


def _template_report(template: Mapping[str, int]) -> dict[str, Any]:
    """The report's view of the template lines: how many, and the most common ones with their rows."""
    ranked = sorted(template.items(), key=lambda kv: (-kv[1], kv[0]))[:TEMPLATE_LINES_SHOWN]
    return {"count": len(template), "lines": [{"rows": n, "line": line[:TEMPLATE_LINE_SHOWN]} for line, n in ranked]}


# ------------------------------------------------------------------ curate


@dataclass
class CurationRun:
    """What :func:`curate_goldilocks` did: ``report`` (the content of ``report.json``), the output
    paths, and ``overall`` (:class:`Tally` of all rows)."""

    report: dict[str, Any]
    out: Path
    report_path: Path
    rows_path: Path
    overall: Tally
    bad_rows: int = 0
    duplicate_rows: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def problems(self) -> int:
        """Rows that could not be judged for the filter: missing annotations, bad rows, repeated keys."""
        return self.overall.missing_annotation + self.bad_rows + self.duplicate_rows


@dataclass
class _Item:
    position: int
    raw: dict[str, Any] | None
    key: str
    data_source: str | None
    decision: str = ""
    annotation: Annotation | None = None
    problems: list[dict[str, str]] = field(default_factory=list)
    error: str = ""
    text: str | None = None
    positional: bool = False
    no_statement: bool = False
    replaced: list[str] = field(default_factory=list)


def _parity_refusal(folder: ScoreFolder) -> str:
    return (f"{folder.label} {folder.path} was scored with `arbiter score --parity {folder.parity}` "
            f"({folder.parity_detail()}): there a SKIPPED verdict scores 1.0 when only the first 10 cases passed "
            f"(the rest never ran) and failures get partial credit, but the card counts a completion as passing "
            f"only when it clears every case. Rescore without --parity into a new folder, or pass --allow-parity "
            f"to use these verdicts as they are (recorded in the report)")


def curate_goldilocks(dataset: str | os.PathLike, weak: str | os.PathLike, strong: str | os.PathLike,
                      out: str | os.PathLike, *, lower_max: float = LOWER_MAX, upper_min: float = UPPER_MIN,
                      english_min: float | None = ENGLISH_MIN, k: int | None = None, split: str | None = None,
                      report: str | os.PathLike | None = None, rows_log: str | os.PathLike | None = None,
                      english: EnglishFilter | None = None, keep_vacuous: bool = False, allow_parity: bool = False,
                      progress: Callable[[int, int], None] | None = None) -> CurationRun:
    """Annotate ``dataset`` from two ``arbiter score`` folders, keep the goldilocks English rows,
    and write the outputs of the module docstring.

    - ``dataset``: verl rows (Parquet, JSONL, HF folder with ``split``), the rows that were scored.
    - ``weak`` / ``strong``: the ``arbiter score --out`` folders of the weak (lower) and strong
      (upper) model's completions.
    - ``out``: ``.parquet`` or ``.jsonl`` in an existing folder
      (:func:`arbiter.datasets.convert.check_output_path`); ``report`` / ``rows_log`` default to
      ``<stem>.report.json`` / ``<stem>.rows.jsonl`` next to it. None of the three may be an input,
      lie inside a score folder or be another of them (:func:`check_output_paths`).
    - ``lower_max``, ``upper_min``: :func:`is_goldilocks` thresholds (the card: 0.875, 0.125).
    - ``english_min``: the English filter's minimum confidence (the card: 0.999); ``None`` turns
      the filter off. ``english``: a prepared :class:`EnglishFilter` (its threshold is used).
    - ``k``: the completion count every row must have on both sides; default per folder, its most
      common count (:meth:`ScoreFolder.default_k`).
    - ``keep_vacuous``: keep rows whose suite is vacuous (flagged) instead of dropping them.
    - ``allow_parity``: accept folders scored with ``arbiter score --parity`` (refused otherwise).
    - ``progress(done, total)``: rows finished so far.

    Reads the dataset twice, streamed (first pass: keys, template lines, the Parquet schema; memory:
    the two folders' 0/1 scores, the template line counts and one batch of rows). Bad rows,
    repeated keys and rows without an annotation are reported and the batch goes on. Raises
    :class:`CurationInputError` for unusable inputs (nothing is written then).
    """
    _check_thresholds(lower_max, upper_min, english_min)
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise CurationInputError(f"--k must be a positive integer, got {k!r}")
    try:
        out_path = check_output_path(out)
    except ValueError as exc:
        raise CurationInputError(str(exc)) from None
    report_path, rows_path = _report_paths(out_path, report, rows_log)
    for name, path in (("--report", report_path), ("rows log", rows_path)):
        if not path.parent.is_dir():
            raise CurationInputError(f"{name} {path}: its folder {path.parent} does not exist")
    dpath = Path(dataset)
    weak_f = ScoreFolder.load(weak, "--weak")
    strong_f = ScoreFolder.load(strong, "--strong")
    if weak_f.path.resolve() == strong_f.path.resolve():
        raise CurationInputError(f"--weak and --strong are the same folder ({weak_f.path}); score the weak and the "
                                 f"strong model's completions into two folders")
    check_output_paths({"--out": out_path, "--report": report_path, "rows log": rows_path},
                       {"--dataset": dpath, "--weak": weak_f.path, "--strong": strong_f.path})
    for f in (weak_f, strong_f):
        if f.parity and not allow_parity:
            raise CurationInputError(_parity_refusal(f))
    if english_min is not None and english is None:
        english = EnglishFilter(english_min)
    if english_min is None:
        english = None
    parquet_out = out_path.suffix.lower() == ".parquet"
    try:
        schema = _input_schema(dpath) if parquet_out else None
    except (ValueError, OSError) as exc:
        raise CurationInputError(f"--dataset: {exc}") from None
    scan = _prescan(dpath, split, statements=english is not None, infer_schema=parquet_out and schema is None)
    total = scan.rows
    if parquet_out and schema is None:
        schema = scan.schema
    template = scan.template
    try:
        dataset_identity = input_identity(dpath)
    except OSError as exc:
        raise CurationInputError(f"--dataset: {exc}") from None
    for f in (weak_f, strong_f):
        f.dataset_matches = f.matches_dataset(dataset_identity, split)

    warnings: list[str] = []
    k_lower = k if k is not None else weak_f.default_k()
    k_upper = k if k is not None else strong_f.default_k()
    if k_lower is not None and k_upper is not None and k_lower != k_upper:
        warnings.append(f"the weak folder's rows have {k_lower} completions, the strong folder's {k_upper}")
    wc, sc = (weak_f.config or {}).get("completions"), (strong_f.config or {}).get("completions")
    if isinstance(wc, dict) and isinstance(sc, dict) and wc.get("sha256") and wc.get("sha256") == sc.get("sha256"):
        warnings.append("--weak and --strong scored the same completions file (same sha256)")
    wo, so = (weak_f.config or {}).get("options"), (strong_f.config or {}).get("options")
    if isinstance(wo, dict) and isinstance(so, dict) and wo != so:
        diff = sorted(k_ for k_ in set(wo) | set(so) if wo.get(k_) != so.get(k_))
        warnings.append(f"--weak and --strong were scored with different options ({', '.join(diff)})")
    for f in (weak_f, strong_f):
        if f.config is None:
            warnings.append(f"{f.label} {f.path}: no {CONFIG_FILE}; its inputs cannot be checked (ground truths are "
                            f"still checked row by row; rows without an extra_info.index cannot be joined)")
        elif not f.dataset_matches:
            joined = ("rows with an extra_info.index were joined on data_source:index, each verdict's ground-truth "
                      "sha256 checked" +
                      (f"; the {scan.positional} row(s) without an extra_info.index are keyed by position and "
                       f"got no annotation from it (positional_key)" if scan.positional else ""))
            warnings.append(f"{f.label} scored another dataset file or split (sha256 differs); {joined}")
        if f.parity:
            warnings.append(f"{f.label} {f.path} was scored with --parity {f.parity} (--allow-parity): SKIPPED "
                            f"verdicts, first 10 cases passed and the rest not run, count as passes")
    if scan.index_as_string:
        warnings.append(f"extra_info.index holds values of several types (numbers and strings): written as strings "
                        f"to {out_path.name} (the card's index is a string, e.g. deepcoder_{{i}}); row keys are "
                        f"unchanged")

    tallies: dict[str, Tally] = defaultdict(Tally)
    overall = Tally()
    annotation_problems: list[dict[str, Any]] = []
    bad_rows: list[dict[str, Any]] = []
    duplicates: list[dict[str, Any]] = []
    vacuous_rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    joins: Counter = Counter()
    annotated = {"rows": 0, "lower": 0.0, "upper": 0.0}   # over every annotated row: swapped --weak/--strong?
    replaced_rows = 0

    def stage1() -> Iterator[_Item]:
        for position, raw in enumerate(iter_raw_rows(dpath, split=split, batch_size=64)):
            try:
                row = parse_row(raw, position)
            except RowError as exc:
                ds = raw.get("data_source") if isinstance(raw, Mapping) else None
                ei = raw.get("extra_info") if isinstance(raw, Mapping) else None
                key = row_key(ds, ei.get("index") if isinstance(ei, Mapping) else None, position)
                yield _Item(position, None, key, ds if isinstance(ds, str) else None, BAD_ROW, error=str(exc))
                continue
            item = _Item(position, raw, row.key, row.data_source, positional=is_positional(row))
            if row.key in seen:
                item.decision = DUPLICATE
                item.error = f"row key {row.key!r} repeats at position {position}; only the first row is curated"
                yield item
                continue
            seen.add(row.key)
            ann, problems = annotate(row, weak_f, strong_f, k_lower=k_lower, k_upper=k_upper)
            if ann is None:
                item.decision, item.problems = MISSING_ANNOTATION, problems
                yield item
                continue
            item.annotation = ann
            if ann.vacuous and not keep_vacuous:
                item.decision = VACUOUS
                yield item
                continue
            item.decision = drop_reason(ann.lower_pass_rate, ann.upper_pass_rate, lower_max, upper_min)
            if not item.decision and english is not None:
                statement = statement_text(row.prompt)
                if statement.strip():
                    item.text = detection_text(statement, template)
                else:
                    item.no_statement = True
            yield item

    def decide(item: _Item, conf: float | None) -> Any:
        """The final decision of a goldilocks row; the encoded output row when kept."""
        if item.no_statement:
            item.decision = NO_STATEMENT
            return None
        if conf is not None and conf < english.min_confidence:  # type: ignore[union-attr]
            item.decision = NON_ENGLISH
            return None
        ann = item.annotation
        assert ann is not None and item.raw is not None
        extra = item.raw.get("extra_info")
        extra = dict(extra) if isinstance(extra, Mapping) else {}
        if scan.index_as_string and extra.get("index") is not None:
            extra["index"] = str(extra["index"])
        extra.update(ann.extra_info())
        try:
            if item.position in scan.unwritable:
                raise UnwritableRow(f"its values do not convert to Parquet ({scan.unwritable[item.position]}); "
                                    f"write .jsonl instead")
            payload, item.replaced = writer.encode({**item.raw, "extra_info": extra})
        except UnwritableRow as exc:
            item.decision = BAD_ROW
            item.error = f"row {item.key!r} (position {item.position}): cannot be written to {out_path.name}: {exc}"
            return None
        item.decision = KEPT
        return payload

    def count(item: _Item) -> None:
        if item.decision == BAD_ROW:
            bad_rows.append({"position": item.position, "row_key": item.key, "error": item.error})
            return
        if item.decision == DUPLICATE:
            duplicates.append({"position": item.position, "row_key": item.key, "error": item.error})
            return
        both = (tallies[str(item.data_source)], overall)
        for tally in both:
            tally.candidates += 1
        if item.decision == MISSING_ANNOTATION:
            for tally in both:
                tally.missing_annotation += 1
            for p in item.problems:
                annotation_problems.append({"row_key": item.key, "data_source": item.data_source,
                                            "position": item.position, **p})
            if any(p["reason"] == POSITIONAL for p in item.problems):
                joins["by_position_refused"] += 1
            return
        ann = item.annotation
        assert ann is not None
        joins["by_position" if item.positional else "by_data_source_index"] += 1
        annotated["rows"] += 1
        annotated["lower"] += ann.lower_pass_rate
        annotated["upper"] += ann.upper_pass_rate
        if ann.vacuous:
            vacuous_rows.append({"row_key": item.key, "data_source": item.data_source, "position": item.position,
                                 "decision": item.decision})
            for tally in both:
                tally.vacuous += 1
        if item.decision == VACUOUS:
            for tally in both:
                tally.dropped_vacuous += 1
        elif item.decision in (FLOOR, CEILING, BOTH):
            for tally in both:
                tally.dropped_floor += item.decision in (FLOOR, BOTH)
                tally.dropped_ceiling += item.decision in (CEILING, BOTH)
                tally.dropped_floor_and_ceiling += item.decision == BOTH
        else:
            for tally in both:
                tally.goldilocks += 1
                tally.dropped_non_english += item.decision == NON_ENGLISH
                tally.dropped_no_statement += item.decision == NO_STATEMENT
                if item.decision == KEPT:
                    tally.kept += 1
                    tally.lower.append(ann.lower_pass_rate)
                    tally.upper.append(ann.upper_pass_rate)

    try:
        writer = CuratedWriter(out_path, schema)
    except (ValueError, TypeError, OSError, NotImplementedError) as exc:  # pyarrow: a schema Parquet cannot store
        raise CurationInputError(f"--out {out_path}: cannot write these rows as Parquet ({_short(exc)}); write "
                                 f".jsonl instead") from None
    rows_tmp = rows_path.with_name(rows_path.name + ".partial")
    done = 0
    try:
        with open(rows_tmp, "wb") as log:
            for item, conf in _with_confidence(stage1(), lambda it: it.text, english):
                payload = decide(item, conf) if item.decision == "" else None
                count(item)
                if payload is not None:
                    writer.write_encoded(payload)
                    replaced_rows += bool(item.replaced)
                rec: dict[str, Any] = {"row_key": item.key, "data_source": item.data_source, "position": item.position,
                                       "decision": item.decision}
                if item.positional:
                    rec["keyed_by_position"] = True
                if item.annotation is not None:
                    rec.update(lower_pass_rate=item.annotation.lower_pass_rate,
                               upper_pass_rate=item.annotation.upper_pass_rate)
                    if item.annotation.vacuous:
                        rec["vacuous"] = True
                if conf is not None:
                    rec["english_confidence"] = conf
                if item.problems:
                    rec["problems"] = item.problems
                if item.error:
                    rec["error"] = item.error
                if item.replaced:
                    rec["surrogates_replaced"] = item.replaced
                log.write(json_line(rec, default=str))
                done += 1
                if progress is not None:
                    progress(done, total)
    except (ValueError, OSError) as exc:  # a dataset line that breaks mid-stream (RowError), an I/O error
        writer.close(keep=False)
        rows_tmp.unlink(missing_ok=True)
        raise CurationInputError(f"--dataset: {exc}") from None
    except BaseException:
        writer.close(keep=False)
        rows_tmp.unlink(missing_ok=True)
        raise
    try:
        writer.close()
    except (ValueError, OSError) as exc:
        rows_tmp.unlink(missing_ok=True)
        raise CurationInputError(f"--out {out_path}: {exc}") from None
    os.replace(rows_tmp, rows_path)

    if overall.missing_annotation:
        by_reason = Counter(f"{p['side']}: {p['reason']}" for p in annotation_problems)
        warnings.append(f"{overall.missing_annotation} row(s) without an annotation (not kept): "
                        + ", ".join(f"{n} {r}" for r, n in by_reason.most_common()))
    if annotated["rows"]:
        mean_lower, mean_upper = annotated["lower"] / annotated["rows"], annotated["upper"] / annotated["rows"]
        if mean_lower > mean_upper:
            warnings.append(f"the weak model's mean pass rate ({mean_lower:.3f}) exceeds the strong model's "
                            f"({mean_upper:.3f}) over the {annotated['rows']} annotated row(s): are --weak and "
                            f"--strong swapped?")
    kept_vacuous = sum(1 for v in vacuous_rows if v["decision"] != VACUOUS)
    if kept_vacuous:
        warnings.append(f"{kept_vacuous} row(s) with a vacuous suite (every expected output empty: any program "
                        f"printing nothing passes) went through the filter (--keep-vacuous); "
                        f"{sum(1 for v in vacuous_rows if v['decision'] == KEPT)} kept, listed in the report")
    if replaced_rows:
        warnings.append(f"{replaced_rows} kept row(s) held lone surrogates, replaced by U+FFFD in the Parquet output "
                        f"(fields listed in the rows log)")
    content = {
        "card": "codegen_iquest_card.txt: Difficulty (goldilocks) filtering; Creation pipeline steps 2-4",
        "options": {"lower_max": lower_max, "upper_min": upper_min,
                    "english_min": english.min_confidence if english is not None else None,
                    "english_detector": _english_detector_description(english, template),
                    "k_lower": k_lower, "k_upper": k_upper, "split": split, "keep_vacuous": keep_vacuous,
                    "allow_parity": allow_parity, "index_as_string": scan.index_as_string},
        "inputs": {"dataset": dataset_identity, "weak": _folder_identity(weak_f),
                   "strong": _folder_identity(strong_f)},
        "outputs": {"rows": str(out_path), "decisions": str(rows_path)},
        "join": {"by_data_source_index": joins["by_data_source_index"], "by_position": joins["by_position"],
                 "by_position_refused": joins["by_position_refused"],
                 "rule": "rows meet their verdicts on <data_source>:<extra_info.index>; a row without an index on "
                         "<data_source>:#<position>, only from a folder that scored this very dataset file"},
        "overall": {**overall.as_dict(overall.kept), "bad_rows": len(bad_rows), "duplicate_rows": len(duplicates)},
        "by_data_source": {ds: t.as_dict(overall.kept) for ds, t in sorted(tallies.items())},
        "annotation_problems": annotation_problems,
        "bad_rows": bad_rows,
        "duplicate_rows": duplicates,
        "vacuous_rows": vacuous_rows,
        "template_lines": _template_report(template),
        "warnings": warnings,
    }
    write_json_atomic(report_path, content)
    return CurationRun(content, out_path, report_path, rows_path, overall, len(bad_rows), len(duplicates), warnings)


# ------------------------------------------------------------------ audit

# audit findings (``findings`` of :func:`audit_annotations`)
MISSING_FIELDS = "missing_fields"
BAD_SCORES = "bad_scores"
NON_BINARY = "non_binary_scores"
RATE_MISMATCH = "pass_rate_mismatch"
#: Findings that make a row's stored annotation inconsistent (the others say it would not be kept).
INCONSISTENT = (MISSING_FIELDS, BAD_SCORES, NON_BINARY, RATE_MISMATCH, COUNT)


def _scores_of(value: Any) -> list[float] | None:
    if hasattr(value, "tolist"):
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or not value:
        return None
    out: list[float] = []
    for s in value:
        if isinstance(s, bool) or not isinstance(s, (int, float)) or math.isnan(s) or not 0.0 <= s <= 1.0:
            return None
        out.append(float(s))
    return out


@dataclass
class AuditRun:
    """What :func:`audit_annotations` found.

    - ``rows``: rows read; ``clean``: rows whose stored annotation is consistent and which the
      recomputed flag and the English filter keep;
    - ``findings``: one record per row with a finding: ``row_key``, ``data_source``, ``position``,
      ``findings`` (kinds: ``missing_fields``, ``bad_scores``, ``non_binary_scores``,
      ``pass_rate_mismatch``, ``count_mismatch``; ``floor``, ``ceiling``, ``non_english``,
      ``no_statement``; ``bad_row``, ``duplicate_key``), ``detail`` (one line per kind), stored and recomputed values;
    - ``counts``: ``{"overall": {kind: rows}, "by_data_source": {ds: {kind: rows}}}`` plus ``rows``
      and ``clean`` in each;
    - ``k``: the expected completion count per side;
    - ``template_lines``: the dataset's template lines, left out of the English detection.
    """

    rows: int = 0
    clean: int = 0
    findings: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)
    k: dict[str, int | None] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    template_lines: dict = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"card": "codegen_iquest_card.txt: Difficulty (goldilocks) filtering; Creation pipeline step 3-4",
                "options": self.options, "k": self.k, "rows": self.rows, "clean": self.clean,
                "counts": self.counts, "findings": self.findings,
                "template_lines": _template_report(self.template_lines)}


def audit_annotations(dataset: str | os.PathLike, *, lower_max: float = LOWER_MAX, upper_min: float = UPPER_MIN,
                      english_min: float | None = ENGLISH_MIN, k: int | None = None, split: str | None = None,
                      english: EnglishFilter | None = None, tolerance: float = 1e-9) -> AuditRun:
    """Check the goldilocks annotation stored in ``extra_info`` of every row of ``dataset`` (the
    card's dataset carries ``lower_pass_rate``, ``lower_scores``, ``upper_pass_rate``,
    ``upper_scores``), as the card's consolidation does ("recomputes the goldilocks flag"):

    - the four fields are present, the scores are lists of numbers in [0, 1] (else
      ``missing_fields`` / ``bad_scores``); scores other than 0 and 1 are ``non_binary_scores``
      (only 1.0 passes: the card's pass rate is "the fraction of 8 samples that reach 1.0");
    - the pass rate recomputed from the scores (:func:`pass_rate`) equals the stored one within
      ``tolerance`` (else ``pass_rate_mismatch``);
    - every row has k scores per side (``k``, else the most common count per side; else
      ``count_mismatch``);
    - the flag recomputed from the scores (:func:`is_goldilocks` with ``lower_max``/``upper_min``)
      holds (else ``floor`` / ``ceiling``), and the statement passes the English filter
      (``english_min``; ``None`` skips it) (else ``non_english``; read as :func:`curate_goldilocks`
      reads it, without template lines; a row without a user message: ``no_statement``).

    Rows that do not parse (``bad_row``) or repeat a row key (``duplicate_key``) are findings too;
    one bad row never stops the audit. Memory: one small record per row (and the template line
    counts of the first pass). Raises
    :class:`CurationInputError` for an unreadable dataset or bad thresholds.
    """
    _check_thresholds(lower_max, upper_min, english_min)
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise CurationInputError(f"--k must be a positive integer, got {k!r}")
    dpath = Path(dataset)
    if english_min is not None and english is None:
        english = EnglishFilter(english_min)
    if english_min is None:
        english = None
    template = _prescan(dpath, split, statements=english is not None, infer_schema=False).template
    run = AuditRun(options={"lower_max": lower_max, "upper_min": upper_min,
                            "english_min": english.min_confidence if english is not None else None,
                            "english_detector": _english_detector_description(english, template),
                            "tolerance": tolerance, "split": split}, template_lines=template)
    seen: set[str] = set()
    per_row: list[dict[str, Any]] = []   # every row: key, data_source, position, findings, detail, lengths

    def add(rec: dict[str, Any], kind: str, detail: str) -> None:
        if kind not in rec["findings"]:
            rec["findings"].append(kind)
        rec["detail"][kind] = f"{rec['detail'][kind]}; {detail}" if kind in rec["detail"] else detail

    def stage1() -> Iterator[dict[str, Any]]:
        for position, raw in enumerate(iter_raw_rows(dpath, split=split, batch_size=64)):
            rec: dict[str, Any] = {"row_key": "", "data_source": None, "position": position, "findings": [],
                                   "detail": {}, "_n": {}, "_text": None}
            try:
                row = parse_row(raw, position)
            except RowError as exc:
                ds = raw.get("data_source") if isinstance(raw, Mapping) else None
                ei = raw.get("extra_info") if isinstance(raw, Mapping) else None
                rec["row_key"] = row_key(ds, ei.get("index") if isinstance(ei, Mapping) else None, position)
                rec["data_source"] = ds if isinstance(ds, str) else None
                add(rec, BAD_ROW, str(exc))
                yield rec
                continue
            rec["row_key"], rec["data_source"] = row.key, row.data_source
            if row.key in seen:
                add(rec, DUPLICATE, f"row key {row.key!r} repeats at position {position}")
                yield rec
                continue
            seen.add(row.key)
            ei = row.extra_info
            absent = [f for f in ANNOTATION_FIELDS if ei.get(f) is None]
            if absent:
                add(rec, MISSING_FIELDS, f"extra_info lacks {', '.join(absent)}")
            rates: dict[str, float] = {}
            stored: dict[str, Any] = {}
            for side in ("lower", "upper"):
                raw_scores, raw_rate = ei.get(f"{side}_scores"), ei.get(f"{side}_pass_rate")
                stored[f"{side}_pass_rate"] = raw_rate
                if raw_scores is None:
                    try:  # no scores to check it against: the flag comes from the stored rate
                        rates[side] = _check_rate(f"{side}_pass_rate", raw_rate)
                    except ValueError:
                        pass
                    continue
                scores = _scores_of(raw_scores)
                if scores is None:
                    add(rec, BAD_SCORES, f"{side}_scores is not a non-empty list of numbers in [0, 1]")
                    continue
                rec["_n"][side] = len(scores)
                odd = sorted({s for s in scores if s not in (0.0, 1.0)})
                if odd:
                    add(rec, NON_BINARY, f"{side}_scores holds values other than 0 and 1 ({odd[:4]}); "
                                          f"only 1.0 counts as a pass")
                rate = pass_rate(scores)
                rates[side] = rate
                rec[f"recomputed_{side}_pass_rate"] = rate
                if raw_rate is not None and (isinstance(raw_rate, bool) or not isinstance(raw_rate, (int, float))
                                             or not abs(float(raw_rate) - rate) <= tolerance):
                    add(rec, RATE_MISMATCH, f"{side}_pass_rate is {raw_rate!r} but {sum(1 for s in scores if s == 1.0)} "
                                            f"of {len(scores)} {side}_scores pass ({rate})")
            rec["stored"] = stored
            if "lower" in rates and "upper" in rates:
                why = drop_reason(rates["lower"], rates["upper"], lower_max, upper_min)
                for kind in filter(None, why.split("+")):
                    add(rec, kind, f"lower_pass_rate {rates['lower']} (max {lower_max}), upper_pass_rate "
                                   f"{rates['upper']} (min {upper_min})")
                if not why and english is not None:
                    statement = statement_text(row.prompt)
                    if statement.strip():
                        rec["_text"] = detection_text(statement, template)
                    else:
                        add(rec, NO_STATEMENT, "no user message: no problem statement to read the language of")
            yield rec

    for rec, conf in _with_confidence(stage1(), lambda r: r["_text"], english):
        if conf is not None:
            rec["english_confidence"] = conf
            if conf < english.min_confidence:  # type: ignore[union-attr]
                add(rec, NON_ENGLISH, f"lingua English confidence {conf:.6f} < {english.min_confidence}")  # type: ignore[union-attr]
        rec.pop("_text", None)
        per_row.append(rec)
        run.rows += 1

    for side in ("lower", "upper"):
        c = Counter(r["_n"][side] for r in per_row if side in r["_n"])
        run.k[side] = k if k is not None else (max(c, key=lambda n: (c[n], n)) if c else None)
    by_ds: dict[str, Counter] = defaultdict(Counter)
    overall: Counter = Counter()
    for rec in per_row:
        for side in ("lower", "upper"):
            n = rec["_n"].get(side)
            if n is not None and run.k[side] is not None and n != run.k[side]:
                add(rec, COUNT, f"{n} {side}_scores, expected {run.k[side]}")
        rec.pop("_n")
        ds = str(rec["data_source"])
        for counter in (by_ds[ds], overall):
            counter["rows"] += 1
            counter.update(set(rec["findings"]))
            if any(kind in INCONSISTENT for kind in rec["findings"]):
                counter["inconsistent"] += 1
            if not rec["findings"]:
                counter["clean"] += 1
        if rec["findings"]:
            run.findings.append(rec)
        else:
            run.clean += 1
    run.counts = {"overall": dict(overall), "by_data_source": {ds: dict(c) for ds, c in sorted(by_ds.items())}}
    return run


__all__ = [
    "ANNOTATION_FIELDS", "ENGLISH_MIN", "LOWER_MAX", "TEMPLATE_MIN_ROWS", "TEMPLATE_MIN_SHARE", "UPPER_MIN",
    "WRAPPER_SENTENCES", "Annotation", "AuditRun", "CuratedWriter", "CurationInputError", "CurationRun",
    "EnglishFilter", "ScoreFolder", "Tally", "TemplateCounter", "UnwritableRow", "annotate", "annotated_schema",
    "audit_annotations", "check_output_paths", "curate_goldilocks", "detection_text", "drop_reason",
    "is_goldilocks", "is_positional", "json_line", "lenient_text", "pass_rate", "statement_lines",
    "statement_text", "template_lines", "write_json_atomic",
]
