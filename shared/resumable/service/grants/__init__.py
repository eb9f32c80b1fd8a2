"""Standing grants: an approval that also lets the same tool's later calls run without a question, for
a while, in a scope (docs/approval-rules.md#standing-grants). ``giving``: the grant an approval carries,
checked against its question's rule; ``applying``: the grants a run applies; ``managing``: listing and
revoking them."""
