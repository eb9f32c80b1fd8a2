"""The edge's structured logger (Powertools), named as ``resumable.metrics`` names the service."""

from __future__ import annotations

from aws_lambda_powertools import Logger

from resumable.metrics import SERVICE

logger = Logger(service=SERVICE)
