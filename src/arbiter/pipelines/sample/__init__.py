"""Sampling completions of verl rows from an OpenAI-compatible endpoint (``arbiter sample``): ``records`` (what is
read and written) -> ``run`` (the requests). See ``docs/codegen.md`` ("Sampling: arbiter sample")."""

from __future__ import annotations

from arbiter.pipelines.sample.records import Prompt, completion_record, load_prompts, record_key, scan_existing
from arbiter.pipelines.sample.run import OutputBusy, SampleSummary, asample, sample

__all__ = ["OutputBusy", "Prompt", "SampleSummary", "asample", "completion_record", "load_prompts", "record_key",
           "sample", "scan_existing"]
