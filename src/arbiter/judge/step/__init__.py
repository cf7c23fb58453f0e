"""The judge of an RL step's batch: reuse, failures found first, no tail (``docs/step.md``)."""

from arbiter.judge.step.stepjudge import OFF, ON, SCHEDULES, Settings, StepJudge, default_step_judge

__all__ = ["OFF", "ON", "SCHEDULES", "Settings", "StepJudge", "default_step_judge"]
