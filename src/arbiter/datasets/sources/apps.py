"""APPS and TACO -> verl rows.

Reads an APPS problem tree or an HF ``codeparrot/apps`` / ``BAAI/TACO`` row file; the ground
truth keeps the ``{"inputs", "outputs"[, "fn_name"]}`` dict (call-based suites with JSON-line
arguments and JSON outputs, :func:`json_lines_calls`); a problem without tests is a bad row.
Inputs and rules: ``docs/codegen.md``, "Dataset sources".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from arbiter.datasets.convert import (
    Converted,
    ConvertError,
    call_prompt,
    guarded,
    make_row,
    stdin_prompt,
)
from arbiter.datasets.verl_rows import iter_raw_rows
from arbiter.judge import jsonvalues
from arbiter.judge.encodings._common import to_plain
from arbiter.judge.encodings.apps import apps_input_output_to_suite, inputs_outputs_to_suite


def _json_field(value: Any, label: str, field: str, default: Any) -> Any:
    value = to_plain(value)
    if value is None or value == "":
        return default
    if isinstance(value, str):
        try:
            return jsonvalues.loads(value)
        except ValueError as exc:
            raise ConvertError(f"{field}: not valid JSON ({exc})") from None
    return value


def _row(*, label: str, index: str, data_source: str, source: str, question: str, input_output: Any,
         solutions: Any, starter_code: str | None, difficulty: Any, url: Any, id: Any) -> dict[str, Any]:
    io = _json_field(input_output, label, "input_output", None)
    if io is None:
        raise ConvertError("input_output: no tests (missing or empty)")
    suite = apps_input_output_to_suite(io, row=label)
    if not isinstance(question, str) or not question.strip():
        raise ConvertError("question: missing or empty")
    fn_name = io.get("fn_name") if isinstance(io, dict) else None
    ground_truth = {"inputs": io["inputs"], "outputs": io["outputs"]}
    if fn_name:
        ground_truth = json_lines_calls(io["inputs"], io["outputs"], fn_name)
        if inputs_outputs_to_suite(ground_truth, row=label, origin="apps", int_keys=True).cases != suite.cases:
            raise ConvertError("input_output: the call cases do not survive JSON-line encoding")
        prompt = call_prompt(question, fn_name, starter_code)
    else:
        prompt = stdin_prompt(question)
    sols = _json_field(solutions, label, "solutions", [])
    if not isinstance(sols, list):
        raise ConvertError(f"solutions: expected a list of programs, got {type(sols).__name__}")
    return make_row(data_source=data_source, prompt=prompt, ground_truth=ground_truth, index=index, source=source,
                    expected_cases=len(suite), id=id, difficulty=difficulty, url=url, reference_solutions=sols)


def json_lines_calls(inputs: list[Any], outputs: list[Any], fn_name: str) -> dict[str, Any]:
    """An APPS/TACO call-based suite in verl ``prime_code``'s shape: each input one JSON argument per
    line, each output the JSON text of the dataset's output (a one-element ``[x]`` stays wrapped, so
    ``x`` or ``[x]`` is accepted as before). arbiter reads both shapes alike
    (:func:`arbiter.judge.encodings.apps.inputs_outputs_to_suite`); verl's stock rewards read only
    this one (docs/verl.md, "verl's stock code rewards"). Inputs already in this shape are kept."""
    def line(value: Any) -> str:
        return jsonvalues.dumps(value)  # json.dumps' defaults: what sandbox_fusion's harness prints

    new_inputs, new_outputs = [], []
    for args, output in zip(inputs, outputs):
        if isinstance(args, str):
            new_inputs.append(args)
            new_outputs.append(output if isinstance(output, str) else line(output))
        elif args == []:  # no argument: no line to write (kept as the empty list, output as is)
            new_inputs.append(args)
            new_outputs.append(output)
        elif isinstance(args, list):
            new_inputs.append("\n".join(line(a) for a in args))
            new_outputs.append(line(output))
        else:
            raise ConvertError(f"input_output.inputs: expected argument lists, got {type(args).__name__}")
    return {"inputs": new_inputs, "outputs": new_outputs, "fn_name": fn_name}


def _problem_dirs(root: Path) -> Iterator[Path]:
    if (root / "question.txt").is_file() or (root / "input_output.json").is_file():
        yield root
        return
    for d in sorted(p for p in root.rglob("*") if p.is_dir()):
        if (d / "question.txt").is_file() or (d / "input_output.json").is_file():
            yield d


def _read(path: Path, name: str) -> str | None:
    f = path / name
    return f.read_text(encoding="utf-8", errors="surrogateescape") if f.is_file() else None


def convert_apps(path: Path, *, data_source: str | None = None, index_prefix: str | None = None) -> Iterator[Converted]:
    """APPS problem folders or ``codeparrot/apps`` rows -> :class:`Converted` (docs/codegen.md).

    Index: ``<prefix>_<relative folder with / as _>`` (the split folder name is kept:
    ``apps_train_0001``) or ``<prefix>_<problem_id>``; prefix default ``apps``.
    """
    prefix = index_prefix or "apps"
    ds = data_source or "apps"
    if path.is_dir() and not _is_hf_folder(path):
        base = path.parent if path.name in ("train", "test") or (path / "question.txt").is_file() else path
        for d in _problem_dirs(path):
            rel = d.relative_to(base).as_posix()
            label = rel

            def build(d=d, rel=rel, label=label) -> dict[str, Any]:
                meta = _json_field(_read(d, "metadata.json"), label, "metadata.json", {})
                return _row(label=label, index=f"{prefix}_{rel.replace('/', '_')}", data_source=ds, source="apps",
                            question=_read(d, "question.txt") or "", input_output=_read(d, "input_output.json"),
                            solutions=_read(d, "solutions.json"), starter_code=_read(d, "starter_code.py"),
                            difficulty=meta.get("difficulty") if isinstance(meta, dict) else None,
                            url=meta.get("url") if isinstance(meta, dict) else None, id=rel)

            yield guarded(label, build)
        return
    for position, rec in enumerate(iter_raw_rows(path)):
        pid = rec.get("problem_id", position)
        label = f"problem_id {pid}"
        yield guarded(label, lambda rec=rec, pid=pid, label=label: _row(
            label=label, index=f"{prefix}_{pid}", data_source=ds, source="apps", question=rec.get("question") or "",
            input_output=rec.get("input_output"), solutions=rec.get("solutions"), starter_code=rec.get("starter_code"),
            difficulty=rec.get("difficulty"), url=rec.get("url"), id=pid))


def convert_taco(path: Path, *, data_source: str | None = None, index_prefix: str | None = None) -> Iterator[Converted]:
    """``BAAI/TACO`` rows -> :class:`Converted`. Index ``<prefix>_<row position>`` (prefix default
    ``taco``; pass ``taco_test`` etc. when converting several splits)."""
    prefix = index_prefix or "taco"
    ds = data_source or "taco"
    for position, rec in enumerate(iter_raw_rows(path)):
        label = f"row {position}" + (f" ({rec['name']})" if rec.get("name") else "")
        yield guarded(label, lambda rec=rec, position=position, label=label: _row(
            label=label, index=f"{prefix}_{position}", data_source=ds, source="taco", question=rec.get("question") or "",
            input_output=rec.get("input_output"), solutions=rec.get("solutions"), starter_code=rec.get("starter_code"),
            difficulty=rec.get("difficulty"), url=rec.get("url"), id=rec.get("name") or position))


def _is_hf_folder(path: Path) -> bool:
    return any((path / n).is_file() for n in ("dataset_info.json", "state.json", "dataset_dict.json"))
