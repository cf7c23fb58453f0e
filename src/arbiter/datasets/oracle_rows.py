"""Oracle seed rows and oracle return rows: loading, JSON Schema validation, typed models.

Source of the rules: ``spec/oracle_seed_card.txt`` (the "Dummy PIE C++ Oracle Seed" card) and its two
JSON Schemas, shipped in this package as ``arbiter/schemas/oracle_seed.schema.json`` and
``arbiter/schemas/oracle_return.schema.json`` (copies of ``seed/schema/``). Issue 5 adds the bad-input
rules: one bad row never stops a batch, and each rejection names the row and the field.

Inputs are JSONL (one object per line) or Parquet (pyarrow; detected by the ``.parquet`` / ``.pq``
suffix or the ``PAR1`` magic bytes). Every row is checked in this order, and the first failing
stage rejects it (a :class:`Rejection`, never an exception):

1. ``TOO_LARGE``: a JSONL line longer than ``max_line_bytes`` (default :data:`MAX_LINE_BYTES`,
   16 MiB) is skipped without being parsed or held in memory (it is read in 1 MiB chunks).
2. ``NOT_UTF8`` (binary junk), ``MALFORMED_JSON`` (with line and column), ``DUPLICATE_JSON_KEY``
   (``{"task_id": "a", "task_id": "b"}``: parsers disagree on which one wins, so it is refused), and
   ``NON_FINITE_NUMBER`` (``NaN`` / ``Infinity`` are not JSON, ``NaN`` slips through ``minimum``, and
   ``1e400`` would parse to infinity).
3. ``SCHEMA``: JSON Schema Draft 2020-12 validation; every violation is reported with its JSON path
   (``$.compile.timeout_sec``, ``$.messages[2].role``) and the validator's message.
4. ``ANSWER_TOO_LARGE`` (return rows): an assistant message whose content is longer than
   ``max_answer_bytes`` (default :data:`MAX_ANSWER_BYTES`, 1 MiB of UTF-8) is rejected. The card does
   not bound the answer; 1 MiB is far above any real C++ solution plus reasoning (the seed answers
   are ~1 KiB) and keeps one row from costing the verifier unbounded memory and time. A 10 MB
   answer is below the line limit, so it is parsed (a few tens of MB, once) and rejected here
   with the path of the message; anything above the line limit is never parsed at all.
5. ``DUPLICATE_TASK_ID`` (seed rows): the first row with a ``task_id`` is kept; every later one is
   rejected, naming the line of the first. ``UNKNOWN_TASK_ID`` (return rows, when seeds are given):
   the ``task_id`` is not in the seeds. ``SEED_REJECTED`` (return rows): the ``task_id`` is the id of
   a seed row that was itself rejected (a malformed or schema-violating seed): "seed row rejected",
   naming that seed row and its reason, never ``UNKNOWN_TASK_ID``. For a seed line that is not valid
   JSON, the id is read from its text (``"task_id": "..."``) when it can be, for this attribution
   only. ``DUPLICATE_ROW`` (return rows): a row identical in ``task_id`` and ``messages`` to an
   earlier one is rejected, naming the earlier line.

Several return rows for one ``task_id`` are allowed (several samples per task). Each gets the stable
key :attr:`ReturnRow.key` = ``task_id + ":" + sha256(canonical JSON of messages)[:16]``. The whole
conversation is hashed, not only the assistant content, so two rows with the same answer but
different (e.g. altered) prompts are still different rows.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Generic, Iterable, Iterator, Literal, Mapping, TypeVar, Union

from pydantic import BaseModel, ConfigDict, PrivateAttr

from arbiter.strenum import StrEnum

MiB = 1024 * 1024

#: Largest accepted assistant message content, bytes of UTF-8 (a documented arbiter decision; the
#: card sets no bound).
MAX_ANSWER_BYTES = 1 * MiB
#: Largest accepted JSONL line, bytes; longer lines are skipped unparsed.
MAX_LINE_BYTES = 16 * MiB
#: Largest accepted hidden-tests file given as one JSON object, bytes (JSONL has no total bound).
MAX_HIDDEN_JSON_BYTES = 512 * MiB

SEED_SCHEMA_NAME = "oracle_seed.schema.json"
RETURN_SCHEMA_NAME = "oracle_return.schema.json"

_CHUNK = 1 * MiB


# --------------------------------------------------------------------------------------------------
# Rejections


class RejectCode(StrEnum):
    """Why a row was not loaded. See the module docstring for the order of the checks."""

    TOO_LARGE = "TOO_LARGE"
    NOT_UTF8 = "NOT_UTF8"
    MALFORMED_JSON = "MALFORMED_JSON"
    DUPLICATE_JSON_KEY = "DUPLICATE_JSON_KEY"
    NON_FINITE_NUMBER = "NON_FINITE_NUMBER"
    SCHEMA = "SCHEMA"
    ANSWER_TOO_LARGE = "ANSWER_TOO_LARGE"
    DUPLICATE_TASK_ID = "DUPLICATE_TASK_ID"
    UNKNOWN_TASK_ID = "UNKNOWN_TASK_ID"
    SEED_REJECTED = "SEED_REJECTED"
    DUPLICATE_ROW = "DUPLICATE_ROW"
    UNREADABLE_FILE = "UNREADABLE_FILE"


@dataclass(frozen=True)
class RowIssue:
    """One reason a row was rejected: a code, the JSON path of the field (``$`` for the whole row)
    and a message a human can act on."""

    code: RejectCode
    path: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code.value, "path": self.path, "message": self.message}


@dataclass
class Rejection:
    """A row that was not loaded.

    - ``source``: the file path; ``line``: 1-based line of a JSONL file, or 1-based row number of a
      Parquet file (``None`` when the whole file is unreadable).
    - ``kind``: ``seed``, ``return`` or ``hidden``.
    - ``task_id``: the row's ``task_id`` when it could be read, else ``None``.
    - ``issues``: every reason found at the failing stage (all schema violations, for instance).
    """

    source: str
    line: int | None
    kind: str
    task_id: str | None
    issues: list[RowIssue]

    @property
    def code(self) -> RejectCode:
        """The first issue's code."""
        return self.issues[0].code

    @property
    def path(self) -> str:
        """The first issue's JSON path."""
        return self.issues[0].path

    @property
    def message(self) -> str:
        """One line naming the row, the field and the reason (first issue, plus a count of others)."""
        where = f"{self.source}:{self.line}" if self.line is not None else self.source
        tid = f" (task_id {self.task_id!r})" if self.task_id else ""
        first = self.issues[0]
        more = f" (+{len(self.issues) - 1} more)" if len(self.issues) > 1 else ""
        return f"{where}{tid}: {first.code.value} at {first.path}: {first.message}{more}"

    @property
    def key(self) -> str:
        """A stable key for resumable outputs: ``kind:source:line``."""
        return f"{self.kind}:{self.source}:{self.line}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (for ``rejected.jsonl``)."""
        return {
            "kind": self.kind,
            "source": self.source,
            "line": self.line,
            "task_id": self.task_id,
            "stage": "load",
            "reasons": [i.to_dict() for i in self.issues],
            "message": self.message,
        }

    def __str__(self) -> str:
        return self.message


