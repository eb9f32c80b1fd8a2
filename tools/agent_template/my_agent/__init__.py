"""Your agents: ``my_agent.agents.build_agents`` is the agent factory (AgentFactory in samconfig.toml)."""
