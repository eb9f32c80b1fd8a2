"""``make deploy``'s first step: are there AWS credentials to deploy with? One line either way, never a
traceback."""

from __future__ import annotations

import sys


def main() -> int:
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        identity = boto3.client("sts").get_caller_identity()
    except (BotoCoreError, ClientError) as error:
        print(
            f"make deploy: no usable AWS credentials ({error}); nothing was deployed. Set AWS_PROFILE or "
            "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (and AWS_REGION), or run aws configure, then make deploy again",
            file=sys.stderr,
        )
        return 1
    print(f"make deploy: deploying as {identity['Arn']} (account {identity['Account']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
