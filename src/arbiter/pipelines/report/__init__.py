"""``arbiter report``: the codegen card's tables and plots from an annotated dataset, and plots of
``arbiter score``, ``pie eval``, ``pie reward`` and ``oracle verify`` folders. See ``docs/report.md``.
"""

from arbiter.pipelines.report.build import (Report, ReportOptions, build_report, input_kind, parse_candidates,
                                            section_of)
from arbiter.pipelines.report.tokens import TokenizerError

__all__ = ["Report", "ReportOptions", "TokenizerError", "build_report", "input_kind", "parse_candidates",
           "section_of"]
