"""RunFolder: the output folder of a run (lock, config fingerprint, sinks, errors, summary)."""

from __future__ import annotations

import json

import pytest

from arbiter.pipelines.outputs import OutputDirBusy, holds_out_dirs
from arbiter.pipelines.runs import ConfigMismatch, ConfigRules, RunFolder, changed_fields, check_config
from arbiter.strenum import StrEnum


def test_changed_fields_spells_out_options():
    old = {"version": 1, "seeds": "a", "options": {"k": 1, "m": "x"}}
    new = {"version": 1, "seeds": "b", "options": {"k": 2, "m": "x", "n": True}}
    assert changed_fields(old, new) == ["seeds", "option k (1 -> 2)", "option n (None -> True)"]
    assert changed_fields(old, old) == []


@holds_out_dirs
def test_run_folder_records_config_and_refuses_another(tmp_path):
    fp = {"version": 1, "rows": "abc", "options": {"k": 1}}
    with RunFolder(tmp_path / "out") as run:
        run.check_config(fp)
        assert json.loads(run.file("config.json").read_text()) == fp
        run.check_config(fp)  # the same run: fine
        with pytest.raises(ConfigMismatch, match=r"holds rewards made with other inputs or options \(changed: "
                                                 r"option k \(1 -> 2\)\); use another --out folder or delete it"):
            run.check_config({**fp, "options": {"k": 2}}, ConfigRules(what="rewards"))
        assert json.loads(run.file("config.json").read_text()) == fp  # untouched


@holds_out_dirs
def test_run_folder_is_locked_for_another_thread(tmp_path):
    import threading

    RunFolder(tmp_path / "out")
    seen: list[BaseException] = []

    def other() -> None:
        try:
            RunFolder(tmp_path / "out")
        except OutputDirBusy as exc:
            seen.append(exc)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen and "in use by another run" in str(seen[0])


def test_config_rules_for_a_strict_job(tmp_path):
    class Mine(ConfigMismatch):
        pass

    rules = ConfigRules(describe=lambda o, n: [f"x ({o.get('x')!r} -> {n.get('x')!r})"] if o.get("x") != n.get("x") else [],
                        refuse=lambda out, d: f"{out.name}: differs: {'; '.join(d)}",
                        unreadable=lambda path, out, exc: f"{path.name} is unreadable",
                        missing=lambda out: "results but no config" if (out / "r.jsonl").exists() else None,
                        error=Mine)
    (tmp_path / "r.jsonl").write_text("{}\n")
    with pytest.raises(Mine, match="results but no config"):
        check_config(tmp_path, {"x": 1}, rules)
    (tmp_path / "r.jsonl").unlink()
    check_config(tmp_path, {"x": 1, "path": "a"}, rules)
    check_config(tmp_path, {"x": 1, "path": "b"}, rules)  # describe finds no difference: the same run
    with pytest.raises(Mine, match=r"differs: x \(1 -> 2\)"):
        check_config(tmp_path, {"x": 2}, rules)
    (tmp_path / "config.json").write_text("{torn")
    with pytest.raises(Mine, match="config.json is unreadable"):
        check_config(tmp_path, {"x": 1}, rules)
    check_config(tmp_path, {"x": 1})  # lenient rules: an unreadable config is replaced
    assert json.loads((tmp_path / "config.json").read_text()) == {"x": 1}


@holds_out_dirs
def test_sinks_errors_and_summary(tmp_path):
    with RunFolder(tmp_path / "o") as run:
        sink = run.sink("rows.jsonl", key="k")
        sink.write({"k": "a"})
        errors = run.errors()
        errors.add("bad", "line 3: nope", line=3)
        run.write_summary({"n": 1, "é": 2})
    assert sink._f.closed and errors._f.closed
    out = tmp_path / "o"
    assert json.loads((out / "errors.jsonl").read_text()) == {"kind": "bad", "message": "line 3: nope", "line": 3}
    assert (out / "summary.json").read_text() == json.dumps({"n": 1, "é": 2}, indent=2) + "\n"
    with RunFolder(out) as run:
        assert run.errors().count == 0
    assert (out / "errors.jsonl").read_text() == ""  # this run's problems only


class Color(StrEnum):
    RED = "red"
    DARK_BLUE = "dark_blue"


def test_strenum_is_a_string():
    assert Color.RED == "red" and str(Color.RED) == "red" and f"{Color.DARK_BLUE}" == "dark_blue"
    assert json.dumps({"c": Color.RED}) == '{"c": "red"}' and isinstance(Color.RED, str)
    assert Color.values() == ("red", "dark_blue") and Color.parse("red") is Color.RED
    with pytest.raises(ValueError, match="unknown color 'green'; known: red, dark_blue"):
        Color.parse("green", "color")
