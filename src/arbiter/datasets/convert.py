"""Convert real code datasets, in their own shapes, to verl rule-reward rows (``arbiter convert``).

``IN`` streams through one converter of :mod:`arbiter.datasets.sources` into verl rows
(:mod:`arbiter.datasets.verl_rows`) written to Parquet or JSONL. Convert-or-fail: every ground
truth written is read back through :func:`arbiter.judge.encodings.verl_ground_truth_to_suite`
and must give as many cases as the source's own normaliser; a row that fails is reported and
skipped, the batch goes on. Vacuous suites are written and warned about. The row fields, keys
and reference measurement: ``docs/codegen.md`` ("Converting datasets").
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arbiter.datasets.several_answers import SEVERAL_ANSWERS, several_answers_warning
from arbiter.datasets.verl_rows import VACUOUS_SUITE, vacuous_suite_warning
from arbiter.judge import jsonvalues
from arbiter.judge.encodings.verl import verl_ground_truth_to_suite
from arbiter.judge.testsuite import CallCase, InvalidTestSuite, StdioCase, TestSuite

#: Fields of ``extra_info`` written by the converters (Parquet schema order).
EXTRA_INFO_FIELDS = ("index", "id", "source", "difficulty", "url", "reference_solutions", "prelude", "tests", "notes",
                     "time_limit", "reference_cpu_seconds")


class ConvertError(ValueError):
    """A source row that cannot become a verl row; the message names the row and the reason."""


@dataclass
class Converted:
    """One converted row (``row`` is the verl row dict) or a problem with a source row.

    - ``label``: the source row's label (e.g. ``train/0001``, ``task_id``, line number).
    - ``row``: the verl row, or ``None``.
    - ``error``: why the row was not converted (bad row), or ``""``.
    - ``skipped``: a row deliberately left out (e.g. a CodeScope row in C++), not an error.
    - ``reference_failure``: the row was written, but its reference solution fails it
      (:mod:`arbiter.pipelines.codegen.references`); ``reference_unmeasured``: the reference could not be
      measured (SANDBOX_ERROR); ``""`` otherwise. ``limit_raised``: the measured
      ``extra_info.time_limit`` is above the route's default.
    """

    label: str
    row: dict[str, Any] | None = None
    error: str = ""
    skipped: str = ""
    reference_failure: str = ""
    reference_unmeasured: str = ""
    limit_raised: bool = False


@dataclass
class ConvertReport:
    """What a conversion did: rows read, written, skipped (with reasons), bad (with errors), and
    written rows with a warning (``warnings``: ``(label, warning)``, e.g. a vacuous suite).

    With reference measurement (:mod:`arbiter.pipelines.codegen.references`): ``measured`` (rows given an
    ``extra_info.time_limit``), ``raised`` (of those, rows whose limit is above the route's
    default), ``reference_failures`` (``(label, reason)``: written rows whose reference fails
    them; dropped ones are in ``bad``), ``unmeasured`` (``(label, reason)``: SANDBOX_ERROR)."""

    source: str
    read: int = 0
    written: int = 0
    tests: int = 0
    reference_solutions: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    bad: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    measured: int = 0
    raised: int = 0
    reference_failures: list[tuple[str, str]] = field(default_factory=list)
    unmeasured: list[tuple[str, str]] = field(default_factory=list)


def _text(value: bytes) -> str:
    return value.decode("utf-8", "surrogateescape")


def suite_to_ground_truth(suite: TestSuite, *, param_names: tuple[str, ...] | None = None,
                          nodes: tuple[tuple[str | None, ...], str | None] | None = None) -> dict[str, Any] | list[dict[str, Any]]:
    """A normalised suite as one of the card's encodings, chosen so that verl's stock code rewards
    read what they can (docs/verl.md, "verl's stock code rewards"):

    - stdin cases: the ``{"inputs": [...], "outputs": [...]}`` dict (text in, the one accepted
      text out), the one form verl's ``prime_code`` and ``sandbox_fusion`` read; it holds all a
      stdin case is, so nothing is lost. Each case needs exactly one accepted output;
    - call cases: ``function_call`` case dicts (the dict's call convention accepts ``x`` for an
      expected ``[x]``, so it cannot say "exactly ``[x]``"). Keyword arguments need
      ``param_names`` (the signature's parameter order) to become positional ``input`` lists;
      ``output`` is ``[return_value]`` and must be the one accepted value. ``nodes``: the
      LeetCode node types (per parameter in ``param_names`` order, and of the return value),
      written into each case as ``node_args`` / ``node_return`` (docs/encodings.md).

    Raises :class:`ConvertError` for what the encodings cannot express.
    """
    if suite.cases and all(isinstance(case, StdioCase) for case in suite.cases):
        return _stdin_dict(suite)
    out: list[dict[str, Any]] = []
    for case in suite.cases:
        if not isinstance(case, CallCase):
            raise ConvertError(f"case {case.name}: stdin and function-call cases in one suite")
        if len(case.expected) != 1:
            raise ConvertError(f"case {case.name}: several accepted return values; the function_call encoding holds one")
        args = list(case.args)
        if case.kwargs:
            if param_names is None:
                raise ConvertError(f"case {case.name}: keyword arguments but no signature to order them")
            rest = param_names[len(args):]
            missing = [n for n in rest if n not in case.kwargs]
            extra = sorted(set(case.kwargs) - set(rest))
            if missing or extra:
                raise ConvertError(f"case {case.name}: arguments {sorted(case.kwargs)} do not match parameters {list(param_names)}")
            args += [case.kwargs[n] for n in rest]
        item = {"type": "function_call", "fn_name": case.fn_name, "input": args, "output": [case.expected[0]]}
        if nodes is not None:
            if len(nodes[0]) != len(args):
                raise ConvertError(f"case {case.name}: {len(args)} arguments, {len(nodes[0])} node types")
            item.update(node_args=list(nodes[0]), node_return=nodes[1])
        out.append(item)
    return out


def _stdin_dict(suite: TestSuite) -> dict[str, list[str]]:
    inputs, outputs = [], []
    for case in suite.cases:
        if len(case.expected) != 1:
            raise ConvertError(f"case {case.name}: {len(case.expected)} accepted outputs; verl ground truth holds one")
        inputs.append(_text(case.stdin))
        outputs.append(_text(case.expected[0]))
    return {"inputs": inputs, "outputs": outputs}


def make_row(*, data_source: str, prompt: list[Mapping[str, str]], ground_truth: Any, index: str, source: str,
             expected_cases: int, id: Any = None, difficulty: Any = None, url: Any = None,
             reference_solutions: list[str] | None = None, prelude: str | None = None,
             notes: list[str] | None = None) -> dict[str, Any]:
    """Build one verl row and check it (convert-or-fail).

    ``ground_truth`` is a dict/list (encoded here as JSON text) or JSON text. The text is read
    back by :func:`verl_ground_truth_to_suite`; raises :class:`ConvertError` unless it gives
    ``expected_cases`` cases, or when the prompt is empty. A suite whose every expected output is
    empty (:func:`arbiter.datasets.verl_rows.vacuous_suite_warning`: any program that prints
    nothing passes) is still written, with the warning as the first of ``extra_info.notes``
    (:func:`convert` reports it): one empty answer is legitimate, and the source's tests are
    kept as they are. A statement that accepts several answers (:func:`statement_warning`) is
    noted and reported the same way.
    """
    text = ground_truth if isinstance(ground_truth, str) else jsonvalues.dumps(ground_truth, ensure_ascii=False)
    try:
        suite = verl_ground_truth_to_suite(text, row=index)
    except InvalidTestSuite as exc:
        raise ConvertError(f"the converted ground truth does not read back: {exc}") from None
    if len(suite) != expected_cases:
        raise ConvertError(f"the converted ground truth has {len(suite)} cases, the source {expected_cases}")
    messages = [{"role": str(m["role"]), "content": str(m["content"])} for m in prompt]
    if not messages or not any(m["content"].strip() for m in messages):
        raise ConvertError("empty prompt")
    notes = [w for w in (vacuous_suite_warning(suite), statement_warning(messages)) if w] + list(notes or [])
    return {
        "data_source": data_source,
        "prompt": messages,
        "ability": "code",
        "reward_model": {"style": "rule", "ground_truth": text, "method": None},
        "extra_info": {
            "index": index,
            "id": None if id is None else str(id),
            "source": source,
            "difficulty": None if difficulty is None else str(difficulty),
            "url": None if url is None else str(url),
            "reference_solutions": [s for s in (reference_solutions or []) if isinstance(s, str)],
            "prelude": prelude or None,
            "tests": len(suite),
            "notes": notes,
            "time_limit": None,
            "reference_cpu_seconds": None,
        },
    }


#: The starts of the ``extra_info.notes`` that :func:`convert` reports as warnings.
WARNING_NOTES = (VACUOUS_SUITE, SEVERAL_ANSWERS)


def statement_warning(prompt: list[dict[str, str]]) -> str:
    """The :func:`several_answers_warning` of the prompt's user turns (the statement), or ``""``."""
    return several_answers_warning("\n".join(m["content"] for m in prompt if m["role"] == "user"))


ANSWER_FORMAT = (
    "Write a Python 3 solution (standard library only). Reply with the complete program in a single "
    "markdown code block:\n```python\n# your code\n```"
)


def stdin_prompt(statement: str) -> list[dict[str, str]]:
    """A single user turn for a stdin/stdout problem (statement + I/O + answer-format lines)."""
    return [{"role": "user", "content": f"{statement.strip()}\n\nRead the input from standard input and write the "
                                        f"answer to standard output.\n\n{ANSWER_FORMAT}"}]


def call_prompt(statement: str, fn_name: str, starter_code: str | None) -> list[dict[str, str]]:
    """A single user turn for a function-call problem (statement + starter code + answer format)."""
    starter = (starter_code or "").rstrip()
    where = (f"Complete this code:\n```python\n{starter}\n```" if starter
             else f"Define the function `{fn_name}` (top level, or as a method of `class Solution`).")
    return [{"role": "user", "content": f"{statement.strip()}\n\n{where}\nIt is called with the test arguments and "
                                        f"its return value is checked.\n\n{ANSWER_FORMAT}"}]


def parquet_schema():
    """The Parquet schema of converted rows (pyarrow)."""
    import pyarrow as pa

    return pa.schema([
        ("data_source", pa.string()),
        ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
        ("ability", pa.string()),
        ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string()), ("method", pa.string())])),
        ("extra_info", pa.struct([
            ("index", pa.string()), ("id", pa.string()), ("source", pa.string()), ("difficulty", pa.string()),
            ("url", pa.string()), ("reference_solutions", pa.list_(pa.string())), ("prelude", pa.string()),
            ("tests", pa.int64()), ("notes", pa.list_(pa.string())),
            ("time_limit", pa.float64()), ("reference_cpu_seconds", pa.float64()),
        ])),
    ])


