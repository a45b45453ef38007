"""Model providers: the contract (:mod:`activities.providers.base`), the offline scripted models and the real ones.

``ModelProviders(config)("openai:gpt-4o-mini")`` returns a provider and the model
name to ask it for (:mod:`activities.providers.factory`): ``scripted`` (offline,
deterministic), ``openai`` and ``local`` (chat completions,
:mod:`activities.providers.openai_compat`) and ``anthropic`` (Messages,
:mod:`activities.providers.anthropic_messages`). Failures are sorted once, in
:mod:`activities.providers.failures`.
"""
