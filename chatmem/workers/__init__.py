"""What runs outside a request: summary jobs, curator notices and the webhook, the sweep.

Each worker claims its rows with a compare-and-set, so several processes (gunicorn
workers, the CLI from cron, the background thread) can run them at once.
"""
