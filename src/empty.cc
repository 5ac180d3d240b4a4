// Intentionally empty: the source of a layer library that has no files yet.
