"""The arguments of ``tokenlaw reproduce all|NAME`` (light: argparse only; the work is ``reproduce_cmd``)."""
from __future__ import annotations


def register(subparsers):
    sp = subparsers.add_parser("reproduce", help="reproduce the papers' figures (all, or one experiment)")
    sub = sp.add_subparsers(dest="experiment", required=True)

    a = sub.add_parser("ablation", help="two-block null-insertion ablation with per-component attribution")
    a.add_argument("--width", type=int, default=64)
    a.add_argument("--seeds", type=int, default=8)
    a.add_argument("--gains", type=float, nargs="+", default=[1.0, 2.0], help="weight gains (std gain/sqrt(fan_in))")
    a.add_argument("--sweep-widths", type=int, nargs="+", default=[16, 64, 256],
                   help="widths of the OA-only width x gain sweep")
    a.add_argument("--out", default="reports")
    a.add_argument("--json", action="store_true", help="machine-readable result on stdout")
    a.set_defaults(func="tokenlaw.app.reproduce_cmd:cmd_ablation")

    r = sub.add_parser("retrofit", help="train a small in-context tabular regressor, swap in O components, report RMSE")
    r.add_argument("--out", default="reports")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--quick", action="store_true", help="tiny run for tests (not the reported numbers)")
    r.add_argument("--retrain", action="store_true", help="ignore cached weights in <out>/retrofit_model.pt")
    r.add_argument("--json", action="store_true", help="machine-readable result on stdout")
    r.set_defaults(func="tokenlaw.app.reproduce_cmd:cmd_retrofit")

    pn_fir_tau = {
        "recall": "single-layer associative recall, softmax vs sm_fir (pn_fir_tau paper)",
        "distractors": "recall under distractors, pn_fir_tau vs pn and pn_fir_c (pn_fir_tau paper)",
        "unanswerable": "hallucination and row mass on unanswerable queries, the zoo vs pn_fir_tau (pn_fir_tau paper)",
        "sink": "attention-sink mass on BOS of a tiny char LM, softmax vs pn_fir_tau (pn_fir_tau paper)",
    }
    for name, text in pn_fir_tau.items():
        e = sub.add_parser(name, help=text)
        e.add_argument("--seeds", type=int, default=None, help="number of seeds 0..S-1 (default: the experiment's)")
        e.add_argument("--quick", action="store_true", help="tiny run for tests (not the reported numbers)")
        e.add_argument("--out", default="reports", help=f"writes <out>/{name}.md, .json and its .svg plots")
        e.add_argument("--json", action="store_true", help="machine-readable result on stdout")
        e.set_defaults(func="tokenlaw.app.reproduce_cmd:cmd_pn_fir_tau")

    e = sub.add_parser("exactness", help="OAttention against the direct evaluation of its formula, per dtype, eager "
                                         "and the Triton kernel")
    e.add_argument("--seeds", type=int, default=5)
    e.add_argument("--quick", action="store_true", help="tiny shapes for tests (not the reported numbers)")
    e.add_argument("--out", default="reports")
    e.add_argument("--json", action="store_true", help="machine-readable result on stdout")
    e.set_defaults(func="tokenlaw.app.reproduce_cmd:cmd_exactness")

    al = sub.add_parser("all", help="every experiment, then the papers' figures beside ours in <out>/fidelity.md "
                                    "(and .json, .html)")
    al.add_argument("--quick", action="store_true", help="reduced sizes (minutes; for tests, not the reported numbers)")
    al.add_argument("--only", nargs="+", metavar="NAME", help="only these experiments (the others' rows are left out)")
    al.add_argument("--out", default="reports")
    al.add_argument("--readme", metavar="PATH", help="also write the summary paragraph into PATH (e.g. README.md) "
                                                     "between its fidelity markers")
    al.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    al.set_defaults(func="tokenlaw.app.reproduce_cmd:cmd_all")
