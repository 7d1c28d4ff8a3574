"""Task types served by flytekit agents (FlytePropeller's agent-service web API plugin): the plugin, its gRPC
client, which agent serves a task type, and the agent servers flytelite starts itself."""
