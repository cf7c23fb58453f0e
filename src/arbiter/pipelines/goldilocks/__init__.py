"""Goldilocks difficulty filtering of a verl code dataset (``arbiter curate``), the card's way: score a weak and a
strong model's completions with ``arbiter score``, then :func:`curate_goldilocks` keeps the rows whose recomputed
flag holds (:func:`is_goldilocks`) and whose statement is English (:class:`EnglishFilter`);
:func:`audit_annotations` checks an annotation a dataset already carries.

One concept a module, data flowing one way: ``errors`` -> ``flag`` -> ``score_folders`` -> ``english`` ->
``writer`` -> ``prescan`` -> ``rows`` -> ``tally`` -> ``curate`` -> ``audit``; ``consolidate`` (the card's step 3). Every public name of these modules
is importable from here. The pipeline, its outputs and counts: ``docs/goldilocks.md``.
"""

from __future__ import annotations

from arbiter.pipelines.goldilocks.audit import (
    BAD_SCORES, INCONSISTENT, MISSING_FIELDS, NON_BINARY, RATE_MISMATCH, AuditRun, audit_annotations,
)
from arbiter.pipelines.goldilocks.consolidate import ConsolidationRun, ConsolidationSource, consolidate
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
    "WRAPPER_SENTENCES", "Annotation", "ConsolidationRun", "ConsolidationSource", "consolidate", "AuditRun", "CuratedWriter", "CurationInputError", "CurationRun",
    "EnglishFilter", "ScoreFolder", "Tally", "TemplateCounter", "UnwritableRow", "annotate", "annotated_schema",
    "audit_annotations", "check_output_paths", "curate_goldilocks", "detection_text", "drop_reason",
    "is_goldilocks", "is_positional", "json_line", "lenient_text", "pass_rate", "statement_lines",
    "statement_text", "template_lines", "write_json_atomic",
]
