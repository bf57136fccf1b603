"""Data: bundled and local data sets, hub data as Arrow, tokenisation, word vectors, batching, relation entity spans."""
