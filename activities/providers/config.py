"""Where the real model providers are and how to call them: plain data, built by the composition root.

Activities never read Dossier's settings or the environment for this:
``dossier/runtime.py`` turns :class:`dossier.settings.Settings` (``OPENAI_API_KEY``,
``OPENAI_BASE_URL``, ``ANTHROPIC_API_KEY``, ``LOCAL_MODEL_URL``...) into a
:class:`ProvidersConfig` and hands it to
:class:`activities.providers.factory.ModelProviders`. An agent definition can
later carry an :class:`EndpointConfig` of its own; only the fields it sets
replace the installation's (:meth:`EndpointConfig.merged`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr

DEFAULT_REQUEST_TIMEOUT_SECONDS = 540.0
"""HTTP timeout of one model call: under the model-call activity's default start-to-close
(10 minutes, ``workflows.options.MODEL_CALL_TIMEOUT``), so a hung request fails as a
retryable timeout of ours before Temporal times the whole attempt out."""

ANTHROPIC_MAX_OUTPUT_TOKENS = 4096
"""Anthropic's Messages API requires ``max_tokens``; this is ours when an endpoint sets none."""


class EndpointConfig(BaseModel):
    """One provider endpoint: address, credentials and the request parameters Dossier sends."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str | None = None
    """The API's base URL (``https://api.openai.com/v1``, ``http://127.0.0.1:8080/v1``); ``None``: the
    provider's official one."""
    api_key: SecretStr | None = None
    """The API key; ``None`` for a server that needs none (a local one)."""
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    """Sampling temperature; ``None`` sends none (the model's default)."""
    max_output_tokens: int | None = Field(default=None, ge=1)
    """Cap on generated tokens; ``None`` sends none (Anthropic, which requires one, gets
    :data:`ANTHROPIC_MAX_OUTPUT_TOKENS`)."""
    timeout_seconds: float = Field(default=DEFAULT_REQUEST_TIMEOUT_SECONDS, gt=0)
    """HTTP timeout of one call; a call that takes longer fails as retryable."""
    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Further request fields sent as they are (``{"top_p": 0.9}``, llama.cpp's ``{"cache_prompt": true}``)."""
    extra_headers: dict[str, str] = Field(default_factory=dict)
    """Further HTTP headers (a proxy's, an organisation header)."""

    def merged(self, override: EndpointConfig | None) -> EndpointConfig:
        """This endpoint with the fields ``override`` sets explicitly put over it.

        Args:
            override: an agent's own endpoint settings (``None``: none).
        """
        if override is None:
            return self
        return self.model_copy(update={name: getattr(override, name) for name in override.model_fields_set})

    def cache_key(self) -> str:
        """What identifies a client for this endpoint (the key's value included, never logged)."""
        data = self.model_dump(mode="json")
        data["api_key"] = self.api_key.get_secret_value() if self.api_key else None
        return repr(sorted(data.items()))


class ProvidersConfig(BaseModel):
    """Every real provider's endpoint, as the installation configures them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    openai: EndpointConfig = EndpointConfig()
    """``openai:MODEL``: OpenAI, or any server speaking its chat-completions format (``base_url``)."""
    anthropic: EndpointConfig = EndpointConfig()
    """``anthropic:MODEL``: Anthropic's Messages API."""
    local_base_url: str | None = None
    """``local:NAME``: the OpenAI-compatible URL of the model server on this machine (the embedded
    llama.cpp server's ``http://127.0.0.1:PORT/v1``); ``None``: no local model service."""
    local: EndpointConfig = EndpointConfig(temperature=0.0)
    """Everything else about the local endpoint (its address is ``local_base_url``). Temperature 0 by
    default: a small local model calls tools reliably only without sampling noise."""

    def endpoint(self, provider: str) -> EndpointConfig:
        """The configured endpoint of ``openai``, ``anthropic`` or ``local``.

        Raises:
            KeyError: another provider name.
        """
        if provider == "local":
            return self.local.model_copy(update={"base_url": self.local_base_url or self.local.base_url})
        if provider in ("openai", "anthropic"):
            return getattr(self, provider)
        raise KeyError(provider)


__all__ = ["ANTHROPIC_MAX_OUTPUT_TOKENS", "DEFAULT_REQUEST_TIMEOUT_SECONDS", "EndpointConfig", "ProvidersConfig"]