def card_schema(schema: Any, extra_types: Mapping[str, Any] | None = None) -> Any:
    """``schema`` (pyarrow) with the card's types wherever it holds the card's columns, so that every
    stage's file (converted, kept, final) has one schema and HF ``datasets`` concatenates them:
    ``reward_model`` is ``{style, ground_truth, method}`` (strings; a text ground truth is
    ``string``, never ``large_string``; ``method`` added when missing), and an ``extra_info`` field
    that :func:`parquet_schema` or ``extra_types`` names takes that type (one inferred from values
    may be null, an empty list's ``list<null>``, or ``int64`` for whole scores). Other columns and
    fields are kept as they are."""
    import pyarrow as pa

    known = {f.name: f.type for f in parquet_schema().field("extra_info").type}
    known.update(extra_types or {})
    if "reward_model" in schema.names and pa.types.is_struct(schema.field("reward_model").type):
        t = schema.field("reward_model").type
        fields = {t.field(j).name: t.field(j) for j in range(t.num_fields)}
        truth = fields.get("ground_truth")
        text = truth is None or pa.types.is_null(truth.type) or pa.types.is_large_string(truth.type)
        card = [pa.field("style", pa.string()), pa.field("ground_truth", pa.string()) if text else truth,
                pa.field("method", fields["method"].type if "method" in fields and not pa.types.is_null(
                    fields["method"].type) else pa.string())]
        rest = [f for name, f in fields.items() if name not in ("style", "ground_truth", "method")]
        schema = schema.set(schema.get_field_index("reward_model"), pa.field("reward_model", pa.struct(card + rest)))
    if "extra_info" in schema.names and pa.types.is_struct(schema.field("extra_info").type):
        t = schema.field("extra_info").type
        fields = [pa.field(f.name, known[f.name]) if f.name in known else f
                  for f in (t.field(j) for j in range(t.num_fields))]
        schema = schema.set(schema.get_field_index("extra_info"), pa.field("extra_info", pa.struct(fields)))
    return schema


