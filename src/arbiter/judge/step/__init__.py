"""The judge of an RL step's batch: reuse, failures found first, no tail (``docs/step.md``)."""

from arbiter.judge.step.settings import OFF, ON, SCHEDULES, Settings
from arbiter.judge.step.stepjudge import StepJudge, default_step_judge

__all__ = ["OFF", "ON", "SCHEDULES", "Settings", "StepJudge", "default_step_judge"]
