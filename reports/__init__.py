"""Reports: the report :class:`~.document.Document` and its renderings, and the gate's rules.

The documents (``document``: conformance rows and cells, merged runs), their
views (Markdown and HTML ``writers`` / ``html``, JUnit, proofs, mutations,
the combined ``verification``), the gate's comparison (``regressions``,
``known_failures``).  This layer renders what a run produced: it runs no tier
and imports none (``fuzz``, ``symbolic``, the backend plug-ins); building a
document from settings is :mod:`tokenlaw.orchestration`'s job.
"""
