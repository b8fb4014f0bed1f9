"""training_data package."""
