"""model-agent: a direct-model agent over an OpenAI-compatible streaming API."""
