"""In a test process, a request answered in-process by an embedded AWS carries an Authorization header
of the form botocore writes, with a signature it did not compute.

The embedded AWS (moto) reads that header for who sent a request and where to (the access key, the
Region and the service of its credential scope) and checks no signature. Computing one (a canonical
request, a string to sign, four HMACs) took 110 us of an in-process GetItem's 1 ms, on every AWS call
of every test. So, in the tests' own processes, botocore's SigV4 does all it does to a request to such
an endpoint (its date, token and payload headers; the header's credential scope and signed headers)
except the arithmetic. Any other request is signed as botocore signs it: the local API checks SigV4 as
API Gateway does, and another process's embedded AWS, a presigned URL or a real endpoint get the real
thing. tests/unit/test_embedded_signing.py holds both sides. Nothing of this ships: it is applied by
tests/conftest.py alone.
"""

from __future__ import annotations

import sys
from typing import Any

import botocore.auth

UNCOMPUTED = "0" * 64  # (a signature's length and alphabet: 64 hexadecimal digits)

_add_auth = botocore.auth.SigV4Auth.add_auth
# The signers that put their signature in the Authorization header (any other, a presigned URL's above
# all, signs as botocore does)
_HEADER_SIGNERS = (botocore.auth.SigV4Auth, botocore.auth.S3SigV4Auth)


def _answered_here(url: str) -> bool:
    embedded_aws = sys.modules.get("resumable.local.embedded_aws")  # (not imported: none runs here)
    return embedded_aws is not None and bool(embedded_aws.answered_here(url))


def _add_auth_unless_answered_here(self: Any, request: Any) -> None:
    if self.credentials is None or type(self) not in _HEADER_SIGNERS or not _answered_here(request.url):
        return _add_auth(self, request)
    # (botocore's add_auth, but for the canonical request, the string to sign and its signature)
    request.context["timestamp"] = botocore.auth.get_current_datetime().strftime(botocore.auth.SIGV4_TIMESTAMP)
    self._modify_request_before_signing(request)
    self._inject_signature_to_request(request, UNCOMPUTED)
    return None


def apply() -> None:
    botocore.auth.SigV4Auth.add_auth = _add_auth_unless_answered_here  # type: ignore[method-assign]
