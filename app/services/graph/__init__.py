"""The temporal knowledge graph (Apache AGE) and its closed vocabulary."""
