"""The ``arbiter`` command imports lazily: importing the app loads no command module and none of
the heavy libraries, a run of one command loads only that command's module, and listing the
commands (``--help``, typer's test runner) still shows every one of them."""

from __future__ import annotations

import json
import subprocess
import sys

import typer.main

from arbiter.cli.main import COMMAND_MODULES, app

HEAVY = ("pyarrow", "matplotlib", "openai", "rich.table", "arbiter.datasets", "arbiter.pipelines", "arbiter.judge.judge")


def _modules_after(code: str) -> list[str]:
    probe = code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_the_app_loads_no_command_and_nothing_heavy():
    loaded = _modules_after("import arbiter.cli.main")
    assert [m for m in loaded if m.endswith("_cmd")] == []
    assert [m for m in loaded if m.startswith(HEAVY)] == []


def test_running_one_command_loads_only_its_module():
    loaded = _modules_after("from arbiter.cli.main import app\n"
                            "try:\n    app(['judge', '--help'])\nexcept SystemExit:\n    pass")
    assert [m for m in loaded if m.startswith("arbiter.cli.") and m.endswith("_cmd")] == ["arbiter.cli.judge_cmd"]


def test_every_command_module_registers_the_command_of_its_name():
    names = set(typer.main.get_command(app).commands)
    for module in COMMAND_MODULES:
        assert module.removesuffix("_cmd") in names, (module, sorted(names))


def test_the_help_lists_every_command():
    out = subprocess.run([sys.executable, "-m", "arbiter.cli.main", "--help"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    for module in COMMAND_MODULES:
        assert module.removesuffix("_cmd") in out.stdout


def test_a_bare_ray_option_means_a_local_ray():
    from arbiter.cli.main import bare_ray_is_local

    assert bare_ray_is_local(["score", "--ray"]) == ["score", "--ray", "local"]
    assert bare_ray_is_local(["score", "--ray", "--out", "x"]) == ["score", "--ray", "local", "--out", "x"]
    assert bare_ray_is_local(["score", "--ray", "auto", "--out", "x"]) == ["score", "--ray", "auto", "--out", "x"]
    assert bare_ray_is_local(["score", "--out", "--ray"]) == ["score", "--out", "--ray", "local"]


def test_the_console_script_finds_the_judge_language_for_its_early_sandbox():
    from arbiter.cli.entry import _option

    assert _option(["judge", "a.py", "--lang", "python", "--tests", "t"], "--lang") == "python"
    assert _option(["judge", "a.cpp", "--lang=cpp"], "--lang") == "cpp"
    assert _option(["judge", "a.cpp", "--lang"], "--lang") is None
    assert _option(["judge", "a.cpp"], "--lang") is None


def test_help_paragraphs_are_reflowed_to_the_terminal():
    """A command's docstring is wrapped at 100 columns; its help in an 80-column terminal is one
    paragraph wrapped there, not each source line wrapped on its own (new-user walkthrough); list
    items and indented lines keep their breaks."""
    from arbiter.cli.main import reflow

    doc = "First line\n    goes on.\n\n    A long\n    paragraph.\n    - item one\n    - item two\n      more\n    "
    assert reflow(doc) == "First line goes on.\n\nA long paragraph.\n- item one\n- item two\n  more"
    out = subprocess.run([sys.executable, "-m", "arbiter.cli.main", "score", "--help"], capture_output=True,
                         text=True, timeout=120, env={**__import__("os").environ, "COLUMNS": "80"})
    assert out.returncode == 0, out.stderr
    text = out.stdout.split("╭")[0]  # (the description, before the options' box)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    body = lines[lines.index(next(x for x in lines if x.startswith("Writes OUT/"))):]
    assert all(len(line) > 40 for line in body[:-1]), body  # no short fragment but the paragraph's end
