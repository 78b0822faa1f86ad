"""jaxcredit.agents: play any language-model agent through the environments' text protocols.

`play(env, agent, problems)` returns transcripts (the schema of `jaxcredit.envs.transcripts`);
ready-made agents: `ScriptedAgent`, the `UniformAgent` and `OptimalAgent` references, and
`ChatCompletionsAgent` for OpenAI-compatible endpoints. Imports the envs and the core only.
"""

from jaxcredit.agents.http import ChatCompletionsAgent
from jaxcredit.agents.loop import AgentError, InvalidReply, play, split_problems
from jaxcredit.agents.reference import OptimalAgent, ScriptedAgent, UniformAgent
from jaxcredit.agents.session import AGENTS, draw_problems, make_agent, play_into

__all__ = ["AGENTS", "AgentError", "ChatCompletionsAgent", "InvalidReply", "OptimalAgent", "ScriptedAgent",
           "UniformAgent", "draw_problems", "make_agent", "play", "play_into", "split_problems"]