class RowWriter:
    """Streaming writer of verl rows to Parquet (``.parquet``) or JSON Lines (anything else).

    Rows are buffered and written in row groups of at most ``rows_per_group`` rows or about
    ``bytes_per_group`` bytes of text, so memory stays bounded. ``write`` raises
    :class:`ConvertError` for an ``extra_info.index`` already written to this file. The file is
    written to ``<out>.partial`` and renamed on :meth:`close`, so a killed conversion never leaves
    a truncated file under the final name.
    """

    def __init__(self, path: str | os.PathLike, *, rows_per_group: int = 512, bytes_per_group: int = 64 << 20):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = self.path.with_name(self.path.name + ".partial")
        self.parquet = self.path.suffix.lower() == ".parquet"
        self.rows_per_group = rows_per_group
        self.bytes_per_group = bytes_per_group
        self.indexes: set[str] = set()
        self.count = 0
        self._buf: list[dict[str, Any]] = []
        self._buf_bytes = 0
        self._writer = None
        self._file = None
        if self.parquet:
            import pyarrow.parquet as pq

            self._writer = pq.ParquetWriter(self.tmp, parquet_schema())
        else:
            self._file = open(self.tmp, "w", encoding="utf-8")

    def write(self, row: Mapping[str, Any]) -> None:
        """Buffer (Parquet) or append (JSONL) one verl row. Raises :class:`ConvertError` when its
        ``extra_info.index`` was already written to this file."""
        index = str(row.get("extra_info", {}).get("index"))
        if index in self.indexes:
            raise ConvertError(f"extra_info.index {index!r} is already in {self.path.name}")
        self.indexes.add(index)
        self.count += 1
        if self._file is not None:
            self._file.write(jsonvalues.dumps(row, ensure_ascii=False) + "\n")
            return
        self._buf.append(dict(row))
        self._buf_bytes += len(row["reward_model"]["ground_truth"]) + sum(
            len(s) for s in row["extra_info"].get("reference_solutions") or [])
        if len(self._buf) >= self.rows_per_group or self._buf_bytes >= self.bytes_per_group:
            self._flush()

    def _flush(self) -> None:
        if not self._buf or self._writer is None:
            return
        import pyarrow as pa

        self._writer.write_table(pa.Table.from_pylist(self._buf, schema=parquet_schema()))
        self._buf = []
        self._buf_bytes = 0

    def close(self, *, keep: bool = True) -> None:
        """Finish the file; with ``keep=False`` (an exception) the partial file is removed."""
        if self._writer is not None:
            if keep:
                self._flush()
            self._writer.close()
            self._writer = None
        if self._file is not None:
            self._file.close()
            self._file = None
        if keep and self.tmp.exists():
            os.replace(self.tmp, self.path)
        elif self.tmp.exists():
            self.tmp.unlink()

    def __enter__(self) -> "RowWriter":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(keep=exc_type is None)


