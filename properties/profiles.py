"""The fuzz profiles: examples per cell per dtype, by name (the plan, the gate and the CLI read one table)."""
from __future__ import annotations


class Profiles(dict):
    """{profile: examples per cell per dtype} that also answers to the old names (``ALIASES``); iterating
    it, and its keys, give the current names only."""

    def _name(self, key):
        return ALIASES.get(key, key)

    def __getitem__(self, key):
        return super().__getitem__(self._name(key))

    def __contains__(self, key):
        return super().__contains__(self._name(key))

    def get(self, key, default=None):
        return super().get(self._name(key), default)


# Examples per cell per dtype, named for what they are: smoke (seconds: does it run at all), ci (the
# default, the CI gate; the benchmark in docs/fuzz.md), thorough (before a release), deep (long runs).
# The old names stay accepted: quick = ci, default = thorough.
ALIASES = {"quick": "ci", "default": "thorough"}
PROFILES = Profiles({"smoke": 10, "ci": 100, "thorough": 300, "deep": 2000})
DEFAULT_PROFILE = "ci"


def profile_name(name: str) -> str:
    """The current name of a profile given by its current or old name (``quick`` -> ``ci``)."""
    return ALIASES.get(name, name)
