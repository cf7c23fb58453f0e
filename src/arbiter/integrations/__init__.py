"""Reward functions for trainers other than verl, each returning what ``compute_score`` returns
for the same row and response: TRL's ``GRPOTrainer`` (:mod:`.trl`), OpenRLHF (:mod:`.openrlhf`)
and open-r1's ``code_reward`` (:mod:`.open_r1`). They judge on the judge pool verl's manager uses
(the node's Ray pool inside Ray, else one judge per core of the process). See README ("Training
with TRL, OpenRLHF, open-r1") and ``docs/verl.md``.
"""
