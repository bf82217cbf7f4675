"""Playing negotiations: players, runners, the agent registry and tournaments."""
