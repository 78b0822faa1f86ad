"""The credit-assignment suite: fixed experiments, each with settings, seeds, a budget, a score in
[0, 1] and tags, scoring every credit arm's labels against exact values and its learning at equal
attempts and at equal cost (see docs/suite.md).

This layer may import every other layer: it trains (through `jaxcredit.train`'s sweeps) and
measures labels and aggregates scores (through `jaxcredit.analysis`).
"""
