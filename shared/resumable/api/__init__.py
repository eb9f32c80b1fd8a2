"""The HTTP edge: the routes of the API (one Router shared by every function) and their resolver."""
