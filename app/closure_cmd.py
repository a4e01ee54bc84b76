"""``tokenlaw closure module.path:factory``: where does a model stop commuting with null insertion?

A thin call into :mod:`tokenlaw.integrations.closure.analyser`.  The factory
takes no arguments and returns an ``nn.Module``, ``(module, x[, kwargs])``
or a ``ClosureExample`` (with mask conventions).  ``--hf-config FAMILY`` /
``--hf-model DIR`` analyse a Hugging Face model through
:mod:`tokenlaw.integrations.hf` (the optional extra ``tokenlaw[hf]``).  Exit codes: 0 closure
holds at every layer and position tried, 1 it breaks, 2 bad arguments.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from tokenlaw.integrations import hf
from tokenlaw.operators import arguments
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.process import command_line, user_modules
from tokenlaw.integrations.closure.analyser import analyse, as_example

from .exits import EXIT_FAIL, EXIT_OK


def load_factory(target: str):
    """Import ``module.path:factory`` or ``path/to/file.py:factory`` and return the factory."""
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise InvalidArgument(f"target: expected module.path:factory or file.py:factory, got {target!r}")
    module = user_modules.load(module_name, "target")
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise InvalidArgument(f"target: {module_name} has no callable {attr!r}")
    return factory


def _finite_inputs(example):
    """NaN / inf in the factory's inputs is bad input, not a closure break of the model."""

    if torch.is_tensor(example.x) and example.x.is_floating_point():
        arguments.finite(example.x, "target: the factory's x")
    for key, value in example.kwargs.items():
        # an additive mask's -inf is its meaning, not bad input
        if key not in example.masks and torch.is_tensor(value) and value.is_floating_point():
            arguments.finite(value, f"target: the factory's {key}")


def _shape(text):
    if text is None:
        return None
    try:
        shape = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise InvalidArgument(f"--shape: expected BATCH,TOKENS,FEATURES, got {text!r}") from None
    if len(shape) != 3 or min(shape) < 1:
        raise InvalidArgument(f"--shape: expected three positive ints BATCH,TOKENS,FEATURES, got {text!r}")
    return shape


def _fmt(v):
    return "-" if v is None else f"{v:.3g}"


def format_report(report) -> str:
    """The per-layer table of the position where closure breaks first (or the first position), then a summary."""
    fb = report.first_break
    shown = next((p for p in report.positions if fb is not None and p.first_break is fb), report.positions[0])
    lines = [f"closure of {report.model}, x {tuple(report.shape)}, float64; null inserted at {shown.position} "
             f"(every |.| and shift is an L_inf norm: the largest absolute entry)",
             f"  {'layer':<28} {'type':<26} {'|null in|inf':>12} {'|null out|inf':>13} {'old shift':>10} {'/bound':>8}  break"]
    for r in shown.layers:
        lines.append(f"  {r.label + ('' if r.index == 0 else f'#{r.index}'):<28} {r.type[:26]:<26} {_fmt(r.null_in):>12} "
                     f"{_fmt(r.null_out):>13} {_fmt(r.old_out_shift):>10} {_fmt(r.ratio):>8}  {', '.join(r.kinds)}")
    lines.append("")
    for p in report.positions:
        b, o = p.first_break, p.first_old_shift
        lines.append(f"  null at {p.position}: " + ("closed at every layer" if b is None else
                     f"first break {b.label} ({', '.join(b.kinds)}); old tokens first moved at "
                     f"{o.label if o else '-'}") +
                     f"; model output: |null|_inf = {_fmt(p.output.null_out)}, old-token L_inf shift = {_fmt(p.output.old_out_shift)}")
    lines.append("CLOSURE HOLDS" if fb is None else f"CLOSURE BREAKS first at {fb.label} ({', '.join(fb.kinds)})")
    return "\n".join(lines)


SHOWN_ROLES = ("norm", "attention", "mlp", "residual", "model")


