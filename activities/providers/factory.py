"""Model specs to providers, under one configuration: what the model-call activity asks.

``scripted:NAME`` is the offline scripted model; ``openai:MODEL`` and
``local:NAME`` are chat completions (:mod:`activities.providers.openai_compat`);
``anthropic:MODEL`` is the Messages API
(:mod:`activities.providers.anthropic_messages`). A real provider whose
endpoint is not configured is refused with :class:`UnknownModelError` when the
spec is looked up, so a client checking a participant's spec learns it before
any workflow starts.

Providers are kept per endpoint: one SDK client, and so one connection pool,
per address and key, for the life of the worker (:meth:`ModelProviders.aclose`).
"""

from __future__ import annotations

from activities.providers.base import ModelProvider, UnknownModelError, parse_model_spec
from activities.providers.config import EndpointConfig, ProvidersConfig

PROVIDERS = ("anthropic", "local", "openai", "scripted")
"""Every provider part a model spec may name."""


class ModelProviders:
    """``"openai:gpt-4o-mini"`` -> (provider, model name): a :data:`~activities.providers.base.ProviderFactory`.

    Args:
        config: the installation's endpoints (default: none configured, only ``scripted`` works).
    """

    def __init__(self, config: ProvidersConfig | None = None) -> None:
        self.config = config or ProvidersConfig()
        self._providers: dict[tuple[str, str], ModelProvider] = {}

    def __call__(self, spec: str) -> tuple[ModelProvider, str]:
        return self.for_spec(spec)

    def for_spec(self, spec: str, override: EndpointConfig | None = None) -> tuple[ModelProvider, str]:
        """The provider for a model spec, and the model name to ask it for.

        Args:
            spec: ``"<provider>:<model>"``.
            override: an agent's own endpoint settings, over the installation's (fields it sets win).

        Returns:
            ``(provider, model)``.

        Raises:
            UnknownModelError: a malformed spec, an unknown provider or script, or a real
                provider whose endpoint is not configured.
        """
        provider, model = parse_model_spec(spec)
        if provider == "scripted":
            # Imported here: the scripted provider's scripts are only needed by those who use them.
            from activities.providers.scripted import ScriptedProvider

            scripted = ScriptedProvider()
            scripted.check_model(model)
            return scripted, model
        if provider not in PROVIDERS:
            raise UnknownModelError(f"unknown model provider {provider!r} in {spec!r}: "
                                    f"known providers are {', '.join(PROVIDERS)}")
        endpoint = self.config.endpoint(provider).merged(override)
        _check_configured(provider, endpoint)
        key = (provider, endpoint.cache_key())
        if key not in self._providers:
            self._providers[key] = _build(provider, endpoint)
        return self._providers[key], model

    async def aclose(self) -> None:
        """Close every provider's connection pool (the worker calls this when it stops)."""
        providers, self._providers = list(self._providers.values()), {}
        for provider in providers:
            await provider.aclose()  # type: ignore[attr-defined]


def _check_configured(provider: str, endpoint: EndpointConfig) -> None:
    if provider == "local" and endpoint.base_url is None:
        raise UnknownModelError("the local model service is not configured: no local model base URL "
                                "(start the embedded model server, or set LOCAL_MODEL_URL)")
    if provider == "openai" and endpoint.api_key is None and endpoint.base_url is None:
        raise UnknownModelError("the openai provider is not configured: set OPENAI_API_KEY "
                                "(and OPENAI_BASE_URL for another OpenAI-compatible server)")
    if provider == "anthropic" and endpoint.api_key is None and endpoint.base_url is None:
        raise UnknownModelError("the anthropic provider is not configured: set ANTHROPIC_API_KEY")


def _build(provider: str, endpoint: EndpointConfig) -> ModelProvider:
    # The SDKs are imported only by those who call a real provider.
    if provider == "anthropic":
        from activities.providers.anthropic_messages import AnthropicProvider

        return AnthropicProvider(endpoint)
    from activities.providers.openai_compat import OpenAICompatProvider

    return OpenAICompatProvider(provider, endpoint)


__all__ = ["PROVIDERS", "ModelProviders"]
