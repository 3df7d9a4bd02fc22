"""Why a kubeconfig cannot configure a client, in one line: serve, report and certs say it alike.

The `kubernetes` client reads a kubeconfig's fields assuming their types: a context written as a
name (`context: prod`, where a mapping of cluster and user belongs) raised AttributeError from
deep inside it, which serve and report let through as a traceback.
"""

from __future__ import annotations

import yaml
from kubernetes.config.config_exception import ConfigException

CONFIG_ERRORS = (ConfigException, OSError, ValueError, TypeError, KeyError, AttributeError, yaml.YAMLError)
"""What loading a kubeconfig raises for a file that is not a usable one."""


def config_problem(exc: Exception) -> str:
    """One line saying why a kubeconfig is unusable (the client's own errors assume valid YAML)."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"not valid YAML: {exc.problem} (line {mark.line + 1}, column {mark.column + 1})"
    if isinstance(exc, yaml.YAMLError):
        return f"not valid YAML: {exc}".replace("\n", " ")
    if isinstance(exc, (AttributeError, TypeError, KeyError)):
        return f"not a valid kubeconfig: a field has the wrong type or is missing ({exc})"
    return " ".join(str(exc).split())
