"""Replay artifacts: every shrunk violation stored as JSON, re-run bit-for-bit by id.

An artifact holds what rebuilds the failing example -- the operator,
contract, dtype, backend, the Case's drawn fields (its seed among them) and,
when a mutation run found it, the mutant's name -- plus the evidence to
compare against: the verdict's status, detail and the exact bits of its
discrepancy and bound (``float.hex``), and the float64 input tokens and mask
(also as hex, so the regenerated inputs can be checked bit-for-bit too).

The id is a digest of that content, so the same failure found twice gets
the same id, and ``tokenlaw replay <id>`` reproduces it:

    $ tokenlaw replay oattention-differential-float16-3f2a9c1e
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
from pathlib import Path

import torch

from tokenlaw.operators import tree
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.process import artifacts
from tokenlaw.process.files import atomic_write
from tokenlaw.properties import verdict as V
from tokenlaw.properties.case import Case
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.properties.plan import contracts_of

from .mutants.seeded import catalogue

DEFAULT_DIR = artifacts.DEFAULT_DIR
MAX_STORED_ENTRIES = 1 << 14     # above this the inputs are regenerated from the seed only


def _hex(t: torch.Tensor | None):
    if t is None or t.numel() > MAX_STORED_ENTRIES:
        return None
    return {"shape": list(t.shape), "hex": [float(v).hex() for v in t.double().reshape(-1).tolist()]}


def _leaf_hex(value):
    if torch.is_tensor(value):
        return {"tensor": _hex(value), "dtype": str(value.dtype).replace("torch.", "")}
    return {"float": value.hex()} if isinstance(value, float) else value


def params_hex(params):
    """The drawn parameters as JSON: every tensor as :func:`_hex`, every float as ``float.hex`` ({"float": ...}),
    ints, bools, strings and None as they are, dicts, lists and tuples tagged with their kind (their order
    kept: :func:`tokenlaw.operators.tree.tagged`)."""
    return tree.tagged(params, _leaf_hex)


def _leaf_from_hex(value):
    if isinstance(value, dict) and "tensor" in value:
        t = value["tensor"]
        if t is None:
            return None
        flat = torch.tensor([float.fromhex(h) for h in t["hex"]], dtype=torch.float64)
        return flat.reshape(t["shape"]).to(getattr(torch, value["dtype"]))
    if isinstance(value, dict) and "float" in value:
        return float.fromhex(value["float"])
    return value


def params_from_hex(value):
    """The inverse of :func:`params_hex` (a tensor stored past MAX_STORED_ENTRIES comes back as None)."""
    return tree.untagged(value, _leaf_from_hex)


def tensor_from_hex(stored):
    """A stored :func:`_hex` tensor back as float64 (None stays None)."""
    if stored is None:
        return None
    return torch.tensor([float.fromhex(h) for h in stored["hex"]], dtype=torch.float64).reshape(stored["shape"])


def _float_hex(v: float) -> str:
    return float(v).hex()


def evidence(v: V.Verdict) -> dict:
    """The parts of a verdict a replay must reproduce exactly."""
    return {"status": v.status, "discrepancy": _float_hex(v.discrepancy), "bound": _float_hex(v.bound),
            "detail": v.detail}


@dataclasses.dataclass
class Artifact:
    id: str
    operator: str
    contract: str
    dtype: str
    backend: str
    case: dict
    verdict: dict
    mutant: str | None = None
    x: dict | None = None
    mask: dict | None = None
    versions: dict = dataclasses.field(default_factory=dict)
    params: object = None       # the drawn float64 parameters (tensors as _hex, numbers as float.hex): issue 47


def _digest(payload: dict) -> str:
    text = json.dumps(payload, sort_keys=True, default=str).encode()
    return hashlib.sha256(text).hexdigest()[:10]


def store(case: Case, contract_name: str, verdict: V.Verdict, directory=DEFAULT_DIR, *, mutant: str | None = None) -> str:
    """Write the artifact for ``verdict`` on ``case``; returns its id."""

    body = dict(operator=case.op.name, contract=contract_name, dtype=case.fields()["dtype"], backend=case.backend,
                case=case.fields(), verdict=evidence(verdict), mutant=mutant,
                x=_hex(case.x), mask=_hex(case.mask))
    rid = f"{case.op.name}-{contract_name}-{body['dtype']}-{_digest(body)}"
    # the parameters join the artifact, not its id: an id stays the digest of what replays it
    art = Artifact(id=rid, versions={"torch": torch.__version__}, params=params_hex(case.params), **body)
    path = Path(directory) / f"{rid}.json"
    atomic_write(path, json.dumps(dataclasses.asdict(art), indent=1) + "\n")
    return rid


def load(rid: str, directory=DEFAULT_DIR) -> Artifact:
    """Read an artifact by id (or by a path to its JSON file)."""
    return Artifact(**json.loads(artifacts.artifact_path(rid, directory).read_text()))


@dataclasses.dataclass
class Replayed:
    artifact: Artifact
    verdict: V.Verdict
    same_verdict: bool      # status, detail, discrepancy and bound bit-for-bit
    same_inputs: bool       # the regenerated float64 tokens and mask equal the stored ones bit-for-bit

    @property
    def reproduced(self) -> bool:
        return self.same_verdict and self.same_inputs


def replay(rid: str, directory=DEFAULT_DIR, *, registry=None, mutants=None) -> Replayed:
    """Rebuild the stored case, judge its contract again and compare the evidence.

    mutants: the catalogue a stored mutant name is looked up in (default: the eager one, subtle mutants
    included; the app adds the kernel backend's).
    """

    art = load(rid, directory)
    registry = default_registry() if registry is None else registry
    mutant = _mutant(art.mutant, catalogue(subtle=True) if mutants is None else mutants)
    if mutant is not None:
        registry = mutant.apply(registry)
    op = registry[art.operator]
    contracts = contracts_of(registry)      # the user's own contracts too, when their module is collected
    if art.contract not in contracts:
        raise InvalidArgument(f"contract: {art.contract!r} (from {rid}) is not in the catalogue")
    case = Case.from_fields(op, art.case)
    with mutant.patch() if mutant is not None else contextlib.nullcontext():
        v = contracts[art.contract].judge(case)
    same_inputs = _hex(case.x) == art.x and _hex(case.mask) == art.mask
    return Replayed(art, v, evidence(v) == art.verdict, same_inputs)


def _mutant(name, mutants):
    """The catalogue's mutant of that name, or None for an artifact found without one."""
    if not name:
        return None
    by_name = {m.name: m for m in mutants}
    if name not in by_name:
        raise InvalidArgument(f"mutant: {name!r} (stored in the artifact) is not in the mutant catalogue")
    return by_name[name]


replay_dir = artifacts.replay_dir
