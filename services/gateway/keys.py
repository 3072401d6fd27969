"""Typed keys of what the gateway app holds."""

from __future__ import annotations

import grpc
from aiohttp import web

from services.gateway.agents import AgentPool
from services.gateway.drain import Sockets
from services.gateway.limits import CaptureLimiter, ClientLimiter
from services.gateway.metrics import GatewayMetrics
from services.gateway.settings import GatewaySettings

SETTINGS_KEY = web.AppKey("settings", GatewaySettings)
# Agent 0's channel, for calls any agent answers alike (capabilities, URL captures).
CHANNEL_KEY = web.AppKey("channel", grpc.aio.Channel)
# Every agent: generations, and the routing to their owners (agents.py).
AGENTS_KEY = web.AppKey("agents", AgentPool)
METRICS_KEY = web.AppKey("metrics", GatewayMetrics)
LIMITER_KEY = web.AppKey("limiter", ClientLimiter)
# URL captures per client and in all: `/api/screenshot` and MCP's capture_url share them.
CAPTURES_KEY = web.AppKey("captures", CaptureLimiter)
# The open /generate-code sockets, which a SIGTERM drains (drain.py).
SOCKETS_KEY = web.AppKey("sockets", Sockets)
