"""Rewards: one reward per module or package, each a function of one row and one response.

Between datasets and pipelines: a reward reads a dataset row, runs the judge, and is called by the
batch pipelines and by the training adapters (:mod:`arbiter.verl`). See ``docs/DESIGN.md``.
"""
