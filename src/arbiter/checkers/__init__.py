"""Output comparison: the checker table (table), pure checkers, function-call values. See ``docs/checkers.md``."""
