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

The package, one concept a module; data flows one way (a module imports only those above it):

- :mod:`~arbiter.pipelines.goldilocks.errors`: :class:`CurationInputError`;
- :mod:`~arbiter.pipelines.goldilocks.flag`: the card's thresholds, :func:`is_goldilocks`,
  :func:`drop_reason`, :func:`pass_rate`, :class:`Annotation` (the annotation's fields), the names
  of the annotation problems and of the decisions;
- :mod:`~arbiter.pipelines.goldilocks.score_folders`: :class:`ScoreFolder` (the ``arbiter score``
  verdicts of one model), :func:`annotate` (the join on data_source-qualified row keys, the
  reasons a row gets no annotation), the ``--parity`` rule;
- :mod:`~arbiter.pipelines.goldilocks.english`: the English filter (:class:`EnglishFilter`,
  :func:`statement_text`, :func:`detection_text`, :data:`WRAPPER_SENTENCES`,
  :func:`template_lines`);
- :mod:`~arbiter.pipelines.goldilocks.writer`: :class:`CuratedWriter` (Parquet / JSONL, lone
  surrogates), :func:`annotated_schema`, :func:`json_line`, :func:`write_json_atomic`,
  :func:`check_output_paths` (no output overwrites an input);
- :mod:`~arbiter.pipelines.goldilocks.prescan`: the first pass over the dataset (row count,
  template lines, the Parquet output schema);
- :mod:`~arbiter.pipelines.goldilocks.curate`: :func:`curate_goldilocks` (its outputs and counts,
  :class:`Tally`, :class:`CurationRun`);
- :mod:`~arbiter.pipelines.goldilocks.audit`: :func:`audit_annotations`, :class:`AuditRun`.

Every public name of these modules is importable from ``arbiter.pipelines.goldilocks``.
"""

from __future__ import annotations

from arbiter.pipelines.goldilocks.audit import (
    BAD_SCORES, INCONSISTENT, MISSING_FIELDS, NON_BINARY, RATE_MISMATCH, AuditRun, audit_annotations,
)
from arbiter.pipelines.goldilocks.curate import CurationRun, Tally, curate_goldilocks
from arbiter.pipelines.goldilocks.english import (
    ENGLISH_BATCH, TEMPLATE_LINE_SHOWN, TEMPLATE_LINES_SHOWN, TEMPLATE_MIN_ROWS, TEMPLATE_MIN_SHARE, WRAPPER_SENTENCES,
    EnglishFilter, TemplateCounter, detection_text, lenient_text, statement_lines, statement_text, template_lines,
)
from arbiter.pipelines.goldilocks.errors import CurationInputError
from arbiter.pipelines.goldilocks.flag import (
    ANNOTATION_FIELDS, BAD_ROW, BAD_SCORE, BOTH, CEILING, COUNT, DUPLICATE, ENGLISH_MIN, FLOOR, INCOMPLETE, INVALID,
    KEPT, LOWER_MAX, MISSING, MISSING_ANNOTATION, NO_STATEMENT, NON_ENGLISH, POSITIONAL, SANDBOX, TRUTH, UPPER_MIN,
    VACUOUS, Annotation, drop_reason, is_goldilocks, pass_rate,
)
from arbiter.pipelines.goldilocks.score_folders import ScoreFolder, annotate, is_positional
from arbiter.pipelines.goldilocks.writer import (
    CuratedWriter, UnwritableRow, annotated_schema, check_output_paths, json_line, write_json_atomic,
)

__all__ = [
    "ANNOTATION_FIELDS", "ENGLISH_MIN", "LOWER_MAX", "TEMPLATE_MIN_ROWS", "TEMPLATE_MIN_SHARE", "UPPER_MIN",
    "WRAPPER_SENTENCES", "Annotation", "AuditRun", "CuratedWriter", "CurationInputError", "CurationRun",
    "EnglishFilter", "ScoreFolder", "Tally", "TemplateCounter", "UnwritableRow", "annotate", "annotated_schema",
    "audit_annotations", "check_output_paths", "curate_goldilocks", "detection_text", "drop_reason",
    "is_goldilocks", "is_positional", "json_line", "lenient_text", "pass_rate", "statement_lines",
    "statement_text", "template_lines", "write_json_atomic",
]
