"""One registry of report formats and one writer: every report tokenlaw writes goes through :func:`write`.

:data:`FORMATS` maps a format's name to a :class:`Format`: the file suffix and
the renderer, a function of the :class:`~.document.Document` being written
(``render(doc, stem, also) -> str``; ``stem`` names the files, which the HTML
page needs to find its timings; ``also`` holds other tiers' Documents of the
same selection, whose verdicts the law table shows beside this one's).  The
combined view of several tiers (``verification-*``) renders the
:class:`~.verification.Verification` made from their Documents.

Every format but ``timed-json`` and the ``timings`` pair renders the
timing-free view of the document (``Document.stable_json``), so those files
are byte-identical for a seed; the timings go to ``stem.timings.json`` (and
``stem.timings.js``, which the HTML page loads).  The proofs report keeps its
seconds inside its JSON (``timed-json``), as it always has.

Each format renders one kind of record (``Format.takes``): a tier's
:class:`~.document.Document`, the :class:`~.verification.Verification` of
several, a :class:`~.campaign.CampaignReport`, a
:class:`~.mutations.MutationReport` or a :class:`~.kill_matrix.KillMatrix`; :func:`render` refuses any other.

The groups a command writes:

- ``check``: :data:`CONFORMANCE` as ``OUT/conformance.*`` (``conformance-<backend>.*`` for a kernel backend);
- ``prove``: :data:`PROOFS` as ``OUT/proofs.*``;
- ``verify`` / ``report merge`` of several tiers: each tier's, and :data:`VERIFICATION` as ``OUT/verification.*``;
- ``campaign``: :data:`CAMPAIGN` as ``OUT/campaign.*`` (the page alone, ``campaign-html``, as rounds finish);
- ``mutate``: :data:`MUTATION` as ``OUT/mutation.*``;
- ``adversary``: :data:`ADVERSARY` as ``OUT/adversary.*``.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Callable

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.process.files import atomic_write

from . import backends, campaign, campaign_page, kill_matrix, lawtable, mutations, proofs, verification, writers
from .document import Document
from .html import html
from .junit import junit


@dataclasses.dataclass(frozen=True)
class Format:
    """A report format: the file ``<stem><suffix>`` it writes, its renderer ``render(doc, stem, also)`` and the
    record it renders (``takes``)."""

    suffix: str
    render: Callable
    what: str
    takes: type = Document


def _json(view: dict) -> str:
    return json.dumps(view, indent=1) + "\n"


FORMATS = {
    "json": Format(".json", lambda doc, stem, also: _json(doc.stable_json()),
                   "the JSON document without timings (docs/report-schema.md)"),
    "timed-json": Format(".json", lambda doc, stem, also: _json(doc.to_json()),
                         "the JSON document with each verdict's seconds (the proofs report)"),
    "md": Format(".md", lambda doc, stem, also: writers.markdown(doc, also),
                 "the conformance report in Markdown"),
    "xml": Format(".xml", lambda doc, stem, also: junit(doc), "JUnit XML, one test case per cell"),
    "html": Format(".html", lambda doc, stem, also: html(doc, stem, also),
                   "the conformance report as one self-contained HTML page"),
    "timings": Format(".timings.json", lambda doc, stem, also: _json(doc.timings()),
                      "the run's and each cell's seconds (what differs between two runs of one seed)"),
    "timings-js": Format(".timings.js", lambda doc, stem, also: writers.timings_script(doc.timings()),
                         "the HTML page's wall time (a script a file:// page may load)"),
    "proofs-md": Format(".md", lambda doc, stem, also: proofs.to_markdown(doc), "the proofs report in Markdown"),
    "lawtable-md": Format(".md", lambda doc, stem, also: "\n".join(lawtable.markdown(lawtable.build([doc, *also]))),
                          "the law table of this document and ``also``"),
    "backends-md": Format(".md", lambda doc, stem, also: backends.markdown([doc, *also]),
                          "this backend's cells beside those of ``also`` (other backends)"),
    "verification-json": Format(".json", lambda ver, stem, also: _json(verification.stable(ver.to_json())),
                                "the combined view of several tiers, without timings", verification.Verification),
    "verification-md": Format(".md", lambda ver, stem, also: verification.to_markdown(ver),
                              "the combined view of several tiers in Markdown", verification.Verification),
    "campaign-json": Format(".json", lambda rep, stem, also: json.dumps(rep.to_json(), indent=1, sort_keys=True) + "\n",
                            "the campaign's report: per cell its rounds, examples, regimes, violations",
                            campaign.CampaignReport),
    "campaign-md": Format(".md", lambda rep, stem, also: campaign.markdown(rep), "the campaign's report in Markdown",
                          campaign.CampaignReport),
    "campaign-html": Format(".html", lambda rep, stem, also: campaign_page.page(rep),
                            "the page to watch while a campaign runs (it reloads until the campaign ends)",
                            campaign.CampaignReport),
    "mutation-json": Format(".json", lambda rep, stem, also: _json(rep.to_json()),
                            "each mutant, the rows it ran and the contracts that killed it", mutations.MutationReport),
    "mutation-md": Format(".md", lambda rep, stem, also: mutations.to_markdown(rep),
                          "the mutation report in Markdown", mutations.MutationReport),
    "adversary-json": Format(".json", lambda rep, stem, also: _json(rep.to_json()),
                             "the standing adversary's kill matrix and every survivor", kill_matrix.KillMatrix),
    "adversary-md": Format(".md", lambda rep, stem, also: kill_matrix.markdown(rep),
                           "the kill matrix in Markdown", kill_matrix.KillMatrix),
}

CONFORMANCE = ("json", "md", "xml", "html", "timings", "timings-js")
PROOFS = ("timed-json", "proofs-md")
VERIFICATION = ("verification-json", "verification-md")
CAMPAIGN = ("campaign-html", "campaign-json", "campaign-md")
MUTATION = ("mutation-json", "mutation-md")
ADVERSARY = ("adversary-json", "adversary-md")


def render(doc, name: str, stem: str = "conformance", also=()) -> str:
    """``doc`` rendered in the format ``name`` of :data:`FORMATS`."""
    if name not in FORMATS:
        raise InvalidArgument(f"format: expected one of {sorted(FORMATS)}, got {name!r}")
    takes = FORMATS[name].takes
    if not isinstance(doc, takes):
        raise InvalidArgument(f"doc: expected a {takes.__name__} (what the format {name!r} renders), "
                              f"got {type(doc).__name__}"
                              + ("; read a written report with Document.from_json" if takes is Document else ""))
    return FORMATS[name].render(doc, stem, tuple(also))


def write(doc, out, formats=CONFORMANCE, *, stem: str = "conformance", also=()) -> dict:
    """Write ``doc`` in each of ``formats`` to ``out/<stem><suffix>``, atomically; returns {format: path}.

    A ``stem.INTERRUPTED.txt`` marker beside them (:func:`~.writers.mark_interrupted`) goes: these files are
    the latest run's."""
    out = Path(out)
    texts = {name: render(doc, name, stem, also) for name in formats}     # every format renders before any is written
    paths = {}
    for name, text in texts.items():
        paths[name] = out / f"{stem}{FORMATS[name].suffix}"
        atomic_write(paths[name], text)
    writers.interrupted_marker(out, stem).unlink(missing_ok=True)
    return paths
