"""The oracle SFT job: seed rows + oracle answers -> verified rows, rejected rows, SFT data.

``verify`` runs the rows, ``writer`` asks a model for answers, ``format`` checks their shape. See ``docs/oracle.md``.
"""
