"""``make validate``: cfn-lint on template.yaml, then an offline SAM translation of it.

The translation is what ``sam deploy`` asks CloudFormation to do, done here with no AWS account:
local CodeUri/ContentUri paths (which ``sam build``/``sam package`` turn into S3 objects) are
replaced by placeholder S3 URIs, and no managed policies are looked up (the template uses none).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

TEMPLATE = Path(__file__).resolve().parents[1] / "template.yaml"


class _NoManagedPolicies:
    def load(self) -> dict[str, str]:
        return {}


def translate(template: dict[str, Any]) -> dict[str, Any]:
    """The CloudFormation template SAM makes of ``template``, offline."""
    for name, resource in template["Resources"].items():
        properties = resource.get("Properties", {})
        for uri in ("CodeUri", "ContentUri"):
            if isinstance(properties.get(uri), str) and not properties[uri].startswith("s3://"):
                properties[uri] = f"s3://placeholder-bucket/{name}.zip"
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    translated: dict[str, Any] = transform(template, {}, _NoManagedPolicies())
    return translated


def main() -> int:
    lint = subprocess.run([str(Path(sys.executable).parent / "cfn-lint"), str(TEMPLATE)], check=False)
    if lint.returncode != 0:
        print(f"cfn-lint found problems in {TEMPLATE.name} (exit {lint.returncode})")
        return lint.returncode
    translated = translate(yaml_parse(TEMPLATE.read_text()))
    kinds = sorted({r["Type"] for r in translated["Resources"].values()})
    print(f"cfn-lint: clean; SAM translation: {len(translated['Resources'])} resources ({', '.join(kinds)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
