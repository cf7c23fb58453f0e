"""arbiter on a Ray cluster: one judge pool per node (:mod:`arbiter.cluster.pool`) shared by every
process of the node, and the backend that streams a batch job's items to the pools
(:mod:`arbiter.cluster.backend`). Ray is imported only when one of these is used.
See ``docs/cluster.md``.
"""
