"""The events: the publisher that puts every outbox item on the EventBridge bus, and the schema of
each detail type it publishes."""
