"""The deployment's keys, none of them in an environment variable (what ``lambda:GetFunctionConfiguration``
returns, and AWS's ReadOnlyAccess grants):

- the **decision-link key** (``DECISION_LINKS_KEY``): a KMS HMAC key. Its material never leaves KMS: the
  Publisher, which issues links, may only ``GenerateMac`` with it; the DecisionLinks function, which
  checks them, may only ``VerifyMac``. Every use is a call CloudTrail records.
- the **digest key** (``AUDIT_DIGEST_KEY``): a KMS asymmetric key (RSA) that signs the audit trail's
  digests. Only the Sweeper, which delivers them, may ``Sign``; whoever checks them ``Verify``s (or
  checks with its public key, ``GetPublicKey``, anywhere).
- the **cursor key** (``CURSOR_SECRET_ARN``): a Secrets Manager secret read when first needed and kept
  for a few minutes (a rotated value is picked up without a restart), by the one function that issues
  and reads cursors (GetTurn). Without it (locally, in the tests), a random key of the process.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from resumable.aws.clients import LazyClient, client
from resumable.config import Settings
from resumable.exceptions import AwsError

MAC_ALGORITHM = "HMAC_SHA_256"
MAX_AGE_SECONDS = 300
# Without CURSOR_SECRET_ARN (locally), cursors are signed with a key of this process.
_PROCESS_KEY = secrets.token_hex(32)


class LinkKey(LazyClient[Any]):
    """MACs made and checked by KMS with the decision-link key (``settings.decision_links_key``)."""

    service = "kms"

    def mac(self, message: bytes) -> bytes:
        """The key's MAC of ``message`` (``kms:GenerateMac``)."""
        key_id = self._key_id()
        try:
            made = self.client.generate_mac(KeyId=key_id, Message=message, MacAlgorithm=MAC_ALGORITHM)
        except Exception as error:
            raise AwsError(f"the decision-link key {key_id} made no MAC (kms:GenerateMac): {error}") from error
        return bytes(made["Mac"])

    def verified(self, message: bytes, mac: bytes) -> bool:
        """Whether ``mac`` is the key's MAC of ``message`` (``kms:VerifyMac``)."""
        key_id = self._key_id()
        try:
            checked = self.client.verify_mac(KeyId=key_id, Message=message, Mac=mac, MacAlgorithm=MAC_ALGORITHM)
        except Exception as error:
            if type(error).__name__ == "KMSInvalidMacException":
                return False
            raise AwsError(f"the decision-link key {key_id} checked no MAC (kms:VerifyMac): {error}") from error
        return bool(checked.get("MacValid"))

    def _key_id(self) -> str:
        key_id = self.settings.decision_links_key
        if not key_id:
            raise AwsError(
                "no decision-link key is configured (DECISION_LINKS_KEY, the template's DecisionLinksKey): "
                "links can be neither made nor checked"
            )
        return key_id


SIGNING_ALGORITHM = "RSASSA_PKCS1_V1_5_SHA_256"


class DigestKey(LazyClient[Any]):
    """Signatures made and checked by KMS with the audit trail's digest key (``settings.audit_digest_key``)."""

    service = "kms"

    def sign(self, message: bytes) -> tuple[str, bytes]:
        """The key's ARN and its signature of ``message`` (``kms:Sign``)."""
        key_id = self._key_id()
        try:
            signed = self.client.sign(KeyId=key_id, Message=message, SigningAlgorithm=SIGNING_ALGORITHM)
        except Exception as error:
            raise AwsError(f"the digest key {key_id} signed nothing (kms:Sign): {error}") from error
        return str(signed["KeyId"]), bytes(signed["Signature"])

    def verified(self, message: bytes, signature: bytes) -> bool:
        """Whether ``signature`` is the key's signature of ``message`` (``kms:Verify``)."""
        key_id = self._key_id()
        try:
            checked = self.client.verify(
                KeyId=key_id, Message=message, Signature=signature, SigningAlgorithm=SIGNING_ALGORITHM
            )
        except Exception as error:
            if type(error).__name__ == "KMSInvalidSignatureException":
                return False
            raise AwsError(f"the digest key {key_id} checked no signature (kms:Verify): {error}") from error
        return bool(checked.get("SignatureValid"))

    def _key_id(self) -> str:
        key_id = self.settings.audit_digest_key
        if not key_id:
            raise AwsError("no digest key is configured (AUDIT_DIGEST_KEY, the template's AuditDigestKey)")
        return key_id


class CursorKey:
    """The key that signs cursors: the secret ``settings.cursor_secret_arn`` names, read when first
    needed and again once older than ``MAX_AGE_SECONDS``; a key of this process without one."""

    def __init__(self, settings: Settings, aws: Any = None) -> None:
        self.settings = settings
        self._client = aws
        self._read: tuple[float, str] | None = None

    def __call__(self) -> str:
        arn = self.settings.cursor_secret_arn
        if not arn:
            return _PROCESS_KEY
        if self._read is None or time.monotonic() - self._read[0] > MAX_AGE_SECONDS:
            self._read = (time.monotonic(), self._get(arn))
        return self._read[1]

    def _get(self, arn: str) -> str:
        if self._client is None:
            self._client = client("secretsmanager", self.settings)
        try:
            value = self._client.get_secret_value(SecretId=arn).get("SecretString")
        except Exception as error:
            raise AwsError(f"reading the cursor key {arn} failed (secretsmanager:GetSecretValue): {error}") from error
        if not value:
            raise AwsError(f"the cursor key {arn} holds no string: store a random one there (docs/deploy.md)")
        return str(value)


class Keys:
    """The keys a use case may need, each made on first use."""

    def __init__(self, settings: Settings) -> None:
        self.link = LinkKey(settings)
        self.cursor = CursorKey(settings)
        self.digest = DigestKey(settings)
