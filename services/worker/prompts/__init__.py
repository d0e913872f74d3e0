"""The system prompt: pieces from files, the skills index, memory, the environment."""
