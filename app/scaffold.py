"""``tokenlaw new NAME``: scaffold an operator declaration whose cells every tier picks up.

The generated ``NAME.py`` holds a parameter builder, the ``@declare`` with
claims chosen from the contract catalogue (copied from ``--like OP``, or the
contracts that fit ``--traits``), and an eager body that raises
``NotImplementedError`` until written, so every claimed cell fails, by name,
in ``tokenlaw check``, the generated tests and the report.  Expected
violations are written commented out: a body that raises would otherwise
"reproduce" all of them.

Exit codes: 0 written; 2 bad arguments (name taken, file exists, unknown
trait / contract / operator).
"""
from __future__ import annotations

import importlib.util
import inspect
import json
import keyword
import re
import sysconfig
from pathlib import Path

import tokenlaw.operators as ops
from tokenlaw.operators import arguments
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.registry import TRAITS
from tokenlaw.process import command_line
from tokenlaw.properties.catalogue import CONTRACTS, collect, default_registry

from .exits import EXIT_OK

DEFAULT_TRAITS = ("token_local",)
ALWAYS = ("gradcheck",)      # every eager operator must pass fp64 gradcheck (docs/mathematics.md#gradients)
NEEDS_ORDER = ("weights", "layers", "reference")


def _split(text):
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def _checkout_root() -> Path | None:
    """The root of the tokenlaw source checkout this tokenlaw runs from (its pyproject names tokenlaw), or None."""
    root = Path(list(ops.__path__)[0]).resolve().parent
    project = root / "pyproject.toml"
    if project.is_file() and re.search(r'^name\s*=\s*["\']tokenlaw["\']', project.read_text(), re.M):
        return root
    return None


def default_dir() -> Path:
    """tokenlaw's own operators/ folder when run inside a tokenlaw checkout; else the current directory.

    Whether tokenlaw is installed from a wheel, installed editable or run
    from a checkout elsewhere, a user running ``tokenlaw new`` in their own
    project means their project: the scaffold goes into the current
    directory.  Only a current directory inside the checkout tokenlaw runs
    from (a contributor adding a built-in operator) writes into its
    ``operators/`` folder; a current directory inside site-packages is refused.
    """
    cwd, own = Path.cwd().resolve(), Path(list(ops.__path__)[0]).resolve()
    root = _checkout_root()
    if root is not None and cwd.is_relative_to(root):
        return own
    installed = {Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}
    if any(cwd.is_relative_to(site) for site in installed):
        raise InvalidArgument(f"--dir: the current directory {str(cwd)!r} is inside site-packages, which is not "
                              "yours to write; run `tokenlaw new` inside your project or pass --dir DIR")
    return cwd


def applicable(traits, contracts=None) -> list[str]:
    """Catalogue contracts whose required traits the operator has (in catalogue order)."""

    contracts = CONTRACTS if contracts is None else contracts
    return [n for n, c in contracts.items() if c.requires <= set(traits)]


def choose(traits, like=None, claims=None) -> tuple[dict, dict, list]:
    """(claims {name: reason}, violates {name: reason}, other applicable names) for the template."""

    fits = applicable(traits)
    if claims is not None:
        chosen = {n: "TODO: why this law holds for NAME" for n in claims}
    elif like is not None:
        chosen = {n: f"TODO (as {like.name}: {why})" for n, why in like.claims.items()}
    else:
        chosen = {n: "TODO: why this law holds for NAME" for n in fits
                  if n in ALWAYS or (CONTRACTS[n].requires and not CONTRACTS[n].needs)}
    violates = {n: f"TODO (as {like.name}: {why})" for n, why in like.violates.items()} if like else {}
    others = [n for n in fits if n not in chosen and n not in violates]
    return chosen, violates, others


def _signature(fn, skip=2) -> str:
    """The parameters of ``fn`` after its first ``skip`` (xp, x), as source text."""
    params = list(inspect.signature(fn).parameters.values())[skip:]
    text = str(inspect.Signature(params))[1:-1]
    return (", " + text) if text else ""


def _domain_source(like, name) -> str:
    if like is None:
        return f"Domain(params={name}_params)"
    d = like.domain
    fields = [f"params={name}_params"]
    defaults = type(d)()
    for f in ("d_model", "n_max", "mask", "dtypes", "positive", "nonnegative", "reals", "fixed_width", "d_max"):
        if getattr(d, f) != getattr(defaults, f):
            value = getattr(d, f)
            fields.append(f"{f}={_q(value) if isinstance(value, str) else repr(value)}")
    if d.intervals:   # the declared domains of scalar parameters: copied, never guessed
        fields.append("intervals={" + ", ".join(
            f"{_q(k)}: Interval({_bound(iv.lo)}, {_bound(iv.hi)}, lo_open={iv.lo_open}, hi_open={iv.hi_open})"
            for k, iv in d.intervals) + "}")
    if d.limits:      # per-dtype limits on the draws, with their reasons: copied, never guessed
        fields.append("limits={" + ", ".join(
            f"{_q(dt)}: Limit(" + "".join(f"{f}={getattr(lim, f)!r}, " for f in ("scores", "norm2", "offset")
                                          if getattr(lim, f) is not None)
            + f"reason={_q(lim.reason)})" for dt, lim in d.limits) + "}")
    return "Domain(" + ", ".join(fields) + ")"


