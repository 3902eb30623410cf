"""The ``openai`` engine: a :class:`~daemon.llm.generate.Generator` served by a language-model
server that speaks the OpenAI chat API — Ollama, llama.cpp's ``llama-server``,
llama-cpp-python's server, LM Studio, vLLM — over HTTP or a Unix socket.

- ``stream`` reads the answer as server-sent events; leaving the iteration closes the
  connection, which stops the server's generation.
- ``generate`` asks for output constrained by the JSON schema of the requested type through
  ``response_format`` (``json_schema`` as OpenAI defines it; a server that rejects that form is
  asked with ``json_object`` and the schema, as llama.cpp's servers read it — Ollama's OpenAI
  endpoint maps either to its ``format``), then validates the answer; a server that ignored
  the schema is asked once more, told what was wrong.
- the model's name is checked against what the server lists (``/models``) before the first
  request: a server that serves another model under any name would otherwise answer with it.
- every failure is one typed error whose text says the fix: :class:`EngineUnreachable` (down,
  timed out, closed in the middle of an answer), :class:`RemoteModelMissing`, or an
  :class:`EngineError` for anything else the server refused.

Only the messages a caller builds are sent: what the model is asked to read, secrets already
masked (:mod:`daemon.memory` masks them). The engine holds no model, so ``prefill`` reads
nothing ahead (servers reuse a prompt's common beginning themselves) and unloading is a no-op.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal, TypeVar

import httpx2 as httpx  # httpx's maintained successor: the same API
import trio

from daemon.errors import EngineError, EngineUnreachable, RemoteModelMissing
from daemon.llm.endpoint import Endpoint
from daemon.llm.generate import (
    AnswerCutOff,
    ChatMessage,
    Usage,
    as_dicts,
    decode_json_answer,
    output_schema,
    with_schema_instruction,
)

T = TypeVar("T")
log = logging.getLogger(__name__)

SchemaForm = Literal["json_schema", "json_object"]
CONNECT_TIMEOUT_S = 5.0
PROBE_TIMEOUT_S = 2.0  # how long `status` waits for the server


class OpenAIGenerator:
    """The model ``model`` (empty: the first the server lists) of the server at ``endpoint``;
    ``api_key`` is sent as a bearer token when given; each request may take ``timeout_s``
    between two pieces of its answer. ``transport`` replaces the HTTP transport (tests)."""

    def __init__(self, endpoint: Endpoint, model: str = "", *, api_key: str | None = None,
                 timeout_s: float = 120.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.endpoint = endpoint
        self.model = model
        self.model_id = model or "server"
        self.api_key = api_key
        self.timeout_s = timeout_s
        self._transport = transport
        self._checked = False  # the model's name was found among the server's
        self._form: SchemaForm = "json_schema"
        self._reachable = False
        self._last_used = time.monotonic()
        self._usage_reported = False  # whether the server counted the last answer's tokens
        self.usage = Usage()

    # -- the Generator protocol ----------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        """Whether the server answered the last request (the model is the server's to load)."""
        return self._reachable

    @property
    def last_used(self) -> float:
        return self._last_used

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        output_type: type[T],
        *,
        max_tokens: int = 1024,
        temperature: float = 0.2,
    ) -> T:
        schema = output_schema(output_type)
        instructed = with_schema_instruction(messages, schema)
        raw, cut_off = await self._complete(instructed, schema, max_tokens, temperature)
        try:
            return decode_json_answer(raw, cut_off, output_type, max_tokens)
        except AnswerCutOff:
            raise
        except EngineError as e:  # the server did not hold the model to the schema
            log.warning("the language model at %s ignored the JSON schema (%s): asked again",
                        self.endpoint.host, e.message)
            told = [*instructed, ChatMessage("assistant", raw),
                    ChatMessage("user", f"That answer is not valid: {e.message}. Reply with "
                                        "JSON only, matching the schema given above.")]
            raw, cut_off = await self._complete(told, schema, max_tokens, temperature)
            try:
                return decode_json_answer(raw, cut_off, output_type, max_tokens)
            except AnswerCutOff:
                raise
            except EngineError as again:
                raise EngineError(
                    f"the language model at {self.endpoint.host} does not follow the JSON "
                    f"schema it is given: {again.message}",
                    fix="use a server that constrains its output to a JSON schema "
                        "(llama-server, Ollama 0.5 or later, vLLM, LM Studio), or "
                        "`braincue settings set llm_engine embedded`") from again

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 512,
        temperature: float = 0.2,
    ) -> AsyncIterator[str]:
        body = self._body(messages, max_tokens, temperature)
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        finished = False
        written = 0
        async with self._client() as client:
            await self._check_model(client)
            body["model"] = self.model
            async with (self._failures("answering"),
                        client.stream("POST", "/chat/completions", json=body) as response):
                await self._raise_for_status(response)
                async for data in _events(response):
                    if data == "[DONE]":
                        finished = True
                        break
                    chunk = _json(data, self.endpoint.host)
                    if chunk.get("usage"):
                        self._count(chunk["usage"])
                    for choice in chunk.get("choices") or []:
                        text = (choice.get("delta") or {}).get("content")
                        if text:
                            written += 1
                            yield text
                        if choice.get("finish_reason"):
                            finished = True
        if not finished:
            self._reachable = False
            raise EngineUnreachable(
                f"the language model server at {self.endpoint.host} closed the connection "
                "in the middle of an answer",
                fix="see the server's log (it may have stopped or run out of memory), then "
                    "ask again")
        self.usage.calls += 1
        if not self._usage_reported:
            self.usage.completion_tokens += written

    async def prefill(
        self, messages: Sequence[ChatMessage], *, stop: Callable[[], bool] | None = None
    ) -> None:
        await trio.lowlevel.checkpoint()  # a server reuses a prompt's beginning by itself

    def unload(self) -> None:
        """Nothing to free here: the server owns the model."""

    async def unload_if_idle(self) -> bool:
        await trio.lowlevel.checkpoint()
        return False

    def close(self) -> None:
        self._reachable = False

    # -- what `status` asks --------------------------------------------------------------------

    async def probe(self) -> None:
        """Raise what a request would meet now (unreachable, no such model), quickly."""
        async with self._client(timeout_s=PROBE_TIMEOUT_S) as client:
            self._checked = False
            await self._check_model(client)

    # -- the requests --------------------------------------------------------------------------

    def _body(self, messages: Sequence[ChatMessage], max_tokens: int,
              temperature: float) -> dict[str, Any]:
        self._last_used = time.monotonic()
        self._usage_reported = False
        return {"model": self.model, "messages": as_dicts(messages), "max_tokens": max_tokens,
                "temperature": temperature}

    def _count(self, usage: dict[str, Any]) -> None:
        self._usage_reported = True
        self.usage.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        self.usage.completion_tokens += int(usage.get("completion_tokens") or 0)

    async def _complete(self, messages: Sequence[ChatMessage], schema: dict[str, Any],
                        max_tokens: int, temperature: float) -> tuple[str, bool]:
        """The answer constrained by ``schema`` and whether ``max_tokens`` cut it off."""
        body = self._body(messages, max_tokens, temperature)
        async with self._client() as client:
            await self._check_model(client)
            body["model"] = self.model
            async with self._failures("answering"):
                for form in (self._form, _other(self._form)):
                    body["response_format"] = _response_format(form, schema)
                    response = await client.post("/chat/completions", json=body)
                    # (llama-cpp-python's server calls its validation error a 500)
                    if response.status_code in (400, 422, 500) \
                            and "response_format" in response.text:
                        log.info("the language model at %s does not take response_format %s",
                                 self.endpoint.host, form)
                        continue  # this server reads the other form
                    await self._raise_for_status(response)
                    self._form = form
                    break
                else:
                    await self._raise_for_status(response)
        answer = _json(response.text, self.endpoint.host)
        if answer.get("usage"):
            self._count(answer["usage"])
        self.usage.calls += 1
        try:
            choice = answer["choices"][0]
            content = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError) as e:
            raise EngineError(f"the language model at {self.endpoint.host} answered "
                              f"without a message: {e!r}") from e
        return str(content), choice.get("finish_reason") == "length"

    async def _check_model(self, client: httpx.AsyncClient) -> None:
        """Find the model among the server's (or take its first when none is named)."""
        if self._checked:
            return
        async with self._failures("listing its models"):
            response = await client.get("/models")
            if response.status_code == 404:  # a server that lists no models: take its word
                self._checked = True
                return
            await self._raise_for_status(response)
        listed = _json(response.text, self.endpoint.host).get("data") or []
        served = [str(m.get("id")) for m in listed if isinstance(m, dict) and m.get("id")]
        if not self.model and served:
            self.model = self.model_id = served[0]
        elif served and self.model not in served:
            raise RemoteModelMissing(
                f"the language model server at {self.endpoint.host} serves no model named "
                f"{self.model!r} (it serves: {', '.join(served)})",
                fix=f"`braincue settings set llm_remote_model {served[0]}`, or load "
                    f"{self.model!r} into the server (Ollama: `ollama pull {self.model}`)")
        self._checked = True

    def _client(self, timeout_s: float | None = None) -> httpx.AsyncClient:
        wait = timeout_s or self.timeout_s
        transport = self._transport or (
            httpx.AsyncHTTPTransport(uds=self.endpoint.socket) if self.endpoint.socket
            else None)
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        return httpx.AsyncClient(
            base_url=self.endpoint.base, transport=transport, headers=headers,
            timeout=httpx.Timeout(wait, connect=min(wait, CONNECT_TIMEOUT_S)),
            trust_env=False)  # never a proxy from the environment: the URL is where text goes

    @asynccontextmanager
    async def _failures(self, doing: str) -> AsyncIterator[None]:
        """Transport failures as :class:`EngineUnreachable`, each with its fix."""
        host = self.endpoint.host
        try:
            yield
        except httpx.TimeoutException as e:
            self._reachable = False
            raise EngineUnreachable(
                f"the language model server at {host} did not answer within "
                f"{self.timeout_s:g} s while {doing}",
                fix="check that it runs and is not busy; a slow model may need a larger "
                    "llm_timeout_s") from e
        except httpx.ConnectError as e:
            self._reachable = False
            self._checked = False
            raise EngineUnreachable(
                f"no language model server answers at {host} ({e})",
                fix="start it (Ollama: `ollama serve`; llama.cpp: `llama-server -m "
                    "MODEL.gguf`), or set llm_url to where it listens") from e
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as e:
            self._reachable = False
            self._checked = False
            raise EngineUnreachable(
                f"the language model server at {host} closed the connection while {doing}",
                fix="see the server's log (it may have stopped or run out of memory), then "
                    "try again") from e
        self._reachable = True

    async def _raise_for_status(self, response: httpx.Response) -> None:
        if response.status_code < 400:
            return
        await response.aread()
        detail = _error_text(response.text)
        host = self.endpoint.host
        if response.status_code in (401, 403):
            raise EngineError(f"the language model server at {host} refused the request "
                              f"({response.status_code}: {detail})",
                              fix="set its API key with `braincue models api-key`")
        if response.status_code == 404 and "model" in detail.lower():
            self._checked = False
            raise RemoteModelMissing(
                f"the language model server at {host} has no model {self.model!r}: {detail}",
                fix="set llm_remote_model to a model it serves (`braincue settings set "
                    "llm_remote_model NAME`)")
        raise EngineError(f"the language model server at {host} answered "
                          f"{response.status_code}: {detail}")


