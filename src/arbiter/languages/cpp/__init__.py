"""C++ and the gcc-family compile machinery: command allowlist (``command``), toolchain
fingerprint (``toolchain``), precompiled headers (``pch``), the compile in the sandbox
(``compile``) and the :class:`~arbiter.languages.base.Language` (``language``). See
``docs/languages.md``.
"""
