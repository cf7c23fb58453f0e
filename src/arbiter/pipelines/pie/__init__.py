"""PIE batch jobs: ``arbiter pie reward`` (:mod:`.batch`) and ``arbiter pie eval`` (:mod:`.eval`, :mod:`.metrics`) over
:func:`arbiter.rewards.pie.pie_reward`. See ``docs/pie.md``.
"""
