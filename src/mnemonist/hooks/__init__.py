"""Agent harness connectors: the hook command's runner and the Claude Code connector."""
