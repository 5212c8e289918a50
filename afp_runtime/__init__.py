"""afp-runtime: a durable, auditable runtime for standing LLM agents."""

__version__ = "0.1.0"

__all__ = ["__version__"]
