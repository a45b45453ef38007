"""Model providers: the contract (:mod:`activities.providers.base`) and the offline scripted provider.

``provider_for("scripted:analyst")`` returns a provider and the model name to
ask it for; real providers are a separate issue.
"""
