"""What runs resumable on a laptop and never ships in the Lambda layer: the embedded AWS (moto on
loopback), the local server for template.yaml's routes, the state machine and functions in-process,
``make run`` and ``make demo``."""

from resumable.local.embedded_aws import create_resources, embedded_aws

__all__ = ["create_resources", "embedded_aws"]
