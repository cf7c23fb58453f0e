"""The languages arbiter judges: the Language protocol (base), the registry, one module each. See ``docs/languages.md``."""