# --------------------------------------------------------------------------------------------------
# Models


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class Message(_Model):
    """One chat message. Seed rows use ``system`` / ``user``; return rows add ``assistant``."""

    role: Literal["system", "user", "assistant"]
    content: str


class TestCaseIO(_Model):
    """One stdin/stdout case (the ``visible_tests`` item shape; hidden tests use it too)."""

    __test__ = False  # not a pytest class

    name: str
    stdin: str
    stdout: str


class PublicChecker(_Model):
    """How outputs are compared. The card's only type is ``exact_stdout``;
    ``strip_trailing_whitespace`` (default False when absent) trims trailing whitespace first."""

    type: Literal["exact_stdout"]
    strip_trailing_whitespace: bool = False


class CompileSpecRow(_Model):
    """The row's compile step: ``command`` (e.g. ``g++ -std=c++20 -O2 -pipe main.cpp -o main``) and
    ``timeout_sec`` (seconds, > 0)."""

    command: str
    timeout_sec: float


class RunSpecRow(_Model):
    """The row's run limits: ``timeout_sec`` (seconds, > 0) and ``memory_mb`` (MiB, >= 1)."""

    timeout_sec: float
    memory_mb: int


class Constraints(_Model):
    """The assistant output contract; ``assistant_format`` is always
    ``one_reasoning_block_then_one_cpp_fence`` (seed schema)."""

    assistant_format: Literal["one_reasoning_block_then_one_cpp_fence"]
    must_preserve_io: bool | None = None
    must_compile: bool | None = None
    must_pass_visible_tests: bool | None = None
    target: str | None = None


@dataclass(frozen=True)
class RowOrigin:
    """Where a loaded row came from: file path and 1-based line (JSONL) or row number (Parquet)."""

    source: str
    line: int

    def __str__(self) -> str:
        return f"{self.source}:{self.line}"


