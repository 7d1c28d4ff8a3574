"""Gate nodes: sleep, approve and signal (wait_for_input)."""
