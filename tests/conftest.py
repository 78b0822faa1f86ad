"""Shared fixtures: environments and compiled functions built once per session."""

import pytest

from jaxcredit.envs import make, make_reference


@pytest.fixture(scope="session")
def mad():
    return make("mad")


@pytest.fixture(scope="session")
def mad_reference(mad):
    return make_reference(mad)


@pytest.fixture(scope="session")
def arithmetic():
    return make("arithmetic")


@pytest.fixture(scope="session")
def arithmetic_reference(arithmetic):
    return make_reference(arithmetic)