class SeedRow(_Model):
    """One validated oracle seed row (card: "Each line is one prompt-only C++ optimization task").

    ``messages`` is the canonical chat input (system/user only); ``source_code`` is the correct but
    slow program; ``visible_tests`` has at least one case. Unknown extra fields are kept.
    """

    task_id: str
    source: str
    split: str
    language: Literal["cpp20"]
    prompt_template_id: str
    source_code: str
    visible_tests: list[TestCaseIO]
    public_checker: PublicChecker
    compile: CompileSpecRow
    run: RunSpecRow
    constraints: Constraints
    metadata: dict[str, Any]
    messages: list[Message]
    prompt: str

    _origin: RowOrigin | None = PrivateAttr(default=None)

    @property
    def origin(self) -> RowOrigin | None:
        """Where the row was loaded from (``None`` when built in code)."""
        return self._origin


class Verification(_Model):
    """The oracle writer's verification object. A claim, never trusted (card: "It should be treated
    as a claim from the oracle writer"). ``runtime_ms`` in milliseconds; ``score`` in [0, 1]."""

    compile_ok: bool
    all_visible_tests_pass: bool
    all_hidden_tests_pass: bool | None
    score: float
    runtime_ms: float | None
    notes: str


class ReturnRow(_Model):
    """One validated oracle return row: the seed ``messages`` plus the assistant answer, and the
    writer's ``verification`` claim. ``sample_index`` and ``model`` are set by arbiter's own writer
    (:mod:`arbiter.pipelines.oracle.writer`); other writers may omit them. Extra fields are kept.
    """

    task_id: str
    messages: list[Message]
    verification: Verification
    sample_index: int | None = None
    model: str | None = None

    _origin: RowOrigin | None = PrivateAttr(default=None)
    _raw: dict[str, Any] | None = PrivateAttr(default=None)

    @property
    def origin(self) -> RowOrigin | None:
        """Where the row was loaded from (``None`` when built in code)."""
        return self._origin

    @property
    def raw(self) -> dict[str, Any]:
        """The row exactly as read (the JSON object), for outputs that keep the original."""
        return self._raw if self._raw is not None else self.model_dump(mode="json", exclude_unset=True)

    @property
    def key(self) -> str:
        """Stable identity: ``task_id:sha256(canonical messages JSON)[:16]`` (see module docstring)."""
        return return_row_key(self.task_id, [m.model_dump(mode="json") for m in self.messages])

    @property
    def answer(self) -> str | None:
        """The content of the last message when it is an assistant message, else ``None``."""
        if self.messages and self.messages[-1].role == "assistant":
            return self.messages[-1].content
        return None


