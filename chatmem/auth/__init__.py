"""Who is calling with an API token, and how often: tokens, admission and the rate limit."""
