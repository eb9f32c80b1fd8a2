"""Reading: a turn (driving on one that stalled), a session's questions, the inbox, a conversation."""
