"""Batch scoring of model completions on a verl code dataset (``arbiter score``).

Inputs:

- ``dataset``: verl rows (:mod:`arbiter.datasets.verl_rows`: Parquet, JSONL or an HF
  ``datasets`` folder), e.g. the codegen card's 14,927 rows.
- ``completions``: JSON Lines, one record per problem (several records for one problem are
  merged in file order): ``{"<key fields>", "responses": ["<markdown response>", ...]}`` where the
  key fields are, in order of preference:

  1. ``"key"`` (or ``"row_key"``): the data_source-qualified row key ``"<data_source>:<index>"``;
  2. ``"data_source"`` and ``"index"``;
  3. ``"index"`` alone (``extra_info.index``): accepted when exactly one dataset row has that
     index; an index shared by rows of several data sources is an error for that record (the
     card's 2026-08 fix: DeepCoder's per-subset indexes collided, and joining on them
     mis-attributed scores);
  4. ``"row"``: the 0-based row position in the dataset file.

Streaming and memory (the card: 14,927 rows x 8 responses): the dataset is read twice, both
times streamed: first only its key columns (Parquet reads just ``data_source`` and
``extra_info.index``), then row by row in file order while judging. The completions file is
read once to build an index ``row key -> byte offsets`` (one small tuple per record); each
row's responses are read back by seeking when that row comes up, so completions may be in any
order and are never all in memory. What stays in memory grows with the number of *rows*
(keys, offsets, per-problem counts: a few MB for the card), never with the text of the
responses or tests; at most ``2 x workers`` submissions are in flight.

Outputs in ``out_dir``:

- ``config.json``: what the verdicts depend on besides the code: the identity of the inputs
  (``dataset`` and ``completions``: path, size in bytes and the sha256 of the content, streamed;
  a dataset folder hashes every file in it by relative path), ``split`` and the verdict-changing
  ``options`` the caller passes (``arbiter score``: ``parity``, ``checker``,
  ``case_insensitive``, ``abs_tol``, ``rel_tol``, ``time_limit``, ``memory_limit_mb``,
  ``run_all``; not ``workers``). Written on the first run; a rerun into the folder with a
  different dataset or completions *content*, split or option is refused with
  :class:`ConfigMismatch` naming what differs (before anything in the folder is touched), so a
  resumed run never keeps verdicts made for other inputs. Moving or renaming an input file is
  fine (only the content is compared). A folder holding verdicts but no ``config.json`` is
  refused too (its inputs cannot be told). Full content hashes: sha256 streams at roughly
  1 GB/s here (0.19 s for 200 MB), small next to judging.
- ``verdicts.jsonl``: one record per response, keyed ``"<row key>#<response index>"``
  (:class:`arbiter.datasets.jsonl_sink.JsonlSink`: flushed per record; a rerun after a kill
  skips every response already there and never duplicates one). Fields: ``key``, ``row_key``,
  ``response_idx``, ``data_source``, ``index``, ``response_sha256`` (sha256 of the response text,
  UTF-8; a non-string response: of its JSON), ``ground_truth_sha256`` (of the row's
  ``reward_model.ground_truth``: the JSON text as stored, or canonical JSON of decoded data) and
  the reward's result fields (``score``, ``verdict``, ``passed``, ``total``, ``reason``,
  ``seconds``, ...). A record is reused by a rerun only when both hashes still match its
  response and row; otherwise the response is judged again and the record replaced (defence in
  depth behind ``config.json``: e.g. a folder whose files were edited by hand).
- ``problems.jsonl``: per problem: ``n`` responses, ``c`` correct (score 1.0), ``pass_rate``
  (c / n), ``pass_at_k`` for k = 1..n (:func:`pass_at_k`), verdict counts, ``vacuous`` and
  ``warning`` (below); rewritten from ``verdicts.jsonl`` at the end of every run.
- ``summary.json``: the same by ``data_source`` and overall (mean pass rate and mean pass@k over
  problems), plus counts of invalid rows, vacuous rows (``vacuous_problems``; the first keys in
  ``vacuous_row_keys``), errors and sandbox failures.
- ``errors.jsonl``: this run's problems: completion records that match no row, bad dataset rows,
  responses that hit ``SANDBOX_ERROR`` (those are *not* written to ``verdicts.jsonl``, so a
  rerun judges them again; they are never counted as 0), and a count of stale records replaced
  (kind ``stale_verdicts``).

Rows whose suite is unusable (``INVALID_TASK``: unknown encoding, zero tests, a non-code
``data_source``) get their verdicts written but are left out of pass rates and pass@k, and
counted as ``invalid`` (a pass rate of 0 would be a claim about the model).

Rows whose suite is vacuous (every expected output empty, so a program that prints nothing
passes: the reward's ``warning``, :func:`arbiter.datasets.verl_rows.vacuous_suite_warning`) are
judged and counted like any row, and flagged: ``vacuous: true`` in ``problems.jsonl``,
``vacuous_problems`` in ``summary.json``, a line in ``arbiter score``'s report. Their pass rate
says nothing about the model; fix or drop such rows. (A row with one empty expected output among
others is a legitimate problem and is not flagged.)

Inputs are checked before anything is judged or written (:func:`load_inputs`): an empty, binary,
non-UTF-8 or non-JSON dataset or completions file, a dataset without rows, or completions none of
whose records matches a row raise :class:`ScoringInputError` naming the file (and the line);
single bad completions records are reported in ``errors.jsonl`` with their line number.

The pipeline does not judge by itself: ``scorer`` turns ``(data_source, solution_str,
ground_truth, extra_info)`` items into result dicts in input order, lazily. ``arbiter score``
passes the verl reward's :func:`arbiter.verl.reward.iter_scores`, so a response scores exactly
as it would in training (layers: entry points wire the adapter into the pipeline).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arbiter.datasets.json_lines import decode_json_line
from arbiter.datasets.jsonl_sink import JsonlSink, read_jsonl
from arbiter.datasets.verl_rows import VACUOUS_SUITE, RowError, iter_raw_rows, iter_row_keys, parse_row, row_key
from arbiter.judge import jsonvalues
from arbiter.pipelines.outputs import ensure_out_dir, holds_out_dirs, write_json_atomic

Item = tuple[Any, Any, Any, Any]
Scorer = Callable[[Iterable[Item]], Iterator[Mapping[str, Any]]]

SANDBOX_ERROR = "SANDBOX_ERROR"
INVALID_TASK = "INVALID_TASK"


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator of Chen et al. 2021 (Codex paper, eq. 1):
    ``1 - C(n - c, k) / C(n, k)``, the probability that at least one of k responses drawn
    without replacement from the n sampled is correct, given c of them are.

    Computed in the paper's numerically stable product form
    ``1 - prod_{i = n-c+1}^{n} (1 - k / i)`` (no huge binomials). Raises ``ValueError`` unless
    ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    if not (0 <= c <= n) or not (1 <= k <= n):
        raise ValueError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


@dataclass
class ScoringRun:
    """What one run did (counts of this run; totals are in ``summary``).

    - ``rows``: dataset rows read; ``responses``: responses in the completions that match a row;
    - ``judged``: responses scored in this run; ``skipped_done``: already in ``verdicts.jsonl``
  (for the same response and ground truth); ``stale``: records found for another response or
  ground truth (judged again, replaced);
    - ``sandbox_errors``: responses that hit SANDBOX_ERROR (not written; rerun to retry);
    - ``errors``: other problems (bad records/rows), also in ``errors.jsonl``;
    - ``summary``: the content of ``summary.json``.
    """

    rows: int = 0
    responses: int = 0
    judged: int = 0
    skipped_done: int = 0
    stale: int = 0
    sandbox_errors: int = 0
    errors: int = 0
    summary: dict[str, Any] = field(default_factory=dict)


class _Errors:
    def __init__(self, path: Path):
        self.path = path
        self.count = 0
        self._f = open(path, "w", encoding="utf-8")

    def add(self, kind: str, message: str, **extra: Any) -> None:
        self.count += 1
        self._f.write(json.dumps({"kind": kind, "message": message, **extra}, ensure_ascii=False, default=str) + "\n")
        self._f.flush()

    def close(self) -> None:
        self._f.close()


def _record_key(rec: Mapping[str, Any], by_index: Mapping[str, list[str]], by_position: list[str]) -> str:
    """The row key a completions record names (module docstring); raises ``ValueError``."""
    for name in ("key", "row_key"):
        if isinstance(rec.get(name), str):
            return rec[name]
    if rec.get("data_source") is not None and rec.get("index") is not None:
        return f"{rec['data_source']}:{rec['index']}"
    if rec.get("index") is not None:
        keys = by_index.get(str(rec["index"]), [])
        if len(keys) == 1:
            return keys[0]
        if not keys:
            raise ValueError(f"index {rec['index']!r} matches no dataset row")
        raise ValueError(f"index {rec['index']!r} is shared by rows {keys[:5]}; give 'data_source' or 'key' "
                         f"(data_source-qualified keys, codegen card 2026-08)")
    if isinstance(rec.get("row"), int) and not isinstance(rec.get("row"), bool):
        if 0 <= rec["row"] < len(by_position):
            return by_position[rec["row"]]
        raise ValueError(f"row {rec['row']} is outside the dataset (0..{len(by_position) - 1})")
    raise ValueError("no key: expected 'key', 'data_source' + 'index', 'index' or 'row'")


class ScoringInputError(ValueError):
    """An input that cannot be scored at all, found by :func:`load_inputs` before anything is
    judged or written: a dataset or completions file that is empty, binary, not UTF-8, not JSON
    (Lines) or not Parquet; a dataset without rows or without ``data_source``; a completions file
    none of whose records matches a dataset row. The message names the option and the file, and
    the line where one line decides it (``arbiter score`` exits 2 with it)."""


class InputProblems:
    """Problems with single records found while indexing the inputs (a completions line that is
    not JSON or names no dataset row, a repeated dataset key), kept for ``errors.jsonl``.

    Memory is bounded whatever the number of bad lines: records are spooled to a temporary file
    (in memory up to 1 MiB); ``first`` keeps the first 20 messages for display. ``add`` has the
    signature of the run's error log, so :func:`index_completions` writes to either.
    """

    KEEP = 20

    def __init__(self) -> None:
        self.count = 0
        self.first: list[str] = []
        self._spool = tempfile.SpooledTemporaryFile(max_size=1 << 20, mode="w+", encoding="utf-8")

    def add(self, kind: str, message: str, **extra: Any) -> None:
        self.count += 1
        if len(self.first) < self.KEEP:
            self.first.append(message)
        self._spool.write(json.dumps({"kind": kind, "message": message, **extra}, ensure_ascii=False, default=str) + "\n")

    def copy_to(self, errors: "_Errors") -> None:
        """Add every problem to ``errors`` (the run's ``errors.jsonl``), in order."""
        self._spool.seek(0)
        for line in self._spool:
            rec = json.loads(line)
            errors.add(rec.pop("kind"), rec.pop("message"), **rec)

    def close(self) -> None:
        self._spool.close()


def _first_bytes(path: Path, n: int = 8) -> bytes:
    with open(path, "rb") as f:
        return f.read(n)


def _scan_completions(path: Path, by_index: Mapping[str, list[str]], by_position: list[str], known: set[str],
                      errors: Any) -> tuple[dict[str, list[tuple[int, int]]], int, int, str]:
    """:func:`index_completions` plus the number of non-blank lines, of JSON object records, and
    the first problem's message (``""`` when none)."""
    index: dict[str, list[tuple[int, int]]] = defaultdict(list)
    lines = objects = 0
    first = ""
    with open(path, "rb") as f:
        offset = 0
        for number, line in enumerate(f, 1):
            start, offset = offset, offset + len(line)
            if not line.strip():
                continue
            lines += 1
            try:
                rec = decode_json_line(line, number)
                if not isinstance(rec, dict):
                    raise ValueError(f"expected a JSON object, got {type(rec).__name__}")
                objects += 1
                responses = rec.get("responses")
                if not isinstance(responses, list):
                    raise ValueError("'responses' must be a list of response strings")
                key = _record_key(rec, by_index, by_position)
                if key not in known:
                    raise ValueError(f"row key {key!r} is not in the dataset")
            except ValueError as exc:
                message = f"{path.name} line {number}: {exc}"
                first = first or message
                errors.add("completions", message, line=number)
                continue
            index[key].append((start, len(responses)))  # json.loads reads a leading BOM on bytes
    return dict(index), lines, objects, first


def index_completions(path: Path, by_index: Mapping[str, list[str]], by_position: list[str], known: set[str],
                      errors: Any) -> dict[str, list[tuple[int, int]]]:
    """``row key -> [(byte offset, response count), ...]`` for a completions JSONL file (one
    pass, one line in memory at a time). Bad records go to ``errors`` (anything with
    ``add(kind, message, **extra)``), each naming its line, and are left out."""
    return _scan_completions(path, by_index, by_position, known, errors)[0]


@dataclass
class ScoringInputs:
    """The validated, indexed inputs of a run (:func:`load_inputs`).

    - ``dataset``, ``completions``, ``split``: as given;
    - ``rows``: dataset rows; ``by_position``: the row key of each row position;
      ``duplicate_positions``: positions whose key repeats an earlier row (not scored);
    - ``comp_index``: ``row key -> [(byte offset, response count), ...]`` of the completions;
    - ``records``: completions records matched to a row; ``responses``: their responses;
    - ``problems``: bad completions records and repeated dataset keys (:class:`InputProblems`),
      written to ``errors.jsonl`` when the run starts.
    """

    dataset: Path
    completions: Path
    split: str | None
    rows: int
    by_position: list[str]
    duplicate_positions: set[int]
    comp_index: dict[str, list[tuple[int, int]]]
    records: int
    responses: int
    problems: InputProblems


def load_inputs(dataset: str | os.PathLike, completions: str | os.PathLike, *, split: str | None = None) -> ScoringInputs:
    """Read and check both inputs before anything is judged or written (``arbiter score`` calls
    it before its progress bar starts): the dataset's row keys (streamed, key columns only) and
    the completions index (one pass). Problems with single records (a line that is not JSON, an
    index that names no row, a repeated row key) are collected in ``problems`` with their line
    or position; the run goes on without them.

    Raises :class:`ScoringInputError` (naming the option and file, and the line where one
    decides it) when the dataset cannot be read (unknown format, not Parquet, not UTF-8 or not
    JSON Lines: the file and line), has no rows, or no row with a ``data_source``; or when the
    completions file is empty, is Parquet or gzip instead of JSON Lines, or none of its records
    matches a dataset row (the message quotes the first problem line: not UTF-8, not JSON, an
    index not in the dataset, ...).
    """
    dpath, cpath = Path(dataset), Path(completions)
    problems = InputProblems()
    by_position: list[str] = []
    by_index: dict[str, list[str]] = defaultdict(list)
    seen: set[str] = set()
    duplicate_positions: set[int] = set()
    with_source = 0
    try:
        for position, (ds, idx) in enumerate(iter_row_keys(dpath, split=split)):
            key = row_key(ds, idx, position)
            by_position.append(key)
            with_source += ds is not None and ds != ""
            if key in seen:
                duplicate_positions.add(position)
                problems.add("dataset", f"row key {key!r} repeats at position {position}; only the first row is scored",
                             row=key, position=position)
                continue
            seen.add(key)
            if idx is not None:
                by_index[str(idx)].append(key)
    except (ValueError, OSError) as exc:
        raise ScoringInputError(f"--dataset: {exc}") from None
    if not by_position:
        raise ScoringInputError(f"--dataset {dpath}: no rows (an empty file or split)")
    if not with_source:
        raise ScoringInputError(f"--dataset {dpath}: none of its {len(by_position)} row(s) has a 'data_source'; "
                                f"not a verl dataset")

    if not cpath.is_file():
        raise ScoringInputError(f"--completions {cpath}: not a file")
    head = _first_bytes(cpath)
    if head.startswith(b"PAR1"):
        raise ScoringInputError(f"--completions {cpath}: a Parquet file; completions must be JSON Lines "
                                f"(one {{\"index\" | \"key\", \"responses\": [...]}} object per line)")
    if head.startswith(b"\x1f\x8b"):
        raise ScoringInputError(f"--completions {cpath}: gzip-compressed; decompress it (completions must be "
                                f"plain JSON Lines, read by byte offset)")
    try:
        comp_index, lines, objects, first = _scan_completions(cpath, by_index, by_position, seen, problems)
    except OSError as exc:
        raise ScoringInputError(f"--completions {cpath}: cannot read ({exc})") from None
    if not lines:
        raise ScoringInputError(f"--completions {cpath}: empty (no records)")
    if not comp_index:
        if not objects:
            raise ScoringInputError(
                f"--completions {cpath}: not JSON Lines: none of its {lines} non-blank line(s) is a JSON object "
                f"(first: {first}); expected one {{\"index\" | \"key\", \"responses\": [...]}} "
                f"object per line")
        raise ScoringInputError(
            f"--completions {cpath}: none of its {objects} record(s) matches a row of --dataset {dpath} "
            f"(first: {first})")
    return ScoringInputs(dataset=dpath, completions=cpath, split=split, rows=len(by_position), by_position=by_position,
                         duplicate_positions=duplicate_positions, comp_index=comp_index,
                         records=sum(len(v) for v in comp_index.values()),
                         responses=sum(n for entries in comp_index.values() for _, n in entries), problems=problems)


CONFIG_FILE = "config.json"
VERDICTS_FILE = "verdicts.jsonl"


class ConfigMismatch(ValueError):
    """``out_dir`` holds verdicts made from other inputs (dataset or completions content, split) or
    other verdict-changing options, or verdicts without a ``config.json``; resuming into it would
    keep verdicts for responses they were not made for. The message names what differs; use
    another output folder (or delete that one)."""


def _sha_file(path: Path, h: Any) -> int:
    size = 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    return size


def input_identity(path: str | os.PathLike) -> dict[str, Any]:
    """``{"path", "bytes", "sha256"}`` of an input file, or of a folder (an HF ``datasets``
    folder): every regular file under it in sorted relative-path order, each hashed as its path,
    size and content. Streams (1 MiB at a time). Raises ``OSError`` for a missing path."""
    p = Path(path)
    h = hashlib.sha256()
    if p.is_dir():
        size = 0
        for f in sorted(q for q in p.rglob("*") if q.is_file()):
            rel = f.relative_to(p).as_posix()
            h.update(f"{rel}\0{f.stat().st_size}\0".encode("utf-8", "surrogateescape"))
            size += _sha_file(f, h)
    else:
        size = _sha_file(p, h)
    return {"path": str(p.resolve()), "bytes": size, "sha256": h.hexdigest()}


def config_fingerprint(dataset: str | os.PathLike, completions: str | os.PathLike, split: str | None,
                       options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The content of ``config.json`` (module docstring) for these inputs and options."""
    return {"version": 1, "dataset": input_identity(dataset), "completions": input_identity(completions),
            "split": split, "options": dict(sorted((options or {}).items()))}


def _short(sha: Any) -> str:
    return f"{sha[:12]}..." if isinstance(sha, str) else repr(sha)


def check_config(out_dir: Path, fingerprint: dict[str, Any]) -> None:
    """Record ``fingerprint`` in ``out_dir/config.json`` on the first run; on a rerun, raise
    :class:`ConfigMismatch` naming every difference. Paths and sizes are informative only: the
    inputs are compared by content hash. Touches nothing else in ``out_dir``."""
    path = out_dir / CONFIG_FILE
    verdicts = out_dir / VERDICTS_FILE
    if not path.exists():
        if verdicts.exists() and verdicts.read_bytes().strip():
            raise ConfigMismatch(
                f"{out_dir} holds {VERDICTS_FILE} but no {CONFIG_FILE} (made by an older arbiter, or the file was "
                f"deleted): cannot tell which dataset, completions and options its verdicts were made with; "
                f"use a new --out folder (or delete {out_dir})")
        write_json_atomic(path, fingerprint)
        return
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigMismatch(f"{path} is unreadable ({exc}); use a new --out folder (or delete {out_dir})") from None
    if not isinstance(old, dict):
        old = {}
    diffs: list[str] = []
    if old.get("version") != fingerprint["version"]:
        diffs.append(f"config version ({old.get('version')!r} -> {fingerprint['version']!r})")
    for name in ("dataset", "completions"):
        was = old.get(name) if isinstance(old.get(name), dict) else {}
        now = fingerprint[name]
        if was.get("sha256") != now["sha256"]:
            diffs.append(f"{name} file content (sha256 {_short(was.get('sha256'))} -> {_short(now['sha256'])}; "
                         f"was {was.get('path')}, now {now['path']})")
    if old.get("split") != fingerprint["split"]:
        diffs.append(f"split ({old.get('split')!r} -> {fingerprint['split']!r})")
    o = old.get("options") if isinstance(old.get("options"), dict) else {}
    n = fingerprint["options"]
    diffs += [f"option {k} ({o.get(k)!r} -> {n.get(k)!r})" for k in sorted(set(o) | set(n)) if o.get(k) != n.get(k)]
    if diffs:
        raise ConfigMismatch(
            f"{out_dir} holds verdicts made with other inputs or options; differs: {'; '.join(diffs)}. "
            f"Its verdicts would be kept for responses they were not made for: use a new --out folder "
            f"(or delete {out_dir})")


def text_sha256(value: Any) -> str:
    """sha256 (hex) of a response or ground truth: a string's UTF-8 bytes (lone surrogates kept
    via ``surrogatepass``), anything else as canonical JSON (sorted keys, no spaces)."""
    if not isinstance(value, str):
        value = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def _fingerprint(response_sha: Any, truth_sha: Any) -> bytes | None:
    if not isinstance(response_sha, str) or not isinstance(truth_sha, str):
        return None
    return hashlib.blake2b(f"{response_sha}:{truth_sha}".encode(), digest_size=16).digest()


def _load_done(path: Path) -> tuple[dict[str, bytes | None], bool]:
    """``key -> fingerprint of (response_sha256, ground_truth_sha256)`` of the records in
    ``verdicts.jsonl`` (the last record wins; ``None`` for a record without hashes) and whether a
    key occurs more than once (a run killed after replacing a stale record)."""
    done: dict[str, bytes | None] = {}
    duplicates = False
    if not path.exists():
        return done, duplicates
    for rec in read_jsonl(path):
        key = str(rec.get("key"))
        duplicates = duplicates or key in done
        done[key] = _fingerprint(rec.get("response_sha256"), rec.get("ground_truth_sha256"))
    return done, duplicates


def _rewrite_verdicts(path: Path, keep: Callable[[int, str, dict[str, Any]], bool]) -> None:
    """Rewrite ``verdicts.jsonl`` keeping the records for which ``keep(line number, key, record)``
    holds (streamed to a temporary file, then renamed over it)."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out, open(path, encoding="utf-8") as f:
            for number, line in enumerate(f):
                if not line.strip():
                    continue
                rec = json.loads(line)
                if keep(number, str(rec.get("key")), rec):
                    out.write(line if line.endswith("\n") else line + "\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _drop_earlier_duplicates(path: Path) -> None:
    last: dict[str, int] = {}
    for number, rec in enumerate(_numbered(path)):
        if rec is not None:
            last[str(rec.get("key"))] = number
    _rewrite_verdicts(path, lambda number, key, rec: last.get(key) == number)


def _numbered(path: Path) -> Iterator[dict[str, Any] | None]:
    """The records of a JSONL file by physical line (``None`` for a blank line)."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            yield json.loads(line) if line.strip() else None


def _read_responses(f, entries: list[tuple[int, int]]) -> list[Any]:
    out: list[Any] = []
    for offset, _ in entries:
        f.seek(offset)
        out.extend(jsonvalues.loads(f.readline())["responses"])
    return out


@holds_out_dirs
def score_completions(dataset: str | os.PathLike, completions: str | os.PathLike, out_dir: str | os.PathLike, *,
                      scorer: Scorer, split: str | None = None, options: Mapping[str, Any] | None = None,
                      progress: Callable[[int, int], None] | None = None,
                      inputs: ScoringInputs | None = None) -> ScoringRun:
    """Score every response in ``completions`` against its row of ``dataset``; write the outputs
    of the module docstring to ``out_dir``; resumable.

    - ``scorer``: items ``(data_source, solution_str, ground_truth, extra_info)`` -> result dicts
      with at least ``score`` and ``verdict``, lazily and in input order (e.g.
      ``functools.partial(arbiter.verl.reward.iter_scores, opts=..., raise_errors=False)``).
    - ``split``: the split of an HF ``DatasetDict`` folder.
    - ``options``: every option of ``scorer`` that can change a verdict (JSON values), recorded
      in ``config.json``; a rerun with other values is refused. ``arbiter score`` passes the
      :class:`~arbiter.verl.reward.RewardOptions` fields except ``workers``, ``on_invalid`` and
      ``on_sandbox_error``.
    - ``progress(done, total)``: called as responses are finished (``done`` includes responses
      already scored by an earlier run); first called after every check below passed.
    - ``inputs``: the result of :func:`load_inputs` for these ``dataset``/``completions``/``split``
      when the caller already checked them (``arbiter score`` does, before its progress bar);
      else they are loaded here.

    Returns a :class:`ScoringRun`. Raises :class:`ScoringInputError` (a ``ValueError``) for inputs
    that cannot be scored at all (:func:`load_inputs`; nothing is created then),
    :class:`ConfigMismatch` (a ``ValueError``) when ``out_dir`` holds verdicts of other inputs or
    options (nothing in it is changed then), ``OSError`` for an input that cannot be read; bad
    rows and records are reported in ``errors.jsonl`` and the run goes on.
    """
    ins = inputs if inputs is not None else load_inputs(dataset, completions, split=split)
    out = ensure_out_dir(out_dir)  # created and locked: one run per folder (OutputDirBusy)
    check_config(out, config_fingerprint(dataset, completions, split, options))
    run = ScoringRun()
    errors = _Errors(out / "errors.jsonl")
    try:
        ins.problems.copy_to(errors)
        ins.problems.close()
        by_position = ins.by_position
        duplicate_positions = ins.duplicate_positions
        comp_index = ins.comp_index
        total = ins.responses
        run.responses = total

        verdicts_path = out / VERDICTS_FILE
        JsonlSink(verdicts_path, key="key").close()  # repairs a line torn by a kill
        done_fp, duplicates = _load_done(verdicts_path)
        if duplicates:  # killed after appending a replacement for a stale record: the last one wins
            _drop_earlier_duplicates(verdicts_path)
        stale: dict[str, bytes | None] = {}  # key -> fingerprint of the response/ground truth judged now
        with JsonlSink(verdicts_path, key="key") as sink:
            run.skipped_done = sum(1 for k in done_fp if k.rsplit("#", 1)[0] in comp_index)
            if progress is not None:
                progress(run.skipped_done, total)
            # (row key, i, data_source, index, response sha256, ground truth sha256), in item order
            pending: deque[tuple[str, int, Any, Any, str, str]] = deque()

            def items() -> Iterator[Item]:
                with open(completions, "rb") as cf:
                    for position, raw in enumerate(iter_raw_rows(dataset, split=split, batch_size=16)):
                        run.rows += 1
                        if position in duplicate_positions:
                            continue
                        key = by_position[position]
                        entries = comp_index.get(key)
                        if not entries:
                            continue
                        try:
                            row = parse_row(raw, position)
                        except RowError as exc:
                            errors.add("dataset", str(exc), row=key, position=position)
                            continue
                        responses = _read_responses(cf, entries)
                        truth_sha = text_sha256(row.ground_truth)
                        for i, response in enumerate(responses):
                            rkey = f"{key}#{i}"
                            response_sha = text_sha256(response)
                            if rkey in done_fp:
                                fp = _fingerprint(response_sha, truth_sha)
                                if done_fp[rkey] == fp:
                                    continue
                                # made for another response or ground truth: judge again, replace
                                stale[rkey] = fp
                                sink.keys.discard(rkey)
                                run.stale += 1
                                run.skipped_done -= 1
                            pending.append((key, i, row.data_source, row.index, response_sha, truth_sha))
                            yield row.data_source, response, row.ground_truth, row.extra_info

            processed = 0
            for result in scorer(items()):
                key, i, ds, idx, response_sha, truth_sha = pending.popleft()
                if result.get("verdict") == SANDBOX_ERROR:
                    run.sandbox_errors += 1
                    errors.add("sandbox_error", str(result.get("reason", "")), row=key, response_idx=i)
                else:
                    sink.write({"key": f"{key}#{i}", "row_key": key, "response_idx": i, "data_source": ds,
                                "index": idx, "response_sha256": response_sha, "ground_truth_sha256": truth_sha,
                                **dict(result)})
                    run.judged += 1
                processed += 1
                if progress is not None:
                    progress(run.skipped_done + processed, total)
        if stale:  # drop the stale records (their replacements, when judged, carry the new hashes)
            _rewrite_verdicts(verdicts_path, lambda number, key, rec: key not in stale or _fingerprint(
                rec.get("response_sha256"), rec.get("ground_truth_sha256")) == stale[key])
        if stale:
            errors.add("stale_verdicts", f"{len(stale)} record(s) in {VERDICTS_FILE} were made for another response or "
                       f"ground truth; judged again and replaced", count=len(stale))
        run.summary = summarize(out, comp_index.keys())
        run.summary["sandbox_errors_this_run"] = run.sandbox_errors
        run.summary["errors_this_run"] = errors.count
        (out / "summary.json").write_text(json.dumps(run.summary, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    finally:
        run.errors = errors.count
        errors.close()
    return run


@dataclass
class _Problem:
    data_source: str
    index: Any
    n: int = 0
    c: int = 0
    invalid: bool = False
    warning: str = ""
    verdicts: Counter = field(default_factory=Counter)

    @property
    def vacuous(self) -> bool:
        return self.warning.startswith(VACUOUS_SUITE)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _group_stats(problems: list[_Problem]) -> dict[str, Any]:
    valid = [p for p in problems if not p.invalid]
    verdicts: Counter = Counter()
    for p in problems:
        verdicts.update(p.verdicts)
    max_n = max((p.n for p in valid), default=0)
    pass_k: dict[str, float] = {}
    problems_k: dict[str, int] = {}
    for k in range(1, max_n + 1):
        vals = [pass_at_k(p.n, p.c, k) for p in valid if p.n >= k]
        if vals:
            pass_k[str(k)] = sum(vals) / len(vals)
            problems_k[str(k)] = len(vals)
    return {
        "problems": len(valid),
        "invalid_problems": len(problems) - len(valid),
        "vacuous_problems": sum(1 for p in valid if p.vacuous),
        "responses": sum(p.n for p in problems),
        "correct": sum(p.c for p in valid),
        "mean_pass_rate": _mean([p.c / p.n for p in valid if p.n]),
        "solved_at_least_once": sum(1 for p in valid if p.c > 0),
        "pass_at_k": pass_k,
        "problems_at_k": problems_k,
        "verdicts": dict(sorted(verdicts.items())),
    }


#: How many row keys of vacuous suites ``summary.json`` lists (all are in ``problems.jsonl``).
VACUOUS_KEYS_SHOWN = 20


def summarize(out_dir: str | os.PathLike, keys: Iterable[str] | None = None) -> dict[str, Any]:
    """Rebuild ``problems.jsonl`` from ``verdicts.jsonl`` (streamed) and return the summary
    (overall and by ``data_source``). ``keys``: only these row keys (default: all).

    A response counts as correct when its ``score`` is 1.0 (all-or-nothing; in parity mode a
    partial score is not a pass, and a ``SKIPPED`` verdict with score 1.0, first 10 cases passed
    and the rest not run, is one, as in prime_code). INVALID_TASK rows are counted apart (module
    docstring).
    """
    out = Path(out_dir)
    wanted = set(keys) if keys is not None else None
    problems: dict[str, _Problem] = {}
    for rec in read_jsonl(out / "verdicts.jsonl"):
        key = rec["row_key"]
        if wanted is not None and key not in wanted:
            continue
        p = problems.get(key)
        if p is None:
            p = problems[key] = _Problem(rec.get("data_source", "?"), rec.get("index"))
        p.n += 1
        p.c += 1 if rec.get("score") == 1.0 else 0
        p.verdicts[rec.get("verdict", "?")] += 1
        if rec.get("verdict") == INVALID_TASK:
            p.invalid = True
        if not p.warning and isinstance(rec.get("warning"), str):
            p.warning = rec["warning"]
    tmp = out / "problems.jsonl.partial"
    with open(tmp, "w", encoding="utf-8") as f:
        for key, p in problems.items():
            f.write(json.dumps({
                "row_key": key, "data_source": p.data_source, "index": p.index, "n": p.n, "c": p.c,
                "invalid": p.invalid, "vacuous": p.vacuous, "warning": p.warning,
                "pass_rate": None if p.invalid else p.c / p.n,
                "pass_at_k": {} if p.invalid else {str(k): pass_at_k(p.n, p.c, k) for k in range(1, p.n + 1)},
                "verdicts": dict(p.verdicts),
            }, ensure_ascii=False, default=str) + "\n")
    os.replace(tmp, out / "problems.jsonl")
    by_source: dict[str, list[_Problem]] = defaultdict(list)
    for p in problems.values():
        by_source[str(p.data_source)].append(p)
    return {
        "overall": _group_stats(list(problems.values())),
        "by_data_source": {ds: _group_stats(ps) for ds, ps in sorted(by_source.items())},
        "vacuous_row_keys": [key for key, p in problems.items() if p.vacuous and not p.invalid][:VACUOUS_KEYS_SHOWN],
    }


__all__ = ["ConfigMismatch", "InputProblems", "ScoringInputError", "ScoringInputs", "ScoringRun", "Scorer",
           "check_config", "config_fingerprint", "index_completions", "load_inputs",
           "input_identity", "pass_at_k", "score_completions", "summarize", "text_sha256"]