def _other(form: SchemaForm) -> SchemaForm:
    return "json_object" if form == "json_schema" else "json_schema"


def _response_format(form: SchemaForm, schema: dict[str, Any]) -> dict[str, Any]:
    if form == "json_schema":
        return {"type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema, "strict": True}}
    return {"type": "json_object", "schema": schema}


async def _events(response: httpx.Response) -> AsyncIterator[str]:
    """The data of each server-sent event (``data:`` lines; a multi-line event joined)."""
    lines: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if lines:
                yield "\n".join(lines)
                lines = []
        elif line.startswith("data:"):
            lines.append(line[5:].removeprefix(" "))
    if lines:
        yield "\n".join(lines)


def _json(text: str, host: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as e:
        raise EngineError(f"the language model server at {host} answered something that is "
                          f"not JSON: {text[:80]!r}",
                          fix="check that llm_url is the server's OpenAI-compatible API "
                              "(it usually ends in /v1)") from e
    if not isinstance(value, dict):
        raise EngineError(f"the language model server at {host} answered {text[:80]!r}")
    return value


def _error_text(text: str) -> str:
    """The message of an error answer (OpenAI's ``{"error": {"message": ...}}``, FastAPI's
    ``{"detail": ...}``), or its text."""
    try:
        value = json.loads(text)
    except ValueError:
        return text.strip()[:200]
    if isinstance(value, dict):
        error = value.get("error", value.get("detail"))
        if isinstance(error, dict):
            error = error.get("message", error)
        if error is not None:
            return str(error)[:200]
    return text.strip()[:200]