def return_row_key(task_id: str, messages: list[Mapping[str, Any]]) -> str:
    """The stable key of a return row: ``f"{task_id}:{sha256(canonical_json(messages))[:16]}"``.

    ``messages`` is a list of JSON objects (dicts); canonical JSON sorts keys, uses no spaces and
    keeps non-ASCII characters as UTF-8.
    """
    canon = json.dumps(list(messages), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return f"{task_id}:{hashlib.sha256(canon.encode('utf-8')).hexdigest()[:16]}"


# --------------------------------------------------------------------------------------------------
# Schemas


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict[str, Any]:
    """The packaged JSON Schema ``name`` (``oracle_seed.schema.json`` or ``oracle_return.schema.json``).

    Raises ``FileNotFoundError`` for an unknown name.
    """
    text = resources.files("arbiter").joinpath("schemas", name).read_text(encoding="utf-8")
    return json.loads(text)


@lru_cache(maxsize=None)
def _validator(name: str):
    from jsonschema import Draft202012Validator

    schema = load_schema(name)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def json_path(parts: Iterable[Any]) -> str:
    """``["messages", 2, "role"]`` -> ``$.messages[2].role``; keys that are not identifiers are
    quoted: ``$["a b"]``."""
    out = "$"
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif isinstance(p, str) and p.isidentifier():
            out += f".{p}"
        else:
            out += f"[{json.dumps(p, ensure_ascii=False)}]"
    return out


def _short(value: Any, limit: int = 80) -> str:
    s = json.dumps(value, ensure_ascii=False, default=str)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def schema_issues(row: Any, schema_name: str) -> list[RowIssue]:
    """Every JSON Schema (Draft 2020-12) violation of ``row`` against the packaged schema
    ``schema_name``, sorted by path; empty when valid. A ``required`` violation points at the object
    missing the key and names it; other messages quote at most 80 characters of the bad value."""
    issues = []
    for err in _validator(schema_name).iter_errors(row):
        if err.validator == "required":
            msg = err.message.split(" is a required property")[0] + " is a required property (missing)"
        elif err.validator in ("type", "enum", "const", "minimum", "maximum", "exclusiveMinimum",
                               "minLength", "minItems"):
            msg = f"{_short(err.instance)} violates {err.validator}={_short(err.validator_value)}"
        else:
            msg = err.message if len(err.message) <= 200 else err.message[:197] + "..."
        issues.append(RowIssue(RejectCode.SCHEMA, json_path(err.absolute_path), msg))
    issues.sort(key=lambda i: (i.path, i.message))
    return issues


# --------------------------------------------------------------------------------------------------
# Raw record reading (JSONL / Parquet)


class _DuplicateKey(ValueError):
    pass


class _NonFinite(ValueError):
    pass


def _pairs_no_dup(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d: dict[str, Any] = {}
    for k, v in pairs:
        if k in d:
            raise _DuplicateKey(k)
        d[k] = v
    return d


def _reject_constant(name: str) -> Any:
    raise _NonFinite(name)


def _finite_float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):  # 1e400 parses to inf
        raise _NonFinite(text)
    return x


def _parse_json_strict(text: str) -> Any:
    """``json.loads`` refusing duplicate keys, NaN/Infinity and overflowing floats such as ``1e400``
    (raises the private errors above or ``json.JSONDecodeError``)."""
    return json.loads(text, object_pairs_hook=_pairs_no_dup, parse_constant=_reject_constant,
                      parse_float=_finite_float)


@dataclass
class _RawRecord:
    line: int
    value: Any = None
    issue: RowIssue | None = None
    task_id_hint: str | None = None  # read from the text of a line that is not valid JSON


_TASK_ID_TEXT = re.compile(r'"task_id"\s*:\s*"((?:[^"\\]|\\.)*)"')


def _task_id_hint(text: str) -> str | None:
    """The ``task_id`` written in the text of a line that did not parse (first ``"task_id": "..."``)."""
    m = _TASK_ID_TEXT.search(text)
    if m is None:
        return None
    try:
        value = json.loads(f'"{m.group(1)}"')
    except ValueError:
        return None
    return value if isinstance(value, str) and value else None


def _is_parquet(path: Path) -> bool:
    if path.suffix.lower() in (".parquet", ".pq"):
        return True
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PAR1"
    except OSError:
        return False


def _iter_jsonl_lines(path: Path, max_line_bytes: int) -> Iterator[tuple[int, bytes | None, int]]:
    """Yield ``(line_no, line_bytes or None when too long, length)`` for every non-blank line.

    Memory stays bounded by ``max_line_bytes`` + 1 MiB whatever the file holds.
    """
    with open(path, "rb") as f:
        line_no = 0
        while True:
            chunk = f.readline(max_line_bytes + 1)
            if not chunk:
                return
            line_no += 1
            if len(chunk) > max_line_bytes and not chunk.endswith(b"\n"):
                length = len(chunk)
                while True:  # skip the rest of the line in bounded chunks
                    more = f.readline(_CHUNK)
                    length += len(more)
                    if not more or more.endswith(b"\n"):
                        break
                yield line_no, None, length
                continue
            if chunk.strip():
                yield line_no, chunk, len(chunk)


def _jsonl_records(path: Path, max_line_bytes: int) -> Iterator[_RawRecord]:
    for line_no, data, length in _iter_jsonl_lines(path, max_line_bytes):
        if data is None:
            yield _RawRecord(line_no, issue=RowIssue(
                RejectCode.TOO_LARGE, "$",
                f"line is {length} bytes, above the {max_line_bytes}-byte row limit; skipped unparsed "
                f"(an answer may hold at most {MAX_ANSWER_BYTES} bytes)"))
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            yield _RawRecord(line_no, issue=RowIssue(
                RejectCode.NOT_UTF8, "$", f"not UTF-8 text (binary data?): invalid byte at offset {e.start}"))
            continue
        if text.startswith("\ufeff"):
            text = text[1:]  # a UTF-8 byte-order mark on the first line is not an error
        try:
            value = _parse_json_strict(text)
        except _DuplicateKey as e:
            yield _RawRecord(line_no, issue=RowIssue(
                RejectCode.DUPLICATE_JSON_KEY, "$", f"key {str(e)!r} appears twice in one object"),
                task_id_hint=_task_id_hint(text))
            continue
        except _NonFinite as e:
            yield _RawRecord(line_no, issue=RowIssue(
                RejectCode.NON_FINITE_NUMBER, "$", f"{e} is not a JSON number"), task_id_hint=_task_id_hint(text))
            continue
        except (json.JSONDecodeError, RecursionError) as e:
            detail = f"{e.msg} at column {e.colno}" if isinstance(e, json.JSONDecodeError) else "nested too deeply"
            yield _RawRecord(line_no, issue=RowIssue(RejectCode.MALFORMED_JSON, "$", f"malformed JSON: {detail}"),
                             task_id_hint=_task_id_hint(text))
            continue
        yield _RawRecord(line_no, value=value)


def _schema_allows_null(schema: Mapping[str, Any] | None) -> bool:
    if not schema:
        return True
    t = schema.get("type")
    if t is None:
        return ("const" not in schema and "enum" not in schema) or None in schema.get("enum", [])
    return t == "null" or (isinstance(t, list) and "null" in t)


def _prune_nulls(value: Any, schema: Mapping[str, Any] | None) -> Any:
    """Parquet columns are the union of all rows' keys, so a key absent from one row reads back as
    ``None``. Drop such ``None`` values where the schema does not allow null, so that the row looks
    as it was written (a missing *required* key then fails validation as missing)."""
    if isinstance(value, dict):
        props = (schema or {}).get("properties", {})
        out = {}
        for k, v in value.items():
            sub = props.get(k)
            if v is None and not _schema_allows_null(sub):
                continue
            out[k] = _prune_nulls(v, sub)
        return out
    if isinstance(value, list):
        items = (schema or {}).get("items")
        return [_prune_nulls(v, items) for v in value]
    return value


def _parquet_records(path: Path, schema_name: str | None, batch_rows: int = 256) -> Iterator[_RawRecord]:
    import pyarrow.parquet as pq

    schema = load_schema(schema_name) if schema_name else None
    pf = pq.ParquetFile(path)
    row_no = 0
    for batch in pf.iter_batches(batch_size=batch_rows):
        for rec in batch.to_pylist():
            row_no += 1
            yield _RawRecord(row_no, value=_prune_nulls(rec, schema))


def _records(path: Path, *, max_line_bytes: int, schema_name: str | None) -> Iterator[_RawRecord]:
    if _is_parquet(path):
        return _parquet_records(path, schema_name)
    return _jsonl_records(path, max_line_bytes)


# --------------------------------------------------------------------------------------------------
# Loading seeds and returns


T = TypeVar("T")


@dataclass
class LoadResult(Generic[T]):
    """Rows that loaded (in file order) and rows that did not (in file order)."""

    rows: list[T] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)

    @property
    def by_id(self) -> dict[str, T]:
        """Rows by ``task_id`` (meaningful for seeds, where ids are unique)."""
        return {r.task_id: r for r in self.rows}  # type: ignore[attr-defined]


