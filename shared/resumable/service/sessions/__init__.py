"""A session's life: its deletion and restoration, and retention's end."""
