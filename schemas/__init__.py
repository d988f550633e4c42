"""The data contract: one explicit pyarrow schema per table a stage reads or writes.

Never imports torch or any model library: the CLI and validators load this in milliseconds.
"""
from .contract import ContractError, TableContract, Violation
from .tables import CAPTIONS, IMAGES, LANGUAGE_ID, REJECTS, CONTRACTS

__all__ = ["ContractError", "TableContract", "Violation", "CAPTIONS", "IMAGES", "LANGUAGE_ID",
           "REJECTS", "CONTRACTS"]
