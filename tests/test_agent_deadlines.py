"""The HTTP agent's deadlines and reply cap, against local servers on 127.0.0.1 that misbehave on
purpose (each serves a fixed list of answers, then stops by itself): `timeout` bounds a whole
request, a response cut short is retried, and a reply over `max_reply_bytes` is a refused turn."""

import json
import socket
import threading
import time

import pytest

from jaxcredit.agents import AgentError, ChatCompletionsAgent, InvalidReply, play
from jaxcredit.envs import make

ENV = make("arithmetic", max_number=99)


def _ok(content: str) -> bytes:
    body = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body


class Server:
    """Answers one connection per entry of `answers`: `("drip", seconds)` sends a valid response
    one byte every `seconds`; `("cut", bytes)` sends the headers and part of the body, then closes;
    `("send", bytes)` sends them. Then stops; every socket has a 10 s timeout."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(10)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        try:
            for kind, value in self.answers:
                connection, _ = self.listener.accept()
                with connection:
                    connection.settimeout(10)
                    connection.recv(65536)  # the request (small enough for one read here)
                    try:
                        if kind == "drip":
                            for byte in _ok("<ACT>UNDO</ACT>"):
                                connection.sendall(bytes([byte]))
                                time.sleep(value)
                        elif kind == "cut":
                            connection.sendall(value[: len(value) // 2])
                        else:
                            connection.sendall(value)
                    except OSError:  # the client gave up: its deadline
                        pass
        except OSError:
            pass
        finally:
            self.listener.close()


def test_timeout_bounds_the_whole_request_of_a_dripping_endpoint():
    server = Server([("drip", 0.2), ("drip", 0.2)])
    agent = ChatCompletionsAgent(server.url, "m", timeout=1.0, retries=1, backoff=0.0)
    started = time.perf_counter()
    with pytest.raises(AgentError, match=r"timed out after 1 s \(2 attempt\(s\)\)"):
        agent("prompt")
    elapsed = time.perf_counter() - started
    # each attempt stops at its 1 s deadline although bytes keep coming (the whole response takes ~40 s)
    assert 2.0 <= elapsed < 3.5, elapsed
    assert agent.calls == 2


def test_a_response_cut_short_is_retried():
    server = Server([("cut", _ok("<ACT>UNDO</ACT>")), ("send", _ok("<ACT>FINAL 14</ACT>"))])
    agent = ChatCompletionsAgent(server.url, "m", timeout=5.0, retries=1, backoff=0.0)
    assert agent("prompt") == "<ACT>FINAL 14</ACT>" and agent.calls == 2
    server = Server([("cut", _ok("x"))])
    with pytest.raises(AgentError, match="the response was cut short .*IncompleteRead"):
        ChatCompletionsAgent(server.url, "m", timeout=5.0, retries=0)("prompt")


def test_a_reply_over_the_cap_is_a_refused_turn_recorded_with_its_reason():
    long = "<ACT>UNDO</ACT>" + "x" * 200
    server = Server([("send", _ok(long)), ("send", _ok("<ACT>COMBINE 2 + 3 = 5</ACT>"))] + [
        ("send", _ok("<ACT>UNDO</ACT>"))] * (ENV.max_turns - 2))
    agent = ChatCompletionsAgent(server.url, "m", timeout=5.0, retries=0, max_reply_bytes=100)
    with pytest.raises(InvalidReply, match="the reply has 215 bytes, over --max-reply-bytes 100"):
        ChatCompletionsAgent(Server([("send", _ok(long))]).url, "m", timeout=5.0, max_reply_bytes=100)("p")
    transcript = play(ENV, agent, [ENV.make_problem([2, 3, 4, 5], 14)])[0]
    first, second = transcript["turns"][:2]
    assert first["reply"] == "" and first["action"] is None
    assert first["refusal"] == "invalid reply: the reply has 215 bytes, over --max-reply-bytes 100"
    assert second["action"] == "COMBINE 0 + 1" and transcript["error"] is None  # the episode went on


def test_timeout_must_be_positive():
    for bad in (0.0, -1.0):
        with pytest.raises(ValueError, match="timeout must be a number of seconds > 0"):
            ChatCompletionsAgent("http://127.0.0.1:9/v1", "m", timeout=bad)


def test_a_reply_that_is_not_unicode_is_a_refused_turn():
    body = b'{"choices": [{"message": {"role": "assistant", "content": "<ACT>UNDO</ACT>\\ud800"}}]}'
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
    server = Server([("send", head + body)] + [("send", _ok("<ACT>UNDO</ACT>"))] * (ENV.max_turns - 1))
    agent = ChatCompletionsAgent(server.url, "m", timeout=5.0, retries=0)
    transcript = play(ENV, agent, [ENV.make_problem([2, 3, 4, 5], 14)])[0]
    first = transcript["turns"][0]
    assert first["reply"] == "" and first["refusal"] == (
        "invalid reply: the reply is not valid Unicode text (a lone surrogate at character 15)")
