"""A session's life: its deletion and restoration."""
