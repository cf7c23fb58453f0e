"""Per-source converters to verl rows (one module per dataset shape); driven by
:mod:`arbiter.datasets.convert`.

| ``--from`` | module | input | data_source | reference solutions |
|---|---|---|---|---|
| ``apps`` | :mod:`.apps` | APPS problem folders (``train/0001/...``) or HF ``codeparrot/apps`` rows | ``apps`` | ``solutions`` |
| ``taco`` | :mod:`.apps` | HF ``BAAI/TACO`` rows | ``taco`` | ``solutions`` |
| ``leetcode`` | :mod:`.leetcode` | LeetCodeDataset rows (``.jsonl[.gz]``) | ``leetcode`` | ``completion`` |
| ``codescope`` | :mod:`.codescope` | CodeScope ``code_optimization_data.jsonl`` (Python rows) | ``codeforces`` | both baselines |
| ``nemo-gym`` | :mod:`.nemo_gym` | NeMo-Gym ``code_gen`` rows | ``codeforces`` / ``taco`` | none |
| ``lcb`` | :mod:`.livecodebench` | LiveCodeBench ``code_generation_lite`` rows | ``livecodebench`` | none |

Row files may be JSON Lines (``.jsonl``, ``.jsonl.gz``), Parquet or an HF ``datasets`` folder.
"""
