"""Building policy training sets: evidence bundles with gold answers from synthetic templates and public datasets."""
