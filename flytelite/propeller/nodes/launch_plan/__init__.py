"""Launch-plan nodes: a child execution launched through admin and waited for."""
