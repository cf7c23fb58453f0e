"""The ``arbiter score --out`` folders a dataset is annotated from (:class:`ScoreFolder`), and the
annotation of one row from the weak and the strong folder (:func:`annotate`).

Rows meet their verdicts on data_source-qualified row keys (a row without an index only from a folder that scored
this very dataset), each verdict's ground-truth sha256 checked; folders scored with ``--parity`` are refused unless
allowed. A row is never given a pass rate it was not scored for: the reasons it gets none, and the join's rules,
are in ``docs/goldilocks.md``, "Score folders and the join".
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arbiter.datasets.io import iter_lines
from arbiter.datasets.verl_rows import VACUOUS_SUITE
from arbiter.pipelines.codegen import CONFIG_FILE, VERDICTS_FILE, text_sha256
from arbiter.pipelines.goldilocks.errors import CurationInputError
from arbiter.pipelines.goldilocks.flag import (
    BAD_SCORE, COUNT, INCOMPLETE, INVALID, MISSING, POSITIONAL, SANDBOX, TRUTH, Annotation,
)


# ------------------------------------------------------------------ score folders


@dataclass
class RowScores:
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
    - ``rows``: ``row key -> RowScores`` from ``verdicts.jsonl`` (the last record of a response
      key wins, as ``arbiter score`` reads it), with the vacuous-suite flag of its verdicts'
      ``warning``;
    - ``sandbox_errors``: ``row key -> responses`` that hit SANDBOX_ERROR in the folder's last run
      (``errors.jsonl``);
    - ``config``: its ``config.json`` (inputs' sha256 and verdict options) or ``None``;
    - ``skipped`` / ``partial``: how many verdicts are ``SKIPPED`` / score strictly between 0
      and 1 (both only occur with ``arbiter score --parity``);
    - ``shard_gaps``: what its shards lack when read with ``allow_partial`` (``combine.py``).

    Memory: one small entry per response (the card: 31,176 rows x 8), never response text.
    """

    path: Path
    label: str
    rows: dict[str, RowScores]
    sandbox_errors: Counter
    config: dict[str, Any] | None
    skipped: int = 0
    partial: int = 0
    #: whether this folder scored the very dataset being curated (set by :func:`curate_goldilocks`;
    #: rows keyed by position are annotated from it only then)
    dataset_matches: bool = False
    #: what the shards read as this folder lack (``--allow-partial``; :func:`~.combine.load_folders`)
    shard_gaps: list[str] = field(default_factory=list)

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
        rows, skipped, partial = _read_verdicts(vpath, label)
        sandbox = _read_sandbox_errors(p / "errors.jsonl")
        config = _read_config(p / CONFIG_FILE)
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

    def _complete(self, r: RowScores) -> bool:
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
        ground truth (:func:`arbiter.pipelines.codegen.text_sha256`), compared with the one
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


def _read_verdicts(vpath: Path, label: str) -> tuple[dict[str, RowScores], int, int]:
    """The 0/1 scores per row key of ``verdicts.jsonl``, and how many verdicts were SKIPPED / partial."""
    rows: dict[str, RowScores] = {}
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
                r = rows[key] = RowScores()
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
    return rows, skipped, partial


def _read_sandbox_errors(epath: Path) -> Counter:
    """How many ``sandbox_error`` records ``errors.jsonl`` holds per row key."""
    sandbox: Counter = Counter()
    if epath.is_file():
        for line in iter_lines(epath):
            rec = line.value if line.ok else None
            if isinstance(rec, dict) and rec.get("kind") == "sandbox_error" and isinstance(rec.get("row"), str):
                sandbox[rec["row"]] += 1
    return sandbox


def _read_config(cpath: Path) -> dict | None:
    """The folder's ``config.json``, or ``None`` when it is missing or unreadable."""
    config = None
    if cpath.is_file():
        try:
            loaded = json.loads(cpath.read_text(encoding="utf-8"))
            config = loaded if isinstance(loaded, dict) else None
        except (OSError, ValueError):
            config = None
    return config