def _task_id_of(value: Any) -> str | None:
    if isinstance(value, dict) and isinstance(value.get("task_id"), str):
        return value["task_id"]
    return None


def _unreadable(path: Path, kind: str, exc: Exception) -> Rejection:
    return Rejection(str(path), None, kind, None,
                     [RowIssue(RejectCode.UNREADABLE_FILE, "$", f"cannot read the file: {exc}")])


M = TypeVar("M", bound=BaseModel)


def _build(model: type[M], value: Any) -> M | RowIssue:
    """Build the pydantic model of a schema-valid row; a disagreement between the model and the
    schema becomes a SCHEMA issue instead of an exception."""
    from pydantic import ValidationError

    try:
        return model.model_validate(value)
    except ValidationError as e:
        err = e.errors()[0]
        return RowIssue(RejectCode.SCHEMA, json_path(err.get("loc", ())), str(err.get("msg", e)))


def load_seeds(path: str | os.PathLike, *, max_line_bytes: int = MAX_LINE_BYTES) -> LoadResult[SeedRow]:
    """Load and validate oracle seed rows from a JSONL or Parquet file.

    Returns a :class:`LoadResult` of :class:`SeedRow` (each with ``origin`` set) and
    :class:`Rejection` s: unreadable lines, schema violations (``oracle_seed.schema.json``), and
    ``DUPLICATE_TASK_ID`` for every row whose ``task_id`` already appeared (the first row is kept;
    the rejection names its line). A line that is not valid JSON gets the ``task_id`` written in its
    text as its rejection's ``task_id`` when one can be read (so that returns for it can say "seed
    row rejected", :func:`iter_returns`). A file that cannot be opened at all gives one
    ``UNREADABLE_FILE`` rejection. Raises nothing for bad content.
    """
    p = Path(path)
    out: LoadResult[SeedRow] = LoadResult()
    first_line: dict[str, int] = {}
    try:
        for rec in _records(p, max_line_bytes=max_line_bytes, schema_name=SEED_SCHEMA_NAME):
            tid = _task_id_of(rec.value)
            if rec.issue is not None:
                out.rejections.append(Rejection(str(p), rec.line, "seed", rec.task_id_hint, [rec.issue]))
                continue
            issues = schema_issues(rec.value, SEED_SCHEMA_NAME)
            if issues:
                out.rejections.append(Rejection(str(p), rec.line, "seed", tid, issues))
                continue
            assert tid is not None
            if tid in first_line:
                out.rejections.append(Rejection(str(p), rec.line, "seed", tid, [RowIssue(
                    RejectCode.DUPLICATE_TASK_ID, "$.task_id",
                    f"task_id {tid!r} already defined at line {first_line[tid]}; this row is ignored")]))
                continue
            row = _build(SeedRow, rec.value)
            if isinstance(row, RowIssue):
                out.rejections.append(Rejection(str(p), rec.line, "seed", tid, [row]))
                continue
            row._origin = RowOrigin(str(p), rec.line)
            first_line[tid] = rec.line
            out.rows.append(row)
    except (OSError, ValueError) as e:  # unreadable file / corrupt Parquet footer
        out.rejections.append(_unreadable(p, "seed", e))
    return out