def _converters() -> dict[str, Callable[..., Iterator[Converted]]]:
    from arbiter.datasets.sources import apps, codescope, leetcode, livecodebench, nemo_gym

    return {
        "apps": apps.convert_apps,
        "taco": apps.convert_taco,
        "leetcode": leetcode.convert_leetcode,
        "codescope": codescope.convert_codescope,
        "nemo-gym": nemo_gym.convert_nemo_gym,
        "lcb": livecodebench.convert_livecodebench,
    }


SOURCES = ("apps", "taco", "leetcode", "codescope", "nemo-gym", "lcb")


def iter_converted(source: str, path: str | os.PathLike, *, data_source: str | None = None,
                   index_prefix: str | None = None) -> Iterator[Converted]:
    """Stream the :class:`Converted` rows of one source file/folder.

    - ``source``: one of :data:`SOURCES`.
    - ``path``: the source data (formats per converter, see :mod:`arbiter.datasets.sources`).
    - ``data_source``: override the routing name written to every row.
    - ``index_prefix``: override the ``extra_info.index`` prefix (default: the source name, plus
      the split for APPS folders).

    Raises ``ValueError`` for an unknown source or an unreadable input (bad rows are yielded).
    """
    convs = _converters()
    if source not in convs:
        raise ValueError(f"unknown source {source!r}; known: {', '.join(SOURCES)}")
    if not Path(path).exists():
        raise ValueError(f"{path}: no such file or directory")
    yield from convs[source](Path(path), data_source=data_source, index_prefix=index_prefix)


#: Output formats of :class:`RowWriter` by file suffix (lower case).
OUTPUT_SUFFIXES = (".parquet", ".jsonl")


def check_output_path(out: str | os.PathLike) -> Path:
    """``out`` as a :class:`Path` when a conversion can write it; raises ``ValueError`` naming it
    when it is an existing directory, does not end in ``.parquet`` or ``.jsonl``
    (:data:`OUTPUT_SUFFIXES`, case-insensitive; the writer has no other format, e.g. no
    ``.jsonl.gz``), or its folder does not exist or is not a folder. An existing file is replaced
    (atomically, when the conversion finishes)."""
    p = Path(out)
    if p.is_dir():
        raise ValueError(f"--out {p}: is a directory; give a file name ending in .parquet or .jsonl")
    if p.suffix.lower() not in OUTPUT_SUFFIXES:
        got = "".join(p.suffixes) or "no suffix"
        raise ValueError(f"--out {p}: unknown output format ({got}); the name must end in .parquet or .jsonl")
    parent = p.parent
    if not parent.exists():
        raise ValueError(f"--out {p}: its folder {parent} does not exist")
    if not parent.is_dir():
        raise ValueError(f"--out {p}: {parent} is not a folder")
    return p


