"""An agent behind an OpenAI-compatible chat-completions endpoint, with the standard library only.

`ChatCompletionsAgent(base_url, model)` is a callable `prompt -> reply`: it POSTs
`{base_url}/chat/completions` with the prompt as the user message (and an optional system
message) and returns `choices[0].message.content`. The API key is read from the environment
variable `api_key_env` (sent as `Authorization: Bearer ...`; none is sent when the variable is
unset, as local servers such as vLLM or llama.cpp allow) and never written anywhere. Timeouts,
refused connections, HTTP 429 and 5xx are retried `retries` times with exponential backoff;
any other HTTP error, and a response that is not the expected JSON, raise `AgentError` at once
with a one-line reason.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request

from jaxcredit.agents.loop import AgentError
from jaxcredit.validation import require_float, require_int

RETRY_STATUS = (429, 500, 502, 503, 504)


class ChatCompletionsAgent:
    """A callable `prompt -> reply` for an OpenAI-compatible endpoint (see the module docstring)."""

    def __init__(self, base_url: str, model: str, *, api_key_env: str = "OPENAI_API_KEY", timeout: float = 60.0,
                 retries: int = 2, backoff: float = 1.0, temperature: float = 0.0, max_tokens: int = 256,
                 system: str | None = None):
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        if not isinstance(model, str) or not model:
            raise ValueError("model must be a non-empty string (the endpoint's model name)")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = require_float("timeout", timeout, 0.0)
        self.retries = require_int("retries", retries, 0, 100)
        self.backoff = require_float("backoff", backoff, 0.0)
        self.temperature = require_float("temperature", temperature, 0.0)
        self.max_tokens = require_int("max_tokens", max_tokens, 1)
        self.system = system
        self.calls = 0  # HTTP requests sent, retries included

    def _request(self, prompt: str) -> urllib.request.Request:
        messages = ([{"role": "system", "content": self.system}] if self.system else []) + [
            {"role": "user", "content": prompt}]
        body = json.dumps({"model": self.model, "messages": messages, "temperature": self.temperature,
                           "max_tokens": self.max_tokens}).encode()
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return urllib.request.Request(self.url, data=body, headers=headers, method="POST")

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
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            self.calls += 1
            try:
                with urllib.request.urlopen(self._request(prompt), timeout=self.timeout) as response:
                    raw = response.read()
            except urllib.error.HTTPError as error:
                detail = error.read()[:120]
                if error.code not in RETRY_STATUS:
                    raise AgentError(f"{self.url} answered HTTP {error.code}: {detail!r}") from None
                last = f"HTTP {error.code}"
                continue
            except TimeoutError:
                last = f"timed out after {self.timeout:g} s"
                continue
            except urllib.error.URLError as error:
                if isinstance(error.reason, TimeoutError):
                    last = f"timed out after {self.timeout:g} s"
                else:
                    last = f"cannot reach it ({error.reason})"
                continue
            except (ConnectionError, OSError) as error:
                last = f"connection failed ({error})"
                continue
            return self._content(raw)
        raise AgentError(f"{self.url}: {last} ({self.retries + 1} attempt(s))")