def answer_size_issues(value: Mapping[str, Any], max_answer_bytes: int = MAX_ANSWER_BYTES) -> list[RowIssue]:
    """``ANSWER_TOO_LARGE`` for each assistant message of a (schema-valid) return row whose content
    is longer than ``max_answer_bytes`` bytes of UTF-8."""
    issues = []
    for i, m in enumerate(value.get("messages", [])):
        if m.get("role") == "assistant":
            content = m.get("content", "")
            # a str of n chars is at most 4n UTF-8 bytes: skip the encode when it cannot exceed
            n = len(content) if 4 * len(content) <= max_answer_bytes else len(content.encode("utf-8", "surrogatepass"))
            if n > max_answer_bytes:
                issues.append(RowIssue(RejectCode.ANSWER_TOO_LARGE, f"$.messages[{i}].content",
                                       f"assistant content is {n} bytes, above the {max_answer_bytes}-byte limit"))
    return issues


def iter_returns(
    path: str | os.PathLike,
    seeds: Mapping[str, SeedRow] | Iterable[SeedRow] | None = None,
    *,
    max_answer_bytes: int = MAX_ANSWER_BYTES,
    max_line_bytes: int = MAX_LINE_BYTES,
    seed_rejections: Iterable[Rejection] = (),
) -> Iterator[Union[ReturnRow, Rejection]]:
    """Stream oracle return rows from a JSONL or Parquet file: yields a :class:`ReturnRow` (with
    ``origin`` and ``raw`` set) or a :class:`Rejection` per row, in file order.

    Checks: readability, ``oracle_return.schema.json``, assistant content size, ``UNKNOWN_TASK_ID``
    (only when ``seeds`` is given: a mapping ``task_id -> SeedRow`` or an iterable of seed rows),
    ``DUPLICATE_ROW`` (same :attr:`ReturnRow.key` as an earlier row). ``seed_rejections``: the seed
    rows :func:`load_seeds` rejected; a return whose ``task_id`` is one of theirs (and not a loaded
    seed) is rejected as ``SEED_REJECTED`` ("seed row rejected", naming the seed row and its reason)
    instead of ``UNKNOWN_TASK_ID``; an unknown ``task_id`` while some rejected seed rows have no
    readable id says so in its message. Whether ``messages`` equals the
    seed's messages plus one assistant message is *not* checked here: see
    :func:`arbiter.pipelines.oracle.format.check_messages`. A file that cannot be opened yields one
    ``UNREADABLE_FILE`` rejection. Raises nothing for bad content.
    """
    p = Path(path)
    known: set[str] | None = None
    if seeds is not None:
        known = set(seeds.keys()) if isinstance(seeds, Mapping) else {s.task_id for s in seeds}
    rejected_seed: dict[str, Rejection] = {}
    anonymous_seed_rejections = 0
    for r in seed_rejections:
        if r.task_id and (known is None or r.task_id not in known):
            rejected_seed.setdefault(r.task_id, r)
        elif not r.task_id:
            anonymous_seed_rejections += 1
    seen: dict[str, int] = {}
    try:
        for rec in _records(p, max_line_bytes=max_line_bytes, schema_name=RETURN_SCHEMA_NAME):
            tid = _task_id_of(rec.value)
            if rec.issue is not None:
                yield Rejection(str(p), rec.line, "return", None, [rec.issue])
                continue
            issues = schema_issues(rec.value, RETURN_SCHEMA_NAME)
            if not issues:
                issues = answer_size_issues(rec.value, max_answer_bytes)
            if not issues and tid in rejected_seed and (known is None or tid not in known):
                sr = rejected_seed[tid]
                where = f"line {sr.line}" if sr.line is not None else "the seeds file"
                issues = [RowIssue(RejectCode.SEED_REJECTED, "$.task_id",
                                   f"seed row rejected: the seed row of task_id {tid!r} ({where}) was rejected "
                                   f"({sr.issues[0].code.value} at {sr.issues[0].path}: {sr.issues[0].message}); "
                                   "this return cannot be verified until the seed row is fixed")]
            elif not issues and known is not None and tid not in known:
                more = (f" ({anonymous_seed_rejections} seed row(s) were rejected without a readable task_id; "
                        "see the seed rejections)" if anonymous_seed_rejections else "")
                issues = [RowIssue(RejectCode.UNKNOWN_TASK_ID, "$.task_id",
                                   f"task_id {tid!r} is not in the seed rows{more}")]
            if issues:
                yield Rejection(str(p), rec.line, "return", tid, issues)
                continue
            row = _build(ReturnRow, rec.value)
            if isinstance(row, RowIssue):
                yield Rejection(str(p), rec.line, "return", tid, [row])
                continue
            row._origin = RowOrigin(str(p), rec.line)
            row._raw = rec.value
            key = row.key
            if key in seen:
                yield Rejection(str(p), rec.line, "return", tid, [RowIssue(
                    RejectCode.DUPLICATE_ROW, "$.messages",
                    f"same task_id and messages as line {seen[key]} (key {key}); this row is ignored")])
                continue
            seen[key] = rec.line
            yield row
    except (OSError, ValueError) as e:
        yield _unreadable(p, "return", e)