def _bound(v: float) -> str:
    return repr(v) if v == v and abs(v) != float("inf") else ("float('inf')" if v > 0 else "float('-inf')")


def _params_source(like, name) -> tuple[str, str]:
    """(extra import line, parameter builder source)."""
    head = f"def {name}_params(gen, d_model, dtype=torch.float64):\n"
    doc = '    """Parameters of one drawn case (weights, tau, eps...), built from the generator ``gen``."""\n'
    if like is not None and like.domain.params is not None:
        p = like.domain.params
        return (f"from {p.__module__} import {p.__name__} as _like_params",
                head + doc + f"    return _like_params(gen, d_model, dtype)   # {like.name}'s parameters: edit\n")
    return "", head + doc + "    return {}\n"


def _q(text: str) -> str:
    """A double-quoted Python string literal (the house quote style)."""
    return json.dumps(text, ensure_ascii=False)


def _needs(claims) -> list[str]:

    wanted = set()
    for n in claims:
        wanted |= CONTRACTS[n].needs
    return [a for a in NEEDS_ORDER if a in wanted]


def _stub(name, attr, like, where) -> str:
    fn = getattr(like, attr, None) if like else None
    sig = {"weights": "(xp, s, mask=None, **params)", "layers": "(xp, x, mask=None, **params)",
           "reference": "(xp, x, **params)"}[attr]
    if fn is not None:
        sig = f"(xp, {list(inspect.signature(fn).parameters)[1]}{_signature(fn)})"
    what = {"weights": "the row normaliser W(S) of the attention scores",
            "layers": "the hidden state after every sub-layer, as a list",
            "reference": "a direct, unoptimised evaluation of the same math (formula_equivalence compares)"}[attr]
    return (f"def {name}_{attr}{sig}:\n    \"\"\"{what[0].upper() + what[1:]}.\"\"\"\n"
            f"    raise NotImplementedError(\"{name}: write {name}_{attr} in {where}\")\n")


def render(name: str, *, traits, claims: dict, violates: dict, others: list, like=None, where="") -> str:
    """The source text of NAME.py."""

    needs = _needs(claims)
    sig = _signature(like.fn) if like else ", **params"
    mask_arg = like is not None and like.domain.mask != "none"
    extra_import, params_source = _params_source(like, name)
    command = f"tokenlaw new {name}" + (f" --like {like.name}" if like else "")
    lines = [f'"""{name}: TODO one line saying what it computes (and the formula it follows).',
             "",
             f"Scaffolded by `{command}`.  Until the body of",
             f"``{name}`` is written every claimed contract fails with NotImplementedError in",
             "`tokenlaw check`, the generated tests and the report.  Then: edit the claims'",
             "reasons, uncomment the expected violations that apply, and run",
             f"`tokenlaw check --operator {name}`.",
             '"""',
             "from __future__ import annotations", "", "import torch", "",
             "from tokenlaw import Domain, "
             + ("Interval, " if like is not None and like.domain.intervals else "")
             + ("Limit, " if like is not None and like.domain.limits else "") + "arguments, declare"]
    if extra_import:
        lines.append(extra_import)
    lines += ["", "", params_source, ""]
    for attr in needs:
        lines += [_stub(name, attr, like, where), ""]
    lines += ["@declare(", f"    name={_q(name)},", f"    domain={_domain_source(like, name)},",
              "    traits={" + ", ".join(_q(t) for t in sorted(traits)) + "},"]
    for attr in needs:
        lines.append(f"    {attr}={name}_{attr},")
    lines.append("    claims={")
    for n, why in claims.items():
        lines.append(f"        # {CONTRACTS[n].law}")
        lines.append(f"        {_q(n)}: {_q(why.replace('NAME', name))},")
    for n in others:
        lines.append(f"        # {CONTRACTS[n].law}")
        lines.append(f"        # {_q(n)}: \"why it holds\",")
    lines.append("    },")
    if violates:
        lines.append("    # Uncomment once the body is written (a body that raises 'reproduces' every violation):")
        lines.append("    # violates={")
        for n, why in violates.items():
            lines.append(f"    #     {_q(n)}: {_q(why)},")
        lines.append("    # },")
    lines += [")",
              f"def {name}(xp, x{sig}):",
              f'    """TODO: the math of {name}, written once against the array namespace ``xp``.',
              "",
              "    Use xp.exp / xp.sum / xp.where / xp.div ... and the array's own + - * @, so the",
              "    symbolic tier can trace the very code the eager tier runs.",
              '    """',
              "    arguments.tokens(x)"]
    if mask_arg:
        lines.append("    mask = arguments.mask(mask, x)")
    lines += [f"    raise NotImplementedError(\"{name}: write the eager math in {where}\")", ""]
    return "\n".join(lines)


