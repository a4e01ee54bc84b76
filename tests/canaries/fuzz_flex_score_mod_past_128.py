"""Canary (class 7/9, flex at the second block): a causal ALiBi score_mod, declared relative, that adds 0.5
to every score whose key index is 128 or more (a bias table indexed per 128-key block, off past the first).

Right for every key of the first 128-token block, so a search that never reaches kv >= 128 sees a correct
relative bias.  ``relative_mods`` shifts q_idx and kv_idx together by up to n: it sees the defect where
n + shift passes 128, which the length bands (65..128, 129..256, 257+) reach, each at least once per cell.
"""
import sys

from tokenlaw.operators.flex import declare_flex
from tokenlaw.operators.registry import Registry
from tokenlaw.properties.catalogue import collect

REASON = "a relative (ALiBi) score_mod that adds 0.5 to every score of a key index >= 128"
OPERATOR = "canary_flex_alibi_past_128"
CAUGHT_BY = ("relative_mods",)


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def alibi_past_128(score, b, h, q_idx, kv_idx):
    return score - 0.125 * (q_idx - kv_idx) + 0.5 * (kv_idx >= 128)


canary_flex_alibi_past_128 = declare_flex(OPERATOR, score_mod=alibi_past_128, mask_mod=causal, causal=True,
                                          relative=True)


def registry(base):
    return Registry([*base, *collect(sys.modules[__name__])], base.contracts)
