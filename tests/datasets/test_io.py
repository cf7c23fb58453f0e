"""The one JSONL reader, the one atomic writer and the sink (arbiter.datasets.io)."""

from __future__ import annotations

import gzip
import json

import pytest

from arbiter.datasets.io import (JsonlError, JsonlSink, atomic_open, decode_json_line, iter_lines, read_jsonl,
                                 write_json_atomic, write_jsonl_atomic)


def test_decode_json_line_names_the_problem():
    assert decode_json_line(b'\xef\xbb\xbf{"a": 1}\n', 1) == {"a": 1}
    with pytest.raises(ValueError, match=r"not UTF-8 text \(byte 0xff at column 3\)"):
        decode_json_line(b'{"\xff": 1}', 2)
    with pytest.raises(ValueError, match="not valid JSON"):
        decode_json_line(b"{nope", 2)
    assert decode_json_line(b"1" * 5000, 3) % 10**6 == 111111  # integers of any length


def test_iter_lines_reports_bad_lines_and_goes_on(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"a": 1}\n\n  \nnot json\n{"\xff": 2}\n[3]')
    lines = list(iter_lines(p))
    assert [(x.number, x.ok) for x in lines] == [(1, True), (4, False), (5, False), (6, True)]
    assert lines[0].value == {"a": 1} and lines[-1].value == [3]
    assert lines[1].problem.startswith("not valid JSON") and lines[2].problem.startswith("not UTF-8 text")
    data = p.read_bytes()
    for x in lines:
        assert data[x.offset:x.offset + x.length].strip()  # offsets point at the line


def test_iter_lines_skips_too_long_lines_in_bounded_chunks_and_reads_gzip(tmp_path):
    p = tmp_path / "a.jsonl.gz"
    with gzip.open(p, "wb") as f:
        f.write(b'{"a": 1}\n' + b'"' + b"x" * 3000 + b'"\n{"b": 2}\n')
    lines = list(iter_lines(p, max_line_bytes=100))
    assert [x.value for x in lines if x.ok] == [{"a": 1}, {"b": 2}]
    assert lines[1].too_long and lines[1].length == 3003 and "3003 bytes, above the 100-byte limit" in lines[1].problem
    raw = list(iter_lines(p, decode=None))
    assert raw[0].value == b'{"a": 1}\n'


def test_read_jsonl_names_file_and_line(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text('{"a": 1}\n\n{"b": \n')
    it = read_jsonl(p)
    assert next(it) == {"a": 1}
    with pytest.raises(JsonlError, match=r"r\.jsonl line 3: not valid JSON"):
        next(it)
    p.write_text('{"a": 1}\n[2]\n')
    with pytest.raises(JsonlError, match="line 2: expected a JSON object, got list"):
        list(read_jsonl(p, objects=True))
    assert list(read_jsonl(p)) == [{"a": 1}, [2]]


def test_atomic_writes_replace_whole_and_leave_nothing_on_error(tmp_path):
    p = tmp_path / "c.json"
    write_json_atomic(p, {"é": 1, "p": tmp_path})
    assert p.read_text(encoding="utf-8") == json.dumps({"é": 1, "p": str(tmp_path)}, ensure_ascii=False, indent=1) + "\n"
    with pytest.raises(RuntimeError):
        with atomic_open(p) as f:
            f.write("torn")
            raise RuntimeError("killed")
    assert json.loads(p.read_text())["é"] == 1
    assert [q.name for q in tmp_path.iterdir()] == ["c.json"]  # no temporary file left
    assert write_jsonl_atomic(tmp_path / "r.jsonl", [{"a": 1}, {"b": "ü"}]) == 2
    assert (tmp_path / "r.jsonl").read_text(encoding="utf-8") == '{"a":1}\n{"b":"ü"}\n'
    with atomic_open(tmp_path / "b.bin", "wb") as f:
        f.write(b"\x00\xff")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\xff"


def test_sink_skips_known_keys_and_cuts_a_torn_line(tmp_path):
    p = tmp_path / "s.jsonl"
    with JsonlSink(p, key="k") as s:
        assert s.write({"k": 1, "v": "a"}) and not s.write({"k": 1, "v": "b"})
    with open(p, "a") as f:
        f.write('{"k": 2, "v"')  # torn by a kill
    with JsonlSink(p, key=lambda r: str(r["k"])) as s:
        assert "1" in s and len(s) == 1
        s.write({"k": 2, "v": "c"})
    assert list(read_jsonl(p)) == [{"k": 1, "v": "a"}, {"k": 2, "v": "c"}]


def test_sink_sets_aside_a_bad_line_in_the_middle_and_keeps_every_record_after_it(tmp_path, caplog):
    """A line that is not a record with records after it (a hand edit, a damaged disk) was taken
    for a torn last line: the file was cut there and every later record lost (8 of 10, silently;
    red team, pipelines). It is moved to ``<file>.corrupt`` and named in a warning now."""
    p = tmp_path / "completions.jsonl"
    with JsonlSink(p, key="k") as s:
        for i in range(10):
            s.write({"k": i})
    lines = p.read_text().splitlines()
    lines[2], lines[6] = '{"k": 2,}', '{"no key": 6}'
    p.write_text("\n".join(lines) + "\n" + '{"k": 10')  # (and a torn last line)
    with caplog.at_level("WARNING", logger="arbiter"):
        with JsonlSink(p, key="k") as s:
            assert sorted(s.keys) == sorted(str(i) for i in (0, 1, 3, 4, 5, 7, 8, 9))
            assert s.write({"k": 2})
    assert [r["k"] for r in read_jsonl(p)] == [0, 1, 3, 4, 5, 7, 8, 9, 2]
    assert (tmp_path / "completions.jsonl.corrupt").read_text() == '{"k": 2,}\n{"no key": 6}\n'
    assert "lines 3, 7: not a record" in caplog.text and "completions.jsonl.corrupt" in caplog.text


def test_sink_sets_aside_a_complete_last_line_and_any_line_its_key_cannot_be_read_from(tmp_path):
    """Only a line without its newline is torn (a record is written with it in one write): a complete
    bad last line was cut, so a file of keyless lines (the wrong file given) lost its last one, and a
    key function raising AttributeError or IndexError stopped the sink from opening (red team)."""
    p = tmp_path / "s.jsonl"
    p.write_text('{"k": 1}\n{"k": 2, "v"\n[1, 2]\n7\n')
    with JsonlSink(p, key=lambda r: f"{r.get('k')}:{r['k']}") as s:
        assert sorted(s.keys) == ["1:1"]
    assert p.read_text() == '{"k": 1}\n'
    assert (tmp_path / "s.jsonl.corrupt").read_text() == '{"k": 2, "v"\n[1, 2]\n7\n'




def test_atomic_writes_get_the_mode_open_would_give(tmp_path):
    import os
    import stat

    from arbiter.datasets.io import write_json_atomic

    old = os.umask(0o022)
    try:
        write_json_atomic(tmp_path / "report.json", {"a": 1})
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "report.json").stat().st_mode) == 0o644
