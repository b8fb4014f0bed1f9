"""induction package."""
