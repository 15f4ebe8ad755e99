"""Vector indexes for message recall: the embedded sqlite one and qdrant."""
