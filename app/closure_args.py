"""The arguments of ``tokenlaw closure`` (light: argparse only; the work is ``closure_cmd.cmd_closure``)."""
from __future__ import annotations

DESCRIPTION = ("``tokenlaw closure module.path:factory`` (or ``--hf-config llama``, ``--hf-model DIR``): where "
               "does a model stop commuting with null insertion?")


def register(subparsers):
    sp = subparsers.add_parser("closure", help="localise where an nn.Module stops commuting with null insertion",
                               description=DESCRIPTION)
    sp.add_argument("target", nargs="?", help="module.path:factory returning a model (and example inputs / masks)")
    hf = sp.add_argument_group("Hugging Face models (pip install 'tokenlaw[hf]'): a null hidden state "
                                    "inserted right after the embeddings")
    hf.add_argument("--hf-config", metavar="FAMILY", help="a tiny model built from a config, no download: "
                    "llama, bert or gpt2")
    hf.add_argument("--hf-model", metavar="DIR", help="a model saved locally with save_pretrained")
    hf.add_argument("--layers", type=int, default=2, help="--hf-config: decoder layers (default 2)")
    hf.add_argument("--hidden", type=int, default=32, help="--hf-config: hidden width (default 32)")
    hf.add_argument("--heads", type=int, default=4, help="--hf-config: attention heads (default 4)")
    hf.add_argument("--kv-heads", type=int, help="--hf-config llama: key/value heads (GQA; default --heads)")
    hf.add_argument("--biases", choices=("drawn", "hf"), default="drawn",
                    help="--hf-config: biases and norm shifts drawn N(0, 0.5^2) as a trained model has "
                    "(default), or Hugging Face's zero init")
    hf.add_argument("--attn", default="sdpa", help="attn_implementation: sdpa (default), eager, "
                    "tokenlaw_oattention")
    hf.add_argument("--tokens", type=int, default=6, help="tokens per sequence of the drawn ids (default 6)")
    sp.add_argument("--positions", type=int, nargs="+", help="insertion positions (0..tokens); default: drawn")
    sp.add_argument("--trials", type=int, default=3, help="how many positions to draw when --positions is absent")
    sp.add_argument("--seed", type=int, default=0, help="seed for drawn positions and a drawn x")
    sp.add_argument("--shape", help="BATCH,TOKENS,FEATURES of a drawn x when the factory gives none")
    sp.add_argument("--out", help="also write closure.json into this directory")
    sp.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    sp.set_defaults(func="tokenlaw.app.closure_cmd:cmd_closure")