def load_returns(
    path: str | os.PathLike,
    seeds: Mapping[str, SeedRow] | Iterable[SeedRow] | None = None,
    *,
    max_answer_bytes: int = MAX_ANSWER_BYTES,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> LoadResult[ReturnRow]:
    """:func:`iter_returns` collected into a :class:`LoadResult` (rows and rejections in file order)."""
    out: LoadResult[ReturnRow] = LoadResult()
    for item in iter_returns(path, seeds, max_answer_bytes=max_answer_bytes, max_line_bytes=max_line_bytes):
        (out.rejections if isinstance(item, Rejection) else out.rows).append(item)
    return out


# --------------------------------------------------------------------------------------------------
# Hidden tests


_HIDDEN_CASE_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["name", "stdin", "stdout"],
        "properties": {"name": {"type": "string"}, "stdin": {"type": "string"}, "stdout": {"type": "string"}},
    },
}


@dataclass
class HiddenTests:
    """Hidden tests per task.

    - ``tests``: ``task_id -> [TestCaseIO, ...]`` for every task whose entry is valid (an empty list
      is kept: the task simply has no hidden tests).
    - ``invalid_tasks``: task ids whose entry was rejected. Their *whole* hidden set is dropped (a
      partial set would verify against fewer tests than intended), so a caller should treat these
      tasks as unverifiable (``INVALID_TASK``) rather than as tasks without hidden tests.
    - ``rejections``: why, one per rejected entry or unreadable line.
    """

    tests: dict[str, list[TestCaseIO]] = field(default_factory=dict)
    invalid_tasks: set[str] = field(default_factory=set)
    rejections: list[Rejection] = field(default_factory=list)

    def for_task(self, task_id: str) -> list[TestCaseIO]:
        """The hidden cases of ``task_id`` (empty when none)."""
        return self.tests.get(task_id, [])


def _validate_hidden_entry(task_id: str, cases: Any, prefix: list[Any]) -> list[RowIssue]:
    from jsonschema import Draft202012Validator

    issues = [RowIssue(RejectCode.SCHEMA, json_path(prefix + list(e.absolute_path)),
                       e.message if len(e.message) <= 200 else e.message[:197] + "...")
              for e in Draft202012Validator(_HIDDEN_CASE_SCHEMA).iter_errors(cases)]
    if not issues:
        names: dict[str, int] = {}
        for i, c in enumerate(cases):
            if c["name"] in names:
                issues.append(RowIssue(RejectCode.SCHEMA, json_path(prefix + [i, "name"]),
                                       f"test name {c['name']!r} repeats case {names[c['name']]}"))
            names.setdefault(c["name"], i)
    return issues


