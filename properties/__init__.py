"""The contract catalogue (docs/mathematics.md#contracts), verdicts and the tolerance model."""
from .catalogue import CONTRACTS, Contract, contract
from .verdict import Verdict, outcome

__all__ = ["CONTRACTS", "Contract", "contract", "Verdict", "outcome"]
