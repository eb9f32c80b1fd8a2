"""The operator's and the sweeper's: the sweep that moves every turn on, and the admin commands."""
