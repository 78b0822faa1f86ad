"""The suite's XLA flags: a flag the installed jaxlib does not know is never set (XLA would abort)."""

import os


def test_an_unknown_flag_is_refused_and_a_known_one_accepted(xla_flags):
    assert xla_flags.accepted(("--xla_jaxcredit_no_such_flag=true",)) == ()
    assert xla_flags.accepted(xla_flags.required) == xla_flags.required


def test_the_flags_of_this_process_are_the_accepted_ones(xla_flags):
    if os.environ.get("JAXCREDIT_TEST_FULL_XLA"):
        return
    flags = os.environ.get("XLA_FLAGS", "").split()
    assert all(flag in flags for flag in xla_flags.required)
    accepted = bool(xla_flags.accepted(xla_flags.optional))
    assert all((flag in flags) == accepted for flag in xla_flags.optional)
