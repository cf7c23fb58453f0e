"""arbiter: run untrusted, model-written programs and turn them into trustworthy verdicts,
rewards and training data for code LLMs.

Layers (bottom to top, see DESIGN.md): sandbox -> languages -> checkers | timing -> judge ->
datasets -> pipelines -> cli / verl adapter.
"""

__version__ = "0.1.0"
