"""Rewards: a function of one row and one response (a score, a verdict, a reason).

Between datasets and pipelines: a reward reads a dataset row, runs the judge, and is called by
the batch pipelines and by the training adapters (:mod:`arbiter.verl`). See ``docs/codegen.md``.
"""
