"""The data contract: one explicit pyarrow schema per table a stage reads or writes.

Never imports torch or any model library: the CLI and validators load this in milliseconds.
"""
from .contract import ContractError, TableContract, Violation
from .tables import CAPTIONS, CONTRACTS, GEOCODED, IMAGES, LANGUAGE_ID, REJECTS, SELECTION

__all__ = ["ContractError", "TableContract", "Violation", "CAPTIONS", "IMAGES", "LANGUAGE_ID", "GEOCODED", "SELECTION",
           "REJECTS", "CONTRACTS"]
