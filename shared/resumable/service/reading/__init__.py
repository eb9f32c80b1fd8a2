"""Reading: a turn, a session's questions, the inbox, a conversation, the views every reply is made of, and
the cursors of their pages."""
