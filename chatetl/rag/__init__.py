"""The RAG stage: conversations into Documents (`documents`), Documents into chunks
(`chunking`), their embeddings (`embeddings`: the built-in model by default, or a bigger local
one) and their Parquet in the bucket (`vectors`), and the stage of a partition that writes them
to the bucket and, through chatetl.graph, to Neo4j (`partition`).
"""
