"""The sandbox's own failures (never a program verdict)."""


class SandboxError(RuntimeError):
    """The sandbox failed for a reason that is ours (bwrap missing, cgroup write failed, the server
    died). Never a program verdict: callers retry, then report ``SANDBOX_ERROR``."""


class UnsafeModeRefused(SandboxError):
    """Isolation is unavailable and the loud opt-in for unisolated runs was not given."""
