"""Integrations with other frameworks, each imported only by the projects that use it."""