def format_hf_report(report) -> str:
    """Per decoder layer: norm, attention, MLP, residual rows (and the first break, whatever its role)."""
    fb = report.first_break
    shown = next((p for p in report.positions if fb is not None and p.first_break is fb), report.positions[0])
    lines = [f"closure of {report.report.model}, x {tuple(report.report.shape)}, float64; null hidden state "
             f"inserted at {shown.position} after {report.embedding!r}, padding mask and position ids grown with it "
             f"(|.| and shift are L_inf norms)",
             f"  {'call':<40} {'role':<10} {'|null in|inf':>12} {'|null out|inf':>13} {'old shift':>10} {'/bound':>8}  break"]
    for row in shown.rows:
        r = row.layer
        if row.role not in SHOWN_ROLES and not (r.breaks and row.role not in ("position", "embedding")):
            continue
        label = row.label + ("" if r.index == 0 else f"#{r.index}")
        lines.append(f"  {label:<40} {row.role:<10} {_fmt(r.null_in):>12} {_fmt(r.null_out):>13} "
                     f"{_fmt(r.old_out_shift):>10} {_fmt(r.ratio):>8}  {', '.join(r.kinds)}")
    lines.append("  (rows of projections, activations and rotary tables: --json; a rotary table is a function of "
                 "position ids, not of the hidden state, and never judged)")
    lines.append("")
    for p in report.positions:
        b = p.first_break
        lines.append(f"  null at {p.position}: " + ("closed at every layer" if b is None else
                     f"first break {b.label} ({b.role}: {', '.join(b.layer.kinds)})"))
    lines.append("CLOSURE HOLDS" if fb is None else
                 f"CLOSURE BREAKS first at {fb.label} ({fb.role}: {', '.join(fb.layer.kinds)})")
    return "\n".join(lines)


def _hf_report(args):
    """The Hugging Face branch: build or load the model, analyse it with roles."""
    if args.target:
        raise InvalidArgument("target: give a module.path:factory or --hf-config / --hf-model, not both")
    if args.hf_config and args.hf_model:
        raise InvalidArgument("--hf-model: give --hf-config FAMILY or --hf-model DIR, not both")
    hf.require()
    from tokenlaw.integrations.hf import attention, closure, models  # optional: transformers, only with --hf-*
    if args.tokens < 2:
        raise InvalidArgument(f"--tokens: expected an int >= 2, got {args.tokens}")
    if args.attn.startswith("tokenlaw_"):
        attention.register()
    if args.hf_config:
        shape = models.Shape(args.layers, args.hidden, args.heads, args.kv_heads)
        example = models.example(args.hf_config, shape, seed=args.seed, biases=args.biases, attn=args.attn,
                                 tokens=args.tokens)
    else:
        example = models.example(models.load(args.hf_model, attn=args.attn), seed=args.seed, tokens=args.tokens,
                                 name=f"{args.hf_model} (attention {args.attn})")
    if args.attn.startswith("tokenlaw_"):
        attention.attach(example.model.hf)
    return closure.analyse_hf(example, args.positions, trials=args.trials, seed=args.seed)


def _emit(args, report, text) -> int:
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "closure.json").write_text(json.dumps(report.to_json(), indent=1))
    print(json.dumps(report.to_json(), indent=1) if args.json else text)
    return EXIT_OK if report.holds else EXIT_FAIL


def cmd_closure(args) -> int:

    if args.out:
        command_line.writable_dir(args.out, "--out")
    if args.hf_config or args.hf_model:
        report = _hf_report(args)
        return _emit(args, report, None if args.json else format_hf_report(report))
    if not args.target:
        raise InvalidArgument("target: expected module.path:factory (or --hf-config FAMILY / --hf-model DIR)")
    factory, shape = load_factory(args.target), _shape(args.shape)
    try:
        built = factory()
    except Exception as err:  # noqa: BLE001 (the user's code: its failure is bad input, not ours)
        raise InvalidArgument(f"target: {args.target}() raised {type(err).__name__}: "
                              f"{str(err).splitlines()[0] if str(err) else ''}") from None
    example = as_example(built, shape=shape, seed=args.seed)
    _finite_inputs(example)
    report = analyse(example, args.positions, trials=args.trials, seed=args.seed)
    return _emit(args, report, None if args.json else format_report(report))
