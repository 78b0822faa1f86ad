"""jaxcredit.train."""
