"""Coverage for the Python subprocesses the tests start (servers, proxies, CLI runs, snippets).

CI runs pytest under coverage with ``patch = ["subprocess"]``: coverage sets
``COVERAGE_PROCESS_CONFIG`` and every Python child that inherits it measures itself. Children
started with a restricted environment (as MCP hosts start servers) need those variables added.
"""

import os

import mcp.client.stdio


def coverage_env() -> dict[str, str]:
    """The variables through which a coverage run reaches subprocesses (empty without one)."""
    return {k: v for k, v in os.environ.items() if k.startswith("COVERAGE_")}


def measure_stdio_servers() -> None:
    """MCP's stdio client gives a server only a few variables: add coverage's, if it runs."""
    if not coverage_env():
        return
    default = mcp.client.stdio.get_default_environment
    mcp.client.stdio.get_default_environment = lambda: default() | coverage_env()
