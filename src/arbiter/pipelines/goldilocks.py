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
  WA, TLE, RE, FORMAT_ERROR, ..., and a partial ``--parity prime_code`` score below 1.0, as
  ``arbiter score`` counts them). Lower = the weak model, upper = the strong model.
- ``lower_pass_rate`` / ``upper_pass_rate``: the fraction of completions that pass, exactly
  ``mean(scores)`` (``c / n``; with n = 8 a multiple of 1/8, exact in binary floating point).

Join (the card's 2026-08 fix: "the annotation cache was joined on an index that collides across
DeepCoder's subsets, mis-attributing scores. The fixed pipeline uses collision-proof
data_source-qualified join keys"): a dataset row and a score record meet on the row key
``"<data_source>:<extra_info.index>"`` (:func:`arbiter.datasets.verl_rows.row_key`, the key
``arbiter score`` writes as ``row_key``), never on a bare index or a row position. Each
``arbiter score`` verdict also carries the sha256 of the ground truth it was judged against; a
row whose ground truth differs from the scored one is not annotated (``ground_truth_changed``).

A row is never given a pass rate it was not scored for. It is reported (``annotation_problems``
in the report, ``missing_annotation`` in the counts) and left out of the output when, on either
side:

- ``missing``: the folder holds no verdict for its row key;
- ``invalid_task``: its verdicts are ``INVALID_TASK`` (unusable suite: the card's "list-encoded
  ground truths were silently unscored" defect is exactly a 0 that was not a verdict);
- ``sandbox_error``: some of its responses hit ``SANDBOX_ERROR`` in the folder's last run (not
  recorded by ``arbiter score``; rerun it to retry them);
- ``incomplete``: its response indexes are not ``0..n-1`` (a verdict is missing in between);
- ``count_mismatch``: it has n completions where that folder's rows have k (``k``: given, else the
  most common count among the folder's complete rows; the card: 8);
- ``ground_truth_changed``: the folder judged another ground truth for this row key.

Outputs of :func:`curate_goldilocks` (``OUT`` is ``<stem>.parquet`` or ``<stem>.jsonl``):

- ``OUT``: the kept rows, in dataset order, every column as read, with the annotation folded into
  ``extra_info`` (``index``, ``id`` and every other field kept; ``lower_pass_rate``,
  ``lower_scores``, ``upper_pass_rate``, ``upper_scores`` added or replaced). Written row group by
  row group to ``OUT.partial`` and renamed when done (an interrupted run leaves no truncated
  ``OUT``; the pass is cheap and is simply run again).
- ``<stem>.report.json``: options, inputs, the counts overall and per ``data_source`` (like the
  card's composition table), every annotation problem and bad row.
- ``<stem>.rows.jsonl``: one decision per dataset row (``kept``, ``floor``, ``ceiling``,
  ``floor+ceiling``, ``non_english``, ``missing_annotation``, ``bad_row``, ``duplicate_key``)
  with its pass rates and English confidence.

Counts (:class:`Tally`, overall and per ``data_source``): ``candidates`` (rows with a readable,
unique key), ``missing_annotation``, ``goldilocks`` (the flag holds), ``dropped_floor``
(``upper_pass_rate < upper_min``: "nobody solves it"), ``dropped_ceiling`` (``lower_pass_rate >
lower_max``: "everybody solves it"), ``dropped_floor_and_ceiling`` (both; also counted in each of
the two), ``dropped_non_english`` (goldilocks rows dropped by the English filter; the card: 36),
``kept``. So ``kept = goldilocks - dropped_non_english`` and ``goldilocks = candidates -
missing_annotation - dropped_floor - dropped_ceiling + dropped_floor_and_ceiling``.

To annotate every row without filtering, run with ``lower_max=1.0, upper_min=0.0,
english_min=None`` (``--lower-max 1 --upper-min 0 --no-english-filter``): every annotatable row is
written with its annotation.
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
from arbiter.datasets.verl_rows import RowError, dataset_format, iter_raw_rows, iter_row_keys, parse_row, row_key
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
INCOMPLETE = "incomplete"
COUNT = "count_mismatch"
TRUTH = "ground_truth_changed"

# decisions (``<stem>.rows.jsonl``)
KEPT = "kept"
FLOOR = "floor"
CEILING = "ceiling"
BOTH = "floor+ceiling"
NON_ENGLISH = "non_english"
MISSING_ANNOTATION = "missing_annotation"
BAD_ROW = "bad_row"
DUPLICATE = "duplicate_key"

#: How many rows go to lingua at once (its parallel method; memory is one batch of rows).
ENGLISH_BATCH = 256


class CurationInputError(ValueError):
    """An input that cannot be curated at all: a dataset that cannot be read or holds no rows, a
    score folder that is not an ``arbiter score`` output folder (or whose ``verdicts.jsonl`` has a
    line that is not a verdict record), an unusable ``--out``, a threshold outside [0, 1]. The
    message names the option, the file and the line where one decides it (``arbiter curate``
    exits 2 with it). Found before any output is written, except a dataset line that breaks
    mid-stream (the partial output is removed then)."""


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
    (``lower``) and strong (``upper``) model, in completion order, and their pass rates."""

    lower_scores: tuple[float, ...]
    upper_scores: tuple[float, ...]

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


@dataclass
class ScoreFolder:
    """The verdicts of one ``arbiter score --out`` folder, by row key.

    - ``path``; ``label``: the option it came from (``--weak``/``--strong``), used in messages;
    - ``rows``: ``row key -> _RowScores`` from ``verdicts.jsonl`` (the last record of a response
      key wins, as ``arbiter score`` reads it);
    - ``sandbox_errors``: ``row key -> responses`` that hit SANDBOX_ERROR in the folder's last run
      (``errors.jsonl``);
    - ``config``: its ``config.json`` (inputs' sha256 and verdict options) or ``None``.

    Memory: one small entry per response (the card: 31,176 rows x 8), never response text.
    """

    path: Path
    label: str
    rows: dict[str, _RowScores]
    sandbox_errors: Counter
    config: dict[str, Any] | None

    @classmethod
    def load(cls, path: str | os.PathLike, label: str = "score folder") -> "ScoreFolder":
        """Read ``verdicts.jsonl`` (streamed), ``errors.jsonl`` and ``config.json`` of an
        ``arbiter score`` output folder. Raises :class:`CurationInputError` naming ``label``, the
        file and the line for a path that is not a folder, a folder without ``verdicts.jsonl``, or
        a line that is not a verdict record (JSON with ``row_key``, an integer ``response_idx`` and
        ``score``; ``arbiter score`` repairs a line torn by a kill when it is rerun)."""
        p = Path(path)
        if not p.is_dir():
            raise CurationInputError(f"{label} {p}: not a folder (give an `arbiter score --out` folder)")
        vpath = p / VERDICTS_FILE
        if not vpath.is_file():
            raise CurationInputError(f"{label} {p}: no {VERDICTS_FILE}; not an `arbiter score` output folder")
        rows: dict[str, _RowScores] = {}
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
                if isinstance(rec.get("ground_truth_sha256"), str):
                    r.truth.add(rec["ground_truth_sha256"])
                if rec.get("verdict") == "INVALID_TASK":
                    r.invalid = True
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
        return cls(p, label, rows, sandbox, config)

    def _complete(self, r: _RowScores) -> bool:
        return not r.invalid and set(r.passed) == set(range(len(r.passed)))

    def counts(self) -> Counter:
        """``n completions -> rows`` over the folder's complete rows (valid, indexes ``0..n-1``)."""
        return Counter(len(r.passed) for key, r in self.rows.items()
                       if self._complete(r) and key not in self.sandbox_errors)

    def default_k(self) -> int | None:
        """The most common completion count among complete rows (ties: the larger), or ``None``."""
        c = self.counts()
        return max(c, key=lambda n: (c[n], n)) if c else None

    def scores(self, key: str, *, k: int | None, truth_sha: str | None) -> tuple[tuple[float, ...] | None, str, str]:
        """``(scores, "", "")`` for the row ``key`` (0/1 per completion, in response order), or
        ``(None, reason, detail)`` with a reason of the module docstring. ``truth_sha``: sha256 of
        the dataset row's ground truth (:func:`arbiter.pipelines.codegen_scoring.text_sha256`),
        compared with the one the folder judged; ``k``: the expected completion count."""
        r = self.rows.get(key)
        if key in self.sandbox_errors:
            return None, SANDBOX, (f"{self.sandbox_errors[key]} response(s) hit SANDBOX_ERROR and are not recorded; "
                                   f"rerun `arbiter score` into {self.path}")
        if r is None:
            return None, MISSING, f"no verdict for this row key in {self.path}"
        if r.invalid:
            return None, INVALID, "INVALID_TASK: its test suite is unusable (see the folder's verdicts)"
        n = len(r.passed)
        if set(r.passed) != set(range(n)):
            have = sorted(r.passed)
            return None, INCOMPLETE, f"response indexes {have[:12]}{' ...' if n > 12 else ''} are not 0..{n - 1}"
        if truth_sha is not None and r.truth and r.truth != {truth_sha}:
            return None, TRUTH, "the folder judged another ground truth for this row key (rescore this dataset)"
        if k is not None and n != k:
            return None, COUNT, f"{n} completion(s); this folder's rows have {k}"
        return tuple(1.0 if r.passed[i] else 0.0 for i in range(n)), "", ""


def annotate(row: Any, weak: ScoreFolder, strong: ScoreFolder, *, k_lower: int | None,
             k_upper: int | None) -> tuple[Annotation | None, list[dict[str, str]]]:
    """Annotate one parsed row (:class:`arbiter.datasets.verl_rows.VerlRow`) from the weak
    (lower) and strong (upper) folders, joined on ``row.key`` (data_source-qualified).

    Returns ``(Annotation, [])``, or ``(None, problems)`` with one ``{"side": "lower"|"upper",
    "reason", "detail"}`` per side that cannot annotate the row (module docstring); such a row
    has no pass rate, never 0."""
    truth = text_sha256(row.ground_truth)
    problems: list[dict[str, str]] = []
    sides: dict[str, tuple[float, ...]] = {}
    for side, folder, k in (("lower", weak, k_lower), ("upper", strong, k_upper)):
        scores, reason, detail = folder.scores(row.key, k=k, truth_sha=truth)
        if scores is None:
            problems.append({"side": side, "reason": reason, "detail": detail})
        else:
            sides[side] = scores
    if problems:
        return None, problems
    return Annotation(sides["lower"], sides["upper"]), []


# ------------------------------------------------------------------ English filter


_FENCE = re.compile(r"```[^\n]*\n.*?```", re.S)
_LETTER = re.compile(r"[^\W\d_]")


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


def detection_text(statement: str) -> str:
    """What the language detector reads: ``statement`` without its closed fenced code blocks
    (```` ``` ```` ... ```` ``` ````: code, sample I/O and answer templates, which are not prose in
    any language). LaTeX, inline code and numbers stay (lingua ignores digits and punctuation;
    ``$n$`` spans are too short to sway a statement). When nothing with a letter is left, the
    statement is read whole."""
    stripped = _FENCE.sub("\n", statement)
    return stripped if _LETTER.search(stripped) else statement


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
    Confidences of a batch are computed in parallel (lingua's own threads). A prompt without a user
    message has no statement: confidence 0.0, so it is dropped.

    Raises ``ValueError`` for ``min_confidence`` outside [0, 1]; the first detection raises
    ``RuntimeError`` when lingua is not installed.
    """

    def __init__(self, min_confidence: float = ENGLISH_MIN, *, low_accuracy: bool = False):
        self.min_confidence = _check_rate("english_min", min_confidence)
        self.low_accuracy = low_accuracy

    def confidence(self, text: str) -> float:
        """lingua's confidence in [0, 1] that ``text`` (as given, not stripped) is English."""
        from lingua import Language

        return float(_detector(self.low_accuracy).compute_language_confidence(text, Language.ENGLISH))

    def confidences(self, texts: Sequence[str]) -> list[float]:
        """:meth:`confidence` of each text, computed in parallel."""
        from lingua import Language

        if not texts:
            return []
        return [float(c) for c in _detector(self.low_accuracy).compute_language_confidence_in_parallel(
            list(texts), Language.ENGLISH)]

    def is_english(self, statement: str) -> bool:
        """Whether the statement (:func:`detection_text` applied here) passes the filter."""
        return self.confidence(detection_text(statement)) >= self.min_confidence


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
    if not pa.types.is_struct(t):
        return None
    kept = [t.field(j) for j in range(t.num_fields) if t.field(j).name not in ANNOTATION_FIELDS]
    return schema.set(i, pa.field("extra_info", pa.struct(kept + ann))).remove_metadata()


class CuratedWriter:
    """Streaming writer of the kept rows to ``.parquet`` or ``.jsonl``.

    JSONL: one row per line (:func:`arbiter.judge.jsonvalues.dumps`, integers of any size).
    Parquet: with ``schema`` (the input's Parquet schema through :func:`annotated_schema`, so every
    column keeps its type), rows are written in row groups of ``rows_per_group``; without one (a
    JSONL or HF input), rows are spooled to a JSONL file next to ``path`` and the Parquet schema
    is the union of the rows' inferred types (pyarrow, two passes over the spool at :meth:`close`).
    Everything goes to ``<path>.partial`` first and is renamed on :meth:`close`.

    ``arbiter.datasets.convert.RowWriter`` is not reused: its Parquet schema is fixed to the
    converter's ``extra_info`` fields (other columns and the annotation would be dropped), and it
    refuses an ``extra_info.index`` seen before in the file, which two data sources may share
    (the card's collision: rows are keyed by data_source and index here).
    """

    def __init__(self, path: str | os.PathLike, schema: Any = None, *, rows_per_group: int = 512):
        self.path = Path(path)
        self.tmp = self.path.with_name(self.path.name + ".partial")
        self.parquet = self.path.suffix.lower() == ".parquet"
        self.schema = schema
        self.rows_per_group = rows_per_group
        self.count = 0
        self._buf: list[dict[str, Any]] = []
        self._writer = None
        self._spool = None
        self._spool_path: Path | None = None
        if self.parquet and schema is not None:
            import pyarrow.parquet as pq

            self._writer = pq.ParquetWriter(self.tmp, schema)
        else:
            self._spool_path = self.tmp if not self.parquet else self.path.with_name(self.path.name + ".spool.jsonl")
            self._spool = open(self._spool_path, "w", encoding="utf-8")

    def write(self, row: Mapping[str, Any]) -> None:
        """Write one row (a dict of columns)."""
        self.count += 1
        if self._spool is not None:
            self._spool.write(jsonvalues.dumps(row, ensure_ascii=False) + "\n")
            return
        self._buf.append(dict(row))
        if len(self._buf) >= self.rows_per_group:
            self._flush()

    def _flush(self) -> None:
        if self._buf and self._writer is not None:
            import pyarrow as pa

            self._writer.write_table(pa.Table.from_pylist(self._buf, schema=self.schema))
            self._buf = []

    def _spool_batches(self, size: int) -> Iterator[list[dict[str, Any]]]:
        batch: list[dict[str, Any]] = []
        with open(self._spool_path, encoding="utf-8") as f:
            for line in f:
                batch.append(jsonvalues.loads(line))
                if len(batch) >= size:
                    yield batch
                    batch = []
        if batch:
            yield batch

    def _spool_to_parquet(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        schemas = [pa.Table.from_pylist(b).schema for b in self._spool_batches(self.rows_per_group)]
        if schemas:
            schema = pa.unify_schemas(schemas, promote_options="permissive")
        else:  # nothing kept: the converter's verl schema, with the annotation
            schema = annotated_schema(parquet_schema())
        with pq.ParquetWriter(self.tmp, schema) as w:
            for b in self._spool_batches(self.rows_per_group):
                w.write_table(pa.Table.from_pylist(b, schema=schema))
            if not schemas:
                w.write_table(schema.empty_table())

    def close(self, *, keep: bool = True) -> None:
        """Finish the file and rename it into place; with ``keep=False`` remove what was written.
        Raises ``ValueError`` (pyarrow's) when spooled rows cannot share one Parquet schema."""
        try:
            if self._writer is not None:
                if keep:
                    self._flush()
                self._writer.close()
                self._writer = None
            if self._spool is not None:
                self._spool.close()
                self._spool = None
                if keep and self.parquet:
                    import pyarrow as pa

                    try:
                        self._spool_to_parquet()
                    except (pa.ArrowException, ValueError, TypeError) as exc:
                        keep = False
                        raise ValueError(f"{self.path}: the kept rows cannot share one Parquet schema ({exc}); "
                                         f"write .jsonl instead") from None
            if keep:
                os.replace(self.tmp, self.path)
        finally:
            if self.parquet and self._spool_path is not None and self._spool_path.exists():
                self._spool_path.unlink()
            if not keep and self.tmp.exists():
                self.tmp.unlink()


# ------------------------------------------------------------------ counts


@dataclass
class Tally:
    """Counts of one ``data_source`` (or overall); see the module docstring. ``lower``/``upper``:
    the pass rates of the kept rows (for the card's "Difficulty (kept rows)" means and medians)."""

    candidates: int = 0
    missing_annotation: int = 0
    goldilocks: int = 0
    dropped_floor: int = 0
    dropped_ceiling: int = 0
    dropped_floor_and_ceiling: int = 0
    dropped_non_english: int = 0
    kept: int = 0
    lower: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)

    def as_dict(self, total_kept: int) -> dict[str, Any]:
        def mean(v: list[float]) -> float | None:
            return sum(v) / len(v) if v else None

        return {
            "candidates": self.candidates, "missing_annotation": self.missing_annotation,
            "goldilocks": self.goldilocks, "dropped_floor": self.dropped_floor,
            "dropped_ceiling": self.dropped_ceiling, "dropped_floor_and_ceiling": self.dropped_floor_and_ceiling,
            "dropped_non_english": self.dropped_non_english, "kept": self.kept,
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


def _write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _scan_keys(dataset: Path, split: str | None) -> int:
    """Read the dataset's key columns once (streamed) so an unreadable file is refused before
    anything is written; returns the row count."""
    try:
        dataset_format(dataset)
        n = sum(1 for _ in iter_row_keys(dataset, split=split))
    except (ValueError, OSError) as exc:
        raise CurationInputError(f"--dataset: {exc}") from None
    if not n:
        raise CurationInputError(f"--dataset {dataset}: no rows (an empty file or split)")
    return n


def _input_schema(dataset: Path) -> Any:
    if dataset_format(dataset) != "parquet":
        return None
    import pyarrow.parquet as pq

    return annotated_schema(pq.read_schema(dataset))


def _folder_identity(folder: ScoreFolder) -> dict[str, Any]:
    """What the report says about a score folder: its inputs (from ``config.json``), options, rows
    and how many rows have each completion count."""
    cfg = folder.config or {}

    def pick(name: str) -> dict[str, Any] | None:
        value = cfg.get(name)
        return {k: value.get(k) for k in ("path", "sha256")} if isinstance(value, dict) else None

    return {"path": str(folder.path.resolve()), "dataset": pick("dataset"), "completions": pick("completions"),
            "options": cfg.get("options"), "rows": len(folder.rows),
            "completion_counts": dict(sorted(folder.counts().items()))}


def _check_thresholds(lower_max: float, upper_min: float, english_min: float | None) -> None:
    try:
        _check_rate("--lower-max", lower_max)
        _check_rate("--upper-min", upper_min)
        if english_min is not None:
            _check_rate("--english-min", english_min)
    except ValueError as exc:
        raise CurationInputError(str(exc)) from None


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


def curate_goldilocks(dataset: str | os.PathLike, weak: str | os.PathLike, strong: str | os.PathLike,
                      out: str | os.PathLike, *, lower_max: float = LOWER_MAX, upper_min: float = UPPER_MIN,
                      english_min: float | None = ENGLISH_MIN, k: int | None = None, split: str | None = None,
                      report: str | os.PathLike | None = None, rows_log: str | os.PathLike | None = None,
                      english: EnglishFilter | None = None,
                      progress: Callable[[int, int], None] | None = None) -> CurationRun:
    """Annotate ``dataset`` from two ``arbiter score`` folders, keep the goldilocks English rows,
    and write the outputs of the module docstring.

    - ``dataset``: verl rows (Parquet, JSONL, HF folder with ``split``), the rows that were scored.
    - ``weak`` / ``strong``: the ``arbiter score --out`` folders of the weak (lower) and strong
      (upper) model's completions.
    - ``out``: ``.parquet`` or ``.jsonl`` in an existing folder
      (:func:`arbiter.datasets.convert.check_output_path`); ``report`` / ``rows_log`` default to
      ``<stem>.report.json`` / ``<stem>.rows.jsonl`` next to it.
    - ``lower_max``, ``upper_min``: :func:`is_goldilocks` thresholds (the card: 0.875, 0.125).
    - ``english_min``: the English filter's minimum confidence (the card: 0.999); ``None`` turns
      the filter off. ``english``: a prepared :class:`EnglishFilter` (its threshold is used).
    - ``k``: the completion count every row must have on both sides; default per folder, its most
      common count (:meth:`ScoreFolder.default_k`).
    - ``progress(done, total)``: rows finished so far.

    Streams the dataset (memory: the two folders' 0/1 scores and one batch of rows). Bad rows,
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
    total = _scan_keys(dpath, split)
    if english_min is not None and english is None:
        english = EnglishFilter(english_min)
    if english_min is None:
        english = None

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
            warnings.append(f"{f.label} {f.path}: no {CONFIG_FILE}; its inputs cannot be checked "
                            f"(ground truths are still checked row by row)")

    tallies: dict[str, Tally] = defaultdict(Tally)
    overall = Tally()
    annotation_problems: list[dict[str, Any]] = []
    bad_rows: list[dict[str, Any]] = []
    duplicates: list[dict[str, Any]] = []
    seen: set[str] = set()

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
            item = _Item(position, raw, row.key, row.data_source)
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
            item.decision = drop_reason(ann.lower_pass_rate, ann.upper_pass_rate, lower_max, upper_min)
            if not item.decision and english is not None:
                item.text = detection_text(statement_text(row.prompt))
            yield item

    schema = _input_schema(dpath)
    writer = CuratedWriter(out_path, schema)
    rows_tmp = rows_path.with_name(rows_path.name + ".partial")
    done = 0
    try:
        with open(rows_tmp, "w", encoding="utf-8") as log:
            for item, conf in _with_confidence(stage1(), lambda it: it.text, english):
                if item.decision == BAD_ROW:
                    bad_rows.append({"position": item.position, "row_key": item.key, "error": item.error})
                elif item.decision == DUPLICATE:
                    duplicates.append({"position": item.position, "row_key": item.key, "error": item.error})
                else:
                    t = tallies[str(item.data_source)]
                    for tally in (t, overall):
                        tally.candidates += 1
                    if item.decision == MISSING_ANNOTATION:
                        for tally in (t, overall):
                            tally.missing_annotation += 1
                        for p in item.problems:
                            annotation_problems.append({"row_key": item.key, "data_source": item.data_source,
                                                        "position": item.position, **p})
                    elif item.decision in (FLOOR, CEILING, BOTH):
                        for tally in (t, overall):
                            tally.dropped_floor += item.decision in (FLOOR, BOTH)
                            tally.dropped_ceiling += item.decision in (CEILING, BOTH)
                            tally.dropped_floor_and_ceiling += item.decision == BOTH
                    else:
                        for tally in (t, overall):
                            tally.goldilocks += 1
                        if conf is not None and conf < english.min_confidence:  # type: ignore[union-attr]
                            item.decision = NON_ENGLISH
                            for tally in (t, overall):
                                tally.dropped_non_english += 1
                        else:
                            item.decision = KEPT
                            ann = item.annotation
                            assert ann is not None and item.raw is not None
                            extra = item.raw.get("extra_info")
                            extra = dict(extra) if isinstance(extra, Mapping) else {}
                            extra.update(ann.extra_info())
                            writer.write({**item.raw, "extra_info": extra})
                            for tally in (t, overall):
                                tally.kept += 1
                                tally.lower.append(ann.lower_pass_rate)
                                tally.upper.append(ann.upper_pass_rate)
                rec: dict[str, Any] = {"row_key": item.key, "data_source": item.data_source, "position": item.position,
                                       "decision": item.decision}
                if item.annotation is not None:
                    rec.update(lower_pass_rate=item.annotation.lower_pass_rate,
                               upper_pass_rate=item.annotation.upper_pass_rate)
                if conf is not None:
                    rec["english_confidence"] = conf
                if item.problems:
                    rec["problems"] = item.problems
                if item.error:
                    rec["error"] = item.error
                log.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
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
    except ValueError as exc:  # spooled rows without one Parquet schema
        rows_tmp.unlink(missing_ok=True)
        raise CurationInputError(f"--out {exc}") from None
    os.replace(rows_tmp, rows_path)

    if overall.missing_annotation:
        by_reason = Counter(f"{p['side']}: {p['reason']}" for p in annotation_problems)
        warnings.append(f"{overall.missing_annotation} row(s) without an annotation (not kept): "
                        + ", ".join(f"{n} {r}" for r, n in by_reason.most_common()))
    dataset_identity = input_identity(dpath)
    for f in (weak_f, strong_f):
        scored = (f.config or {}).get("dataset")
        if isinstance(scored, dict) and scored.get("sha256") and scored["sha256"] != dataset_identity["sha256"]:
            warnings.append(f"{f.label} scored another dataset file (sha256 differs); rows were joined by "
                            f"data_source:index and each row's ground truth sha256 was checked")
    content = {
        "card": "codegen_iquest_card.txt: Difficulty (goldilocks) filtering; Creation pipeline steps 2-4",
        "options": {"lower_max": lower_max, "upper_min": upper_min,
                    "english_min": english.min_confidence if english is not None else None,
                    "english_detector": (None if english is None else
                                         f"lingua from_all_languages, {'low' if english.low_accuracy else 'high'} "
                                         f"accuracy, last user message without fenced code blocks"),
                    "k_lower": k_lower, "k_upper": k_upper, "split": split},
        "inputs": {"dataset": dataset_identity, "weak": _folder_identity(weak_f),
                   "strong": _folder_identity(strong_f)},
        "outputs": {"rows": str(out_path), "decisions": str(rows_path)},
        "overall": {**overall.as_dict(overall.kept), "bad_rows": len(bad_rows), "duplicate_rows": len(duplicates)},
        "by_data_source": {ds: t.as_dict(overall.kept) for ds, t in sorted(tallies.items())},
        "annotation_problems": annotation_problems,
        "bad_rows": bad_rows,
        "duplicate_rows": duplicates,
        "warnings": warnings,
    }
    _write_json_atomic(report_path, content)
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
      ``pass_rate_mismatch``, ``count_mismatch``; ``floor``, ``ceiling``, ``non_english``;
      ``bad_row``, ``duplicate_key``), ``detail`` (one line per kind), stored and recomputed values;
    - ``counts``: ``{"overall": {kind: rows}, "by_data_source": {ds: {kind: rows}}}`` plus ``rows``
      and ``clean`` in each;
    - ``k``: the expected completion count per side.
    """

    rows: int = 0
    clean: int = 0
    findings: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)
    k: dict[str, int | None] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"card": "codegen_iquest_card.txt: Difficulty (goldilocks) filtering; Creation pipeline step 3-4",
                "options": self.options, "k": self.k, "rows": self.rows, "clean": self.clean,
                "counts": self.counts, "findings": self.findings}


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
      (``english_min``; ``None`` skips it) (else ``non_english``).

    Rows that do not parse (``bad_row``) or repeat a row key (``duplicate_key``) are findings too;
    one bad row never stops the audit. Memory: one small record per row. Raises
    :class:`CurationInputError` for an unreadable dataset or bad thresholds.
    """
    _check_thresholds(lower_max, upper_min, english_min)
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise CurationInputError(f"--k must be a positive integer, got {k!r}")
    dpath = Path(dataset)
    _scan_keys(dpath, split)
    if english_min is not None and english is None:
        english = EnglishFilter(english_min)
    if english_min is None:
        english = None
    run = AuditRun(options={"lower_max": lower_max, "upper_min": upper_min,
                            "english_min": english.min_confidence if english is not None else None,
                            "tolerance": tolerance, "split": split})
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
                    rec["_text"] = detection_text(statement_text(row.prompt))
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
    "ANNOTATION_FIELDS", "ENGLISH_MIN", "LOWER_MAX", "UPPER_MIN", "Annotation", "AuditRun", "CuratedWriter",
    "CurationInputError", "CurationRun", "EnglishFilter", "ScoreFolder", "Tally", "annotate", "annotated_schema",
    "audit_annotations", "curate_goldilocks", "detection_text", "drop_reason", "is_goldilocks", "pass_rate",
    "statement_text",
]
