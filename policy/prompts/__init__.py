"""Versioned prompt files (YAML data) for the policy, the training-time answer model and the judge."""
