"""Private keys moto 5.2.5 makes that nothing reads, made once per process instead of at each use.

moto gives every KMS key an RSA-2048 private key whatever its spec, for Sign and Verify, which AWS
allows only for an asymmetric key; and every SNS subscription one, to sign what it delivers over HTTP,
which nothing here checks. Each takes some 30 ms of CPU: the embedded AWS makes an HMAC key each time
it starts, and a test run starts it hundreds of times. A key of an asymmetric spec (the audit trail's
digest key) still gets its own, so what one signs verifies with it alone.
"""

from __future__ import annotations

import functools
from typing import Any


def apply() -> None:
    from moto.kms import models as kms
    from moto.kms import utils
    from moto.kms.utils import KeySpec
    from moto.sns.models import Subscription

    made = utils.generate_private_key  # (what moto.kms.models imported)
    asymmetric = {KeySpec.RSA_2048.value, KeySpec.RSA_3072.value, KeySpec.RSA_4096.value, *KeySpec.ecc_key_specs()}

    @functools.cache
    def unused(key_spec: str) -> Any:
        return made(key_spec)

    def private_key(key_spec: str) -> Any:
        return made(key_spec) if key_spec in asymmetric else unused(key_spec)

    kms.generate_private_key = private_key  # type: ignore[attr-defined]
    shared = functools.cache(Subscription.private_key.__wrapped__)  # (moto's: an lru_cache per subscription)
    Subscription.private_key = lambda _subscription: shared(None)  # type: ignore[assignment,method-assign]
