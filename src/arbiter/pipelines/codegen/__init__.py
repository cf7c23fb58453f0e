"""``arbiter score`` and ``arbiter convert``'s reference measurement: batch jobs over the codegen
reward (:mod:`arbiter.rewards.codegen`) on a run folder and the executor.

:mod:`.inputs` (read and check), :mod:`.config` (``config.json``), :mod:`.verdicts` (the
resumable store), :mod:`.stream` (the reward in parallel), :mod:`.score` (the run),
:mod:`.summary` (pass rates, pass@k), :mod:`.references` (per-row time limits).
See ``docs/codegen.md``.
"""

from arbiter.pipelines.codegen.config import (CONFIG_FILE, VERDICTS_FILE, ConfigMismatch, check_config,
                                              config_fingerprint, input_identity, text_sha256)
from arbiter.pipelines.codegen.inputs import (InputProblems, ScoringInputError, ScoringInputs, index_completions,
                                              load_inputs)
from arbiter.pipelines.codegen.score import ScoringRun, Scorer, score_completions
from arbiter.pipelines.codegen.summary import pass_at_k, summarize

__all__ = ["CONFIG_FILE", "ConfigMismatch", "InputProblems", "ScoringInputError", "ScoringInputs", "ScoringRun",
           "Scorer", "VERDICTS_FILE", "check_config", "config_fingerprint", "index_completions", "input_identity",
           "load_inputs", "pass_at_k", "score_completions", "summarize", "text_sha256"]
