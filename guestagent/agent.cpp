// replaced by the agent implementation
