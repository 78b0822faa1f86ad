"""The lettered-menu protocol: the prompt lists every legal action with a letter; the reply is one letter.

The study's second arithmetic setting, here for every environment that has a text protocol
(`jaxcredit.envs.text_protocol`): the prompt is the free-form protocol's prompt (rules, position,
turns left) without its reply instructions, then one line per legal action in action-id order,
`A. COMBINE 2 + 3 = 5`, `B. UNDO`, ..., and the reply must be exactly one of those labels
(whitespace around it allowed). Labels run A..Z, then AA, AB, ... (bijective base 26), so even
the 86 actions of 5-number arithmetic get one. The program executes the chosen action; a reply
that is not a label on the menu is refused like any other refusal (a turn is used, nothing else
changes). `make_protocol(env, kind)` builds either protocol by name (`PROTOCOLS`).
Host-side, on one unbatched state, like the free-form protocols.
"""

from __future__ import annotations

import re

import numpy as np

from jaxcredit.env import Environment, State
from jaxcredit.envs.text_protocol import WHITESPACE, Refusal, _host, _play, text_protocol

PROTOCOLS = ("text", "menu")
_LABEL = re.compile(r"[A-Z]{1,3}")
_REPLY_INSTRUCTIONS = "\nReply with exactly one of:"


def label(index: int) -> str:
    """The menu label of option `index` (0 -> A, 25 -> Z, 26 -> AA, ...)."""
    text, index = "", int(index) + 1
    while index > 0:
        index, rest = divmod(index - 1, 26)
        text = chr(ord("A") + rest) + text
    return text


def label_index(text: str) -> int:
    """The option index of a label (`label_index(label(i)) == i`)."""
    index = 0
    for c in text:
        index = index * 26 + ord(c) - ord("A") + 1
    return index - 1


class MenuProtocol:
    """The lettered-menu protocol of an environment with a text protocol (see the module docstring)."""

    kind = "menu"

    def __init__(self, env: Environment):
        self.env = env
        self.text = text_protocol(env)

    def options(self, state: State) -> list[int]:
        """The legal action ids of `state` in menu order (the action-id order)."""
        return [int(a) for a in np.flatnonzero(np.asarray(state.legal_action_mask))]

    def describe(self, state: State, action: int) -> str:
        """One option's text: the free-form reply without its tags (`COMBINE 2 + 3 = 5`, `select 1`)."""
        reply = self.text.reply(state, action)
        if reply.startswith("<FINAL>"):
            return "FINAL " + reply[len("<FINAL>"):-len("</FINAL>")]
        return reply.removeprefix("<ACT>").removesuffix("</ACT>")

    def render_prompt(self, state: State) -> str:
        """The prompt: the free-form prompt's position lines, then the menu and the reply rule."""
        head = self.text.render_prompt(state).split(_REPLY_INSTRUCTIONS)[0]
        menu = [f"{label(k)}. {self.describe(state, a)}" for k, a in enumerate(self.options(state))]
        return head + "\nOptions:\n" + "\n".join(menu) + "\nReply with exactly one option letter."

    def parse(self, text: str, state: State) -> int | Refusal:
        """One reply -> an action id legal in `state`, or a `Refusal` with its reason. Never raises."""
        if not isinstance(text, str):
            return Refusal("malformed: the reply is not text")
        text = text.strip(WHITESPACE)
        if len(text) > 3 or not _LABEL.fullmatch(text):
            return Refusal("malformed: reply with exactly one option letter, e.g. A")
        if bool(_host(state).done):
            return Refusal("the episode has ended")
        options = self.options(state)
        index = label_index(text)
        if index >= len(options):
            return Refusal(f"no option {text}; the options are A..{label(len(options) - 1)}")
        return options[index]

    def reply(self, state: State, action: int) -> str:
        """The label of `action` in `state`'s menu; raises `ValueError` for an action not on it."""
        options = self.options(state)
        if int(action) not in options:
            raise ValueError(f"action {self.env.action_name(int(action))!r} is not legal here, so not on the menu")
        return label(options.index(int(action)))

    def step(self, state: State, text: str) -> tuple[State, int | Refusal]:
        """Parse `text` and play it: the action, or an out-of-range action for a refusal."""
        return _play(self.env, self, state, text)


def make_protocol(env: Environment, kind: str = "text"):
    """The protocol `kind` (`"text"`: free-form commands; `"menu"`: lettered menu) of `env`;
    raises `ValueError` for an unknown kind or an environment without a text protocol."""
    if kind not in PROTOCOLS:
        raise ValueError(f"unknown protocol {kind!r}; choices: {', '.join(PROTOCOLS)}")
    return text_protocol(env) if kind == "text" else MenuProtocol(env)
