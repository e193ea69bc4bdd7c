"""Agents: the contract (base), the registry of backends by name, scripted agents, and model agents."""

from conflictbench_app.agents.base import Agent, AgentView, Decision, PastTurn
from conflictbench_app.agents.registry import get_agent, register, register_lazy

__all__ = ["Agent", "AgentView", "Decision", "PastTurn", "get_agent", "register", "register_lazy"]
