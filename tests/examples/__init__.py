"""The examples/ folder built and run as a user would (issue 21)."""
