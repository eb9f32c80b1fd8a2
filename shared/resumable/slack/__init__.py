"""Answering from Slack: each question posted to a channel as a Block Kit message with Approve, Deny
and Edit buttons (``messages``); Slack's interactivity requests checked for its signature and read
(``requests``); the Slack user mapped to a principal (``people``); and the answer given through the
same use case as the API's, its outcome told back in Slack (``answers``). Built on the official
``slack_sdk`` (its signature verifier and Block Kit models), so nothing of Slack's signing or payloads
is written by hand."""
