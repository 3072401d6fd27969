"""Azure OpenAI: Chat Completions through the SDK's Azure client (`AsyncAzureOpenAI`).

Azure differs from OpenAI only in addressing, which the SDK's Azure client does for us:
the key goes in an `api-key` header, every request carries `?api-version=`, and the model
named in a request is the deployment, which the client moves into the path
(`/openai/deployments/<deployment>/chat/completions`). The conversation itself is the
Chat Completions session's (openai_chat.py).
"""

from __future__ import annotations

import openai

from services.agent.providers import errors, openai_common
from services.agent.providers.base import ProviderSession, SessionConfig
from services.agent.providers.clients import ClientKind, ClientPool
from services.agent.providers.openai_chat import OpenAIChatSession


class AzureChatSession(OpenAIChatSession):
    """A Chat Completions conversation with an Azure OpenAI deployment."""

    @classmethod
    def new_client(cls, config: SessionConfig) -> openai.AsyncOpenAI:
        # Azure takes no keyless requests, and its endpoint has no default.
        if not config.api_key or not config.base_url:
            raise errors.missing_key(config.provider)
        return openai.AsyncAzureOpenAI(
            api_key=config.api_key,
            # The resource's endpoint: the client appends /openai (and the deployment).
            azure_endpoint=config.base_url,
            api_version=config.api_version,
            max_retries=config.max_retries,
            timeout=config.request_timeout_s,
            http_client=openai.DefaultAioHttpClient(),
        )


def session(config: SessionConfig, clients: ClientPool) -> ProviderSession:
    """The endpoint API's builder (registry.ENDPOINT_APIS): a session around the pool's client."""
    kind = ClientKind("azure", AzureChatSession.new_client, openai_common.close_client)
    return clients.session(config, kind, lambda client: AzureChatSession(config, client=client))
