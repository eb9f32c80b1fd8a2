"""The embedded AWS's processes sanitize each part of botocore's User-Agent header once
(resumable.local.moto_parsing): the same header as botocore's own sanitizing gives, part for part."""

from __future__ import annotations

import pytest
from botocore import useragent

from resumable.local import moto_parsing


@pytest.mark.parametrize(
    "part",
    [
        "Botocore/1.40.0",
        "md/arch#x86_64",
        "os/linux#6.1.0-aws",
        "m/E,b,Z",
        "app/my app",
        "lang/python#3.11.7",
        "ü+é/ß",
        "",
    ],
)
@pytest.mark.parametrize("allow_hash", [True, False])
def test_each_part_is_sanitized_as_botocore_sanitizes_it_every_time(part: str, allow_hash: bool) -> None:
    moto_parsing._sanitize_each_user_agent_part_once()
    moto_parsing._sanitize_each_user_agent_part_once()  # (applied twice: still one cache, over botocore's own)
    patched = useragent.sanitize_user_agent_string_component
    botocores = patched.botocores  # type: ignore[attr-defined]
    assert not getattr(botocores, "sanitizes_once", False)
    for _ in range(2):  # (the first time worked out, the second remembered)
        assert patched(part, allow_hash) == botocores(part, allow_hash)
