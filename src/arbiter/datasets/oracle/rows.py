"""The oracle's row types: seed rows, return rows, their parts, and the rejection of a row that does not load.
See ``docs/oracle.md`` ("Input rows")."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal, Mapping

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
    - ``demo_id``: a return row's ``demo_id`` when it could be read (a string), else ``None``.
    """

    source: str
    line: int | None
    kind: str
    task_id: str | None
    issues: list[RowIssue]
    demo_id: str | None = None

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
        tid += f" (demo_id {self.demo_id!r})" if self.demo_id else ""
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
            "demo_id": self.demo_id,
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
    return f"{task_id}:{hashlib.sha256(canon.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"  # any str
