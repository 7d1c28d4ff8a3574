"""The scheduler: runs ACTIVE launch plans at their cron or fixed-rate slots (see scheduler.py)."""
