"""An agent behind an OpenAI-compatible chat-completions endpoint, with the standard library only.

`ChatCompletionsAgent(base_url, model)` is a callable `prompt -> reply`: it POSTs
`{base_url}/chat/completions` with the prompt as the user message (and an optional system
message) and returns `choices[0].message.content`. The API key is read from the environment
variable `api_key_env` (none is sent when it is unset, as local servers allow) and never written
anywhere. `timeout` bounds each whole request, enforced by a watchdog that shuts the socket down
at the deadline. Timeouts, refused connections, responses cut short, HTTP 429 and 5xx are retried
`retries` times with exponential backoff; any other failure raises `AgentError` with a one-line
reason. A reply over `max_reply_bytes`, or not valid Unicode, is an invalid reply
(`InvalidReply`), which the agent loop plays as a refused turn. See
docs/agents.md#playing-an-agent.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import time
import urllib.parse

from jaxcredit.agents.loop import AgentError, InvalidReply
from jaxcredit.validation import require_float, require_int

RETRY_STATUS = (429, 500, 502, 503, 504)
MAX_REPLY_BYTES = 65536  # the default cap of one reply's text
ENVELOPE_BYTES = 65536  # room for the JSON around the reply in the response body
_CHUNK = 16384


class _Retry(Exception):
    """One attempt failed in a way worth another (its message says how)."""


class _TooLong(Exception):
    """The response body passed the cap."""


class ChatCompletionsAgent:
    """A callable `prompt -> reply` for an OpenAI-compatible endpoint (see the module docstring)."""

    def __init__(self, base_url: str, model: str, *, api_key_env: str = "OPENAI_API_KEY", timeout: float = 60.0,
                 retries: int = 2, backoff: float = 1.0, temperature: float = 0.0, max_tokens: int = 256,
                 system: str | None = None, max_reply_bytes: int = MAX_REPLY_BYTES):
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        if not isinstance(model, str) or not model:
            raise ValueError("model must be a non-empty string (the endpoint's model name)")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = require_float("timeout", timeout)
        if self.timeout <= 0:
            raise ValueError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        self.max_reply_bytes = require_int("max_reply_bytes", max_reply_bytes, 1)
        self.retries = require_int("retries", retries, 0, 100)
        self.backoff = require_float("backoff", backoff, 0.0)
        self.temperature = require_float("temperature", temperature, 0.0)
        self.max_tokens = require_int("max_tokens", max_tokens, 1)
        self.system = system
        self.calls = 0  # HTTP requests sent, retries included

    def _request(self, prompt: str) -> tuple[bytes, dict]:
        """The body and headers of the POST for `prompt`."""
        messages = ([{"role": "system", "content": self.system}] if self.system else []) + [
            {"role": "user", "content": prompt}]
        body = json.dumps({"model": self.model, "messages": messages, "temperature": self.temperature,
                           "max_tokens": self.max_tokens}).encode()
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return body, headers

    def _post(self, body: bytes, headers: dict) -> bytes:
        """One attempt: the response body, read whole before the deadline `timeout` from now.
        Raises `_Retry`, `AgentError` (not worth another attempt) or `_TooLong`."""
        url = urllib.parse.urlsplit(self.url)
        connection_type = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
        connection = connection_type(url.hostname, url.port, timeout=self.timeout)
        expired = threading.Event()

        def expire() -> None:  # wakes a blocked connect, send or read
            expired.set()
            if connection.sock is not None:
                try:
                    connection.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        watchdog = threading.Timer(self.timeout, expire)
        watchdog.daemon = True
        watchdog.start()
        limit = self.max_reply_bytes + ENVELOPE_BYTES
        try:
            connection.request("POST", url.path + (f"?{url.query}" if url.query else ""), body, headers)
            response = connection.getresponse()
            if response.status != 200:
                detail = response.read(120)
                if response.status in RETRY_STATUS:
                    raise _Retry(f"HTTP {response.status}")
                raise AgentError(f"{self.url} answered HTTP {response.status}: {detail!r}")
            chunks, size = [], 0
            while True:
                chunk = response.read(min(_CHUNK, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > limit:
                    raise _TooLong()
            if expired.is_set():
                raise _Retry(f"timed out after {self.timeout:g} s")
            if response.length:  # the connection ended before the Content-Length it announced
                raise http.client.IncompleteRead(b"".join(chunks), response.length)
            return b"".join(chunks)
        except TimeoutError:
            raise _Retry(f"timed out after {self.timeout:g} s") from None
        except (http.client.IncompleteRead, http.client.RemoteDisconnected, ConnectionError,
                http.client.HTTPException, OSError) as error:
            if expired.is_set():
                raise _Retry(f"timed out after {self.timeout:g} s") from None
            if isinstance(error, ConnectionRefusedError) or (isinstance(error, OSError) and not isinstance(
                    error, (ConnectionError, TimeoutError))):
                raise _Retry(f"cannot reach it ({error})") from None
            raise _Retry(f"the response was cut short ({type(error).__name__}: {error})") from None
        finally:
            watchdog.cancel()
            connection.close()

    def _content(self, raw: bytes) -> str:
        try:
            content = json.loads(raw)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise AgentError(f"malformed response from {self.url}: expected JSON with choices[0].message.content, "
                             f"got {raw[:120]!r}") from None
        if not isinstance(content, str):
            raise AgentError(f"malformed response from {self.url}: message.content is {type(content).__name__}, "
                             "not text")
        return content

    def __call__(self, prompt: str) -> str:
        body, headers = self._request(prompt)
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            self.calls += 1
            try:
                raw = self._post(body, headers)
            except _Retry as error:
                last = str(error)
                continue
            except _TooLong:
                raise InvalidReply(f"the response passed {self.max_reply_bytes + ENVELOPE_BYTES} bytes "
                                   f"(--max-reply-bytes {self.max_reply_bytes} plus the JSON around it)") from None
            content = self._content(raw)
            try:
                content.encode("utf-8")
            except UnicodeEncodeError as error:  # JSON's \ud800 escapes decode to lone surrogates
                raise InvalidReply(f"the reply is not valid Unicode text (a lone surrogate at character "
                                   f"{error.start})") from None
            size = len(content.encode("utf-8"))
            if size > self.max_reply_bytes:
                raise InvalidReply(f"the reply has {size} bytes, over --max-reply-bytes {self.max_reply_bytes}")
            return content
        raise AgentError(f"{self.url}: {last} ({self.retries + 1} attempt(s))")
