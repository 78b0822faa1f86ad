"""jaxcredit.analysis."""
