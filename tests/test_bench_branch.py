"""`jaxcredit bench branch`: registered, and its audit states are live states of the policy's episodes."""

import numpy as np

from jaxcredit.benchmarks import SUITES
from jaxcredit.benchmarks.branch import audit_states, run
from jaxcredit.policy_fn import uniform_policy_fn


def test_suite_is_registered_and_audit_states_are_live(small_mad):
    assert SUITES["branch"] is run
    states = audit_states(small_mad, uniform_policy_fn, None, 50)
    assert states.turn.shape == (50,) and not np.asarray(states.done).any()
    turns = np.asarray(states.turn)
    assert turns[0] == 0 and (turns < small_mad.max_turns).all() and len(set(turns.tolist())) > 3
