"""PIE rows: gem5-timed pairs/bysrc rows and PIE release rows (models, decoding, reading), the card's reward over
dataset timings, and the source/test-case view the re-timing reward uses. See ``docs/pie.md``.
"""
