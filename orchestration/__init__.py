"""Orchestration: settings -> plan -> tier runs -> one report :class:`~tokenlaw.reports.document.Document`.

The layer between the tiers (``fuzz``, ``symbolic``, the backend plug-ins)
and the commands: :mod:`.runs` turns frozen settings into a planned
selection, runs it on the fuzz tier (on any backend) or the symbolic tier,
and hands back the document the ``reports`` layer renders; :mod:`.environment`
records and reproduces the environment a backend's run depends on;
:mod:`.provenance` records which backend sources a report was made from.
It sits above ``reports`` (it builds documents) and below the app and the
experiments (they call it), so ``reports`` renders without importing a tier.
"""
