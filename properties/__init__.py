"""The contract catalogue (SPEC 3), verdicts and the tolerance model."""
from .catalogue import CONTRACTS, Contract, contract
from .verdict import Verdict, outcome

__all__ = ["CONTRACTS", "Contract", "contract", "Verdict", "outcome"]
