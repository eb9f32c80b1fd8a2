"""The AWS clients beside the store: Lambda (a turn's continuation) and Step Functions (task tokens)."""
