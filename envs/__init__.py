"""jaxcredit environments: MAD selective copy (and more), their references and `make()`."""

from jaxcredit.envs.mad import BLANK, MadSelectiveCopy
from jaxcredit.envs.mad_reference import MadReference
from jaxcredit.envs.registry import ENVIRONMENTS, make, make_reference

__all__ = ["BLANK", "ENVIRONMENTS", "MadReference", "MadSelectiveCopy", "make", "make_reference"]