TEST_TEMPLATE = '''"""{name}'s tokenlaw cells as plain pytest tests (written by `tokenlaw new {name}`).

Run with plain `pytest {test}`: one test per (operator, contract) row of the
operators {module} declares, failing with the counterexample and the command
that replays it until the body is written.
"""
from pathlib import Path

import pytest

from tokenlaw import cells

HERE = Path(__file__).resolve().parent
REGISTRY, ROWS = cells.rows_of(HERE / "{module}")
EXAMPLES = 10          # examples per cell per dtype (tokenlaw check's profiles run more)


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_{name}_row(row, request):
    cells.judge(REGISTRY, row, examples=EXAMPLES, seed=0, modules=[str(HERE / "{module}")],
                replay_dir=cells.replay_dir(request.config))
'''


def render_test(name: str, module_file: str) -> str:
    """The plain-pytest test file of a scaffolded operator (``test_NAME.py`` beside ``NAME.py``)."""
    return TEST_TEMPLATE.format(name=name, module=module_file, test=f"test_{name}.py")


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"_tokenlaw_scaffold_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def scaffold(name: str, *, like: str | None = None, traits=None, claims=None, folder=None, registry=None) -> Path:
    """Write ``folder/NAME.py`` and check it collects; returns the path."""

    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name or "") or keyword.iskeyword(name):
        raise InvalidArgument(f"name: expected a lowercase Python identifier, got {name!r}")
    registry = default_registry() if registry is None else registry
    if name in registry:
        raise InvalidArgument(f"name: operator {name!r} already exists ({registry[name].source})")
    if like and like not in registry:
        raise command_line.closest(like, registry.names(), "--like")
    like_spec = registry[like] if like else None
    if like_spec is not None:
        traits = sorted(like_spec.traits)
    traits = list(traits or DEFAULT_TRAITS)
    bad = sorted(set(traits) - TRAITS)
    if bad:
        raise InvalidArgument(f"--traits: unknown {bad}; known: {sorted(TRAITS)}")
    if claims is not None:
        unknown = [c for c in claims if c not in CONTRACTS]
        if unknown:
            raise InvalidArgument(f"--claims: unknown contracts {unknown}; known: {sorted(CONTRACTS)}")
        if not claims:
            raise InvalidArgument("--claims: an operator must claim at least one contract")
    folder = default_dir() if folder is None else Path(folder)
    if not folder.is_dir():
        raise InvalidArgument(f"--dir: {str(folder)!r} is not a folder")
    path = folder / f"{name}.py"
    if path.exists():
        raise InvalidArgument(f"name: {str(path)!r} already exists")
    chosen, violates, others = choose(traits, like_spec, claims)
    text = render(name, traits=traits, claims=chosen, violates=violates, others=others, like=like_spec,
                  where=str(path))
    test = None if path.parent.resolve() == Path(list(ops.__path__)[0]).resolve() else \
        path.with_name(f"test_{name}.py")          # tokenlaw's own operators have tests/test_cells.py
    if test is not None and test.exists():
        raise InvalidArgument(f"name: {str(test)!r} already exists")
    path.write_text(text)
    try:
        collect(_load(path))      # the scaffold must be a valid declaration as written
    except Exception:
        path.unlink()
        raise
    if test is not None:
        test.write_text(render_test(name, path.name))
    return path


def _module_name(path: Path) -> str:
    """The dotted module name of ``path`` when its folders are packages, else its path from here."""
    parts, folder = [path.stem], path.parent.resolve()
    while (folder / "__init__.py").exists():
        parts.insert(0, folder.name)
        folder = folder.parent
    if len(parts) > 1:
        return ".".join(parts)
    full = path.resolve()
    return str(full.relative_to(Path.cwd().resolve())) if full.is_relative_to(Path.cwd().resolve()) else str(full)


def cmd_new(args) -> int:
    claims = _split(args.claims) if args.claims is not None else None
    path = scaffold(args.name, like=args.like, traits=_split(args.traits) or None, claims=claims,
                    folder=args.dir)

    inside = path.parent.resolve() == Path(list(ops.__path__)[0]).resolve()
    run = f"tokenlaw check --operator {args.name}" if inside else \
        f"tokenlaw --operators {_module_name(path)} check"
    test = path.with_name(f"test_{args.name}.py")
    nxt = [f"write the body of {args.name}() in {path}", "edit the claims' reasons (and violates)", run]
    if test.exists():
        nxt.append(f"or with plain pytest: pytest {test}")
    if args.json:
        print(json.dumps({"path": str(path), "test": str(test) if test.exists() else None, "operator": args.name,
                          "next": nxt}, indent=1))
    else:
        print(f"wrote {path}\nnext:\n" + "\n".join(f"  {i}. {s}" for i, s in enumerate(nxt, 1)))
    return EXIT_OK