def load_hidden_tests(
    path: str | os.PathLike,
    *,
    known_task_ids: Iterable[str] | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> HiddenTests:
    """Load hidden tests (issue 5: "a file mapping task_id to cases of the visible_tests shape").

    Two shapes are accepted:

    - a JSON object ``{"task_id": [{"name", "stdin", "stdout"}, ...], ...}`` (any suffix but
      ``.jsonl``; at most :data:`MAX_HIDDEN_JSON_BYTES`);
    - JSONL (``.jsonl``, or a file that is not one JSON document): one ``{"task_id", "tests": [...]}``
      per line.

    Each task's entry is validated as a whole: wrong types, missing fields or repeated test names
    reject the entry (its task goes to ``invalid_tasks``). A task id outside ``known_task_ids``
    (when given) is rejected as ``UNKNOWN_TASK_ID``; a task id given twice in JSONL keeps the first.
    Raises nothing for bad content; an unreadable file gives one ``UNREADABLE_FILE`` rejection.
    """
    p = Path(path)
    out = HiddenTests()
    known = set(known_task_ids) if known_task_ids is not None else None

    def take(task_id: str, cases: Any, line: int | None, prefix: list[Any], id_path: str) -> None:
        issues = _validate_hidden_entry(task_id, cases, prefix)
        if not issues and known is not None and task_id not in known:
            issues = [RowIssue(RejectCode.UNKNOWN_TASK_ID, id_path, f"task_id {task_id!r} is not in the seed rows")]
        if not issues and task_id in out.tests:
            issues = [RowIssue(RejectCode.DUPLICATE_TASK_ID, "$.task_id",
                               f"hidden tests for {task_id!r} already given; this entry is ignored")]
            out.rejections.append(Rejection(str(p), line, "hidden", task_id, issues))
            return
        if issues:
            out.rejections.append(Rejection(str(p), line, "hidden", task_id, issues))
            if task_id not in out.tests:
                out.invalid_tasks.add(task_id)
            return
        out.tests[task_id] = [TestCaseIO.model_validate(c) for c in cases]

    try:
        as_object = p.suffix.lower() != ".jsonl"
        if as_object:
            size = p.stat().st_size
            if size > MAX_HIDDEN_JSON_BYTES:
                raise ValueError(f"{size} bytes, above the {MAX_HIDDEN_JSON_BYTES}-byte limit for one JSON object")
            raw = p.read_bytes()
            try:
                doc = _parse_json_strict(raw.decode("utf-8-sig"))
            except json.JSONDecodeError as e:
                if e.msg == "Extra data":
                    as_object = False  # several JSON values: JSONL
                else:
                    out.rejections.append(Rejection(str(p), e.lineno, "hidden", None, [RowIssue(
                        RejectCode.MALFORMED_JSON, "$", f"malformed JSON: {e.msg} at line {e.lineno} column {e.colno}")]))
                    return out
            except UnicodeDecodeError as e:
                out.rejections.append(Rejection(str(p), None, "hidden", None, [RowIssue(
                    RejectCode.NOT_UTF8, "$", f"not UTF-8 text: invalid byte at offset {e.start}")]))
                return out
            except (_DuplicateKey, _NonFinite) as e:
                code = RejectCode.DUPLICATE_JSON_KEY if isinstance(e, _DuplicateKey) else RejectCode.NON_FINITE_NUMBER
                out.rejections.append(Rejection(str(p), None, "hidden", None, [RowIssue(code, "$", str(e))]))
                return out
            if as_object:
                if not isinstance(doc, dict):
                    out.rejections.append(Rejection(str(p), None, "hidden", None, [RowIssue(
                        RejectCode.SCHEMA, "$", f"expected an object task_id -> list of tests, got {type(doc).__name__}")]))
                    return out
                for task_id, cases in doc.items():
                    take(task_id, cases, None, [task_id], json_path([task_id]))
                return out
        for rec in _jsonl_records(p, max_line_bytes):
            if rec.issue is not None:
                out.rejections.append(Rejection(str(p), rec.line, "hidden", None, [rec.issue]))
                continue
            v = rec.value
            if not isinstance(v, dict) or not isinstance(v.get("task_id"), str) or "tests" not in v:
                out.rejections.append(Rejection(str(p), rec.line, "hidden", _task_id_of(v), [RowIssue(
                    RejectCode.SCHEMA, "$", 'expected {"task_id": str, "tests": [{name, stdin, stdout}, ...]}')]))
                if _task_id_of(v) and _task_id_of(v) not in out.tests:
                    out.invalid_tasks.add(_task_id_of(v))  # type: ignore[arg-type]
                continue
            take(v["task_id"], v["tests"], rec.line, ["tests"], "$.task_id")
    except (OSError, ValueError) as e:
        out.rejections.append(_unreadable(p, "hidden", e))
    return out