def _refuse_overwriting_the_input(path: str | os.PathLike, out: str | os.PathLike) -> None:
    """Raise ``ValueError`` when ``out`` is the input file (or a file inside the input folder): the
    conversion would replace the rows it reads."""
    src, dst = Path(path).resolve(), Path(out).resolve()
    if dst == src or src in dst.parents or (dst.exists() and src.exists() and os.path.samefile(src, dst)):
        raise ValueError(f"--out {out}: is the input {path}; write the converted rows to another file")


def convert(source: str, path: str | os.PathLike, out: str | os.PathLike, *, data_source: str | None = None,
            index_prefix: str | None = None, on_row: Callable[[Converted], None] | None = None,
            transform: Callable[[Iterator[Converted]], Iterator[Converted]] | None = None) -> ConvertReport:
    """Convert ``path`` (a ``source`` dataset) to verl rows in ``out`` (``.parquet`` or ``.jsonl``).

    Streams (memory is one row group). Bad rows are recorded in the report and skipped; the
    batch goes on. Written rows whose suite is vacuous (every expected output empty) are kept and
    listed in ``report.warnings``. ``transform`` maps the stream of converted rows before they are
    written (``arbiter convert`` passes :func:`arbiter.pipelines.codegen.references.measure_references`, which
    sets per-row time limits; this layer does not judge). ``on_row`` sees every
    :class:`Converted` (progress). Returns
    the :class:`ConvertReport`. Raises ``ValueError`` for an unknown source, a missing input, an
    unusable ``out`` (:func:`check_output_path`), an input that cannot be read or parsed (the
    message names the file, and the line for JSON Lines) or holds no rows; ``out`` is left as it
    was then.
    """
    check_output_path(out)
    _refuse_overwriting_the_input(path, out)
    report = ConvertReport(source=source)
    with RowWriter(out) as writer:
        items: Iterator[Converted] = iter_converted(source, path, data_source=data_source, index_prefix=index_prefix)
        if transform is not None:
            items = transform(items)
        for item in items:
            report.read += 1
            if item.row is not None:
                try:
                    writer.write(item.row)
                except ConvertError as exc:
                    item = Converted(item.label, error=str(exc))
                else:
                    extra = item.row["extra_info"]
                    report.written += 1
                    report.tests += extra["tests"]
                    report.reference_solutions += len(extra["reference_solutions"])
                    report.warnings += [(item.label, note) for note in extra["notes"]
                                        if note.startswith(WARNING_NOTES)]
                    if extra.get("time_limit") is not None:
                        report.measured += 1
                        report.raised += item.limit_raised
                    if item.reference_failure:
                        report.reference_failures.append((item.label, item.reference_failure))
                    if item.reference_unmeasured:
                        report.unmeasured.append((item.label, item.reference_unmeasured))
            if item.error:
                report.bad.append((item.label, item.error))
            elif item.skipped:
                report.skipped.append((item.label, item.skipped))
            if on_row is not None:
                on_row(item)
        if report.read == 0:  # raised inside the writer: OUT is left as it was
            raise ValueError(f"{path}: no {source} rows read (an empty file, or not a {source} dataset); nothing written")
    return report


def guarded(label: str, build: Callable[[], dict[str, Any]]) -> Converted:
    """Run one row's conversion; any :class:`ConvertError`, :class:`InvalidTestSuite` or
    malformed-field error becomes a bad-row :class:`Converted` naming ``label``."""
    try:
        return Converted(label, row=build())
    except (ConvertError, InvalidTestSuite) as exc:
        return Converted(label, error=str(exc))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return Converted(label, error=f"{type(exc).__name__}: {exc}")


__all__ = [
    "ANSWER_FORMAT",
    "ConvertError",
    "ConvertReport",
    "OUTPUT_SUFFIXES",
    "Converted",
    "EXTRA_INFO_FIELDS",
    "RowWriter",
    "SOURCES",
    "WARNING_NOTES",
    "call_prompt",
    "card_schema",
    "check_output_path",
    "convert",
    "guarded",
    "iter_converted",
    "make_row",
    "statement_warning",
    "parquet_schema",
    "stdin_prompt",
    "suite_to_ground_truth",
]
